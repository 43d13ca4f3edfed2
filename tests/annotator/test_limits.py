"""Size limits (issue 17 item 8, README "Limits"): query text and notes, display names and
documents; each refusal names the file, line or field."""

from __future__ import annotations

import json
from datetime import date

import pytest

from annotator.evidence import query_editing
from annotator.integration import corpus_import
from annotator.people import identity
from annotator.people.identity import User
from annotator.people.roles import Role
from golden_store.corpus.sources import MAX_DOCUMENT_CHARS
from golden_store.core.errors import ValidationError
from golden_store.live.queries import MAX_QUERY_NOTES_CHARS, MAX_QUERY_TEXT_CHARS, QueryRecord, get_query

LEAD = User("lead", "Lead", frozenset({Role.LEAD}))
ADMIN = User("root", "Root", frozenset({Role.ADMIN}))
PASSWORD = "0123456789"


def test_the_limits_are_the_documented_ones():
    assert (MAX_QUERY_TEXT_CHARS, MAX_QUERY_NOTES_CHARS, identity.MAX_DISPLAY_NAME, MAX_DOCUMENT_CHARS) == (
        2000, 2000, 100, 2_000_000)


def test_query_text_over_the_limit_is_refused_at_import_naming_the_line(store):
    rows = [{"id": "ok1", "text": "x" * MAX_QUERY_TEXT_CHARS, "stratum": "lexical"},
            {"id": "big", "text": "y" * 108_000, "stratum": "lexical"}]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    with pytest.raises(ValidationError) as exc:
        query_editing.import_file(store, LEAD, "qs.jsonl", data)
    assert any(p.startswith("qs.jsonl line 2: field 'text' is 108,000 characters") for p in exc.value.problems)
    assert len(exc.value.problems) == 1 and get_query(store, "ok1") is None  # nothing imported
    csv = f"id,text,stratum\nc1,{'z' * (MAX_QUERY_TEXT_CHARS + 1)},lexical\n".encode()
    with pytest.raises(ValidationError, match="qs.csv line 2: field 'text' is 2,001 characters"):
        query_editing.import_file(store, LEAD, "qs.csv", csv)


def test_query_text_and_notes_over_the_limit_are_refused_when_added_or_edited(store):
    rec = QueryRecord("q1", "How do I reset my VPN?", "lexical", True, "expert", date(2026, 3, 1))
    with pytest.raises(ValidationError, match="field 'text' is 2,001 characters"):
        query_editing.add_query(store, LEAD, QueryRecord(**{**rec.__dict__, "text": "a" * 2001}))
    query_editing.add_query(store, LEAD, rec)
    from dataclasses import replace

    with pytest.raises(ValidationError, match="field 'notes' is 5,000 characters"):
        query_editing.edit_query(store, LEAD, replace(rec, notes="n" * 5000))
    query_editing.edit_query(store, LEAD, replace(rec, notes="n" * MAX_QUERY_NOTES_CHARS))
    assert len(get_query(store, "q1").notes) == MAX_QUERY_NOTES_CHARS


def test_display_name_over_the_limit_is_refused(store):
    admin = identity.create_user(store, None, "root", ["admin"], password=PASSWORD)
    with pytest.raises(ValidationError, match="Display name is 5,000 characters; at most 100"):
        identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD, display_name="A" * 5000)
    assert identity.get_user(store, "ann") is None
    assert identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD,
                                display_name="A" * 100).display_name == "A" * 100


def test_a_document_over_the_limit_is_refused_naming_the_file(store, tmp_path):
    big = tmp_path / "handbook.txt"
    big.write_text("word " * (MAX_DOCUMENT_CHARS // 5 + 1))
    small = tmp_path / "small.txt"
    small.write_text("A small document.")
    with pytest.raises(ValidationError) as exc:
        corpus_import.import_paths(store, ADMIN, [big, small])
    [problem] = exc.value.problems
    assert problem.startswith(f"{big}: document 'handbook' is 2,000,005 characters of text")
    assert "split it" in problem
    assert store.read_one("SELECT count(*) FROM documents")[0] == 0  # nothing imported
    line = json.dumps({"doc_id": "huge", "text": "x" * (MAX_DOCUMENT_CHARS + 1)})
    with pytest.raises(ValidationError, match=r"docs.jsonl:2: document 'huge' is 2,000,001 characters.*split it"):
        corpus_import.import_uploads(store, ADMIN, [("docs.jsonl", (json.dumps({"doc_id": "ok", "text": "fine"})
                                                                    + "\n" + line).encode())])
    corpus_import.import_uploads(store, ADMIN, [("edge.txt", ("x" * MAX_DOCUMENT_CHARS).encode())])
