"""Score a run against a frozen version and record it as an evaluation, role-checked: what
``golden score --version V --run FILE --record ID`` does, for callers that are not the CLI
(the HTTP API's ``POST /api/v1/evaluations``, issue 28). The CLI keeps its own path (it also
resolves judged measures and the checkout's git sha); this one records deterministic
measures with the provenance the caller gives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotator.versions import versioning
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import Store


@dataclass(frozen=True)
class Recorded:
    evaluation_id: str
    trial: int
    rows: int
    n_queries: int
    means: dict[str, float]
    labels: str


def score_and_record(store: Store, user: User, *, evaluation_id: str, version: str, run_path: str | Path,
                     measures: list[str], fmt: str | None = None, name: str | None = None,
                     system: str | None = None, git_sha: str | None = None, config_sha: str | None = None,
                     trial: int = 0, replace: bool = False, labels: str = "human",
                     hit_rule: str | None = None) -> Recorded:
    """Recording results is an engineer's act (IMPORT_RUNS: the system's numbers enter the
    store beside its runs). All or nothing (``record_evaluation`` is one transaction).
    ``name``: what messages call the run file (an upload's own name)."""
    require(user, Permission.IMPORT_RUNS)
    if not measures:
        raise GoldenError("Name at least one measure to record (e.g. nDCG@10).")
    from golden_store.live.results import record_evaluation, scored_definitions
    from golden_store.scoring import evaluate, read_run
    from golden_store.versions import load_version
    from golden_store.versions.format import validate_name

    # a name of this studio's versions only: a URL or path (file://, s3://) would score against
    # any folder or bucket the server can read, with its credentials (probe E1)
    try:
        validate_name(version)
    except GoldenError:
        raise ValidationError(f"version {version!r}: give the name of one of this studio's frozen versions (as "
                          f"golden versions lists it, e.g. golden.v3), not a path or URL.") from None
    gs = load_version(version, versioning.versions_dir(store))
    label = name or str(run_path)
    fmt = fmt or ("jsonl" if label.lower().endswith(".jsonl") else "trec")
    run: Any
    if fmt == "jsonl":
        from golden_store.corpus.passage_runs import read_version_passages

        rows = read_version_passages(gs, run_path).rows
        run = rows.assign(score=-rows["rank"].astype(float))[["query_id", "doc_id", "start", "end", "score"]]
        res = evaluate(gs, run, measures, hit_rule=hit_rule, labels=labels)
    else:
        if hit_rule:
            raise ValidationError("hit_rule applies to a passage run (JSONL); a TREC run names whole documents: "
                                  "leave hit_rule out, or send the run as JSONL passages.")
        run = read_run(run_path)
        res = evaluate(gs, run, measures, labels=labels)
    n = record_evaluation(store, evaluation_id, res.per_query, dataset_version=version, strata=gs.strata,
                          corpus_digest=gs.manifest.get("corpus_digest"), config_sha=config_sha, system=system,
                          git_sha=git_sha, trial=trial,
                          judged_fraction=res.judged.per_query if res.judged is not None else None,
                          replace=replace, labels=res.labels or "human", **scored_definitions(res, run))
    return Recorded(evaluation_id, trial, n, res.n_queries, {m: float(res.mean[m]) for m in res.measures},
                    res.labels or "human")
