"""Double authoring of reference answers (the service), on the demo store, on DuckDB and on
PostgreSQL's pass: a lead opens a round, each author drafts and submits blind to the other, the
round reports agreement, a lead adjudicates (accept one, or a merged answer) into the question's
approved reference answer revision naming the round; bad input is one sentence and changes
nothing; roles and blindness are enforced here, not by the page."""

from __future__ import annotations

import pytest

from annotator.evidence import reference_answers as refs
from annotator.evidence import reference_rounds as rr
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live import reference_answers as live_refs
from golden_store.live.reference_answers import Anchor, CriterionDraft
from tests.conftest import table_snapshot

LEAD = User("lena", "Lena", frozenset({Role.LEAD}))
ANN = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
BEN = User("ben", "Ben", frozenset({Role.ANNOTATOR}))
CY = User("cy", "Cy", frozenset({Role.ANNOTATOR}))  # not in the round
ENG = User("eng", "Eng", frozenset({Role.ENGINEER}))


@pytest.fixture
def span(demo_store) -> Anchor:
    doc_id, start, end = demo_store.read_one(
        "SELECT doc_id, start, \"end\" FROM current_evidence WHERE query_id = 'q004' ORDER BY start LIMIT 1")
    return Anchor(doc_id, int(start), int(end))


def _crit(*weights: float) -> tuple[CriterionDraft, ...]:
    return tuple(CriterionDraft(f"c{i}", f"criterion {i}", f"example {i}", w) for i, w in enumerate(weights, 1))


def _q(view: rr.RoundView, qid: str) -> dict:
    return next(q for q in view.questions if q["query_id"] == qid)


def test_blind_until_submitted_then_agreement_and_an_accepted_answer(demo_store, span):
    rid = rr.open_round(demo_store, LEAD, ["ann", "ben"], ["q004", "q003"], note="first pass")
    assert rid == "ref1"
    # ann drafts, then submits her draft; ben sees that she submitted, never what
    rr.save_draft(demo_store, ANN, rid, "q004", rr.answer_from("EUR 58", None, [span], _crit(2, 1, 1)))
    q = _q(rr.status(demo_store, BEN, rid), "q004")
    assert q["authors"]["ann"] == {"state": "drafting", "submission": None, "draft": None}
    rr.submit(demo_store, ANN, rid, "q004")
    for viewer in (BEN, CY):
        q = _q(rr.status(demo_store, viewer, rid), "q004")
        assert q["authors"]["ann"]["state"] == "submitted" and q["authors"]["ann"]["submission"] is None
        assert q["visible"] is False and q["agreement"] is None
    # ann sees her own submission, and nothing of ben's (he has not written)
    mine = _q(rr.status(demo_store, ANN, rid), "q004")["authors"]["ann"]["submission"]
    assert mine["short_answer"] == "EUR 58" and len(mine["criteria"]) == 3
    # ben submits: both now read both, and the agreement is there
    later = Anchor(span.doc_id, span.start, span.end + 20)
    rr.submit(demo_store, BEN, rid, "q004", rr.answer_from("58 euros", "It is 58 euros a day.", [later],
                                                             _crit(1, 1, 1, 1)))
    view = rr.status(demo_store, BEN, rid)
    q = _q(view, "q004")
    assert q["visible"] and q["authors"]["ann"]["submission"]["short_answer"] == "EUR 58"
    a = q["agreement"]
    # by hand: "eur 58" vs "58 euros": EM 0, F1 1/2; the spans: ben's covers ann's and 20 more -> L/(L + 20);
    # criteria 3 vs 4, weights (1/2, 1/4, 1/4, 0) vs (1/4 x 4): 1/4
    n = span.end - span.start
    assert (a["short_em"], a["short_f1"]) == (0.0, 0.5)
    assert a["span_jaccard"] == pytest.approx(n / (n + 20)) and a["spans_agree"] is True
    assert (a["same_count"], a["weight_distance"]) == (False, pytest.approx(0.25)) and a["disagrees"]
    assert view.agreement.n_compared == 1 and view.agreement.n_disagreeing == 1
    assert view.questions[0]["query_id"] == "q004"  # the disagreement first
    # nobody in the round had written q003: still waiting, no figure
    assert _q(view, "q003")["agreement"] is None

    # a lead accepts ann's answer, with why: the approved revision, naming the round; her criteria
    revision = rr.adjudicate(demo_store, LEAD, rid, "q004", accept="ann", note="the policy writes EUR")
    (now,) = live_refs.current(demo_store, "q004")
    assert (now["revision"], now["short_answer"], now["approved"], now["actor"]) == (revision, "EUR 58", True, "lena")
    history = live_refs.history(demo_store, "q004")
    assert [(h["op"], h["round_id"]) for h in history][-2:] == [("write", rid), ("approve", rid)]
    assert "accepted ann's answer - the policy writes EUR" in history[-2]["note"]
    source, criteria = live_refs.criteria_for_query(demo_store, "q004")
    assert source == "query" and [c["weight"] for c in criteria] == [2.0, 1.0, 1.0]
    q = _q(rr.status(demo_store, CY, rid), "q004")  # settled: everybody may read it now
    assert q["adjudicated"] and q["visible"] and q["decision"] == "accept" and q["accepted_author"] == "ann"
    assert rr.list_rounds(demo_store, CY)[0]["n_adjudicated"] == 1


