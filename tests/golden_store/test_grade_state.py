"""The grading state tables of migration 13 (issue 19) against the event log they summarise.

The log is the truth: the views ``current_grades``, ``final_grades``, ``disputed_grades``,
``pending_grades`` and ``adjudications`` used to replay it with window functions, and now read
``grade_state``, ``grade_item_state`` and ``adjudication_state``; the judging queue used to
window over each annotator's events and now reads ``judging_state``. Here the former view
definitions (taken verbatim from the migrations that shipped them) are created as temporary
views over ``grade_events`` and must hold exactly the rows the new views hold, after every
kind of write the product makes (grade, re-grade, skip, unsure, retract, undo through the
labeling surface, adjudication, re-adjudication with a rubric clarification, a grade after a
decision), after random sequences of writes, and after migrating a store written at schema
version 12. The tables must also equal a refill from the log (``grade_state.rebuild_tx``).
"""

from __future__ import annotations

import random
import re
import uuid
from datetime import datetime, timedelta

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotator.labeling import adjudication as ann_adjudication
from annotator.labeling import judging as ann_judging
from annotator.demo import load_demo
from tests.old_schema import questions_without_tier
from annotator.people.identity import cli_user
from golden_store.live import adjudication, grade_state, judging
from golden_store.db import schema
from golden_store.live import runs
from golden_store.core.errors import NotFoundError
from golden_store.db.store import Store
from tests.pooled import pool_first_documents, team_accounts

PASSWORD = "correct horse battery"
REPLAYED = ("current_grades", "final_grades", "disputed_grades", "adjudications", "pending_grades")


