"""Evaluation results (METHODOLOGY §14.4): per-query scores of recorded evaluations in the store,
exportable to Parquet, compared pairwise with the bootstrap.

An *evaluation* is one scoring of a system against a frozen version, recorded under an
``evaluation_id`` (METHODOLOGY's ``run_id``; renamed so that "run" means only a system's ranked
results, ``golden_store.runs``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd

from golden_store.errors import NotFoundError, ValidationError
from golden_store.scoring.impl_sha import metric_impl_sha, scorer_sources  # noqa: F401 (re-exported)
from golden_store.store import Store, utcnow
from golden_store.system_names import check_system_name


def record_evaluation(store: Store, evaluation_id: str, per_query: pd.DataFrame, *, dataset_version: str,
               strata: dict[str, str] | None = None, corpus_digest: str | None = None,
               config_sha: str | None = None, system: str | None = None, git_sha: str | None = None,
               trial: int = 0, judged_fraction: pd.Series | None = None) -> int:
    """Store ``per_query`` (index query_id, one column per metric) as rows of evaluation ``evaluation_id``.
    Refuses an evaluation id that already has rows for this trial: results are never overwritten."""
    if not evaluation_id.strip():
        raise ValidationError("An evaluation needs an id (e.g. bm25-2026-12-02).")
    if system is not None:
        check_system_name(system)
    long = per_query.rename_axis("query_id").reset_index().melt(id_vars="query_id", var_name="metric",
                                                                value_name="value")
    long["stratum"] = long["query_id"].map(strata or {})
    long["judged_fraction"] = long["query_id"].map(judged_fraction) if judged_fraction is not None else None
    now, impl = utcnow(), metric_impl_sha()

    def run(cur: duckdb.DuckDBPyConnection) -> int:
        if cur.execute("SELECT 1 FROM eval_results WHERE evaluation_id = ? AND trial = ? LIMIT 1", [evaluation_id, trial]).fetchone():
            raise ValidationError(f"Evaluation {evaluation_id!r} (trial {trial}) is already recorded; results are never "
                                  f"overwritten. Use a new evaluation id.")
        cur.register("_res", long)
        cur.execute(
            "INSERT INTO eval_results (evaluation_id, ts, system, git_sha, dataset_version, corpus_digest, config_sha,"
            " metric_impl_sha, query_id, stratum, trial, metric, value, judged_fraction)"
            " SELECT ?, ?, ?, ?, ?, ?, ?, ?, query_id, stratum, ?, metric, value, judged_fraction FROM _res",
            [evaluation_id, now, system, git_sha, dataset_version, corpus_digest, config_sha, impl, trial])
        cur.unregister("_res")
        return len(long)

    return store.write(run)


def list_evaluations(store: Store) -> pd.DataFrame:
    return store.df(
        "SELECT evaluation_id, min(ts) AS ts, any_value(system) AS system, any_value(dataset_version) AS dataset_version,"
        " count(DISTINCT query_id) AS queries, string_agg(DISTINCT metric, ', ' ORDER BY metric) AS metrics,"
        " count(DISTINCT trial) AS trials FROM eval_results GROUP BY evaluation_id ORDER BY ts DESC"
    )


def evaluation_frame(store: Store, evaluation_id: str) -> pd.DataFrame:
    """Per (query, metric) mean over trials, with stratum and the evaluation's provenance."""
    df = store.df(
        "SELECT query_id, any_value(stratum) AS stratum, metric, avg(value) AS value,"
        " any_value(dataset_version) AS dataset_version, any_value(metric_impl_sha) AS metric_impl_sha"
        " FROM eval_results WHERE evaluation_id = ? GROUP BY query_id, metric", [evaluation_id])
    if df.empty:
        raise NotFoundError(f"No recorded evaluation {evaluation_id!r}; record one with golden score ... --record EVALUATION_ID.")
    return df


def evaluation_summaries(store: Store) -> pd.DataFrame:
    """One row per recorded evaluation, newest first: provenance, size, and the judged@k health
    of its rows (METHODOLOGY §3.6): ``judged_fraction`` the mean over the rows that carry one,
    NULL when none does (recorded before the column was filled); ``judged_rows`` of ``n_rows``."""
    return store.df(
        "SELECT evaluation_id, min(ts) AS ts, any_value(system) AS system, any_value(dataset_version) AS dataset_version,"
        " string_agg(DISTINCT metric_impl_sha, ', ' ORDER BY metric_impl_sha) AS metric_impl_sha,"
        " count(DISTINCT query_id) AS queries, count(DISTINCT trial) AS trials,"
        " avg(judged_fraction) AS judged_fraction, count(judged_fraction) AS judged_rows, count(*) AS n_rows"
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


def export_results(store: Store, out: Path) -> int:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    target = str(out).replace("'", "''")
    with store.cursor() as cur:
        cur.execute(f"COPY (SELECT * FROM eval_results ORDER BY evaluation_id, trial, query_id, metric) TO '{target}' "
                    "(FORMAT parquet)")
    return int(store.read_one("SELECT count(*) FROM eval_results")[0])