def test_a_merged_answer_and_the_lead_who_is_an_author(demo_store, span):
    rid = rr.open_round(demo_store, LEAD, ["ann", "lena"], ["q004"])
    rr.submit(demo_store, ANN, rid, "q004", rr.answer_from("EUR 58", None, [span]))
    # lena leads and authors: she reads nothing of ann's and adjudicates nothing before her own submission
    assert _q(rr.status(demo_store, LEAD, rid), "q004")["visible"] is False
    with pytest.raises(ValidationError, match="submit your own answer to q004 before"):
        rr.adjudicate(demo_store, LEAD, rid, "q004", accept="ann")
    rr.submit(demo_store, LEAD, rid, "q004", rr.answer_from("EUR 58 a day", "EUR 58 for a full day.", [span]))
    revision = rr.adjudicate(demo_store, LEAD, rid, "q004", merged=rr.answer_from(
        "EUR 58", "The per diem for a full day in Berlin is EUR 58.", [span]), note="ann's short, lena's full")
    (now,) = live_refs.current(demo_store, "q004")
    assert (now["revision"], now["short_answer"], now["full_answer"]) == (
        revision, "EUR 58", "The per diem for a full day in Berlin is EUR 58.")
    assert _q(rr.status(demo_store, ANN, rid), "q004")["decision"] == "merge"
    assert live_refs.criteria_for_query(demo_store, "q004")[1] == []  # no criteria written: none set


def test_bad_input_is_one_sentence_and_changes_nothing(demo_store, span):
    rid = rr.open_round(demo_store, LEAD, ["ann", "ben"], ["q004"])
    rr.submit(demo_store, ANN, rid, "q004", rr.answer_from("EUR 58", None, [span]))
    before = table_snapshot(demo_store)
    cases = [
        (lambda: rr.open_round(demo_store, LEAD, ["ann", "ben"], ["q-nope"]), NotFoundError, "No live question 'q-nope'"),
        (lambda: rr.open_round(demo_store, LEAD, ["ann", " ann "], ["q001"]), ValidationError, "at least two authors"),
        (lambda: rr.open_round(demo_store, LEAD, ["ann", "ben"], []), ValidationError, "at least one question"),
        (lambda: rr.open_round(demo_store, LEAD, ["cy", "ben"], ["q004"]), ValidationError,
         "q004 is already in reference round ref1"),
        (lambda: rr.submit(demo_store, CY, rid, "q004", rr.answer_from("x")), ValidationError,
         "cy is not an author of reference round ref1"),
        (lambda: rr.submit(demo_store, BEN, rid, "q004", rr.answer_from("  ", "")), ValidationError,
         "needs a short answer, a full answer or both"),
        (lambda: rr.submit(demo_store, BEN, rid, "q004"), ValidationError, "nothing to submit"),
        (lambda: rr.submit(demo_store, BEN, rid, "q001", rr.answer_from("x")), NotFoundError,
         "q001 is not a question of reference round ref1"),
        (lambda: rr.submit(demo_store, BEN, "ref9", "q004", rr.answer_from("x")), NotFoundError,
         "No reference round 'ref9'"),
        (lambda: rr.submit(demo_store, BEN, rid, "q004", rr.answer_from("x", None, [Anchor(span.doc_id, 5, 10**8)])),
         ValidationError, "is outside the document"),
        (lambda: rr.submit(demo_store, BEN, rid, "q004", rr.answer_from("x", None, (), _crit(*[1] * 6))),
         ValidationError, "6 criteria"),
        (lambda: rr.submit(demo_store, ANN, rid, "q004", rr.answer_from("again")), ValidationError,
         "already submitted"),
        (lambda: rr.adjudicate(demo_store, LEAD, rid, "q004", accept="ben"), ValidationError,
         "ben has not submitted"),
        (lambda: rr.adjudicate(demo_store, LEAD, rid, "q004", accept="cy"), ValidationError, "cy is not an author"),
        (lambda: rr.adjudicate(demo_store, LEAD, rid, "q004"), ValidationError, "one of the two"),
        (lambda: rr.adjudicate(demo_store, LEAD, rid, "q004", merged=rr.answer_from(None, " ")), ValidationError,
         "needs a short answer"),
        # while q004 waits in the round, its authors write there, not on the question directly
        (lambda: refs.write(demo_store, BEN, "q004", short_answer="x", full_answer=None), ValidationError,
         "q004 is in reference round ref1"),
    ]
    for fn, kind, words in cases:
        with pytest.raises(kind) as err:
            fn()
        assert words in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert table_snapshot(demo_store) == before
    rr.adjudicate(demo_store, LEAD, rid, "q004", accept="ann")
    with pytest.raises(ValidationError, match="already adjudicated"):
        rr.submit(demo_store, BEN, rid, "q004", rr.answer_from("x"))
    with pytest.raises(ValidationError, match="already adjudicated"):
        rr.adjudicate(demo_store, LEAD, rid, "q004", accept="ann")
    refs.write(demo_store, BEN, "q004", short_answer="EUR 58 per day", full_answer=None)  # settled: open again


