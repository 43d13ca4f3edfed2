"""The expert's evidence workflow, through the annotator layer on a real store."""

from __future__ import annotations

import pytest

from annotator.evidence import evidence_authoring as ea
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.live.documents import import_documents
from golden_store.corpus.sources import load_sources
from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from golden_store.live.queries import get_query
from golden_store.versions import load_version

EXPERT = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))


def test_search_ranks_the_answering_document_first_with_marked_hits(demo_store):
    hits = ea.search_corpus(demo_store, EXPERT, "certificate expired VPN")
    assert hits[0].doc_id == "vpn-troubleshooting"
    marked = [t.lower() for t, hit in hits[0].snippet if hit]
    assert {"certificate", "vpn"} <= set(marked)
    assert "".join(t for t, _ in hits[0].snippet).count("…") <= 2


def test_exact_quote_saved_as_an_event_with_rubric_and_sha(demo_store):
    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    res = ea.resolve(demo_store, EXPERT, quote)
    assert res.status == "exact" and res.best.doc_id == "expenses-per-diem"
    pl = ea.placement(demo_store, EXPERT, quote, res.best)
    assert pl.passage == quote and pl.diff == (("equal", quote),)
    eid = ea.save_quote(demo_store, EXPERT, "q030", quote, res)
    saved = {q["evidence_id"]: q for q in ea.quotes(demo_store, EXPERT, "q030")}[eid]
    assert (saved["doc_id"], saved["match_kind"], saved["actor"]) == ("expenses-per-diem", "exact", "ann")
    row = demo_store.read_one("SELECT rubric_version, doc_sha256 FROM evidence_events WHERE evidence_id = ?", [eid])
    sha = demo_store.read_one("SELECT canonical_sha256 FROM documents WHERE doc_id = 'expenses-per-diem'")[0]
    assert row == (1, sha)


def test_fuzzy_quote_shows_the_character_differences(demo_store):
    quote = "full day eur 58, half-day EUR 29 hotel cap EUR 165 a night"
    res = ea.resolve(demo_store, EXPERT, quote)
    assert res.status == "fuzzy" and 90 <= res.best.score < 100
    pl = ea.placement(demo_store, EXPERT, quote, res.best)
    assert ("quote_only", "a") in pl.diff or any(op == "quote_only" and "a" in t for op, t in pl.diff)
    assert any(op == "corpus_only" and "per" in t for op, t in pl.diff)
    eid = ea.save_quote(demo_store, EXPERT, "q030", quote, res)
    assert {q["evidence_id"]: q["match_kind"] for q in ea.quotes(demo_store, EXPERT, "q030")}[eid] == "fuzzy"


def test_ambiguous_needs_a_choice_and_unresolved_is_refused(demo_store):
    text = "Badges are collected at reception on the first day of work."
    import_documents(demo_store, load_sources([("badge-a.txt", text.encode()), ("badge-b.txt", text.encode())]),
                     actor="eng")
    res = ea.resolve(demo_store, EXPERT, "Badges are collected at reception")
    assert res.status == "ambiguous" and len(res.candidates) == 2
    with pytest.raises(ValidationError, match="choose one"):
        ea.save_quote(demo_store, EXPERT, "q030", "Badges are collected at reception", res)
    with pytest.raises(ValidationError, match="Save anyway"):  # occurs twice: confirmed only
        ea.save_quote(demo_store, EXPERT, "q030", "Badges are collected at reception", res, res.candidates[1])
    eid = ea.save_quote(demo_store, EXPERT, "q030", "Badges are collected at reception", res, res.candidates[1],
                        confirmed=True)
    assert {q["evidence_id"]: q["doc_id"] for q in ea.quotes(demo_store, EXPERT, "q030")}[eid] == "badge-b"
    nothing = ea.resolve(demo_store, EXPERT, "The canteen serves vegan lunch on Thursdays")
    with pytest.raises(ValidationError, match="not found"):
        ea.save_quote(demo_store, EXPERT, "q030", "x", nothing)


def test_multi_hop_quotes_retract_and_freeze(demo_store):
    before = len(ea.quotes(demo_store, EXPERT, "q003"))
    res = ea.resolve(demo_store, EXPERT, "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night")
    eid = ea.save_quote(demo_store, EXPERT, "q003", res.quote, res)
    assert len(ea.quotes(demo_store, EXPERT, "q003")) == before + 1
    ea.retract_quote(demo_store, EXPERT, "q003", eid)
    assert len(ea.quotes(demo_store, EXPERT, "q003")) == before
    ops = demo_store.read("SELECT op FROM evidence_events WHERE evidence_id = ? ORDER BY event_id", [eid])
    assert ops == [("set",), ("retract",)]  # nothing is overwritten
    freeze(demo_store, "v1", actor="eng")
    assert "ann" not in load_version("v1").manifest["annotators"]


