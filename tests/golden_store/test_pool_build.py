"""golden pool build in steps of queries, all in SQL (issue 19: one statement over every run
row and the new items and judged set loaded into Python took 3.0 GB at 20 runs x 5,000
queries x depth 100): the pool it writes and the report it gives equal the former
implementation's, kept here as the reference, on a generated store, on both engines."""

from __future__ import annotations

import pytest

from golden_store.live import pool
from golden_store.db.store import utcnow
from tests.golden_store import pool_gen


class _Rollback(Exception):
    def __init__(self, result) -> None:
        super().__init__("rolled back")
        self.result = result


def _pool(cur) -> tuple[list, list]:
    items = cur.execute("SELECT query_id, doc_id, start, \"end\", depth, added_by FROM pool_items "
                        "ORDER BY 1, 2, 3, 4").fetchall()
    sources = cur.execute("SELECT * FROM pool_sources ORDER BY 1, 2, 3, 4, 5").fetchall()
    return [tuple(r) for r in items], [tuple(r) for r in sources]


def _reference_tx(cur, depth: int, chosen: list[str], actor: str) -> dict:
    """The former build_pool's transaction (commit 2ec1b25), verbatim but for the report as a
    dict and the primary key migration 16 dropped: every chosen run's top-depth in one temp
    table, new items returned to Python, the judged items loaded into a Python set."""
    now = utcnow()
    cur.execute("CREATE TEMP TABLE _top AS SELECT system, query_id, doc_id, start, \"end\", rank "
                "FROM run_results WHERE rank <= ? AND system IN (SELECT unnest(?))", [depth, chosen])
    try:
        new_items = cur.execute(
            "INSERT INTO pool_items SELECT DISTINCT t.query_id, t.doc_id, t.start, t.\"end\", ?, ?, ? FROM _top t "
            "ANTI JOIN pool_items p USING (query_id, doc_id, start, \"end\") RETURNING query_id, doc_id, start, \"end\"",
            [depth, now, actor]).fetchall()
        # ON CONFLICT DO NOTHING on the primary key migration 16 dropped: the same as leaving out
        # the (item, run) pairs already recorded
        cur.execute("INSERT INTO pool_sources SELECT query_id, doc_id, start, \"end\", system, min(rank) FROM _top "
                    "ANTI JOIN pool_sources USING (query_id, doc_id, start, \"end\", system) GROUP BY ALL")
        judged = {tuple(r) for r in cur.execute(
            "SELECT query_id, doc_id, start, \"end\" FROM grade_item_state WHERE n_graded > 0").fetchall()}
        new_unjudged = sum(1 for it in new_items if tuple(it) not in judged)
        per_run = {}
        for system, value in cur.execute(
            "SELECT t.system, avg(j) FROM (SELECT system, query_id, avg(CASE WHEN g.query_id IS NULL THEN 0.0 "
            "ELSE 1.0 END) AS j FROM _top t LEFT JOIN (SELECT query_id, doc_id, start, \"end\" "
            "FROM grade_item_state WHERE n_graded > 0) g USING (query_id, doc_id, start, \"end\") GROUP BY system, query_id) t "
            "GROUP BY t.system ORDER BY 1").fetchall():
            per_run[system] = {"graded_at_k": float(value), "k": depth}
        queries, size = cur.execute("SELECT count(DISTINCT query_id), count(*) FROM pool_items").fetchone()
    finally:
        cur.execute("DROP TABLE _top")
    return {"queries": int(queries), "pool_size": int(size), "new_items": len(new_items),
            "new_unjudged": new_unjudged, "per_run": per_run}


def _reference(store, depth: int, chosen: list[str]) -> tuple[dict, tuple[list, list]]:
    """What the former code reports and writes, computed in a transaction rolled back after."""
    def tx(cur):
        rep = _reference_tx(cur, depth, chosen, "eng")
        raise _Rollback((rep, _pool(cur)))

    with pytest.raises(_Rollback) as got:
        store.write(tx, retries=0)
    return got.value.result


