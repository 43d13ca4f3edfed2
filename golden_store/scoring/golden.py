"""Scoring a system against a frozen golden set (scorers read frozen versions only).

* A document-level run (``query_id, doc_id, score``) is scored against the version's
  derived qrels (``qrels_rule`` in the manifest).
* A passage-level run also carries ``start`` and ``end`` (raw offsets in the frozen
  documents) and optionally ``passage_id``: its passages get labels from the stored spans
  through the hit rule (the manifest's unless ``hit_rule`` is given), so any chunker can be
  scored without re-labeling. A labeled query none of whose passages hit a span scores 0.
  A grade on a whole document (pooled document-run results, TREC/BEIR judgment imports) is
  ONE unit, not one per chunk: it is credited to the run's best-ranked chunk of that
  document whatever the hit rule, and adds nothing where finer labels of the query in the
  document reach its grade (:mod:`golden_store.scoring.passage_units`; issue 36). Which
  labels the numbers used is the ``_units`` definition.
* Unanswerable (negative) queries (``answerable = false``) have no relevant passage:
  retrieval measures are undefined for them (METHODOLOGY §3.4, §8.1) and they are left out
  on both paths, even when pooling gave them judged-0 passages (which put them in the
  qrels: before, such a query was scored 0 and pulled every mean down); how many were left
  out is on the result (``left_out["unanswerable"]``). Their place is abstention scoring.
* Every scoring also computes the run's Judged@10 (``res.judged``, see
  :mod:`golden_store.scoring.health`), so an under-judged run can be flagged on screen.
* Binary measures count grade >= 2 (partially or fully answers) unless the name says
  ``rel=``: the result is keyed by the full name, e.g. ``R(rel=2)@10``.
* ``labels`` says which labels the numbers are on (issue 27): ``"human"`` (default: evidence
  spans and people's final grades, the version's ``qrels.parquet``) or ``"human+judge"``
  (also the judge's grade of every passage no person graded; where people graded a passage
  their grade wins). The result says which (``res.labels``, the ``_labels`` definition) and,
  with judge labels, how many were used and from which model, rubric and calibration
  (``res.judge_labels``).
* Every mean comes with a bootstrap interval and per-stratum means; the definitions
  (dataset version, content digest, qrels rule, hit rule, measure definitions) travel
  with the result.
"""

from __future__ import annotations

from collections.abc import Iterable
import pandas as pd

from golden_store.core.errors import ValidationError
from golden_store.scoring.health import JUDGED_DEFINITION
from golden_store.scoring.measures import Measure, parse_measures
from golden_store.scoring.passage_units import unit_qrels
from golden_store.scoring.stats import bootstrap_ci
from golden_store.scoring.trec import EvalResult, evaluate_trec
from golden_store.scoring.trec_files import run_frame

NO_HIT = "__no_labeled_passage__"
LABEL_SETS = ("human", "human+judge")  # as golden_store.versions.format.LABEL_SETS (scoring imports core only)


def _names(values: list[str], width: int | None = None) -> str:
    if not values:
        return "none"
    return ", ".join(v[:width] if width else v for v in values)


def judge_labels_used(golden_set, query_ids: set[str]) -> dict:
    """The judge labels a ``human+judge`` scoring of ``query_ids`` used: passages no person
    graded (``judge_only_labels``), their count and provenance (sorted distinct models,
    rubric shas, calibration ids, jobs)."""
    jl = golden_set.judge_only_labels()
    jl = jl[jl["query_id"].isin(query_ids)]
    return {"n_passages": int(len(jl)),
            **{key: sorted({str(x) for x in jl[col].dropna()})
               for key, col in (("models", "model"), ("rubric_shas", "rubric_sha"),
                                ("calibration_ids", "calibration_id"), ("jobs", "job_id"))}}


def _units_definition(n: dict[str, int], rule: str) -> str:
    """The ``_units`` definition of a passage-run scoring: which labels its numbers used and
    how a grade on a whole document counts (one unit, issue 36)."""
    judge = f", {n['judge']} judge passage grade(s)" if n["judge"] else ""
    return (f"passage run: {n['evidence']} evidence span(s), {n['passage']} passage grade(s){judge} (each hits "
            f"chunks through the hit rule {rule}), {n['documents']} document grade(s) (each one unit: the run's "
            f"best-ranked chunk of the document, whatever the hit rule; its other chunks count as judged "
            f"non-relevant; {n['subsumed']} more subsumed by finer labels in the same document)")


def _passage_frame(run) -> pd.DataFrame | None:
    if isinstance(run, pd.DataFrame) and {"start", "end"} <= set(run.columns):
        return run
    return None


def unanswerable_ids(golden_set) -> set[str]:
    """The version's questions marked ``answerable = false``."""
    q = golden_set.queries
    if "answerable" not in q.columns:
        return set()
    return set(q.loc[~q["answerable"].astype(bool), "query_id"])