def test_no_answer_in_corpus(demo_store):
    with pytest.raises(ValidationError, match="still has quotes"):
        ea.mark_no_answer(demo_store, EXPERT, "q001")
    for q in ea.quotes(demo_store, EXPERT, "q001"):
        ea.retract_quote(demo_store, EXPERT, "q001", q["evidence_id"])
    ea.mark_no_answer(demo_store, EXPERT, "q001")
    rec = get_query(demo_store, "q001")
    assert rec.answerable is False and rec.stratum == "negative" and "was stratum lexical" in rec.notes
    assert "q001" not in set(ea.queue(demo_store, EXPERT)["query_id"])


def test_roles_without_label_permission_are_refused(demo_store):
    with pytest.raises(PermissionDenied):
        ea.resolve(demo_store, ENGINEER, "anything")
    res = ea.resolve(demo_store, EXPERT, "Full day EUR 58, half day EUR 29")
    with pytest.raises(PermissionDenied):
        ea.save_quote(demo_store, ENGINEER, "q030", res.quote, res)


def test_index_follows_corpus_changes(demo_store):
    assert ea.search_corpus(demo_store, EXPERT, "zeppelin") == []
    import_documents(demo_store, load_sources([("air.txt", b"The zeppelin hangar is closed.")]), actor="eng")
    assert ea.search_corpus(demo_store, EXPERT, "zeppelin")[0].doc_id == "air"


def test_the_same_passage_is_not_saved_twice(demo_store):
    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    res = ea.resolve(demo_store, EXPERT, quote)
    ea.save_quote(demo_store, EXPERT, "q030", quote, res)
    with pytest.raises(ValidationError, match="already a quote of q030"):
        ea.save_quote(demo_store, EXPERT, "q030", quote, res)


def test_search_ignores_stopwords_when_there_is_anything_else(demo_store):
    hits = ea.search_corpus(demo_store, EXPERT, "per diem Berlin")
    assert hits[0].doc_id == "expenses-per-diem"
    assert all("Berlin" in "".join(t for t, _ in h.snippet) or "diem" in "".join(t for t, _ in h.snippet).lower()
               for h in hits)
    assert not any(t.lower() == "per" for t, hit in hits[0].snippet if hit)


def test_a_selection_becomes_the_quote_at_the_place_selected(demo_store):
    """Evidence by selection: raw offsets from the viewer; white space trimmed; of two equal
    passages the one selected is chosen; a changed document or a shifted selection is refused."""
    s = demo_store
    user = User("ann", "ann", frozenset({Role.ANNOTATOR}))
    twice = "Same sentence here. Other text in between. Same sentence here. The end."
    import_documents(s, load_sources([("twice.txt", twice.encode())]), actor="t")
    shown = ea.document(s, user, "twice")
    second = twice.index("Same sentence here.", 5)
    sel = {"doc_id": "twice", "digest": shown.digest, "start": second - 1, "end": second + 19,
           "text": twice[second - 1:second + 19]}
    quote, res, place = ea.resolve_selection(s, user, sel)
    assert quote == "Same sentence here." and res.status == "ambiguous"
    chosen = res.candidates[place]
    assert (chosen.start, chosen.end) == (second, second + 19)
    eid = ea.save_quote(s, user, "q001", quote, res, chosen, confirmed=True)
    assert s.read_one("SELECT doc_id, start, \"end\" FROM current_evidence WHERE evidence_id = ?", [eid]) == (
        "twice", second, second + 19)
    with pytest.raises(ValidationError, match="could not be placed exactly"):
        ea.resolve_selection(s, user, {**sel, "start": sel["start"] + 1})
    with pytest.raises(ValidationError, match="changed since it was shown"):
        ea.resolve_selection(s, user, {**sel, "digest": "0" * 24})  # the viewer showed another version
    with pytest.raises(ValidationError, match="only white space"):
        ea.resolve_selection(s, user, {**sel, "start": second - 1, "end": second, "text": " "})


def test_short_or_repeated_quotes_need_confirmation(demo_store):
    """Issue 17 item 7: a 19-character quote became a grade-3 qrel unchecked."""
    s = demo_store
    short = "half day EUR 29"
    res = ea.resolve(s, EXPERT, short)
    assert res.status in ("exact", "fuzzy")
    warns = ea.quote_warnings(s, EXPERT, short, res)
    assert len(warns) == 1 and "short" in warns[0]
    with pytest.raises(ValidationError, match="Save anyway"):
        ea.save_quote(s, EXPERT, "q030", short, res)
    assert ea.save_quote(s, EXPERT, "q030", short, res, confirmed=True)
    # 5 words but 29 characters: still short
    assert ea.MIN_QUOTE_CHARS == 30 and ea.MIN_QUOTE_WORDS == 5
    long_enough = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    assert ea.quote_warnings(s, EXPERT, long_enough, ea.resolve(s, EXPERT, long_enough)) == []
    # the same long text in two documents: found exactly in the one searched, still repeated
    text = "Visitors sign the guest book at the front desk before entering the building."
    import_documents(s, load_sources([("guest-a.txt", text.encode()), ("guest-b.txt", text.encode())]), actor="eng")
    res = ea.resolve(s, EXPERT, text, doc_id="guest-a")
    assert res.status == "exact"
    warns = ea.quote_warnings(s, EXPERT, text, res)
    assert len(warns) == 1 and "more than once" in warns[0]
    with pytest.raises(ValidationError, match="more than once"):
        ea.save_quote(s, EXPERT, "q030", text, res)
    ea.save_quote(s, EXPERT, "q030", text, res, confirmed=True)