def _same_report(got: pool.PoolReport, ref: dict) -> None:
    d = got.as_dict()
    assert {k: v for k, v in d.items() if k != "per_run"} == {k: v for k, v in ref.items() if k != "per_run"}
    assert d["per_run"].keys() == ref["per_run"].keys()
    for system, v in ref["per_run"].items():
        assert d["per_run"][system] == {"graded_at_k": pytest.approx(v["graded_at_k"], rel=1e-12), "k": v["k"]}


@pytest.mark.parametrize("step_rows", [1, 37, 10 ** 9])
def test_pool_build_in_steps_equals_the_former_build(any_store, tmp_path, monkeypatch, step_rows):
    """Extending a graded pool with every run at a greater depth, then with one run only:
    same items (depth, who), same sources (each run's best rank per item), same report, in
    one step, in steps of a few queries and in steps of one query."""
    pool_gen.fill(any_store, tmp_path, seed=5)
    monkeypatch.setattr(pool, "POOL_STEP_ROWS", step_rows)
    for depth, chosen in ((15, ["sys0", "sys1", "sys2", "sys3"]), (30, ["sys3"]), (30, ["sys3"])):
        ref_report, ref_pool = _reference(any_store, depth, chosen)
        got = pool.build_pool(any_store, depth, systems=chosen, actor="eng")
        with any_store.cursor() as cur:
            assert _pool(cur) == ref_pool
        _same_report(got, ref_report)
    assert got.new_items == 0 and ref_report["new_items"] == 0  # the repeated build adds nothing


def test_pool_build_steps_cover_every_query_once(store, tmp_path, monkeypatch):
    """The steps split the queries in id order without a gap or an overlap."""
    pool_gen.fill(store, tmp_path, seed=9, n_queries=12)
    monkeypatch.setattr(pool, "POOL_STEP_ROWS", 50)
    with store.cursor() as cur:
        steps = pool._query_steps(cur, ["sys0", "sys1"], 20)
    qids = [r[0] for r in store.read("SELECT DISTINCT query_id FROM run_results WHERE system IN ('sys0', 'sys1') "
                                     "ORDER BY 1")]
    assert len(steps) > 2
    covered = [q for lo, hi in steps for q in qids if lo <= q <= hi]
    assert covered == qids


def test_migration_16_keeps_every_pool_source(tmp_path, monkeypatch):
    """A store built at version 14 (pool_sources with its primary key) migrates to a
    pool_sources without it holding the same rows; a later build adds no repeated pair."""
    from golden_store.db import schema
    from golden_store.db.store import Store

    path = tmp_path / "v14.duckdb"
    with monkeypatch.context() as m:
        m.setattr("golden_store.db.store.MIGRATIONS", schema.MIGRATIONS[:14])
        m.setattr("golden_store.db.store.SCHEMA_VERSION", 14)
        s = Store.open(path)
        assert s.schema_version() == 14
        from tests.old_schema import questions_without_tier

        questions_without_tier(m)
        pool_gen.fill(s, tmp_path, seed=2, n_queries=10)
        with s.cursor() as cur:
            before = _pool(cur)
            assert cur.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'pool_sources' "
                               "AND constraint_type = 'PRIMARY KEY'").fetchone()[0] == 1
        s.close()
    s = Store.open(path)
    assert s.schema_version() == schema.SCHEMA_VERSION >= 16
    with s.cursor() as cur:
        assert _pool(cur) == before and before[1]
        assert cur.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'pool_sources' "
                           "AND constraint_type = 'PRIMARY KEY'").fetchone()[0] == 0
    pool.build_pool(s, 6, systems=["sys0", "sys1", "sys2"], actor="eng")  # the pool fill built: nothing new
    with s.cursor() as cur:
        assert _pool(cur) == before
    s.close()
