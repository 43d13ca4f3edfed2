"""The judging pool (METHODOLOGY §3.6: pool across systems, not one): built from the imported
runs, its grading status per run, and its items a page at a time.

A pool is the union of every chosen run's top-k per query, de-duplicated by span; extending it
with a new run adds only what is not there yet. A retired run (:func:`golden_store.live.runs.set_retired`)
adds nothing to a new pool and leaves the coverage lists; the pool items it contributed stay
recorded. The runs themselves (import, storage, retiring) are :mod:`golden_store.live.runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.textin import shown
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow
from golden_store.live.runs import active_systems


@dataclass
class PoolReport:
    queries: int
    pool_size: int
    new_items: int
    new_unjudged: int
    per_run: dict[str, dict[str, float]]

    def as_dict(self) -> dict:
        return {"queries": self.queries, "pool_size": self.pool_size, "new_items": self.new_items,
                "new_unjudged": self.new_unjudged, "per_run": self.per_run}


# Run rows per step of a pool build: each step works on the queries whose top-k rows add
# up to about this many, so its memory does not grow with the runs (issue 19: 20 runs x 5,000
# queries x depth 100 took 3.0 GB in one statement over every row).
POOL_STEP_ROWS = 400_000


def build_pool(store: Store, depth: int, *, systems: Sequence[str] | None = None, actor: str) -> PoolReport:
    """Add the union of the chosen runs' top-``depth`` per query to the pool (one
    transaction); report the pool and, per run, graded@depth (mean over its queries of
    the share of its top-``depth`` that carries at least one grade: the pool's grading
    progress, not the scorer's Judged@k, which also counts evidence; see
    :mod:`golden_store.scoring.health`).

    The work goes in steps of whole queries (about :data:`POOL_STEP_ROWS` run rows each),
    all in SQL: the new items, how many of them are unjudged, the pool sources (a run's
    best rank of each item) and the judged counts per run and query are computed in the
    database step by step, never loaded into Python, so memory stays bounded however many
    runs and queries there are; the items and sources written are those one statement over
    every row wrote (``tests/golden_store/test_pool_build.py``)."""
    if depth < 1:
        raise ValidationError("--depth must be at least 1.")
    known = [r[0] for r in store.read("SELECT system FROM runs ORDER BY system")]
    active = active_systems(store)
    chosen = list(systems) if systems else active
    missing = sorted(set(chosen) - set(known))
    if missing:
        raise NotFoundError(f"No imported run named {', '.join(map(repr, missing))}; known: {', '.join(known) or 'none'}.")
    retired = sorted(set(chosen) - set(active))
    if retired:
        raise ValidationError(f"Run(s) {', '.join(map(repr, retired))} are retired: a retired run adds nothing to a "
                              "pool. Restore it first, or leave it out.")
    if not chosen:
        raise ValidationError("No active runs: golden runs import FILE --system NAME first (retired runs are not "
                              "pooled)." if known else "No runs imported yet: golden runs import FILE --system NAME first.")
    now = utcnow()

    def tx(cur: Cursor) -> PoolReport:
        new_items = new_unjudged = 0
        judged_sum: dict[str, float] = {}
        judged_n: dict[str, int] = {}
        for lo, hi in _query_steps(cur, chosen, depth):
            step = _build_step(cur, chosen, depth, lo, hi, now, actor)
            new_items += step[0]
            new_unjudged += step[1]
            for system, total, n in step[2]:
                judged_sum[system] = judged_sum.get(system, 0.0) + float(total)
                judged_n[system] = judged_n.get(system, 0) + int(n)
        per_run = {system: {"graded_at_k": judged_sum[system] / judged_n[system], "k": depth}
                   for system in sorted(judged_n)}
        queries, size = cur.execute("SELECT count(DISTINCT query_id), count(*) FROM pool_items").fetchone()
        return PoolReport(int(queries), int(size), new_items, new_unjudged, per_run)

    return store.write(tx)


def _query_steps(cur: Cursor, chosen: list[str], depth: int) -> list[tuple[str, str]]:
    """(first, last) query id of each step: consecutive queries (in id order) whose top-``depth``
    rows in the chosen runs add up to about :data:`POOL_STEP_ROWS`."""
    counts = cur.execute("SELECT query_id, count(*) FROM run_results WHERE rank <= ? AND system IN "
                         "(SELECT unnest(?::VARCHAR[])) GROUP BY query_id ORDER BY query_id", [depth, chosen]).fetchall()
    steps: list[tuple[str, str]] = []
    first, rows = None, 0
    for qid, n in counts:
        if first is None:
            first = qid
        rows += int(n)
        if rows >= POOL_STEP_ROWS:
            steps.append((first, qid))
            first, rows = None, 0
    if first is not None:
        steps.append((first, counts[-1][0]))
    return steps


def _build_step(cur: Cursor, chosen: list[str], depth: int, lo: str, hi: str, now, actor: str
                ) -> tuple[int, int, list[tuple[str, float, int]]]:
    """One step of :func:`build_pool` over the queries ``lo``..``hi``: (new items, new items
    without a grade, per run (judged@depth summed over its queries, its queries))."""
    cur.execute("CREATE TEMP TABLE _top AS SELECT system, query_id, doc_id, start, \"end\", rank FROM run_results "
                "WHERE rank <= ? AND system IN (SELECT unnest(?::VARCHAR[])) AND query_id BETWEEN ? AND ?",
                [depth, chosen, lo, hi])
    try:
        judged = ("(SELECT query_id, doc_id, start, \"end\" FROM grade_item_state WHERE n_graded > 0 "
                  "AND query_id BETWEEN ? AND ?)")
        cur.execute("CREATE TEMP TABLE _new AS SELECT DISTINCT query_id, doc_id, start, \"end\" FROM _top t "
                    "ANTI JOIN (SELECT query_id, doc_id, start, \"end\" FROM pool_items WHERE query_id BETWEEN ? AND ?) p "
                    "USING (query_id, doc_id, start, \"end\")", [lo, hi])
        try:
            n_new, n_judged = cur.execute(
                f"SELECT count(*), count(g.query_id) FROM _new LEFT JOIN {judged} g "
                "USING (query_id, doc_id, start, \"end\")", [lo, hi]).fetchone()
            cur.execute("INSERT INTO pool_items SELECT query_id, doc_id, start, \"end\", ?, ?, ? FROM _new",
                        [depth, now, actor])
        finally:
            cur.execute("DROP TABLE _new")
        # each run's best rank of each item, for the (item, run) pairs not recorded yet
        cur.execute("INSERT INTO pool_sources SELECT t.query_id, t.doc_id, t.start, t.\"end\", t.system, min(t.rank) "
                    "FROM _top t ANTI JOIN (SELECT query_id, doc_id, start, \"end\", system FROM pool_sources "
                    "WHERE query_id BETWEEN ? AND ?) p USING (query_id, doc_id, start, \"end\", system) "
                    "GROUP BY t.query_id, t.doc_id, t.start, t.\"end\", t.system", [lo, hi])
        per_run = cur.execute(
            "SELECT system, sum(j), count(*) FROM (SELECT system, query_id, avg(CASE WHEN g.query_id IS NULL "
            f"THEN 0.0 ELSE 1.0 END) AS j FROM _top t LEFT JOIN {judged} g USING (query_id, doc_id, start, \"end\") "
            "GROUP BY system, query_id) t GROUP BY system", [lo, hi]).fetchall()
    finally:
        cur.execute("DROP TABLE _top")
    return int(n_new), int(n_new) - int(n_judged), [(r[0], float(r[1]), int(r[2])) for r in per_run]


POOL_RELEVANCE_LEVEL = 2  # pool status' AP and Bpref: relevant = final grade >= 2, as golden score --version


def pool_status(store: Store, *, k: int = 10, threshold: float = 0.8) -> dict:
    """Coverage of every active (not retired) run by the human grades (METHODOLOGY §3.6): graded@10
    and graded@k per run, the queries below ``threshold`` flagged, and Bpref beside AP (both
    grade >= 2): when AP sits far below Bpref, unjudged passages are dragging the run down
    (pooling bias), not bad retrieval.

    Everything is aggregated in SQL, one pass over the runs' results (issue 19: the per-run
    scorer passes took 17 s on every Runs & pool render at team scale), with the trec_eval
    conventions the scorer applies (``tests/golden_store/test_pool_status_sql.py`` checks the
    figures against it):

    - graded@k: the share of the results shown (at most k) that carry any grade, averaged
      over every query with a grade or a result (a judged query the run left out scores 0
      and counts); it is the scorer's Judged@k over
      the pooled passages with the human grades as the labels: an evidence span does not count
      (the pool's grading progress; ``golden score``'s Judged@10 is a scoring's label coverage);
    - AP and Bpref (relevant = final grade >= 2, ``relevance_level`` in the result: the level
      ``golden score --version`` uses): averaged over every answerable query with a final
      grade (the qrels); a query the run left out scores 0. Unanswerable queries
      (answerable = false) are left out of both means, as ``golden score`` leaves them out
      (retrieval measures are undefined for them; issue 36 item 5: their judged-0 passages
      made each a 0 in the mean), and listed in ``left_out["unanswerable"]``; ``ap_queries``
      is how many the means are over. Per query, from the run's rows
      that carry a final grade, in rank order: AP sums (relevant up to here) / position over
      the relevant rows, divided by the query's relevant count; Bpref sums 1 - min(judged
      non-relevant above, R) / min(R, N) over the relevant rows (1 with none above),
      divided by R. A passage a run repeats for a query counts at its first position."""
    out: dict = {"k": k, "threshold": threshold, "relevance_level": POOL_RELEVANCE_LEVEL, "ap_queries": 0,
                 "left_out": {"unanswerable": []}, "runs": {}}
    systems = active_systems(store)  # a retired run is kept in the history, not in the coverage list
    if not systems:
        return out
    with store.cursor() as cur:
        judged_q = sorted(r[0] for r in cur.execute(
            "SELECT DISTINCT query_id FROM grade_item_state WHERE n_graded > 0").fetchall())
        gold = cur.execute("SELECT DISTINCT f.query_id, coalesce(NOT q.answerable, false) FROM final_grades f "
                           "LEFT JOIN queries q USING (query_id)").fetchall()
        per = cur.execute(_POOL_STATUS_SQL, [systems, k, k]).df()
    gold_q = sorted(q for q, negative in gold if not negative)
    out["left_out"]["unanswerable"] = sorted(q for q, negative in gold if negative)
    out["ap_queries"] = len(gold_q)
    # per run, vectorized: a Python loop over 100 k (run, query) rows was a third of the call
    judged_idx = pd.Index(judged_q)
    gold_n = len(gold_q)
    by_system = dict(tuple(per.groupby("system", sort=False))) if len(per) else {}
    for system in systems:
        part = by_system.get(system, per.iloc[0:0])
        queries = pd.Index(part["query_id"])
        qids = queries.union(judged_idx)  # the scorer's query set: every query in the qrels
        at = {}
        for name, (j, n) in {"Judged@10": ("j10", "n10"), f"Judged@{k}": ("jk", "nk")}.items():
            shown = part[n].to_numpy(np.float64)
            vals = pd.Series(np.divide(part[j].to_numpy(np.float64), shown, out=np.zeros(len(part)),
                                       where=shown > 0), index=queries)
            at[name] = vals.reindex(qids, fill_value=0.0)  # a judged query the run left out scores 0
        low = sorted(at["Judged@10"].index[at["Judged@10"].to_numpy() < threshold])
        entry = {"queries": len(queries), "graded_at_10": float(at["Judged@10"].mean()) if len(qids) else 0.0,
                 f"graded_at_{k}": float(at[f"Judged@{k}"].mean()) if len(qids) else 0.0,
                 "queries_below_threshold": len(low), "below_threshold": low[:50]}
        if gold_n:
            for field_name in ("ap", "bpref"):
                # a gold query the run left out scores 0 (trec_eval -c): the sum over the
                # run's scored queries divided by every gold query
                entry[field_name] = float(part[field_name].sum(skipna=True)) / gold_n
        out["runs"][system] = entry
    return out


# One pass over the chosen runs' results: each row's position in its ranking, whether its
# item carries any grade, and its final grade (final_grades' rule - the lead's decision, else
# the value every current grade agrees on - read in one join of the two state tables instead
# of two joins, one of them on the view's UNION); then per (system, query) the judged@k counts
# and the AP / Bpref of the query (NULL where the query has no final grade or is unanswerable).
# A row's position is its rank: store_run, the one writer of run_results, numbers each query's results 1..n
# in ranking order (a window numbering them again cost a third of this query).
_POOL_STATUS_SQL = """
WITH r AS (
    SELECT system, query_id, doc_id, start, "end", rank AS pos
    FROM run_results WHERE system IN (SELECT unnest(?::VARCHAR[]))),
