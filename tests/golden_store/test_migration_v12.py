"""Migration 12 (issue 16) on a store that holds every kind of verdict.

A store is built at schema version 11 with rows written the way the code of that version
wrote them: nugget support labels keyed ``system|query_id|nugget_id``, transcript reviews and
lead resolutions keyed ``run_id|query_id|trial``, transcript samples naming their items the
same way, evidence settlements and per-annotator "no answer" keyed by the query id, and users
holding roles. After the migration every row must be in its typed table with its key split
into real columns, its event id, actor, time and note kept; and the workflows must read them
back as before (support labels and scores, reviewed transcripts and the lead's queue, the
samples still to review, settled and unsettled evidence questions, "no answer" by person,
roles). A row the migration cannot place stops it with a message and changes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import pytest

from annotator.demo import load_demo
from tests.old_schema import questions_without_tier
from annotator.people.identity import Role, cli_user, get_user
from golden_store.live import calibrations, users
from golden_store.db import schema
from golden_store.live import evidence_rounds
from golden_store.live import nuggets
from golden_store.live import rounds
from golden_store.live import transcripts
from golden_store.db.store import Store
from tests.old_schema import schema_at

T0 = datetime(2026, 5, 1, 9, 0, 0)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _v11_store(path, monkeypatch) -> Store:
    """A store migrated to version 11 only, with the demo corpus and questions."""
    schema_at(monkeypatch, 11)
    s = Store.open(path)
    assert s.schema_version() == 11
    questions_without_tier(monkeypatch)
    load_demo(s, cli_user())
    return s


def _verdict(cur, kind: str, item_id: str, query_id: str | None, value: str, minute: int, actor: str,
             detail: str | None = None, note: str | None = None) -> int:
    return cur.execute(
        "INSERT INTO verdict_events (kind, item_id, query_id, value, detail, note, actor, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
        [kind, item_id, query_id, value, detail, note, actor, _at(minute)]).fetchone()[0]


def _fill_every_kind(s: Store) -> dict[str, int]:
    """Rows of every verdict kind, written as version 11 wrote them; returns some event ids."""
    ids: dict[str, int] = {}

    def tx(cur) -> None:
        # users and their roles
        cur.executemany("INSERT INTO users VALUES (?, ?, ?, NULL, ?, 'bootstrap', FALSE)",
                        [("ada", "Ada", ["admin"], _at(0)), ("ann", "Ann", ["annotator", "lead"], _at(0)),
                         ("bob", "Bob", ["annotator"], _at(0))])
        # nuggets of q001, approved; answers of two systems
        for pos, (nid, text) in enumerate((("n1", "Certificate expired"), ("n2", "Renew it"))):
            cur.execute("INSERT INTO nugget_events (query_id, nugget_id, op, text, importance, position, actor, "
                        "created_at) VALUES ('q001', ?, 'add', ?, 'vital', ?, 'ann', ?)", [nid, text, pos, _at(1)])
        cur.execute("INSERT INTO nugget_events (query_id, nugget_id, op, actor, created_at) "
                    "VALUES ('q001', 'n1', 'approve', 'ann', ?), ('q001', 'n2', 'approve', 'ann', ?)", [_at(2), _at(2)])
        cur.executemany("INSERT INTO answers VALUES (?, 'q001', ?, ?, 'eng')",
                        [("rag-a", "Your certificate expired; renew it.", _at(2)), ("rag-b", "Restart.", _at(2))])
        # nugget support: rag-a supports both (n2 after an undo), rag-b supports none
        ids["support"] = _verdict(cur, "nugget", "rag-a|q001|n1", "q001", "support", 3, "ann", detail="rag-a")
        _verdict(cur, "nugget", "rag-a|q001|n2", "q001", "partial", 4, "ann", detail="rag-a")
        _verdict(cur, "nugget", "rag-a|q001|n2", "q001", "withdrawn", 5, "ann", detail="rag-a", note="answer replaced")
        _verdict(cur, "nugget", "rag-a|q001|n2", "q001", "support", 6, "ann", detail="rag-a")
        _verdict(cur, "nugget", "rag-b|q001|n1", "q001", "none", 7, "bob", detail="rag-b")
        _verdict(cur, "nugget", "rag-b|q001|n2", "q001", "none", 7, "bob", detail="rag-b")
        # transcripts, a sample of them, reviews and a lead's resolution
        for run, qid, trial in (("run-7", "q001", 0), ("run-7", "q002", 0), ("run-7", "pl-1", 2), ("run-8", "q003", 0)):
            cur.execute("INSERT INTO transcripts (run_id, query_id, trial, source, question, stratum, passed, metrics, "
                        "retrieved, imported_at, imported_by) VALUES (?, ?, ?, 'eval_run', ?, 'paraphrase', FALSE, "
                        "'{}', '[]', ?, 'eng')", [run, qid, trial, f"question {qid}", _at(8)])
        cur.executemany("INSERT INTO transcript_draws VALUES ('d1', ?, ?, 7, 'rita', ?)",
                        [("run-7|q001|0", 0, _at(9)), ("run-7|pl-1|2", 1, _at(9)), ("run-8|q003|0", 2, _at(9))])
        ids["review"] = _verdict(cur, "transcript", "run-7|q001|0", "q001", "grader_failure", 10, "rita",
                                 note="the answer was right")
        _verdict(cur, "transcript", "run-7|q002|0", "q002", "grader_failure", 11, "rita")
        _verdict(cur, "transcript", "run-7|pl-1|2", "pl-1", "system_failure", 12, "rita", detail="retrieval_miss")
        ids["resolution"] = _verdict(cur, "grader_failure_resolution", "run-7|q001|0", "q001", "judge_fixed", 13,
                                     "leo", note="rubric line added")
        # an evidence round on q003 and q004: q003 settled, on q004 bob says "no answer", ann said it and withdrew
        cur.execute("INSERT INTO rounds (round_id, kind, annotators, overlap, seed, n_items, note, created_by, "
                    "created_at, item_kind) VALUES ('r1', 'calibration', ['ann', 'bob'], NULL, 1, 2, NULL, 'leo', ?, "
                    "'evidence')", [_at(14)])
        cur.executemany("INSERT INTO evidence_assignments VALUES ('r1', ?, ?)",
                        [(a, q) for a in ("ann", "bob") for q in ("q003", "q004")])
        ids["settle"] = _verdict(cur, "evidence_adjudication", "q003", "q003", "keep:ann", 15, "leo",
                                 note="ann's quote is the one")
        ids["no_answer"] = _verdict(cur, "evidence_no_answer", "q004", "q004", "no_answer", 16, "bob")
        _verdict(cur, "evidence_no_answer", "q004", "q004", "no_answer", 17, "ann")
        _verdict(cur, "evidence_no_answer", "q004", "q004", "withdrawn", 18, "ann")

    s.write(tx)
    return ids


@pytest.mark.duckdb_only("migrates a version-11 DuckDB file")
def test_every_verdict_kind_arrives_in_its_typed_table_and_reads_back(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    with _v11_store(path, monkeypatch) as old:
        ids = _fill_every_kind(old)
        before = old.read("SELECT kind, count(*) FROM verdict_events GROUP BY kind ORDER BY kind")
        assert {k for k, _ in before} == {"nugget", "transcript", "grader_failure_resolution",
                                          "evidence_adjudication", "evidence_no_answer"}
    monkeypatch.undo()

    with Store.open(path) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 12
        tables = {r[0] for r in s.read("SELECT table_name FROM information_schema.tables")}
        assert "verdict_events" not in tables and "transcript_draws_v7" not in tables

        # ---- rows, keys split, event ids / actor / time / note kept --------------------------------
        assert s.read("SELECT event_id, system, query_id, nugget_id, label, note, actor, created_at "
                      "FROM nugget_support_events ORDER BY event_id") == [
            (ids["support"], "rag-a", "q001", "n1", "support", None, "ann", _at(3)),
            (ids["support"] + 1, "rag-a", "q001", "n2", "partial", None, "ann", _at(4)),
            (ids["support"] + 2, "rag-a", "q001", "n2", "withdrawn", "answer replaced", "ann", _at(5)),
            (ids["support"] + 3, "rag-a", "q001", "n2", "support", None, "ann", _at(6)),
            (ids["support"] + 4, "rag-b", "q001", "n1", "none", None, "bob", _at(7)),
            (ids["support"] + 5, "rag-b", "q001", "n2", "none", None, "bob", _at(7))]
        assert s.read("SELECT event_id, evaluation_id, query_id, trial, verdict, failure_class, note, actor, created_at "
                      "FROM transcript_review_events ORDER BY event_id") == [
            (ids["review"], "run-7", "q001", 0, "grader_failure", None, "the answer was right", "rita", _at(10)),
            (ids["review"] + 1, "run-7", "q002", 0, "grader_failure", None, None, "rita", _at(11)),
            (ids["review"] + 2, "run-7", "pl-1", 2, "system_failure", "retrieval_miss", None, "rita", _at(12))]
        assert s.read("SELECT event_id, evaluation_id, query_id, trial, resolution, note, actor, created_at "
                      "FROM transcript_resolution_events") == [
            (ids["resolution"], "run-7", "q001", 0, "judge_fixed", "rubric line added", "leo", _at(13))]
        assert s.read("SELECT event_id, query_id, decision, note, actor, created_at FROM evidence_settlement_events") == [
            (ids["settle"], "q003", "keep:ann", "ann's quote is the one", "leo", _at(15))]
        assert s.read("SELECT event_id, query_id, op, actor, created_at FROM evidence_no_answer_events "
                      "ORDER BY event_id") == [
            (ids["no_answer"], "q004", "no_answer", "bob", _at(16)),
            (ids["no_answer"] + 1, "q004", "no_answer", "ann", _at(17)),
            (ids["no_answer"] + 2, "q004", "withdrawn", "ann", _at(18))]
        assert s.read("SELECT draw_id, evaluation_id, query_id, trial, position, seed, actor FROM transcript_draws "
                      "ORDER BY position") == [("d1", "run-7", "q001", 0, 0, 7, "rita"),
                                               ("d1", "run-7", "pl-1", 2, 1, 7, "rita"),
                                               ("d1", "run-8", "q003", 0, 2, 7, "rita")]
        # new events continue the one global order after the moved ones
        assert s.read_one("SELECT nextval('event_seq')")[0] > ids["no_answer"] + 2

        # ---- the workflows read them back --------------------------------------------------------------
        got = {(a["system"], a["nugget_id"]): a["label"] for a in nuggets.assignments(s)}
        assert got == {("rag-a", "n1"): "support", ("rag-a", "n2"): "support",
                       ("rag-b", "n1"): "none", ("rag-b", "n2"): "none"}
        assert nuggets.counts(s)["assigned"] == 4
        assert {r["item_id"]: r["human_label"] for r in calibrations.nugget_support_set(s)} == {
            "rag-a|q001|n1": "pass", "rag-a|q001|n2": "pass", "rag-b|q001|n1": "fail", "rag-b|q001|n2": "fail"}
        with s.cursor() as cur:
            assert nuggets.latest_assignment_event_tx(cur, "rag-a", "q001", "n2") == ids["support"] + 3
            assert transcripts.latest_verdict_event_tx(cur, "run-7|pl-1|2") == ids["review"] + 2
        verdicts = {f["item_id"]: (f["verdict"], f["failure_class"]) for f in transcripts.failures(s)}
        assert verdicts == {"run-7|q001|0": ("grader_failure", None), "run-7|q002|0": ("grader_failure", None),
                            "run-7|pl-1|2": ("system_failure", "retrieval_miss"), "run-8|q003|0": (None, None)}
        assert [q["item_id"] for q in transcripts.questioned(s)] == ["run-7|q002|0"]  # q001's was resolved
        assert transcripts.drawn_before(s) == {"run-7|q001|0", "run-7|pl-1|2", "run-8|q003|0"}
        assert transcripts.review_queue(s, "rita", 10) == ["run-8|q003|0"]
        assert transcripts.draw_progress(s, "rita") == (2, 3)
        assert transcripts.counts(s) == {"failures": 4, "reviewed": 3, "grader_failures": 2}
        assert evidence_rounds.unsettled(s) == {"q004"}
        assert evidence_rounds.no_answer_actors(s, "q004") == {"bob"}
        assert evidence_rounds.round_spans(s) == {"q004": {"bob": []}}
        r1 = next(r for r in rounds.list_rounds(s) if r["round_id"] == "r1")
        assert (r1["n_assignments"], r1["n_done"]) == (4, 2)  # q004: bob's and ann's "no answer" (ever said)

        # ---- roles: unchanged, and the trail starts with one grant per role held -------------------------
        assert get_user(s, "ann").roles == {Role.ANNOTATOR, Role.LEAD}
        assert s.read("SELECT username, roles FROM users ORDER BY username") == [
            ("ada", ["admin"]), ("ann", ["annotator", "lead"]), ("bob", ["annotator"])]
        assert [(e["username"], e["op"], e["role"], e["actor"]) for e in users.role_events(s)] == [
            ("ada", "grant", "admin", "system"), ("ann", "grant", "annotator", "system"),
            ("ann", "grant", "lead", "system"), ("bob", "grant", "annotator", "system")]


@pytest.mark.duckdb_only("migrates a version-11 DuckDB file")
@pytest.mark.parametrize("bad, message", [
    ("INSERT INTO verdict_events (kind, item_id, value, actor, created_at) "
     "VALUES ('mystery', 'x', 'v', 'a', TIMESTAMP '2026-01-01')", "kinds it does not know (mystery)"),
    ("INSERT INTO verdict_events (kind, item_id, query_id, value, actor, created_at) "
     "VALUES ('transcript', 'run-9|q001|0', 'q001', 'ambiguous', 'a', TIMESTAMP '2026-01-01')",
     "transcript verdicts whose key does not name exactly one transcript (run-9|q001|0)"),
    ("INSERT INTO verdict_events (kind, item_id, query_id, value, detail, actor, created_at) "
     "VALUES ('nugget', 'rag|q002|n1', 'q001', 'support', 'rag', 'a', TIMESTAMP '2026-01-01')",
     "nugget support labels whose key is not system|query_id|nugget_id (rag|q002|n1)"),
])
def test_a_row_the_migration_cannot_place_stops_it_and_changes_nothing(tmp_path, monkeypatch, bad, message):
    path = tmp_path / "old.duckdb"
    with _v11_store(path, monkeypatch) as old:
        old.write(lambda cur: cur.execute(bad))
        n = old.read_one("SELECT count(*) FROM verdict_events")[0]
    monkeypatch.undo()
    with pytest.raises(duckdb.Error, match=r"Migration 12 stopped: .*" + message.replace("|", r"\|")
                       .replace("(", r"\(").replace(")", r"\)")):
        Store.open(path)
    schema_at(monkeypatch, 11)
    with Store.open(path) as again:  # still version 11, every row where it was
        assert again.schema_version() == 11
        assert again.read_one("SELECT count(*) FROM verdict_events")[0] == n
