"""Migration 17 defines the live-questions view by DISTINCT ON instead of row_number() = 1
(PostgreSQL plans joins on it from real estimates). The rows must be the former view's on
both engines: the latest revision of each question, retired ones left out, a question
retired and then saved again live once more."""

from __future__ import annotations

import dataclasses

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.live import queries

FORMER = """SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes,
               generator_model, generator_prompt_sha,
               actor AS last_edited_by, created_at AS last_edited_at, event_id AS revision
        FROM (
            SELECT *, row_number() OVER (PARTITION BY query_id ORDER BY event_id DESC) AS rn
            FROM query_revisions
        ) AS r WHERE rn = 1 AND NOT retired"""


def test_the_live_questions_view_equals_the_former_definition(any_store):
    s = any_store
    load_demo(s, cli_user())
    q1 = queries.get_query(s, "q001")
    queries.save_query(s, dataclasses.replace(q1, text=q1.text + " (edited)"), actor="ann")
    queries.save_query(s, dataclasses.replace(q1, text=q1.text + " (edited twice)"), actor="bob")
    q2 = queries.get_query(s, "q002")
    queries.retire_query(s, "q002", actor="lead")
    queries.retire_query(s, "q003", actor="lead")
    assert queries.get_query(s, "q003") is None
    queries.save_query(s, q2, actor="lead")  # brought back: live again, this revision
    cols = "query_id, text, stratum, answerable, source, created_date, held_out, notes, generator_model, " \
           "generator_prompt_sha, last_edited_by, last_edited_at, revision"
    view = sorted(s.read(f"SELECT {cols} FROM queries"), key=lambda r: r[0])
    former = sorted(s.read(f"SELECT {cols} FROM ({FORMER}) AS f"), key=lambda r: r[0])
    assert view == former
    live = {r[0]: r for r in view}
    assert "q003" not in live and live["q002"][10] == "lead"
    assert live["q001"][1].endswith("(edited twice)") and live["q001"][10] == "bob"
    assert len(view) >= 30  # the demo's questions, less the retired one