x AS (
    SELECT r.system, r.query_id, r.doc_id, r.start, r."end", r.pos, coalesce(i.judged, false) AS judged, i.grade
    FROM r
    LEFT JOIN (SELECT query_id, doc_id, start, "end", coalesce(i.n_graded, 0) > 0 AS judged,
                      coalesce(a.grade, CASE WHEN i.n_distinct = 1 THEN i.grade END) AS grade
               FROM grade_item_state i FULL JOIN adjudication_state a USING (query_id, doc_id, start, "end")) i
        USING (query_id, doc_id, start, "end")),
cov AS (
    SELECT system, query_id, count(*) FILTER (WHERE pos <= 10) AS n10,
           count(*) FILTER (WHERE pos <= 10 AND judged) AS j10,
           count(*) FILTER (WHERE pos <= ?) AS nk,
           count(*) FILTER (WHERE pos <= ? AND judged) AS jk
    FROM x GROUP BY system, query_id),
q AS (
    SELECT query_id, sum(CASE WHEN grade >= 2 THEN 1 ELSE 0 END) AS n_rel,
           sum(CASE WHEN grade >= 0 AND grade < 2 THEN 1 ELSE 0 END) AS n_non
    FROM final_grades
    WHERE query_id NOT IN (SELECT query_id FROM queries WHERE NOT answerable)
    GROUP BY query_id),
