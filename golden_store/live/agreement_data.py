"""The rows agreement is computed from (METHODOLOGY §3.7): every annotator's current grade
with its stratum, round and time; the derived gold labels; each person's current evidence
spans. Only reads; the math is in ``golden_store.scoring.agreement``.

At team scale (millions of grade events) the Agreement page cannot pull every label into
pandas on each visit (issue 19), so :func:`aggregates` hands out what the figures are made
of instead: per-pair confusion counts (GROUP BY annotator pair and grade pair), per-unit
grade counts for α, per-annotator grade counts, and annotator × gold counts. A few thousand
rows instead of millions; the per-row frames stay for the freeze manifest and references.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import pandas as pd

from golden_store.db.store import Store

if TYPE_CHECKING:
    from golden_store.db.postgres import PgCursor

# An item's key in the agreement frames: a 64-bit hash of (query, doc, start, end), much
# cheaper to build, group and pivot than the concatenated string; a collision among even
# millions of items has probability ~1e-7 and would only merge two items' agreement counts.
UNIT = "hash({t}.query_id, {t}.doc_id, {t}.start, {t}.\"end\")"


def grade_rows(store: Store) -> pd.DataFrame:
    """One row per (item, annotator): unit key, actor, grade, stratum, round_id, created_at."""
    return store.df(
        f"SELECT {UNIT.format(t='g')} AS unit, g.query_id, "
        "g.actor, g.grade, q.stratum, g.round_id, g.created_at "
        "FROM current_grades g JOIN queries q USING (query_id) ORDER BY unit, g.actor")


def gold_rows(store: Store) -> pd.DataFrame:
    """The derived gold label per item (adjudicated, else unanimous) with its basis."""
    return store.df(
        f"SELECT {UNIT.format(t='f')} AS unit, f.grade, f.basis "
        "FROM final_grades f SEMI JOIN queries USING (query_id)")


def evidence_rows(store: Store) -> pd.DataFrame:
    """Current evidence spans with who placed them, and each question's answerable flag."""
    return store.df(
        "SELECT e.query_id, e.actor, e.doc_id, e.start, e.\"end\", q.answerable, q.stratum "
        "FROM current_evidence e JOIN queries q USING (query_id) ORDER BY e.query_id, e.actor")


@dataclass
class Aggregates:
    """What every agreement figure is computed from, aggregated in SQL over the rows
    :func:`grade_rows` would return (``round_id`` given: that round's labels only).

    ``units``: one row per unit two or more annotators graded, ascending by unit key (the
    order the per-row computation met them in, so α sums in the same order): unit, stratum,
    period (week of the unit's latest label), c0..c3 (annotators per grade).
    ``round_units``: the same per (round, unit) over labels given in that round.
    ``pairs``: stratum, period, a, b (a < b), ga, gb, n: items a graded ga and b graded gb.
    ``round_pairs``: round_id, a, b, ga, gb, n over pairs of labels of the same round.
    ``grades``: actor, grade, n. ``gold``: actor, grade, gold, adjudicated, n.
    ``actors``: everyone with a grade, sorted."""

    units: pd.DataFrame
    round_units: pd.DataFrame
    pairs: pd.DataFrame
    round_pairs: pd.DataFrame
    grades: pd.DataFrame
    gold: pd.DataFrame
    actors: list[str]


_COUNTS = ", ".join(f"count(*) FILTER (WHERE grade = {g})::BIGINT AS c{g}" for g in range(4))


# The live sources of the aggregates: every current label with its question's stratum, and
# the derived gold per item (live questions only).
_LIVE_GRADES = ("(SELECT g.query_id, g.doc_id, g.start, g.\"end\", g.actor, g.grade, q.stratum, g.round_id, "
                "g.created_at FROM current_grades g JOIN queries q USING (query_id))")
_LIVE_GOLD = ("(SELECT f.query_id, f.doc_id, f.start, f.\"end\", f.grade, f.basis FROM final_grades f "
              "SEMI JOIN queries USING (query_id))")


def aggregates(store: Store, round_id: str | None = None) -> Aggregates:
    """:class:`Aggregates` in one read: the current labels are evaluated once into a
    connection-local temporary table, and every aggregate reads that.

    On PostgreSQL the labels and gold rows are read (one snapshot) as Arrow into an
    in-process DuckDB, which computes the same aggregates: the pair self-join over every
    annotator's labels ran 13x slower as SQL on PostgreSQL (20 annotators x 20,000 items:
    about 20 s against 1.5 s, scripts/bench_team_store.py), and the unit keys are DuckDB's
    hash on both engines, so the figures are the same to the last bit."""
    with store.cursor() as cur:
        if store.engine == "postgresql":
            pg = cast("PgCursor", cur)
            pg.execute_native("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")  # both reads: one snapshot
            try:
                return aggregates_tx(cur, store.engine, round_id)
            finally:
                pg.execute_native("COMMIT")
        return aggregates_tx(cur, store.engine, round_id)