def evaluate(golden_set, run, measures: Iterable[str | Measure], *, hit_rule: str | None = None,
             include_held_out: bool = True, n_boot: int = 10_000, seed: int = 0,
             query_ids: Iterable[str] | None = None, scope: str | None = None,
             labels: str = "human") -> EvalResult:
    """``query_ids``: score only these questions (e.g. one CI tier); ``scope`` says which, in
    the result's definitions (``_scope``). ``labels``: ``"human"`` or ``"human+judge"`` (see
    the module's notes); the result records it."""
    if labels not in LABEL_SETS:
        raise ValidationError(f"Unknown label set {labels!r}: use 'human' (people's labels only) or 'human+judge' "
                              f"(also the judge's grade of every passage no person graded).")
    with_judge = labels != "human"
    manifest = golden_set.manifest
    # graded golden labels: a binary measure counts grade >= 2 (partially or fully answers)
    # unless the measure name says rel=...
    measures = parse_measures(measures, rel=2)
    passages = _passage_frame(run)
    negatives = unanswerable_ids(golden_set)
    labeled = (golden_set.qrels(include_held_out=include_held_out, labels=labels) if with_judge
               else golden_set.qrels(include_held_out=include_held_out))
    if query_ids is not None:
        keep = set(query_ids)
        labeled = {q: docs for q, docs in labeled.items() if q in keep}
    left_out = sorted(q for q in labeled if q in negatives)
    labeled = {q: docs for q, docs in labeled.items() if q not in negatives}
    if passages is None:
        qrels = labeled
        run_df = run_frame(run)
        used_rule = None
    else:
        if "passage_id" not in passages.columns:
            passages = passages.assign(passage_id=passages["doc_id"].astype(str) + ":" + passages["start"].astype(str)
                                       + "-" + passages["end"].astype(str))
        bad = passages[(passages["end"] <= passages["start"]) | (passages["start"] < 0)]
        if len(bad):
            raise ValidationError(f"passage run: {len(bad)} passage(s) with end <= start or start < 0, e.g. "
                                  f"{bad.iloc[0].to_dict()}")
        chunks = passages[["passage_id", "doc_id", "start", "end"]].drop_duplicates("passage_id")
        # span-level labels reach chunks through the hit rule; a grade on a whole document is
        # one unit, credited to the document's best-ranked chunk (passage_units)
        cq = golden_set.chunk_qrels(chunks.itertuples(index=False, name=None), hit_rule, labels=labels,
                                    span_level_only=True)
        split = golden_set.passage_labels(labels=labels)
        used_rule = cq.hit_rule
        units = unit_qrels(cq, split.documents, split.subsumed, passages, labeled)
        qrels = {q: units[q] or {NO_HIT: 0} for q in labeled}
        units_line = _units_definition(split.counts(labeled), used_rule)
        run_df = passages.rename(columns={"doc_id": "source_doc", "passage_id": "doc_id"})[["query_id", "doc_id", "score"]]
    if not qrels:
        raise ValidationError("The version has no labeled queries to score against.")
    res = evaluate_trec(qrels, run_df, measures, health=True)  # the Judged@10 health figure too
    if left_out:
        res.left_out["unanswerable"] = left_out
    strata = golden_set.strata
    per_stratum = res.per_query.assign(_s=[strata.get(q, "?") for q in res.per_query.index]).groupby("_s")
    res.strata = {s: {m: float(v) for m, v in g.drop(columns="_s").mean().items()} for s, g in per_stratum}
    res.strata_n = {s: int(len(g)) for s, g in per_stratum}
    res.ci95 = {m: bootstrap_ci(res.per_query[m].to_numpy(), n_boot, seed) for m in res.measures}
    res.definitions.update({
        "dataset_version": manifest.get("dataset_version"),
        "content_digest": manifest.get("content_digest"),
        "corpus_digest": manifest.get("corpus_digest"),
        "qrels_rule": manifest.get("qrels_rule"),
        "_negatives": (f"unanswerable queries (answerable = false) have no relevant passage: retrieval measures are "
                       f"undefined for them and they are not scored ({len(left_out)} with labels left out)"),
        "_judged": JUDGED_DEFINITION,
        "_relevance": "binary measures count grade >= 2 unless the measure says rel=...; nDCG uses the grades",
        "_ci95": f"percentile bootstrap of the mean over queries, {n_boot} resamples, seed {seed}",
    })
    res.labels = labels
    if with_judge:
        res.judge_labels = judge_labels_used(golden_set, set(qrels))
        j = res.judge_labels
        res.definitions["_labels"] = (
            f"human+judge: people's labels (evidence spans grade 3, final human grades) and, for every passage no "
            f"person graded, the judge's grade (a question only the judge labeled is scored too); scored on "
            f"{j['n_passages']} judge label(s) from model "
            f"{_names(j['models'])} rubric sha {_names(j['rubric_shas'], 12)} calibration "
            f"{_names(j['calibration_ids'])}")
    else:
        res.definitions["_labels"] = "human: people's labels only (evidence spans grade 3, final human grades)"
    if used_rule:
        res.definitions["hit_rule"] = used_rule
        res.definitions["_units"] = units_line
    if scope:
        res.definitions["_scope"] = scope
    from golden_store.scoring.impl_sha import metric_impl_sha

    res.definitions["metric_impl_sha"] = metric_impl_sha()
    return res
