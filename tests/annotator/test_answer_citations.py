"""Answers imported with their contexts and citations (CLI, on the demo corpus): each citation is
decided at import - a span of a real document, its quote the text there, a quote found in the
document, or a document alone - and `golden answers citations` fails (exit 1) on any that does
not resolve, naming why; a bad citation field refuses the whole file; replacing answers replaces
their citations; contexts come back as the passages' text."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from golden_store.live import answer_citations
from tests.conftest import table_snapshot


def golden(golden_db, capsys, *argv):
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def leave(demo_store) -> str:
    return demo_store.read_one("SELECT raw_text FROM documents WHERE doc_id = 'annual-leave'")[0]


def _file(tmp_path, rows, name="answers.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_each_citation_is_decided_at_import_and_the_gate_fails_on_an_invalid_one(demo_store, golden_db, capsys,
                                                                                 tmp_path, leave):
    a, b = 10, 60
    quote = leave[a:b]
    citations = [
        {"doc_id": "annual-leave", "start": a, "end": b, "quote": quote, "claim": "c1"},   # valid span + quote
        {"doc_id": "annual-leave", "start": a, "end": b, "quote": "something else"},      # quote is not the text there
        {"doc_id": "annual-leave", "quote": "  " + quote.replace(" ", "  ") + " "},     # found, spacing aside
        {"doc_id": "annual-leave", "quote": "a sentence no policy has"},                  # quote not in the document
        {"doc_id": "no-such-doc", "start": 0, "end": 5},                                   # made-up document
        {"doc_id": "annual-leave"},                                                        # document level
        {"doc_id": "annual-leave", "start": 5, "end": len(leave) + 1},                     # outside the document
    ]
    path = _file(tmp_path, [{"query_id": "q005", "answer": "25 days.", "citations": citations,
                             "contexts": [{"doc_id": "annual-leave", "start": a, "end": b}, {"text": "extra note"}]}])
    assert golden(golden_db, capsys, "answers", "import", path, "--system", "s1")[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "answers", "citations", "--system", "s1")
    report = json.loads(out)["s1"]
    assert code == 1 and report["gate"] == "FAIL"
    assert (report["citations"], report["valid"], report["document_level"]) == (7, 3, 1)
    assert [(x["ordinal"], x["problem"]) for x in report["invalid"]] == [
        (1, "the quote is not the text at that span"),
        (3, "the quote is not in the document"),
        (4, "no document 'no-such-doc' in the corpus"),
        (6, f"span 5-{len(leave) + 1} is outside the document (0-{len(leave)})"),
    ]
    assert answer_citations.contexts(demo_store, "s1", "q005") == [quote, "extra note"]
    code, out, _ = golden(golden_db, capsys, "answers", "citations", "--system", "s1")
    assert code == 1 and "citation validity 0.4286 (3/7" in out and "FAIL" in out

    # the same answers re-imported with valid citations only: the old ones go with them, the gate passes
    path = _file(tmp_path, [{"query_id": "q005", "answer": "25 days.", "citations": citations[:1]}], "b.jsonl")
    assert golden(golden_db, capsys, "answers", "import", path, "--system", "s1", "--replace")[0] == 0
    code, out, _ = golden(golden_db, capsys, "--json", "answers", "citations", "--system", "s1")
    assert code == 0 and json.loads(out)["s1"]["gate"] == "PASS" and json.loads(out)["s1"]["citations"] == 1
    assert answer_citations.contexts(demo_store, "s1", "q005") == []


@pytest.mark.parametrize("bad", [
    {"citations": "annual-leave"},
    {"citations": [{"start": 0, "end": 5}]},
    {"citations": [{"doc_id": "annual-leave", "start": 3}]},
    {"contexts": [{"doc_id": "annual-leave", "start": "0", "end": 5}]},
    {"contexts": [42]},
])
def test_a_bad_citation_or_context_field_refuses_the_file(demo_store, golden_db, capsys, tmp_path, bad):
    before = table_snapshot(demo_store)
    path = _file(tmp_path, [{"query_id": "q005", "answer": "25 days."}, {"query_id": "q001", "answer": "x", **bad}])
    code, _, err = golden(golden_db, capsys, "answers", "import", path, "--system", "s1")
    assert code == 2 and "line 2" in err and "nothing was imported" in err
    assert table_snapshot(demo_store) == before