def aggregates_tx(cur, engine: str, round_id: str | None = None) -> Aggregates:
    """:func:`aggregates` inside the caller's transaction (a freeze reads them in its own
    snapshot); ``engine``: the store's (``Store.engine``)."""
    if engine == "postgresql":
        return _aggregates_in_process(cur, round_id)
    return _aggregates_tx(cur, _LIVE_GRADES, _LIVE_GOLD, round_id)


def _aggregates_in_process(cur, round_id: str | None) -> Aggregates:
    import duckdb

    grades = cur.copy_arrow(f"SELECT * FROM {_LIVE_GRADES} g WHERE ?::VARCHAR IS NULL OR g.round_id = ?",
                            [round_id, round_id])
    gold = cur.copy_arrow(f"SELECT * FROM {_LIVE_GOLD} f")
    con = duckdb.connect()
    try:
        con.register("_pg_grades", grades)
        con.register("_pg_gold", gold)
        return _aggregates_tx(con, "_pg_grades", "_pg_gold", None)
    finally:
        con.close()


def _aggregates_tx(cur, grades_src: str, gold_src: str, round_id: str | None) -> Aggregates:
    """The aggregates over ``grades_src`` (query_id, doc_id, start, end, actor, grade,
    stratum, round_id, created_at) and ``gold_src`` (query_id, doc_id, start, end, grade,
    basis): a live store's views, or the same rows read into an in-process DuckDB."""
    cur.execute(
        "CREATE TEMP TABLE _agr AS "
        f"SELECT {UNIT.format(t='g')} AS unit, g.actor, g.grade::INTEGER AS grade, g.stratum, g.round_id, "
        f"g.created_at FROM {grades_src} g WHERE ?::VARCHAR IS NULL OR g.round_id = ?", [round_id, round_id])
    try:
        units = cur.execute(
            "SELECT unit, any_value(stratum) AS stratum, "
            "date_trunc('week', max(created_at))::TIMESTAMP AS period, "
            f"{_COUNTS} FROM _agr GROUP BY unit HAVING count(*) >= 2 ORDER BY unit").df()
        round_units = cur.execute(
            f"SELECT round_id, unit, {_COUNTS} FROM _agr WHERE round_id IS NOT NULL "
            "GROUP BY round_id, unit HAVING count(*) >= 2 ORDER BY round_id, unit").df()
        pairs = cur.execute(
            "WITH u AS (SELECT unit, date_trunc('week', max(created_at))::TIMESTAMP AS period FROM _agr "
            "GROUP BY unit HAVING count(*) >= 2) "
            "SELECT a.stratum, u.period, a.actor AS a, b.actor AS b, a.grade AS ga, b.grade AS gb, "
            "count(*)::BIGINT AS n FROM u JOIN _agr a USING (unit) JOIN _agr b ON b.unit = a.unit "
            "AND a.actor < b.actor GROUP BY ALL").df()
        round_pairs = cur.execute(
            "SELECT a.round_id, a.actor AS a, b.actor AS b, a.grade AS ga, b.grade AS gb, count(*)::BIGINT AS n "
            "FROM _agr a JOIN _agr b ON b.unit = a.unit AND b.round_id = a.round_id AND a.actor < b.actor "
            "GROUP BY ALL").df()
        grades = cur.execute("SELECT actor, grade, count(*)::BIGINT AS n FROM _agr GROUP BY ALL").df()
        gold = cur.execute(
            f"WITH f AS (SELECT {UNIT.format(t='f')} AS unit, f.grade::INTEGER AS gold, "
            f"f.basis = 'adjudicated' AS adjudicated FROM {gold_src} f) "
            "SELECT r.actor, r.grade, f.gold, f.adjudicated, count(*)::BIGINT AS n "
            "FROM _agr r JOIN f USING (unit) GROUP BY ALL").df()
        actors = [r[0] for r in cur.execute("SELECT DISTINCT actor FROM _agr ORDER BY actor").fetchall()]
    finally:
        cur.execute("DROP TABLE IF EXISTS _agr")
    return Aggregates(units, round_units, pairs, round_pairs, grades, gold, actors)
