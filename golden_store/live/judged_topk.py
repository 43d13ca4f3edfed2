"""What a system's top k holds, label by label, for correcting the relevance judge's figures by
the pool's standing human sample (issue 40 item 7): the SQL side of
:mod:`annotator.evaluation.judge_corrected_retrieval`.

An item here is one result of a system's run at rank <= k (a passage span, or a whole document
for a TREC run), keyed as the pool keys it. Only active runs (not retired) are read.
"""

from __future__ import annotations

from typing import Any

from golden_store.db.store import Store

_TOPK = (
    "FROM run_results r JOIN queries q ON q.query_id = r.query_id "
    "LEFT JOIN judge_item_state s ON s.query_id = r.query_id AND s.doc_id = r.doc_id AND s.start = r.start "
    "AND s.\"end\" = r.\"end\" "
    "LEFT JOIN final_grades f ON f.query_id = r.query_id AND f.doc_id = r.doc_id AND f.start = r.start "
    "AND f.\"end\" = r.\"end\" "
    "WHERE r.rank <= ? AND (? IS NULL OR r.system = ?) "
    "AND r.system NOT IN (SELECT system FROM retired_runs) "
)


def judge_labeled(store: Store, k: int, system: str | None = None) -> list[dict[str, Any]]:
    """Each item of a system's top ``k`` whose latest judge decision is a label that stands
    (route ``judge``) or went to the standing sample (route ``sample``): ``system, query_id,
    doc_id, start, end, rank, stratum, judge_grade, route, job_id, sample_share`` and
    ``human_grade``: the people's final grade (adjudicated, else agreed) of a *sampled* item,
    None for the rest (a person's grade of an item the judge's label stands on is not a draw
    of the sample, so it is not read here)."""
    return store.read_dicts(
        "SELECT r.system, r.query_id, r.doc_id, r.start, r.\"end\", r.rank, coalesce(q.stratum, 'unassigned') "
        "AS stratum, s.grade AS judge_grade, s.route, s.job_id, j.sample_share, "
        "CASE WHEN s.route = 'sample' THEN CAST(f.grade AS INTEGER) END AS human_grade "
        "FROM run_results r JOIN queries q ON q.query_id = r.query_id "
        "JOIN judge_item_state s ON s.query_id = r.query_id AND s.doc_id = r.doc_id AND s.start = r.start "
        "AND s.\"end\" = r.\"end\" JOIN judge_jobs j ON j.job_id = s.job_id "
        "LEFT JOIN final_grades f ON f.query_id = r.query_id AND f.doc_id = r.doc_id AND f.start = r.start "
        "AND f.\"end\" = r.\"end\" "
        "WHERE r.rank <= ? AND (? IS NULL OR r.system = ?) AND s.outcome = 'labeled' "
        "AND r.system NOT IN (SELECT system FROM retired_runs) "
        "ORDER BY r.system, r.query_id, r.rank", [k, system, system])


def topk_counts(store: Store, k: int, system: str | None = None) -> dict[str, dict[str, int]]:
    """Per active system, its top ``k`` results by who labels them: ``results`` (all),
    ``judge_labeled`` (the judge's label stands or is in the standing sample),
    ``people_only`` (people graded it, no judge label stands) and ``unlabeled``."""
    rows = store.read(
        "SELECT r.system, count(*), count(*) FILTER (WHERE s.outcome = 'labeled'), "
        "count(*) FILTER (WHERE (s.outcome IS NULL OR s.outcome <> 'labeled') AND f.grade IS NOT NULL), "
        "count(*) FILTER (WHERE (s.outcome IS NULL OR s.outcome <> 'labeled') AND f.grade IS NULL) "
        + _TOPK + "GROUP BY r.system ORDER BY r.system", [k, system, system])
    keys = ("results", "judge_labeled", "people_only", "unlabeled")
    return {str(r[0]): {key: int(v or 0) for key, v in zip(keys, r[1:])} for r in rows}
