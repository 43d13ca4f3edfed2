"""Schema 18: an answer's outcome. Migration 18 rebuilds ``answers`` with an ``outcome`` column
(answered / abstained / refused / unknown; rows from before it are ``unknown``: nobody had
said), adds ``answer_outcome_events`` and the ``current_answer_outcomes`` view. Built at
version 17 with rows written as that version wrote them, migrated on both engines."""

from __future__ import annotations

from datetime import datetime

import pytest

from golden_store.db import schema
from golden_store.db.store import Store
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 6, 1, 9, 0, 0)


def test_migration_18_keeps_every_answer_as_unknown_and_marks_are_events(old_url, monkeypatch):
    schema_at(monkeypatch, 17)
    with Store.open(old_url) as old:
        assert old.schema_version() == 17
        old.write(lambda cur: cur.executemany(
            "INSERT INTO answers (system, query_id, answer, imported_at, imported_by) VALUES (?, ?, ?, ?, 'eng')",
            [("rag", "q1", "It is five days.", AT), ("rag", "q2", "I don't know.", AT)]))
    monkeypatch.undo()

    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 18
        assert s.read("SELECT system, query_id, answer, imported_at, imported_by, outcome FROM answers "
                      "ORDER BY query_id") == [("rag", "q1", "It is five days.", AT, "eng", "unknown"),
                                               ("rag", "q2", "I don't know.", AT, "eng", "unknown")]
        assert s.read("SELECT query_id, outcome, basis FROM current_answer_outcomes ORDER BY query_id") == [
            ("q1", "unknown", "unmarked"), ("q2", "unknown", "unmarked")]
        s.write(lambda cur: cur.execute(
            "INSERT INTO answer_outcome_events (system, query_id, outcome, actor, created_at) "
            "VALUES ('rag', 'q2', 'abstained', 'rita', ?)", [AT]))
        assert s.read("SELECT query_id, outcome, basis, marked_by FROM current_answer_outcomes "
                      "ORDER BY query_id") == [("q1", "unknown", "unmarked", None), ("q2", "abstained", "marked", "rita")]
        # the allowed values are the database's rule too
        for bad in ("INSERT INTO answers (system, query_id, answer, imported_at, imported_by, outcome) "
                    "VALUES ('rag', 'q3', 'x', now(), 'eng', 'declined')",
                    "INSERT INTO answer_outcome_events (system, query_id, outcome, actor, created_at) "
                    "VALUES ('rag', 'q1', 'unknown', 'rita', now())"):
            with pytest.raises(Exception):
                s.write(lambda cur, sql=bad: cur.execute(sql))
