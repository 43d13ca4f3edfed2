"""Schema 32 (issue 40, item 1): reference-answer rounds, and reference_answer_events.round_id.
A store's reference answers written at version 31 survive the migration as they were, with
round_id NULL (written outside any round), on both engines; the current view reads them as
before, and a round adjudicated after the migration writes its revision beside them."""

from __future__ import annotations

from datetime import datetime

from golden_store.db import schema
from golden_store.db.store import Store
from golden_store.live import reference_answers as live_refs
from golden_store.live import reference_rounds
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 12, 1, 9, 0, 0)
_V31_COLUMNS = ("query_id, op, short_answer, full_answer, evidence, source, model, prompt_sha, note, actor, "
                "created_at")
_ALL = f"SELECT event_id, {_V31_COLUMNS} FROM reference_answer_events ORDER BY event_id"


def _fill_v31(cur) -> None:
    cur.execute("INSERT INTO query_revisions (query_id, text, stratum, answerable, source, created_date, held_out, "
                "notes, actor, created_at) VALUES ('q1', 'What is the per diem?', 'lexical', TRUE, 'manual', "
                "DATE '2026-12-01', FALSE, '', 'x', ?)", [AT])
    for row in (("q1", "write", "EUR 58", None, "[]", "person", None, None, None, "ann", AT),
                ("q1", "approve", None, None, "[]", "person", None, None, None, "lena", AT),
                ("q1", "write", "58 euros", "It is 58 euros.", "[]", "llm", "m", "p" * 64, "draft", "claude", AT)):
        cur.execute(f"INSERT INTO reference_answer_events ({_V31_COLUMNS}) VALUES ({', '.join('?' * len(row))})",
                    list(row))


def test_migration_32_keeps_every_reference_answer_event_outside_any_round(old_url, monkeypatch):
    schema_at(monkeypatch, 31)
    with Store.open(old_url) as old:
        assert old.schema_version() == 31
        old.write(_fill_v31)
        before = old.read(_ALL)
        current = old.read_dicts("SELECT * FROM current_reference_answers")
    monkeypatch.undo()
    assert len(before) == 3

    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 32
        assert s.read(_ALL) == before
        assert s.read("SELECT round_id FROM reference_answer_events") == [(None,)] * 3
        assert s.read_dicts("SELECT * FROM current_reference_answers") == current
        assert [r["round_id"] for r in live_refs.history(s, "q1")] == [None, None, None]
        assert reference_rounds.rounds(s) == []
        # a round after the migration: its adjudicated revision is the current one, naming the round
        rid = reference_rounds.create(s, ["ann", "ben"], ["q1"], actor="lena")
        reference_rounds.save(s, rid, "q1", "ann", reference_rounds.RoundAnswer("EUR 58", None), submit=True)
        revision = reference_rounds.adjudicate(s, rid, "q1", actor="lena", accept="ann")
        (now,) = live_refs.current(s, "q1")
        assert (now["revision"], now["short_answer"], now["approved"]) == (revision, "EUR 58", True)
        assert [r["round_id"] for r in live_refs.history(s, "q1")] == [None, None, None, rid, rid]
        assert s.read(_ALL)[:3] == before
