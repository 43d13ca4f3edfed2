"""Issue 29, M1: a fuzzy quote is saved as the document's own text of its span (what a
frozen export carries as ``quote``), the expert's typed text kept beside it in the note; and
the span ends where the sentence does (with its period)."""

from __future__ import annotations

import json

from annotator.evidence import evidence_authoring as ea
from annotator.people.identity import User
from annotator.people.roles import Role
from golden_store.freezing import freeze
from golden_store.live.documents import raw_text
from golden_store.versions import load_version
from golden_store.versions.export import export_version

EXPERT = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
TYPED = ("A mesage in the team channel alone is not enough, because you manager may be on leave and the "
         "absence would go unrecorded.")
SENTENCE = ("A message in the team channel alone is not enough, because your manager may be on leave and the "
            "absence would go unrecorded.")


def test_a_fuzzy_quote_is_saved_and_exported_as_the_document_text(demo_store, tmp_path):
    raw = raw_text(demo_store, "sick-leave")
    start = raw.index(SENTENCE)  # by hand: where the sentence, period included, is in the document
    res = ea.resolve(demo_store, EXPERT, TYPED)
    assert res.status == "fuzzy" and (res.best.doc_id, res.best.start, res.best.end) == (
        "sick-leave", start, start + len(SENTENCE))
    eid = ea.save_quote(demo_store, EXPERT, "q002", TYPED, res, confirmed=True)
    saved = {q["evidence_id"]: q for q in ea.quotes(demo_store, EXPERT, "q002")}[eid]
    assert saved["quote"] == SENTENCE and saved["match_kind"] == "fuzzy"
    assert ea.typed_form(saved["note"]) == TYPED

    freeze(demo_store, "m1", actor="eng")
    export_version(load_version("m1"), "jsonl", tmp_path / "jl")
    rows = {r["query_id"]: r for r in map(json.loads, (tmp_path / "jl" / "golden.jsonl").read_text().splitlines())}
    exported = [e for e in rows["q002"]["evidence"] if e["evidence_id"] == eid]
    assert len(exported) == 1 and exported[0]["quote"] == SENTENCE
    assert raw[exported[0]["start"]:exported[0]["end"]] == exported[0]["quote"]


def test_an_exact_quote_keeps_no_typed_form_and_a_user_note_survives(demo_store):
    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    res = ea.resolve(demo_store, EXPERT, quote)
    eid = ea.save_quote(demo_store, EXPERT, "q030", quote, res, note="from the table")
    saved = {q["evidence_id"]: q for q in ea.quotes(demo_store, EXPERT, "q030")}[eid]
    assert saved["quote"] == quote and saved["note"] == "from the table" and ea.typed_form(saved["note"]) is None

    res = ea.resolve(demo_store, EXPERT, TYPED)
    eid = ea.save_quote(demo_store, EXPERT, "q002", TYPED, res, note="a | b", confirmed=True)
    saved = {q["evidence_id"]: q for q in ea.quotes(demo_store, EXPERT, "q002")}[eid]
    assert saved["note"] == "typed: " + json.dumps(TYPED) + " | a | b" and ea.typed_form(saved["note"]) == TYPED


def test_typed_form_reads_only_what_save_quote_wrote():
    assert ea.typed_form(None) is None and ea.typed_form("typed by hand") is None
    assert ea.typed_form('typed: "a \\" | b" | note') == 'a " | b'
    assert ea.typed_form('typed: "unterminated') is None