def test_no_answer_can_be_undone_by_its_author_as_a_new_revision(demo_store):
    s = demo_store
    other = User("bob", "Bob", frozenset({Role.ANNOTATOR}))
    from datetime import date
    from golden_store.live.queries import QueryRecord, save_query
    save_query(s, QueryRecord("u1", "Is there a canteen on the roof?", "paraphrase", True, "expert",
                              date(2026, 3, 1), notes="from the help desk"), actor="t", must_exist=False)
    before = get_query(s, "u1")
    assert ea.my_no_answers(s, EXPERT) == []
    ea.mark_no_answer(s, EXPERT, "u1")
    with pytest.raises(ValidationError, match="already marked"):
        ea.mark_no_answer(s, EXPERT, "u1")
    assert [r.query_id for r in ea.my_no_answers(s, EXPERT)] == ["u1"]
    assert ea.my_no_answers(s, other) == []
    with pytest.raises(ValidationError, match="no \"no answer\" mark of yours"):
        ea.undo_no_answer(s, other, "u1")
    n = len(s.read("SELECT 1 FROM query_revisions WHERE query_id = 'u1'"))
    ea.undo_no_answer(s, EXPERT, "u1")
    rec = get_query(s, "u1")
    assert (rec.answerable, rec.stratum, rec.notes) == (True, before.stratum, before.notes)
    hist = s.read("SELECT answerable, stratum, actor FROM query_revisions WHERE query_id = 'u1' ORDER BY event_id")
    assert len(hist) == n + 1 and hist[-2][:2] == (False, "negative")  # the mark stays in the history
    assert "u1" in set(ea.queue(s, EXPERT)["query_id"])
    assert ea.my_no_answers(s, EXPERT) == []
    with pytest.raises(ValidationError, match="no \"no answer\" mark of yours"):
        ea.undo_no_answer(s, EXPERT, "u1")


def _former_my_no_answers(s, user) -> list[str]:
    """my_no_answers as it was: every non-answerable question last edited by ``user``, its
    history read and checked one question at a time (``_own_mark``)."""
    from golden_store.live.queries import list_queries

    df = list_queries(s)
    mine = df[(~df["answerable"].astype(bool)) & (df["last_edited_by"] == user.username)]
    return [q for q in mine["query_id"] if ea._own_mark(s, user, q) is not None]


@pytest.mark.parametrize("any_store", ["duckdb", "postgresql"], indirect=True)
def test_no_answer_marks_in_sql_equal_the_per_question_check(any_store):
    """Issue 19: the undoable "no answer" marks come from one query; on every kind of
    history (a mark, an undone mark, a mark edited over, a question imported as negative, a
    retired one, a mark on a question that was not answerable) they equal the former
    per-question check, for each person."""
    from datetime import date
    from golden_store.live.queries import QueryRecord, retire_query, save_query

    s = any_store
    ann, bob = EXPERT, User("bob", "Bob", frozenset({Role.ANNOTATOR}))

    def q(qid: str, answerable: bool = True, stratum: str = "paraphrase", actor: str = "ann", new: bool = True):
        save_query(s, QueryRecord(qid, f"Question {qid}?", stratum, answerable, "expert", date(2026, 3, 1)),
                   actor=actor, must_exist=not new)

    def mark(qid: str, actor: str) -> None:
        rec = get_query(s, qid)
        save_query(s, QueryRecord(qid, rec.text, "negative", False, rec.source, rec.created_date, notes="na"),
                   actor=actor, must_exist=True)

    for i in range(12):
        q(f"m{i:02d}")
    mark("m00", "ann")  # undoable by ann
    mark("m01", "bob")  # bob's
    mark("m02", "ann")
    save_query(s, QueryRecord("m02", "Question m02?", "paraphrase", True, "expert", date(2026, 3, 1)),
               actor="ann", must_exist=True)  # undone
    mark("m03", "ann")
    save_query(s, QueryRecord("m03", "Question m03, reworded?", "negative", False, "expert", date(2026, 3, 1)),
               actor="bob", must_exist=True)  # edited over by bob: bob's latest, but not a mark
    q("n00", answerable=False, stratum="negative")  # imported as negative by ann: one revision
    q("n01", answerable=False, stratum="negative", actor="bob")
    mark("n01", "ann")  # the revision before was not answerable
    mark("m04", "ann")
    retire_query(s, "m04", actor="ann")  # retired
    mark("m05", "ann")
    mark("m06", "bob")
    for who in (ann, bob):
        got = [r.query_id for r in ea.my_no_answers(s, who)]
        assert got == _former_my_no_answers(s, who)
    assert [r.query_id for r in ea.my_no_answers(s, ann)] == ["m00", "m05"]
    assert [r.query_id for r in ea.my_no_answers(s, bob)] == ["m01", "m06"]
