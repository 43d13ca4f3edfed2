"""Queries: file validation with line numbers, all-or-nothing import, revisions."""

from __future__ import annotations

from datetime import date

import pytest

from golden_store.live import queries
from golden_store.core.errors import NotFoundError, ValidationError
from tests.conftest import table_snapshot

CSV = (
    "id,text,stratum,answerable,source,date,held_out,notes\n"
    "q1,How many days carry over?,temporal,true,expert,2026-01-02,false,\n"
    "q2,What is the CEO's salary?,negative,,production_log,2026-01-03,no,\n"
    "q3,Error VPN-ERR-0417?,lexical,yes,expert,,true,from a ticket\n"
)


def test_csv_import_parses_every_field(store):
    recs = queries.parse_query_file("q.csv", CSV.encode(), queries.known_strata(store), today=date(2026, 5, 5))
    res = queries.import_queries(store, recs, actor="t")
    assert res == {"added": 3, "updated": 0, "unchanged": 0}
    q1 = queries.get_query(store, "q1")
    assert q1 == queries.QueryRecord("q1", "How many days carry over?", "temporal", True, "expert", date(2026, 1, 2), False, "")
    q2 = queries.get_query(store, "q2")
    assert q2.answerable is False and q2.stratum == "negative"
    q3 = queries.get_query(store, "q3")
    assert q3.held_out is True and q3.created_date == date(2026, 5, 5) and q3.notes == "from a ticket"
    assert queries.strata_counts(store) == {"lexical": 1, "negative": 1, "temporal": 1}


def test_bad_rows_are_all_named_and_nothing_is_imported(store):
    queries.import_queries(store, queries.parse_query_file("a.csv", CSV.encode(), queries.known_strata(store)), actor="t")
    before = table_snapshot(store)
    bad = (
        '{"id": "n1", "text": "ok", "stratum": "lexical"}\n'
        '{"id": "n2", "text": "", "stratum": "lexical"}\n'
        '{"id": "n3", "text": "x", "stratum": "poetry"}\n'
        'oops\n'
        '{"id": "n1", "text": "dup", "stratum": "lexical"}\n'
        '{"id": "n5", "text": "x", "stratum": "negative", "answerable": true}\n'
        '{"id": "n6", "text": "x", "stratum": "lexical", "date": "yesterday", "held_out": "maybe"}\n'
    )
    with pytest.raises(ValidationError) as err:
        recs = queries.parse_query_file("new.jsonl", bad.encode(), queries.known_strata(store))
        queries.import_queries(store, recs, actor="t")
    p = err.value.problems
    assert any("new.jsonl line 2" in x and "'text'" in x for x in p)
    assert any("new.jsonl line 3" in x and "unknown stratum 'poetry'" in x for x in p)
    assert any("new.jsonl line 4" in x and "not valid JSON" in x for x in p)
    assert any("new.jsonl line 5" in x and "already used at new.jsonl line 1" in x for x in p)
    assert any("new.jsonl line 6" in x and "negative" in x for x in p)
    assert any("new.jsonl line 7" in x and "'date'" in x for x in p)
    assert any("new.jsonl line 7" in x and "'held_out'" in x for x in p)
    assert table_snapshot(store) == before


def test_existing_ids_need_update_and_become_revisions(store):
    queries.import_queries(store, queries.parse_query_file("a.csv", CSV.encode(), queries.known_strata(store)), actor="t")
    changed = CSV.replace("How many days carry over?", "How many leave days carry over?")
    recs = queries.parse_query_file("b.csv", changed.encode(), queries.known_strata(store))
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match="--update"):
        queries.import_queries(store, recs, actor="t")
    assert table_snapshot(store) == before
    assert queries.import_queries(store, recs, actor="t2", update=True) == {"added": 0, "updated": 1, "unchanged": 2}
    hist = queries.query_history(store, "q1")
    assert list(hist["text"]) == ["How many days carry over?", "How many leave days carry over?"]
    assert list(hist["actor"]) == ["t", "t2"]