h AS (
    SELECT system, query_id, min(pos) AS pos, min(grade) AS grade
    FROM x WHERE grade IS NOT NULL GROUP BY system, query_id, doc_id, start, "end"),
w AS (
    SELECT system, query_id, pos, grade,
           sum(CASE WHEN grade >= 2 THEN 1 ELSE 0 END) OVER win AS rel_upto,
           sum(CASE WHEN grade >= 0 AND grade < 2 THEN 1 ELSE 0 END) OVER win AS non_upto
    FROM h WINDOW win AS (PARTITION BY system, query_id ORDER BY pos ROWS UNBOUNDED PRECEDING)),
s AS (
    SELECT w.system, w.query_id,
           sum(CASE WHEN w.grade >= 2 THEN CAST(w.rel_upto AS DOUBLE) / w.pos ELSE 0 END) AS ap_sum,
           sum(CASE WHEN w.grade < 2 THEN 0.0 WHEN w.non_upto = 0 THEN 1.0
                    ELSE 1.0 - CAST(least(w.non_upto, q.n_rel) AS DOUBLE) / least(q.n_rel, q.n_non) END) AS bpref_sum,
           min(q.n_rel) AS n_rel
    FROM w JOIN q USING (query_id) GROUP BY w.system, w.query_id)
SELECT cov.system, cov.query_id, cov.n10, cov.j10, cov.nk, cov.jk,
       CASE WHEN q.query_id IS NULL THEN NULL WHEN q.n_rel = 0 THEN 0.0
            ELSE coalesce(s.ap_sum, 0.0) / q.n_rel END AS ap,
       CASE WHEN q.query_id IS NULL THEN NULL WHEN q.n_rel = 0 THEN 0.0
            ELSE coalesce(s.bpref_sum, 0.0) / q.n_rel END AS bpref