def _former_view_sql() -> dict[str, str]:
    """The views as migrations 1-12 defined them (the last definition of each), renamed
    ``replay_<name>`` and reading each other under those names."""
    defs: dict[str, str] = {}
    for mig in schema.MIGRATIONS:
        if mig.version > 12:
            break
        for stmt in mig.statements:
            m = re.match(r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(\w+)\s+AS\b", stmt)
            if m and m.group(1) in REPLAYED:
                defs[m.group(1)] = stmt
    assert set(defs) == set(REPLAYED)
    out = {}
    for name, stmt in defs.items():
        body = re.sub(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+\w+\s+AS", "", stmt)
        for other in REPLAYED:
            body = re.sub(rf"\b{other}\b", f"replay_{other}", body)
        out[name] = f"CREATE OR REPLACE TEMP VIEW replay_{name} AS {body}"
    return out


FORMER_VIEWS = _former_view_sql()

# the judging queue's former "done" set and the undo check's former lookup, for every annotator
FORMER_DONE = (
    "SELECT actor, query_id, doc_id, start, \"end\" FROM ("
    " SELECT *, row_number() OVER (PARTITION BY actor, query_id, doc_id, start, \"end\" ORDER BY event_id DESC) AS rn"
    " FROM grade_events WHERE op IN ('grade', 'skip', 'unsure', 'retract')"
    ") WHERE rn = 1 AND op <> 'retract'")
FORMER_LATEST_OWN = (
    "SELECT actor, query_id, doc_id, start, \"end\", max(event_id) FROM grade_events "
    "WHERE op IN ('grade', 'skip', 'unsure', 'retract') GROUP BY ALL")
# the adjudication queue's former first/last label times per disputed item
FORMER_TIMES = (
    "SELECT query_id, doc_id, start, \"end\", count(*), min(created_at), max(created_at) FROM replay_current_grades "
    "GROUP BY ALL")


def _rows(cur: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(cur.execute(sql).fetchall(), key=repr)


def assert_state_matches_log(store: Store) -> int:
    """Every new view equals its former definition replayed over the log, the judging state
    equals the former per-annotator windows, and the state tables equal a refill from the log.
    Returns the number of current grades compared (so a caller can see it compared something)."""
    with store.cursor() as cur:
        for sql in FORMER_VIEWS.values():
            cur.execute(sql)
        for name in REPLAYED:
            assert _rows(cur, f"SELECT * FROM {name}") == _rows(cur, f"SELECT * FROM replay_{name}"), name
            cols = [d[0] for d in cur.execute(f"SELECT * FROM {name} LIMIT 0").description]
            assert cols == [d[0] for d in cur.execute(f"SELECT * FROM replay_{name} LIMIT 0").description], name
        assert _rows(cur, "SELECT actor, query_id, doc_id, start, \"end\" FROM judging_state WHERE op <> 'retract'") \
            == _rows(cur, FORMER_DONE)
        assert _rows(cur, "SELECT actor, query_id, doc_id, start, \"end\", event_id FROM judging_state") \
            == _rows(cur, FORMER_LATEST_OWN)
        assert _rows(cur, "SELECT query_id, doc_id, start, \"end\", n_graded, first_graded_at, last_graded_at "
                          "FROM grade_item_state WHERE n_graded > 0") == _rows(cur, FORMER_TIMES)
        before = {t: _rows(cur, f"SELECT * FROM {t}") for t in grade_state.STATE_TABLES}
        cur.begin()
        try:
            grade_state.rebuild_tx(cur)
            after = {t: _rows(cur, f"SELECT * FROM {t}") for t in grade_state.STATE_TABLES}
        finally:
            cur.rollback()
        for t in grade_state.STATE_TABLES:
            assert before[t] == after[t], t
        return cur.execute("SELECT count(*) FROM current_grades").fetchone()[0]


# ---- every kind of write, through the product's own paths ------------------------------------------


@pytest.fixture
def team(demo_store, tmp_path):
    """The demo with a pool of 40 questions x 4 documents, a lead and four annotators."""
    s = demo_store
    pool_first_documents(s, tmp_path, 4)
    users = team_accounts(s, PASSWORD, ("ann", "bob", "cat", "dee"))
    return s, users


def _label(card: dict, by: str, action: str = "grade", value=2, **extra) -> dict:
    return {"id": uuid.uuid4().hex, "by": by, "item": card["item"], "digest": card["digest"], "action": action,
            "value": value, "note": "", **extra}


def test_state_follows_every_kind_of_write(team):
    s, u = team
    rng = random.Random(13)
    items = s.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")[:12]
    assert_state_matches_log(s)
    # grades by several annotators through the labeling surface (each bound to what was shown)
    cards = {name: {tuple(c.card()["item"].values()): c.card() for c in ann_judging.next_items(s, u[name], 200)}
             for name in ("ann", "bob", "cat", "dee")}
    saved: dict[tuple, dict] = {}
    for item in items:
        for name in rng.sample(["ann", "bob", "cat", "dee"], rng.randint(1, 4)):
            card = cards[name][item]
            label = _label(card, name, value=rng.randint(0, 3))
            assert ann_judging.submit(s, u[name], [label])[0].status == "saved"
            saved[(name, item)] = label
            assert_state_matches_log(s)
    # a re-grade, a skip, an unsure, a plain retract
    q, d, st_, en = items[0]
    judging.record(s, "ann", q, d, st_, en, op="grade", grade=0)
    assert_state_matches_log(s)
    judging.record(s, "bob", *items[1], op="skip")
    judging.record(s, "cat", *items[2], op="unsure", note="unsure about scope")
    assert_state_matches_log(s)
    s.write(lambda cur: judging.insert_tx(cur, "dee", *items[3], op="retract"))
    assert_state_matches_log(s)
    # undo through the surface: the undone label's grade leaves, the item comes back to the queue
    (name, item), label = next(iter(saved.items()))
    with s.cursor() as cur:
        latest = judging.latest_own_event_tx(cur, name, *item)
    if latest is not None:
        undo = _label(cards[name][item], name, "undo", None, target=label["id"])
        ann_judging.submit(s, u[name], [undo])
        assert_state_matches_log(s)
    # make sure some items are disputed, then decide them: through the surface and directly,
    # one with a rubric clarification; re-decide one; grade after a decision
    for item in items[4:8]:
        judging.record(s, "ann", *item, op="grade", grade=0)
        judging.record(s, "bob", *item, op="grade", grade=3)
    assert_state_matches_log(s)
    cards_lead = ann_adjudication.cards(s, u["lead"])
    assert cards_lead
    ack = ann_adjudication.submit(s, u["lead"], [_label(cards_lead[0], "lead", "adjudicate", 2, note="why")])[0]
    assert ack.status == "saved"
    assert_state_matches_log(s)
    adjudication.decide(s, "lead", *items[5], 1, "partial answer", clarification="Partial answers are 1.")
    assert_state_matches_log(s)
    adjudication.decide(s, "lead", *items[5], 3, "changed my mind")
    assert_state_matches_log(s)
    judging.record(s, "cat", *items[5], op="grade", grade=1)
    for (who,) in s.read("SELECT actor FROM current_grades WHERE query_id = ? AND doc_id = ? AND start = ? "
                         "AND \"end\" = ?", list(items[6])):
        s.write(lambda cur, who=who: judging.insert_tx(cur, who, *items[6], op="retract"))
    assert_state_matches_log(s)
    # a refused write (decision on an item nobody graded) leaves log and state as they were
    with pytest.raises(NotFoundError):
        adjudication.decide(s, "lead", *items[6], 2, "nothing to decide")
    assert assert_state_matches_log(s) > 10
    assert s.read_one("SELECT count(*) FROM adjudications")[0] == 2
    assert s.read_one("SELECT count(*) FROM pending_grades")[0] >= 1


# ---- random sequences of writes -----------------------------------------------------------------

ITEMS = [("q1", "d1", 0, 5), ("q1", "d1", 5, 9), ("q1", "d2", 0, 5), ("q2", "d1", 0, 5)]
ACTORS = ["ann", "bob", "cat"]
OPS = st.tuples(st.sampled_from(["grade", "grade", "grade", "skip", "unsure", "retract", "adjudicate"]),
                st.integers(0, len(ITEMS) - 1), st.integers(0, len(ACTORS) - 1), st.integers(0, 3),
                st.sampled_from([None, 1, 2]))


def _tiny_store() -> Store:
    s = Store.open(":memory:")
    s.write(lambda cur: cur.executemany(
        "INSERT INTO documents VALUES (?, NULL, NULL, 'txt', 'abcdefghij', 'abcdefghij', 'r', ?, now(), 'eng')",
        [("d1", "sha-d1"), ("d2", "sha-d2")]))
    return s


@settings(max_examples=40, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=40))
def test_random_event_sequences_keep_state_equal_to_the_log(ops):
    s = _tiny_store()
    try:
        for k, (op, i, a, grade, rubric) in enumerate(ops):
            item = ITEMS[i]
            if op == "adjudicate":
                try:
                    adjudication.decide(s, "lead", *item, grade, f"rationale {k}")
                except NotFoundError:
                    pass  # nobody's current grade on it: refused, nothing written
            else:
                s.write(lambda cur: judging.insert_tx(cur, ACTORS[a], *item, op=op,
                                                      grade=grade if op == "grade" else None,
                                                      note=f"n{k}" if k % 3 else None, rubric_version=rubric))
            if k % 10 == 9:
                assert_state_matches_log(s)
        assert_state_matches_log(s)
    finally:
        s.close()


# ---- the migration on a store written at schema version 12 ----------------------------------------

T0 = datetime(2026, 3, 1, 9, 0, 0)


@pytest.mark.duckdb_only("migrates a version-12 DuckDB file")
def test_migration_13_fills_the_state_equal_to_the_former_views(tmp_path, monkeypatch):
    """A store at version 12 whose grade events were written as version 12 wrote them (plain
    inserts): re-grades, retractions (an item retracted by everyone, an adjudication after
    that), skips and unsure after a grade (they leave the grade standing), decisions made
    twice, later events with earlier clocks, mixed rubric versions. Opened by this code it
    migrates, and every view equals the former definition over the same log."""
    path = tmp_path / "v12.duckdb"
    with monkeypatch.context() as m:
        m.setattr("golden_store.db.store.MIGRATIONS", schema.MIGRATIONS[:12])
        m.setattr("golden_store.db.store.SCHEMA_VERSION", 12)
        s = Store.open(path)
        assert s.schema_version() == 12
        questions_without_tier(m)
        load_demo(s, cli_user())  # corpus and questions; grade events are written below, as v12 wrote them
        docs = [r[0] for r in s.read("SELECT doc_id FROM documents ORDER BY doc_id LIMIT 3")]
        qids = [r[0] for r in s.read("SELECT query_id FROM queries ORDER BY query_id")]
        run = tmp_path / "sys.run"
        run.write_text("".join(f"{q} Q0 {d} {i + 1} {5 - i} x\n" for q in qids for i, d in enumerate(docs)))
        runs.store_run(s, runs.parse_run(s, run, "sys", "trec"), actor="eng")
        # the pool as version 12 built it (this code's build_pool reads migration 13's state)
        s.write(lambda cur: cur.execute(
            "INSERT INTO pool_items SELECT DISTINCT query_id, doc_id, start, \"end\", 3, ?, 'eng' FROM run_results",
            [T0]))
        items = s.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")
        sha = dict(s.read("SELECT doc_id, canonical_sha256 FROM documents"))
        rng = random.Random(12)
        rows = []
        actors = ["ann", "bob", "cat", "dee", "eve"]
        for n, (q, d, st_, en) in enumerate(items):
            for who in rng.sample(actors, rng.randint(1, 5)):
                for _ in range(rng.randint(1, 3)):
                    op = rng.choice(["grade", "grade", "grade", "skip", "unsure", "retract"])
                    rows.append((q, d, st_, en, sha[d], op, rng.randint(0, 3) if op == "grade" else None, who,
                                 rubric := rng.choice([None, 1, 2]), f"r{n % 3}" if rubric else None))
            if rng.random() < 0.3:
                for _ in range(rng.randint(1, 2)):
                    rows.append((q, d, st_, en, sha[d], "adjudicate", rng.randint(0, 3), "lead", 1, None))
        # an item everybody retracted, then decided; and one graded after its decision
        q, d, st_, en = items[0]
        rows += [(q, d, st_, en, sha[d], "grade", 1, "ann", 1, None), (q, d, st_, en, sha[d], "grade", 2, "bob", 1, None),
                 (q, d, st_, en, sha[d], "retract", None, "ann", 1, None),
                 (q, d, st_, en, sha[d], "retract", None, "bob", 1, None),
                 (q, d, st_, en, sha[d], "adjudicate", 2, "lead", 1, None)]
        q, d, st_, en = items[1]
        rows += [(q, d, st_, en, sha[d], "adjudicate", 0, "lead", 1, None),
                 (q, d, st_, en, sha[d], "grade", 3, "eve", None, None)]
        # event ids follow insertion; clocks do not always (a later event may carry an earlier time)
        s.write(lambda cur: cur.executemany(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, rubric_version, "
            "round_id, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*r, f"note {k}" if k % 4 else None, T0 + timedelta(minutes=k * 7 % 500)) for k, r in enumerate(rows)]))
        with s.cursor() as cur:
            for sql in FORMER_VIEWS.values():
                cur.execute(sql)
            before = {name: _rows(cur, f"SELECT * FROM {name}") for name in REPLAYED}
        s.close()
    s = Store.open(path)
    try:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 13
        with s.cursor() as cur:
            for name in REPLAYED:
                assert _rows(cur, f"SELECT * FROM {name}") == before[name], name
        assert assert_state_matches_log(s) > 50
        assert len(before["pending_grades"]) > 0 and len(before["adjudications"]) > 0
        assert any(r[-1] == "agreed" for r in before["final_grades"])
        # and the writers keep it so on the migrated store
        q, d, st_, en = items[2]
        judging.record(s, "fay", q, d, st_, en, op="grade", grade=3)
        adjudication.decide(s, "lead", q, d, st_, en, 1, "after the migration")
        assert_state_matches_log(s)
    finally:
        s.close()
