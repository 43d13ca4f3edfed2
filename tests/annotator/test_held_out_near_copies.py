"""Issue 37, item 2 (probe H2): a held-out question copied nearly verbatim (its "?" dropped, one
word *emphasised*, "she's" written "she is") reached the hosted model, because the guard
looked for the question's exact text. These drive the real drafting paths against the local
Messages API server: a near-copy is refused before any request, an unrelated text sharing a
few words is sent, and a question un-held later is still refused."""

from __future__ import annotations

import json
from datetime import date

import pytest

from annotator.evidence import evidence_authoring as ea, nuggets, question_drafts
from annotator.integration import corpus_import
from annotator.judge import llm
from annotator.judge.held_out import NGRAM, HeldOut, words
from annotator.people.identity import LOCAL_USER, create_user
from golden_store.live import queries
from tests.llm_server import message

SENTINEL = "HELDOUT-SENTINEL what is the VPN error code policy?"
# The probe's three copies that went through (leak3, leak5, leak1).
NEAR_COPIES = {
    "nqH1": "FAQ: HELDOUT-SENTINEL what is the VPN error code policy",  # no "?"
    "q024": "Q: how many days a week do we need to be in the *office* these days?",  # one word emphasised
    "q009": "How long does the company keep paying a new mum her full wages while she is off",  # she's -> she is
}


@pytest.fixture
def held(demo_store, tmp_path):
    """The demo (q009 and q024 held out) with the probe's held-out sentinel question nqH1, a
    lead, and one corpus document per near-copy (leak-nqH1, leak-q024, leak-q009)."""
    s = demo_store
    queries.save_query(s, queries.QueryRecord("nqH1", SENTINEL, "lexical", True, "expert", date(2026, 3, 1),
                                              held_out=True), actor="t", must_exist=False)
    admin = create_user(s, None, "admin", ["admin"], password="correct horse battery")
    lead = create_user(s, admin, "lead", ["lead"], password="correct horse battery")
    files = []
    for qid, copy in NEAR_COPIES.items():
        f = tmp_path / f"leak-{qid}.md"
        f.write_text(f"# Notes\n\nSome context first.\n\n{copy}\n\nAnd an answer after it.\n")
        files.append(f)
    corpus_import.import_paths(s, admin, files)
    return s, lead


def _empty(body):
    return 200, message(json.dumps({"questions": []}))


@pytest.mark.parametrize("qid", sorted(NEAR_COPIES))
def test_question_drafting_refuses_a_near_copy_of_a_held_out_question(held, llm_server, qid):
    s, lead = held
    llm_server.default = _empty
    with pytest.raises(llm.LLMRefused, match=qid):
        question_drafts.plan(s, lead, f"leak-{qid}")
    with pytest.raises(llm.LLMRefused, match=qid):
        question_drafts.propose(s, lead, f"leak-{qid}")
    assert llm_server.requests == []


@pytest.mark.parametrize("qid", sorted(NEAR_COPIES))
def test_nugget_drafting_refuses_evidence_quoting_a_near_copy(held, llm_server, qid):
    """A question that is not held out (nqE) whose saved evidence quote is the near-copy."""
    s, _ = held
    llm_server.default = lambda body: (200, message(json.dumps({"insufficient_evidence": True, "nuggets": []})))
    queries.save_query(s, queries.QueryRecord("nqE", "Which policy covers VPN error codes and office days?",
                                              "paraphrase", True, "expert", date(2026, 3, 1)),
                       actor="t", must_exist=False)
    quote = NEAR_COPIES[qid]
    res = ea.resolve(s, LOCAL_USER, quote)
    assert res.best is not None and res.best.doc_id == f"leak-{qid}"
    ea.save_quote(s, LOCAL_USER, "nqE", quote, res, res.best)
    with pytest.raises(llm.LLMRefused, match=qid):
        nuggets.draft(s, LOCAL_USER, "nqE")
    out = nuggets.draft_many(s, LOCAL_USER, ["nqE"])
    assert [o.outcome for o in out] == ["skipped"] and qid in out[0].message
    assert llm_server.requests == []


def test_a_short_overlap_with_a_held_out_question_is_sent(held, llm_server, tmp_path):
    """q024 is held out; a document asking "how many days" of something else shares three
    words with it (fewer than NGRAM) and is sent."""
    s, lead = held
    f = tmp_path / "annual-leave-faq.md"
    f.write_text("# Leave FAQ\n\nHow many days of annual leave do I get in my first year?\n\nTwenty-five.\n")
    corpus_import.import_paths(s, LOCAL_USER, [f])
    llm_server.default = _empty
    assert question_drafts.propose(s, lead, "annual-leave-faq").outcome == "ok"
    assert len(llm_server.requests) == 1


def test_a_question_un_held_later_is_still_refused(held, llm_server, tmp_path):
    """q024's flag cleared by a new revision: its text and its id stay out of every request."""
    s, lead = held
    q = queries.get_query(s, "q024")
    assert q is not None and q.held_out
    queries.save_query(s, queries.QueryRecord(q.query_id, q.text, q.stratum, q.answerable, q.source,
                                              q.created_date, held_out=False), actor="t", must_exist=True)
    assert not queries.get_query(s, "q024").held_out
    llm_server.default = _empty
    with pytest.raises(llm.LLMRefused, match="q024"):
        question_drafts.propose(s, lead, "leak-q024")
    with pytest.raises(llm.LLMRefused, match="q024 was held out"):
        nuggets.draft(s, LOCAL_USER, "q024")
    assert llm_server.requests == []


def test_words_fold_markup_punctuation_and_contractions():
    assert words("She's *off*, isn't she? <b>Yes</b> &amp; they&#39;re") == \
        words("she is off is not she yes they are")
    assert words("I can't") == words("I cannot") == ["i", "can", "not"]


def test_the_guard_matches_eight_words_or_a_whole_short_question():
    guard = HeldOut.build([("q1", "how many days a week do we need to be in the office these days?"),
                           ("q2", "What is VPN-ERR-0417?")])
    assert NGRAM == 8
    assert guard.text_in("x how many days a week do we need y") == "q1"  # 8 shared words
    assert guard.text_in("how many days a week do we") is None  # 7
    assert guard.text_in("Seen: **VPN-ERR-0417**, what is it") is None  # the short question's words, not in order
    assert guard.text_in("so... what is vpn err 0417") == "q2"  # the whole short question
    assert guard.text_in(None, "", "unrelated") is None
