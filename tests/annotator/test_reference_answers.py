"""Reference answers and their criteria through the CLI, on the demo store: revisions kept, an
edit after an approval needs a new one, spans checked against the corpus, a bad import writes
nothing, criteria per question replace their stratum's, roles refused where they should be, and
exact match / token F1 of a system's answers against the approved short references, by hand."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from annotator.demo import DEMO_DIR
from annotator.evidence import reference_answers as refs
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live import reference_answers as live_refs
from tests.conftest import table_snapshot


def golden(golden_db, capsys, *argv) -> tuple[int, str, str]:
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def span(demo_store) -> str:
    doc_id, start, end = demo_store.read_one(
        "SELECT doc_id, start, \"end\" FROM current_evidence WHERE query_id = 'q004' ORDER BY start LIMIT 1")
    return f"{doc_id}:{start}-{end}"


def test_write_approve_revise_and_match_by_hand(demo_store, golden_db, capsys, span):
    assert golden(golden_db, capsys, "answers", "import", str(DEMO_DIR / "answers" / "rag-bm25.jsonl"),
                  "--system", "rag-bm25")[0] == 0
    assert golden(golden_db, capsys, "references", "set", "q004", "--short", "EUR 58", "--evidence", span)[0] == 0
    # not approved yet: the system's answer to q004 is not scored against it
    code, out, _ = golden(golden_db, capsys, "--json", "references", "match", "--system", "rag-bm25")
    bm25 = json.loads(out)["rag-bm25"]
    assert code == 0 and bm25["n"] == 0 and "q004" in bm25["no_reference"]

    assert golden(golden_db, capsys, "references", "approve", "q004")[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "references", "match", "--system", "rag-bm25")
    bm25 = json.loads(out)["rag-bm25"]
    # "For a full day in Berlin the per diem is EUR 58." -> "for full day in berlin per diem is eur 58",
    # 10 tokens without "a" and "the"; "eur 58" -> 2 tokens, both in the answer:
    # P 2/10, R 1, F1 = 2 * (1/5) / (1/5 + 1) = 1/3
    (row,) = bm25["per_query"]
    assert (row["query_id"], row["em"]) == ("q004", 0.0)
    assert row["f1"] == pytest.approx(1 / 3) and bm25["token_f1"] == pytest.approx(1 / 3)

    # an edit after the approval: the new revision is not approved, and nothing scores against it
    assert golden(golden_db, capsys, "references", "set", "q004", "--short", "58 euros", "--note", "wording")[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "references", "show", "q004")
    shown = json.loads(out)
    assert shown["current"]["short_answer"] == "58 euros" and shown["current"]["approved"] is False
    assert [e["op"] for e in shown["history"]] == ["write", "approve", "write"]
    doc_id, offsets = span.rsplit(":", 1)
    (anchor,) = shown["history"][0]["evidence"]
    assert (anchor["doc_id"], anchor["start"], anchor["end"]) == (doc_id, *map(int, offsets.split("-")))
    assert anchor["doc_sha256"] == demo_store.read_one("SELECT canonical_sha256 FROM documents WHERE doc_id = ?",
                                                       [doc_id])[0]
    # approving what you read: a stale revision is refused
    stale = shown["history"][0]["event_id"]
    code, _, err = golden(golden_db, capsys, "references", "approve", "q004", "--revision", str(stale))
    assert code == 2 and "changed since you read it" in err


def test_a_span_off_the_document_is_one_sentence_and_changes_nothing(demo_store, golden_db, capsys, span):
    before = table_snapshot(demo_store)
    doc_id = span.rsplit(":", 1)[0]
    code, _, err = golden(golden_db, capsys, "references", "set", "q004", "--short", "EUR 58", "--evidence",
                          f"{doc_id}:10-99999999")
    assert code == 2 and "outside the document" in err and err.count("\n") == 1
    code, _, err = golden(golden_db, capsys, "references", "set", "q004", "--short", "x", "--evidence", "nodoc:1-2")
    assert code == 2 and "names no document" in err
    code, _, err = golden(golden_db, capsys, "references", "set", "q004", "--short", "x", "--evidence", "q004-12")
    assert code == 2 and "DOC_ID:START-END" in err
    code, _, err = golden(golden_db, capsys, "references", "set", "q004")
    assert code == 2 and "needs a short answer, a full answer or both" in err
    assert table_snapshot(demo_store) == before


def test_a_bad_import_line_writes_nothing_and_a_good_file_is_approved(demo_store, golden_db, capsys, tmp_path, span):
    doc_id, offsets = span.rsplit(":", 1)
    start, end = map(int, offsets.split("-"))
    good = {"query_id": "q004", "short_answer": "EUR 58", "evidence": [{"doc_id": doc_id, "start": start, "end": end}]}
    bad = tmp_path / "refs.jsonl"
    bad.write_text(json.dumps(good) + "\n" + json.dumps({"query_id": "q-nope", "short_answer": "x"}) + "\n")
    before = table_snapshot(demo_store)
    code, _, err = golden(golden_db, capsys, "references", "import", str(bad))
    assert code == 2 and "refs.jsonl" in err and "q-nope" in err
    assert table_snapshot(demo_store) == before
    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps(good) + "\n" + json.dumps({"query_id": "q001", "full_answer": "Renew the certificate."}) + "\n")
    assert golden(golden_db, capsys, "references", "import", str(ok), "--approve")[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "references", "list")
    rows = {r["query_id"]: r for r in json.loads(out)}
    assert set(rows) == {"q001", "q004"} and all(r["approved"] for r in rows.values())
    assert live_refs.short_references(demo_store) == {"q004": "EUR 58"}  # q001 has no short form


def test_criteria_for_a_stratum_and_a_questions_own(demo_store, golden_db, capsys, tmp_path):
    stratum = demo_store.read_one("SELECT stratum FROM queries WHERE query_id = 'q004'")[0]
    three = [{"id": "amount", "text": "States the per diem amount", "example": "EUR 58 a day", "weight": 2},
             {"id": "city", "text": "Names the city rate", "example": "the Berlin rate", "scale_max": 2},
             {"id": "source", "text": "Points to the policy", "example": "see the expenses policy"}]
    f = tmp_path / "c.json"
    f.write_text(json.dumps(three))
    assert golden(golden_db, capsys, "references", "criteria", "--stratum", stratum, "--file", str(f))[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "references", "show", "q004")
    shown = json.loads(out)
    assert shown["criteria_from"] == "stratum"
    assert [(c["criterion_id"], c["weight"], c["scale_max"]) for c in shown["criteria"]] == [
        ("amount", 2.0, 1), ("city", 1.0, 2), ("source", 1.0, 1)]
    f.write_text(json.dumps(three[:1]))
    assert golden(golden_db, capsys, "references", "criteria", "--query", "q004", "--file", str(f))[0] == 0
    shown = json.loads(golden(golden_db, capsys, "--json", "references", "show", "q004")[1])
    assert shown["criteria_from"] == "query" and [c["criterion_id"] for c in shown["criteria"]] == ["amount"]
    # a criterion without a worked example, and six criteria, are refused
    f.write_text(json.dumps([{"id": "x", "text": "t", "example": " "}]))
    code, _, err = golden(golden_db, capsys, "references", "criteria", "--query", "q004", "--file", str(f))
    assert code == 2 and "worked example" in err
    f.write_text(json.dumps([{"id": f"c{i}", "text": "t", "example": "e"} for i in range(6)]))
    code, _, err = golden(golden_db, capsys, "references", "criteria", "--query", "q004", "--file", str(f))
    assert code == 2 and "6 criteria" in err


def test_roles(demo_store):
    annotator = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
    engineer = User("eng", "Eng", frozenset({Role.ENGINEER}))
    refs.write(demo_store, annotator, "q004", short_answer="EUR 58", full_answer=None)
    with pytest.raises(PermissionDenied):
        refs.write(demo_store, engineer, "q004", short_answer="EUR 58", full_answer=None)
    with pytest.raises(PermissionDenied):
        refs.set_criteria(demo_store, annotator, scope="query", scope_id="q004", criteria=[])
    with pytest.raises(PermissionDenied):
        refs.match(demo_store, annotator)
    with pytest.raises(NotFoundError):
        refs.write(demo_store, annotator, "q-nope", short_answer="x", full_answer=None)
    with pytest.raises(ValidationError):
        refs.parse_anchor("doc:5")
