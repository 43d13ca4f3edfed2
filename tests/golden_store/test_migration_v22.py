"""Schema 22: transcript_review_events accepts the verdict 'no_failure' (issue 27: a reviewer
confirms an answer the judge passed). Neither engine changes a CHECK in place here, so the
table is rebuilt under its view: every row and every event id must survive, the current-review
view must read the same, and the event sequence must go on past the kept ids. Built at version
21 with review rows written as that version wrote them, migrated on both engines (modelled on
test_migration_v15)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from golden_store.db import schema
from golden_store.db.store import Store
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 11, 1, 9, 0, 0)
KEY = ("nightly|7", "q1", 0)


def _fill_v21(cur) -> None:
    cur.execute("INSERT INTO transcripts (evaluation_id, query_id, trial, source, question, passed, imported_by, "
                "imported_at) VALUES (?, ?, ?, 'eval_run', 'Why?', true, 'eng', ?), "
                "(?, 'q2', 0, 'eval_run', 'How?', false, 'eng', ?)", [*KEY, AT, KEY[0], AT])
    cur.execute("INSERT INTO transcript_draws (draw_id, evaluation_id, query_id, trial, position, seed, actor, "
                "created_at) VALUES ('d1', ?, ?, ?, 0, 1, 'rita', ?)", [*KEY, AT])
    rows = [(*KEY, "system_failure", "incomplete", "missed a step", "rita", 1),
            (*KEY, "withdrawn", None, "undo", "rita", 2),
            (*KEY, "grader_failure", None, None, "rita", 3),
            (KEY[0], "q2", 0, "ambiguous", None, "unclear", "sam", 4)]
    for *k, verdict, cls, note, actor, minute in rows:
        cur.execute("INSERT INTO transcript_review_events (evaluation_id, query_id, trial, verdict, failure_class, "
                    "note, actor, created_at, rubric_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 3)",
                    [*k, verdict, cls, note, actor, AT + timedelta(minutes=minute)])
    cur.execute("INSERT INTO transcript_resolution_events (evaluation_id, query_id, trial, resolution, note, actor, "
                "created_at) VALUES (?, ?, ?, 'judge_fixed', 'fixed', 'leo', ?)", [*KEY, AT + timedelta(minutes=9)])


_ALL = ("SELECT event_id, evaluation_id, query_id, trial, verdict, failure_class, note, actor, created_at, "
        "rubric_version FROM transcript_review_events ORDER BY event_id")
_CURRENT = "SELECT * FROM current_transcript_reviews ORDER BY evaluation_id, query_id, trial"


def test_migration_22_keeps_every_review_row_and_event_id(old_url, monkeypatch):
    schema_at(monkeypatch, 21)
    with Store.open(old_url) as old:
        assert old.schema_version() == 21
        with pytest.raises(Exception):  # noqa: B017 (either engine's CHECK violation)
            old.write(lambda cur: cur.execute(
                "INSERT INTO transcript_review_events (evaluation_id, query_id, trial, verdict, actor, created_at) "
                "VALUES (?, ?, ?, 'no_failure', 'rita', ?)", [*KEY, AT]))
        old.write(_fill_v21)
        before, current = old.read(_ALL), old.read(_CURRENT)
        others = {t: old.read(f"SELECT * FROM {t}") for t in ("transcripts", "transcript_draws",
                                                              "transcript_resolution_events")}
    monkeypatch.undo()
    assert len(before) == 4 and len({r[0] for r in before}) == 4

    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 22
        assert s.read(_ALL) == before  # every row, every event id, every column's value
        assert s.read(_CURRENT) == current
        assert [r[3] for r in current] == ["grader_failure", "ambiguous"]
        assert {t: s.read(f"SELECT * FROM {t}") for t in others} == others
        # the new verdict is accepted, with a fresh id from the one sequence; an unknown one is still refused
        new_id = s.write(lambda cur: cur.execute(
            "INSERT INTO transcript_review_events (evaluation_id, query_id, trial, verdict, actor, created_at) "
            "VALUES (?, ?, ?, 'no_failure', 'rita', ?) RETURNING event_id", [*KEY, AT + timedelta(hours=1)]
        ).fetchone()[0])
        assert new_id > max(r[0] for r in before)
        assert s.read_one("SELECT verdict FROM current_transcript_reviews WHERE query_id = 'q1'") == ("no_failure",)
        with pytest.raises(Exception):  # noqa: B017
            s.write(lambda cur: cur.execute(
                "INSERT INTO transcript_review_events (evaluation_id, query_id, trial, verdict, actor, created_at) "
                "VALUES (?, ?, ?, 'fine', 'rita', ?)", [*KEY, AT]))
        assert s.read(_ALL)[:4] == before