FROM cov LEFT JOIN q USING (query_id) LEFT JOIN s USING (system, query_id)
"""


POOL_ITEM_STATUSES = ("any", "unjudged", "graded", "disputed", "final")


def pool_items_page(store: Store, *, query_prefix: str = "", system: str | None = None, status: str = "any",
                    limit: int = 50, offset: int = 0) -> tuple[int, pd.DataFrame]:
    """(how many pool items match, one page of them) filtered and paged in SQL (issue 19:
    300 k pool items at team scale; a page reads ``limit`` rows, never the pool).

    Filters: ``query_prefix`` (query ids starting with it), ``system`` (items that run put in
    the pool), ``status``: ``unjudged`` (no current grade), ``graded`` (at least one),
    ``disputed`` (graders disagree), ``final`` (an agreed or adjudicated final grade).
    Rows in (query, document, span) order, with the graders' count, the final grade where
    there is one, and the runs that pooled the item with their best rank (read for the
    page's items only)."""
    if status not in POOL_ITEM_STATUSES:
        raise ValidationError(f"Unknown pool item status {shown(status)}; use one of {', '.join(POOL_ITEM_STATUSES)}.")
    where, params = ["left(p.query_id, length(?)) = ?"], [query_prefix or "", query_prefix or ""]
    if system:
        where.append("EXISTS (SELECT 1 FROM pool_sources s WHERE s.query_id = p.query_id AND s.doc_id = p.doc_id "
                     "AND s.start = p.start AND s.\"end\" = p.\"end\" AND s.system = ?)")
        params.append(system)
    where.append({"any": "TRUE", "unjudged": "coalesce(g.n_graded, 0) = 0", "graded": "g.n_graded > 0",
                  "disputed": "g.n_distinct > 1", "final": "f.grade IS NOT NULL"}[status])
    # the grading state is joined only where the status filter needs it: the count and the
    # page's choice then read the pool alone, and the page's rows get their state afterwards
    # (at 360 k pool items, joining every item to pick 50 was most of the call)
    joins = {"any": "", "final": " LEFT JOIN final_grades f USING (query_id, doc_id, start, \"end\")"}.get(
        status, " LEFT JOIN grade_item_state g USING (query_id, doc_id, start, \"end\")")
    base = f"FROM pool_items p{joins} WHERE " + " AND ".join(where)
    with store.cursor() as cur:
        total = int(cur.execute(f"SELECT count(*) {base}", params).fetchone()[0])
        page = cur.execute(
            "SELECT p.query_id, p.doc_id, p.start, p.\"end\", p.depth, p.added_at, p.added_by, "
            "coalesce(g.n_graded, 0) AS graders, f.grade AS final_grade FROM ("
            f"SELECT p.query_id, p.doc_id, p.start, p.\"end\", p.depth, p.added_at, p.added_by {base} "
            "ORDER BY p.query_id, p.doc_id, p.start, p.\"end\" LIMIT ? OFFSET ?) p "
            "LEFT JOIN grade_item_state g USING (query_id, doc_id, start, \"end\") "
            "LEFT JOIN final_grades f USING (query_id, doc_id, start, \"end\") "
            "ORDER BY p.query_id, p.doc_id, p.start, p.\"end\"",
            [*params, max(0, int(limit)), max(0, int(offset))]).df()
        sources = cur.execute(
            "SELECT s.query_id, s.doc_id, s.start, s.\"end\", s.system, s.rank FROM pool_sources s "
            "WHERE s.query_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY s.system",
            [sorted(set(page["query_id"]))]).fetchall() if len(page) else []
    runs_of: dict[tuple, list[str]] = {}
    for q, d, st, en, system_name, rank in sources:
        runs_of.setdefault((q, d, int(st), int(en)), []).append(f"{system_name}@{int(rank)}")
    page["runs"] = [", ".join(runs_of.get((q, d, int(st), int(en)), []))
                    for q, d, st, en in zip(page["query_id"], page["doc_id"], page["start"], page["end"])]
    return total, page