def test_roles(demo_store, span):
    for who in (ANN, ENG):
        with pytest.raises(PermissionDenied):
            rr.open_round(demo_store, who, ["ann", "ben"], ["q004"])
    rid = rr.open_round(demo_store, LEAD, ["ann", "ben"], ["q004"])
    with pytest.raises(PermissionDenied):
        rr.submit(demo_store, ENG, rid, "q004", rr.answer_from("x"))
    rr.submit(demo_store, ANN, rid, "q004", rr.answer_from("EUR 58"))
    with pytest.raises(PermissionDenied):
        rr.adjudicate(demo_store, BEN, rid, "q004", accept="ann")
    # a lead outside the round reads every submission; an engineer (no ADJUDICATE) only who submitted
    assert _q(rr.status(demo_store, LEAD, rid), "q004")["authors"]["ann"]["submission"]["short_answer"] == "EUR 58"
    assert _q(rr.status(demo_store, ENG, rid), "q004")["authors"]["ann"]["submission"] is None
    # a lead still writes a waiting question's reference directly (the round does not lock leads out)
    refs.write(demo_store, LEAD, "q004", short_answer="EUR 58", full_answer=None)
    assert [m["query_id"] for m in rr.my_questions(demo_store, BEN)] == ["q004"]
    assert rr.my_questions(demo_store, ANN) == []


def test_authors_must_be_accounts_that_label_once_there_are_accounts(demo_store):
    from annotator.people import identity

    admin = identity.create_user(demo_store, None, "admin", ["admin"], password="0123456789")
    identity.create_user(demo_store, admin, "ann", ["annotator"],
                         password="0123456789")
    identity.create_user(demo_store, admin, "rita", ["reviewer"],
                         password="0123456789")
    with pytest.raises(ValidationError, match="rita, zed: no enabled account that may write labels"):
        rr.open_round(demo_store, LEAD, ["ann", "rita", "zed"], ["q004"])


def test_the_demo_has_a_finished_round_with_an_adjudicated_disagreement(request, golden_db):
    from annotator import demo
    from annotator.people.identity import LOCAL_USER
    from tests.conftest import prepared_store

    store, _ = prepared_store(request, "full-demo-local", lambda s, _: demo.load_demo(s, LOCAL_USER, workflows=True))
    (r,) = rr.list_rounds(store, CY)
    assert (r["round_id"], r["authors"], r["n_questions"], r["n_adjudicated"]) == ("ref1", ["demo-anna", "demo-ben"],
                                                                                    2, 2)
    view = rr.status(store, CY, "ref1")
    by_q = {q["query_id"]: q for q in view.questions}
    assert by_q["q007"]["decision"] == "accept" and not by_q["q007"]["agreement"]["disagrees"]
    q013 = by_q["q013"]
    assert q013["decision"] == "merge" and q013["agreement"]["disagrees"] and q013["adjudication_note"]
    # by hand: "eur 240 per night" / "eur 240": F1 2/3; ben's span is the last 27 of anna's 61 characters;
    # criteria 3 vs 2, weights (1/2, 1/4, 1/4) vs (1/2, 1/2, 0): 1/4
    a = q013["agreement"]
    assert (a["short_em"], a["short_f1"]) == (0.0, pytest.approx(2 / 3))
    assert a["span_jaccard"] == pytest.approx(27 / 61) and a["spans_agree"] is True
    assert (a["same_count"], a["weight_distance"]) == (False, pytest.approx(0.25))
    assert view.agreement.n_compared == 2 and view.agreement.n_disagreeing == 1
    # the merged revision is the question's approved reference, with the content the demo's references had
    (now,) = live_refs.current(store, "q013")
    assert (now["short_answer"], now["approved"], now["actor"]) == ("EUR 240 per night", True, "demo-lena")
    assert live_refs.criteria_for_query(store, "q013")[0] == "stratum"  # the merge wrote none: the stratum's stand