def test_edit_retire_and_restore_keep_every_revision(store):
    rec = queries.QueryRecord("x1", "Question?", "paraphrase", True, "expert", date(2026, 1, 1))
    queries.save_query(store, rec, actor="a", must_exist=False)
    with pytest.raises(ValidationError, match="already used"):
        queries.save_query(store, rec, actor="a", must_exist=False)
    with pytest.raises(NotFoundError):
        queries.save_query(store, queries.QueryRecord("nope", "Q", "lexical", True, "expert", date(2026, 1, 1)), actor="a", must_exist=True)
    queries.retire_query(store, "x1", actor="b")
    assert queries.get_query(store, "x1") is None
    queries.save_query(store, rec, actor="c")
    assert queries.get_query(store, "x1") == rec
    assert len(queries.query_history(store, "x1")) == 3


def test_new_stratum(store):
    queries.add_stratum(store, "code_switching", "Mixes two languages in one question.", actor="lead")
    assert "code_switching" in queries.known_strata(store)
    with pytest.raises(ValidationError):
        queries.add_stratum(store, "Bad Name", "x", actor="lead")
    with pytest.raises(ValidationError, match="already exists"):
        queries.add_stratum(store, "code_switching", "again", actor="lead")
    recs = queries.parse_query_file("c.jsonl", b'{"id": "c1", "text": "Hola, how many days?", "stratum": "code_switching"}', queries.known_strata(store))
    assert recs[0].stratum == "code_switching"


def test_non_utf8_and_missing_columns():
    with pytest.raises(ValidationError, match="not valid UTF-8"):
        queries.parse_query_file("x.csv", b"id,text,stratum\nq,\xff,lexical\n", {"lexical"})
    with pytest.raises(ValidationError, match="lacks column"):
        queries.parse_query_file("x.csv", b"id,question\nq,x\n", {"lexical"})
    with pytest.raises(ValidationError, match=r"\.csv or \.jsonl"):
        queries.parse_query_file("x.xlsx", b"", {"lexical"})


def test_reimport_keeps_fields_the_file_leaves_out(store):
    full = ("id,text,stratum,held_out,source,notes,date\n"
            "q1,How many days?,temporal,true,support_ticket,keep me,2026-01-02\n")
    queries.import_queries(store, queries.parse_query_file("a.csv", full.encode(), queries.known_strata(store)), actor="t")
    slim = "id,text,stratum\nq1,How many leave days?,temporal\n"
    recs = queries.parse_query_file("b.csv", slim.encode(), queries.known_strata(store), today=date(2027, 1, 1))
    assert queries.import_queries(store, recs, actor="t", update=True)["updated"] == 1
    rec = queries.get_query(store, "q1")
    assert rec.text == "How many leave days?"
    assert (rec.held_out, rec.source, rec.notes, rec.created_date) == (True, "support_ticket", "keep me", date(2026, 1, 2))
    # the identical slim file again, on another day, is a no-op, not a conflict
    recs = queries.parse_query_file("b.csv", slim.encode(), queries.known_strata(store), today=date(2027, 2, 2))
    assert queries.import_queries(store, recs, actor="t") == {"added": 0, "updated": 0, "unchanged": 1}


def test_jsonl_with_unicode_line_separators_and_lone_surrogates(store):
    import json as _json

    good = _json.dumps({"id": "u1", "text": "line\u2028sep\u0085next", "stratum": "lexical"}, ensure_ascii=False)
    bad = '{"id": "u2", "text": "bad \\ud800", "stratum": "lexical"}'
    with pytest.raises(ValidationError) as err:
        queries.parse_query_file("u.jsonl", (good + "\n" + bad + "\n").encode(), queries.known_strata(store))
    assert err.value.problems == [
        "u.jsonl line 2: contains an invalid \\u escape (a lone surrogate); fix the text"]
    recs = queries.parse_query_file("u.jsonl", (good + "\n").encode(), queries.known_strata(store))
    assert recs[0].text == "line\u2028sep\u0085next"
