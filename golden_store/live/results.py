"""Evaluation results (METHODOLOGY §14.4): per-query scores of recorded evaluations in the store,
exportable to Parquet, compared pairwise with the bootstrap.

An *evaluation* is one scoring of a system against a frozen version, recorded under an
``evaluation_id`` (METHODOLOGY's ``run_id``; renamed so that "run" means only a system's ranked
results, ``golden_store.live.runs``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from golden_store.db.cursor import Cursor
import numpy as np
import pandas as pd

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.system_names import check_system_name
from golden_store.db.store import Store, utcnow
from golden_store.live import webhooks
from golden_store.scoring.impl_sha import metric_impl_sha, scorer_sources  # noqa: F401 (re-exported)


LABEL_SETS = ("human", "human+judge")
# a row's label set: NULL in rows recorded before eval_results.labels existed, which were human
LABELS_OF_ROW = "coalesce(labels, 'human')"
RUN_LEVELS = ("document", "passage", "answer")
# an answer evaluation scores a system's answers, not a ranking: no hit rule, no depth
ANSWER_LEVEL = "answer"
# the definitions a number was scored under (schema 24), recorded with every row; run_level NULL:
# recorded before they were kept (see record_evaluation)
DEFINITION_COLUMNS = ("run_level", "hit_rule", "run_depth", "label_judge_models", "label_rubric_shas")


def run_depth(run: pd.DataFrame, query_ids: Iterable[str], *, max_docs: int | None = None) -> int:
    """The retrieval depth of a run as scored: the most results any of ``query_ids`` (the
    scored questions) has in ``run`` (one row per ranked result, column ``query_id``), capped
    at ``max_docs`` (trec_eval's ``-M``) when given. Rows of questions that were not scored
    (not in the labels, another tier) do not count; 0 when no scored question has a result."""
    keep = pd.Index(pd.unique(pd.Series(list(query_ids), dtype=object)))
    counts = run["query_id"].astype(str).value_counts()
    counts = counts[counts.index.isin(keep)]
    depth = int(counts.max()) if len(counts) else 0
    return min(depth, int(max_docs)) if max_docs is not None else depth


def scored_definitions(res, run: pd.DataFrame) -> dict:
    """:func:`record_evaluation`'s definition keywords for a frozen-version scoring (the
    ``EvalResult`` of ``golden_store.scoring.evaluate``) and the run frame it scored: the run
    level and hit rule (a passage run's result carries one), the depth (:func:`run_depth`
    over the scored questions) and, with ``human+judge`` labels, the models and rubric shas of
    the judge labels used."""
    rule = res.definitions.get("hit_rule")
    out: dict = {"run_level": "passage" if rule else "document", "hit_rule": rule or None,
                 "run_depth": run_depth(run, res.per_query.index)}
    if (res.labels or "human") != "human":
        j = res.judge_labels or {}
        out["label_judge_models"] = list(j.get("models", []))
        out["label_rubric_shas"] = list(j.get("rubric_shas", []))
    return out


def _check_definitions(labels: str, run_level: str | None, hit_rule: str | None, depth: int | None,
                       judge_models: list[str] | None, rubric_shas: list[str] | None) -> None:
    if run_level is None:
        if any(v is not None for v in (hit_rule, depth, judge_models, rubric_shas)):
            raise ValidationError("A hit rule, depth or label judge was given without the run level ('document' or "
                                  "'passage'): record the definitions together (scored_definitions).")
        return
    if run_level not in RUN_LEVELS:
        raise ValidationError(f"Unknown run level {run_level!r}: a run is a 'document' run (TREC) or a 'passage' "
                              f"run (JSONL), or the evaluation is of 'answer's.")
    if run_level == ANSWER_LEVEL:
        if hit_rule or depth is not None:
            raise ValidationError("An answer evaluation scores answers, not a ranking: it has no hit rule and no "
                                  "retrieval depth.")
    elif (run_level == "passage") != bool(hit_rule):
        raise ValidationError("A passage run is scored through a hit rule and a document run through none: give "
                              "hit_rule exactly when run_level is 'passage'.")
    elif isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValidationError(f"run_depth is the most results a scored question had in the run, a whole number "
                              f">= 0 (got {depth!r}).")
    judged = labels != "human"
    if judged != (judge_models is not None and rubric_shas is not None):
        raise ValidationError("label_judge_models and label_rubric_shas name the judge labels a human+judge "
                              "scoring used (an empty list when it used none); human labels have none.")


def _joined(values: Iterable[str] | None) -> str | None:
    return None if values is None else ", ".join(sorted({str(v) for v in values}))


def record_evaluation(store: Store, evaluation_id: str, per_query: pd.DataFrame, *, dataset_version: str,
               strata: dict[str, str] | None = None, corpus_digest: str | None = None,
               config_sha: str | None = None, system: str | None = None, git_sha: str | None = None,
               trial: int = 0, judged_fraction: Mapping[str, float] | pd.Series | None = None,
               judge_model: str | None = None, rubric_sha: str | None = None,
               judged_metrics: Iterable[str] = (), replace: bool = False, labels: str = "human",
               run_level: str | None = None, hit_rule: str | None = None, run_depth: int | None = None,
               label_judge_models: Iterable[str] | None = None,
               label_rubric_shas: Iterable[str] | None = None) -> int:
    """Store ``per_query`` (index query_id, one column per metric) as rows of evaluation ``evaluation_id``,
    trial ``trial``, each row with its provenance (METHODOLOGY §14.3-14.4): ``git_sha``,
    ``config_sha``, ``metric_impl_sha`` (this code's), ``judged_fraction`` (the run's Judged@k of
    the row's query, §3.6), and for the metrics in ``judged_metrics`` (those a model judged) the
    ``judge_model`` and ``rubric_sha`` - both required then; deterministic metrics keep them NULL.

    All or nothing. Refuses an (evaluation id, trial) that already has rows - results are never
    overwritten - unless ``replace``, which swaps that trial's rows in one transaction. A new
    trial of an existing evaluation must be of the same dataset version and system (a repeat of
    the same evaluation, §10.8).

    ``labels``: which labels of the version the numbers are on, ``human`` or ``human+judge``
    (issue 27), kept in ``eval_results.labels`` (NULL in rows recorded before: human). The
    trials of one evaluation share it.

    The definitions the numbers were scored under (issue 36; :func:`scored_definitions` makes
    them from a scoring), kept with every row so two evaluations can be checked comparable:
    ``run_level`` ``document`` (TREC) or ``passage`` (JSONL); ``hit_rule``, a passage run's
    (None for a document run); ``run_depth`` (:func:`run_depth`); with ``human+judge`` labels,
    ``label_judge_models`` and ``label_rubric_shas``, the judge labels' models and rubric shas
    (kept sorted, ', '-joined; '' when none was used). Not ``judge_model``/``rubric_sha``: those
    name the judge of a *measure* (``judged_metrics``). Without ``run_level`` none is recorded
    (NULL: "not recorded"). A trial of an evaluation whose other trials recorded them must
    record the same."""
    if labels not in LABEL_SETS:
        raise ValidationError(f"Unknown label set {labels!r}: an evaluation is scored on {' or '.join(LABEL_SETS)} "
                              f"labels.")
    judge_models = None if label_judge_models is None else list(label_judge_models)
    label_rubrics = None if label_rubric_shas is None else list(label_rubric_shas)
    _check_definitions(labels, run_level, hit_rule, run_depth, judge_models, label_rubrics)
    definitions = (run_level, hit_rule or None, None if run_depth is None else int(run_depth), _joined(judge_models),
                   _joined(label_rubrics))
    if not evaluation_id.strip():
        raise ValidationError("An evaluation needs an id (e.g. bm25-2026-12-02).")
    if system is not None:
        check_system_name(system)
    if isinstance(trial, bool) or not isinstance(trial, (int, np.integer)) or trial < 0:
        raise ValidationError(f"A trial is a whole number >= 0 (got {trial!r}).")
    trial = int(trial)
    judged_metrics = set(judged_metrics)
    unknown = sorted(judged_metrics - set(per_query.columns))
    if unknown:
        raise ValidationError(f"Metric(s) said to be judged by a model are not among the scored ones: {', '.join(unknown)}.")
    if judged_metrics and not (judge_model and rubric_sha):
        raise ValidationError(f"{', '.join(sorted(judged_metrics))} is judged by a model: record its judge model id and "
                              f"rubric sha with it (methodology §14.3), or the number cannot be re-baselined.")
    if (judge_model or rubric_sha) and not judged_metrics:
        raise ValidationError("A judge model or rubric sha was given but no metric is judged by a model: name the "
                              "judged metrics (deterministic metrics keep judge_model and rubric_sha NULL).")
    long = per_query.rename_axis("query_id").reset_index().melt(id_vars="query_id", var_name="metric",
                                                                value_name="value")
    if run_level == ANSWER_LEVEL:  # a metric that does not apply to a question is no row, not a 0
        long = long.dropna(subset=["value"]).reset_index(drop=True)
    long["stratum"] = long["query_id"].map(strata or {})
    jf = long["query_id"].map(judged_fraction) if judged_fraction is not None else pd.Series(np.nan, index=long.index)
    long["judged_fraction"] = pd.to_numeric(jf, errors="coerce").astype(float)
    long["judged"] = long["metric"].isin(judged_metrics)
    now, impl = utcnow(), metric_impl_sha()

    def run(cur: Cursor) -> int:
        if cur.execute("SELECT 1 FROM eval_results WHERE evaluation_id = ? AND trial = ? LIMIT 1", [evaluation_id, trial]).fetchone():
            if not replace:
                raise ValidationError(
                    f"Evaluation {evaluation_id!r} (trial {trial}) is already recorded; results are never overwritten. "
                    f"Record a repeat as another trial (--trial K), use a new evaluation id, or replace this trial "
                    f"with --replace.")
        others = cur.execute(
            f"SELECT DISTINCT dataset_version, system, {LABELS_OF_ROW}, {', '.join(DEFINITION_COLUMNS)} "
            "FROM eval_results WHERE evaluation_id = ? AND trial <> ?", [evaluation_id, trial]).fetchall()
        for ds, sy, lb, *defs in others:
            if ds != dataset_version or (sy or None) != (system or None):
                raise ValidationError(
                    f"Evaluation {evaluation_id!r} has trials of dataset version {ds!r}, system {sy!r}; trial {trial} "
                    f"is of {dataset_version!r}, {system!r}. Trials are repeats of one evaluation: use a new "
                    f"evaluation id.")
            if lb != labels:
                raise ValidationError(
                    f"Evaluation {evaluation_id!r} has trials scored on {lb} labels; trial {trial} is on {labels} "
                    f"labels. Trials are repeats of one evaluation: use a new evaluation id.")
            if defs[0] is not None and run_level is not None and tuple(defs) != definitions:
                theirs, ours = (", ".join(f"{c} {v!r}" for c, v in zip(DEFINITION_COLUMNS, d) if v is not None)
                                for d in (defs, definitions))
                raise ValidationError(
                    f"Evaluation {evaluation_id!r} has trials scored with {theirs}; trial {trial} with {ours}. "
                    f"Trials are repeats of one evaluation: use a new evaluation id.")
        if replace:
            cur.execute("DELETE FROM eval_results WHERE evaluation_id = ? AND trial = ?", [evaluation_id, trial])
        cur.register("_res", long)
        cur.execute(
            "INSERT INTO eval_results (evaluation_id, ts, system, git_sha, dataset_version, corpus_digest, config_sha,"
            " judge_model, rubric_sha, metric_impl_sha, query_id, stratum, trial, metric, value, judged_fraction,"
            " labels, run_level, hit_rule, run_depth, label_judge_models, label_rubric_shas)"
            " SELECT ?, ?, ?, ?, ?, ?, ?, CASE WHEN judged THEN ? END, CASE WHEN judged THEN ? END, ?, query_id, stratum,"
            " ?, metric, value, judged_fraction, ?, ?, ?, CAST(? AS INTEGER), ?, ? FROM _res",
            [evaluation_id, now, system, git_sha, dataset_version, corpus_digest, config_sha, judge_model, rubric_sha,
             impl, trial, labels, *definitions])
        cur.unregister("_res")
        webhooks.emit_tx(cur, webhooks.new_event_id(), "evaluation.recorded", {
            "evaluation_id": evaluation_id, "version": dataset_version, "system": system, "trial": trial,
            "labels": labels, "means": {str(k): (None if v != v else float(v))
                                        for k, v in long.groupby("metric")["value"].mean().items()}}, actor=None)
        return len(long)

    return store.write(run)


def trial_rows(store: Store, evaluation_id: str) -> pd.DataFrame:
    """Every recorded row of one evaluation, trials apart (query_id, stratum, trial, metric,
    value), for :func:`golden_store.scoring.trials.trials_report` (METHODOLOGY §10.8)."""
    df = store.df("SELECT query_id, stratum, trial, metric, value FROM eval_results WHERE evaluation_id = ?"
                  " ORDER BY metric, query_id, trial", [evaluation_id])
    if df.empty:
        raise NotFoundError(f"No recorded evaluation {evaluation_id!r}; record one with golden score ... --record "
                            f"EVALUATION_ID [--trial K].")
    return df


def trial_provenance(store: Store, evaluation_id: str) -> list[dict]:
    """Per trial of one evaluation: when it was recorded and what produced it (git sha, config
    sha, metric implementation, judge model and rubric sha of its judged metrics, dataset,
    system), rows, the mean judged fraction of its rows and the labels it was scored on."""
    rows = store.read_dicts(
        "SELECT trial, min(ts) AS ts, any_value(system) AS system, any_value(dataset_version) AS dataset_version,"
        " string_agg(DISTINCT git_sha, ', ' ORDER BY git_sha) AS git_sha,"
        " string_agg(DISTINCT config_sha, ', ' ORDER BY config_sha) AS config_sha,"
        " string_agg(DISTINCT metric_impl_sha, ', ' ORDER BY metric_impl_sha) AS metric_impl_sha,"
        " string_agg(DISTINCT judge_model, ', ' ORDER BY judge_model) AS judge_model,"
        " string_agg(DISTINCT rubric_sha, ', ' ORDER BY rubric_sha) AS rubric_sha,"
        " avg(judged_fraction) AS judged_fraction, count(*) AS n_rows,"
        f" string_agg(DISTINCT {LABELS_OF_ROW}, ', ' ORDER BY {LABELS_OF_ROW}) AS labels"
        " FROM eval_results WHERE evaluation_id = ? GROUP BY trial ORDER BY trial", [evaluation_id])
    for r in rows:
        r["ts"] = r["ts"].isoformat() if r["ts"] is not None else None
        r["n_rows"] = int(r["n_rows"])
        r["judged_fraction"] = None if r["judged_fraction"] is None else float(r["judged_fraction"])
    return rows


def list_evaluations(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT evaluation_id, min(ts) AS ts, any_value(system) AS system, any_value(dataset_version) AS dataset_version,"
        " count(DISTINCT query_id) AS queries, string_agg(DISTINCT metric, ', ' ORDER BY metric) AS metrics,"
        " count(DISTINCT trial) AS trials,"
        f" string_agg(DISTINCT {LABELS_OF_ROW}, ', ' ORDER BY {LABELS_OF_ROW}) AS labels"
        " FROM eval_results GROUP BY evaluation_id ORDER BY ts DESC"
    )


def evaluation_frame(store: Store, evaluation_id: str) -> pd.DataFrame:
    """Per (query, metric) mean over trials, with stratum and the evaluation's provenance, and
    the definitions it was scored under (:data:`DEFINITION_COLUMNS`, the same on every row;
    ``run_depth`` a nullable integer). They are NULL when not recorded: in rows recorded before
    schema 24, and for the whole evaluation when such trials sit beside trials that recorded
    them (one value could not stand for all of its trials)."""
    df = store.df(
        "SELECT query_id, any_value(stratum) AS stratum, metric, avg(value) AS value,"
        " any_value(dataset_version) AS dataset_version, any_value(metric_impl_sha) AS metric_impl_sha,"
        f" any_value({LABELS_OF_ROW}) AS labels"
        " FROM eval_results WHERE evaluation_id = ? GROUP BY query_id, metric", [evaluation_id])
    if df.empty:
        raise NotFoundError(f"No recorded evaluation {evaluation_id!r}; record one with golden score ... --record EVALUATION_ID.")
    kinds = store.read(f"SELECT DISTINCT {', '.join(DEFINITION_COLUMNS)} FROM eval_results WHERE evaluation_id = ?",
                       [evaluation_id])
    one = kinds[0] if len(kinds) == 1 else (None,) * len(DEFINITION_COLUMNS)
    for col, value in zip(DEFINITION_COLUMNS, one):
        df[col] = pd.Series([value] * len(df), index=df.index, dtype="Int64" if col == "run_depth" else object)
    return df


def evaluation_summaries(store: Store) -> pd.DataFrame:
    """One row per recorded evaluation, newest first: provenance, size, and the judged@k health
    of its rows (METHODOLOGY §3.6): ``judged_fraction`` the mean over the rows that carry one,
    NULL when none does (recorded before the column was filled); ``judged_rows`` of ``n_rows``;
    ``run_level`` (``answer`` for answer evaluations, which have no ranking to be judged@k of)."""
    return store.df(
        "SELECT evaluation_id, min(ts) AS ts, any_value(system) AS system, any_value(dataset_version) AS dataset_version,"
        " string_agg(DISTINCT metric_impl_sha, ', ' ORDER BY metric_impl_sha) AS metric_impl_sha,"
        " count(DISTINCT query_id) AS queries, count(DISTINCT trial) AS trials,"
        " avg(judged_fraction) AS judged_fraction, count(judged_fraction) AS judged_rows, count(*) AS n_rows,"
        f" string_agg(DISTINCT {LABELS_OF_ROW}, ', ' ORDER BY {LABELS_OF_ROW}) AS labels,"
        " any_value(run_level) AS run_level"
        " FROM eval_results GROUP BY evaluation_id ORDER BY ts DESC, evaluation_id"
    )


def evaluation_means(store: Store) -> pd.DataFrame:
    """Mean per (evaluation, metric): each query's mean over trials, then the mean over queries."""
    return store.df(
        "SELECT evaluation_id, metric, avg(value) AS mean, count(*) AS queries FROM ("
        " SELECT evaluation_id, metric, query_id, avg(value) AS value FROM eval_results"
        " GROUP BY evaluation_id, metric, query_id) per_query GROUP BY evaluation_id, metric"
        " ORDER BY evaluation_id, metric"
    )


def evaluation_queries(store: Store, evaluation_id: str) -> tuple[list[str], set[str]]:
    """The dataset versions an evaluation was scored on and the query ids it recorded."""
    rows = store.read("SELECT DISTINCT dataset_version, query_id FROM eval_results WHERE evaluation_id = ?",
                      [evaluation_id])
    if not rows:
        raise NotFoundError(f"No recorded evaluation {evaluation_id!r}; record one with golden score ... --record "
                            f"EVALUATION_ID.")
    return sorted({v for v, _ in rows if v is not None}), {q for _, q in rows}


def export_results(store: Store, out: Path) -> int:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    target = str(out).replace("'", "''")
    with store.cursor() as cur:
        cur.execute(f"COPY (SELECT * FROM eval_results ORDER BY evaluation_id, trial, query_id, metric) TO '{target}' "
                    "(FORMAT parquet)")
    return int(store.read_row("SELECT count(*) FROM eval_results")[0])


# Every column of eval_results, in the table's order: what an export holds and an import reads.
RESULT_COLUMNS = ("evaluation_id", "ts", "system", "git_sha", "dataset_version", "corpus_digest", "config_sha",
                  "judge_model", "rubric_sha", "metric_impl_sha", "query_id", "stratum", "trial", "metric", "value",
                  "judged_fraction", "latency_ms", "tokens_in", "tokens_out", "cost_usd", "trace_id", "labels",
                  "run_level", "hit_rule", "run_depth", "label_judge_models", "label_rubric_shas")
# Columns an older export may lack (added to eval_results after it was written): read as NULL.
_LATER_COLUMNS = ("labels", *DEFINITION_COLUMNS)
_NOT_NULL = ("evaluation_id", "ts", "dataset_version", "metric_impl_sha", "query_id", "metric", "trial", "value")


def _results_frame(path: Path) -> pd.DataFrame:
    """A results export as eval_results rows, or one sentence saying what is wrong with it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = str(path)
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ValidationError(f"{name}: not a Parquet file ({str(exc).splitlines()[0]}); give the file golden results "
                              "export wrote.") from None
    cols = set(table.column_names)
    missing = [c for c in RESULT_COLUMNS if c not in cols and c not in _LATER_COLUMNS]
    extra = sorted(cols - set(RESULT_COLUMNS))
    if missing or extra:
        raise ValidationError(f"{name}: not a results export of this studio ("
                              + "; ".join(x for x in (f"no column {', '.join(missing)}" if missing else "",
                                                      f"unknown column {', '.join(extra)}" if extra else "") if x)
                              + "); give the file golden results export wrote.")
    df = table.to_pandas()
    for c in _LATER_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df[list(RESULT_COLUMNS)]
    for c in _NOT_NULL:
        empty = df[c].isna()
        if empty.any():
            raise ValidationError(f"{name} row {int(empty.to_numpy().nonzero()[0][0]) + 1}: field {c!r} is empty; a "
                                  "recorded result always has it; nothing was imported.")
    if df.duplicated(["evaluation_id", "query_id", "metric", "trial"]).any():
        row = int(df.duplicated(["evaluation_id", "query_id", "metric", "trial"]).to_numpy().nonzero()[0][0]) + 1
        raise ValidationError(f"{name} row {row}: the same evaluation, question, measure and trial again; nothing "
                              "was imported.")
    return df


def import_results(store: Store, path: Path) -> dict[str, list[str]]:
    """Read a ``golden results export`` Parquet file back into the store (issue 38 item 2), in
    one transaction: an evaluation the store does not hold is added with every row as it was
    recorded (provenance, definitions and time included); one it holds with exactly these
    rows is left alone (importing the same file again changes nothing); one it holds with
    other rows is refused, naming it - results are never overwritten (record_evaluation's
    rule). Returns ``{"added": [...], "unchanged": [...]}`` (evaluation ids)."""
    df = _results_frame(Path(path))
    key = ["query_id", "metric", "trial", "value"]

    def tx(cur: Cursor) -> dict[str, list[str]]:
        added, unchanged, clash = [], [], []
        for eid, rows in df.groupby("evaluation_id", sort=True):
            held = cur.execute("SELECT query_id, metric, trial, value FROM eval_results WHERE evaluation_id = ?",
                               [eid]).fetchall()
            if not held:
                added.append(str(eid))
            elif {tuple(r) for r in held} == set(rows[key].itertuples(index=False, name=None)):
                unchanged.append(str(eid))
            else:
                clash.append(str(eid))
        if clash:
            raise ValidationError(f"Results import refused: {len(clash)} evaluation(s) of {Path(path).name} are "
                                  f"recorded in this store with other results ({', '.join(clash[:5])}); results are "
                                  "never overwritten: import into another store, or record them under new ids. "
                                  "Nothing was imported.")
        new = df[df["evaluation_id"].isin(added)]
        if len(new):
            cur.register("_imported_results", new)
            cols = ", ".join(f'"{c}"' for c in RESULT_COLUMNS)
            cur.execute(f"INSERT INTO eval_results ({cols}) SELECT {cols} FROM _imported_results")
            cur.unregister("_imported_results")
        return {"added": added, "unchanged": unchanged}

    return store.write(tx)
