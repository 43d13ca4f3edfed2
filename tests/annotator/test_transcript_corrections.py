"""Issue 37 item 10, the reviewer's frictions (newcomer walkthrough 2026-12-07, persona 4):

* a reviewer corrects their own verdict after the sample: a new review event supersedes the
  current one (the old one stays), refused with a sentence and nothing written when it is not
  theirs, not in their samples, unchanged, without a reason, or changed since the page showed
  it;
* adding a failure to the golden set asks whether the corpus answers the question: an
  unanswerable one is stored as the queries carry it (answerable false, the negative stratum
  by default, the reason in its notes).

The ``store`` fixtures run these on DuckDB, and again on PostgreSQL in the PostgreSQL pass
(``GOLDEN_TEST_ENGINE=postgresql``)."""

from __future__ import annotations

import pytest

from annotator.evaluation import transcripts
from annotator.people.identity import Role, User
from annotator.people.roles import PermissionDenied
from golden_store.core.errors import ValidationError
from golden_store.live import queries
from tests.annotator.test_transcripts import ENGINEER, LEAD, REVIEWER, _record, _write
from tests.conftest import table_snapshot

ROSA = User("rosa", "Rosa", frozenset({Role.REVIEWER}))


def _events(store, item_id: str) -> list[tuple]:
    return [(h["verdict"], h["failure_class"], h["note"], h["actor"])
            for h in transcripts.verdict_history(store, REVIEWER, item_id)]


def _surface_verdict(store, item_id: str, action: str, value=None, label_id: str = "lbl-first-000001"):
    card = next(c for c in transcripts.review_cards(store, REVIEWER, 50) if c["item"]["item_id"] == item_id)
    acks = transcripts.submit(store, REVIEWER, [{"id": label_id, "by": REVIEWER.username, "item": card["item"],
                                                 "digest": card["digest"], "action": action, "value": value}])
    assert [a.status for a in acks] == ["saved"], acks
    return card


def test_a_reviewer_corrects_their_own_verdict_as_a_new_event(demo_store, tmp_path):
    # the walkthrough's case: a fabricated answer the judge passed, reviewed "no failure" by mistake;
    # the verdict agrees with the judge, so no lead would ever see it
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [
        _record("q001"), _record("q002", passed=True), _record("q003")]))
    _, drawn = transcripts.draw(demo_store, REVIEWER, 10, seed=1, pass_share=0.5)
    fabricated = "run-7|q002|0"
    assert fabricated in drawn
    card = _surface_verdict(demo_store, fabricated, "no_failure")
    assert transcripts.questioned(demo_store, LEAD) == []  # agrees with the judge: nobody else looks
    mine = {r["item_id"]: r for r in transcripts.my_reviewed(demo_store, REVIEWER)}
    first_event = mine[fabricated]["review_event_id"]
    assert (mine[fabricated]["verdict"], mine[fabricated]["previous_verdict"]) == ("no_failure", None)

    new_event = transcripts.correct_verdict(demo_store, REVIEWER, fabricated, "system_failure",
                                            "generation_unfaithful", "  the answer is made up  ",
                                            expected_event=first_event)
    assert new_event > first_event
    # history kept: the first verdict is still there, the correction after it, with its reason
    assert _events(demo_store, fabricated) == [
        ("no_failure", None, None, "rita"),
        ("system_failure", "generation_unfaithful", "the answer is made up", "rita")]
    mine = {r["item_id"]: r for r in transcripts.my_reviewed(demo_store, REVIEWER)}
    r = mine[fabricated]
    assert (r["verdict"], r["failure_class"], r["review_note"]) == ("system_failure", "generation_unfaithful",
                                                                    "the answer is made up")
    assert (r["previous_verdict"], r["previous_class"], r["verdicts"]) == ("no_failure", None, 2)
    assert r["review_event_id"] == new_event and r["against_judge"] is True
    # the corrected verdict is what counts everywhere: the lead's queue and the judge check
    assert [q["item_id"] for q in transcripts.questioned(demo_store, LEAD)] == [fabricated]
    check = transcripts.judge_check(demo_store, REVIEWER)[0]
    assert (check["passes_confirmed"], check["passes_overturned"]) == (0, 1)
    # the surface's undo of the first label no longer applies: the verdict changed since
    undo = transcripts.submit(demo_store, REVIEWER, [{"id": "lbl-undo-0000001", "by": "rita", "item": card["item"],
                                                      "action": "undo", "target": "lbl-first-000001"}])
    assert undo[0].status == "refused" and "changed since" in undo[0].message

    # corrected again (back and forth is allowed; each is one more event)
    transcripts.correct_verdict(demo_store, REVIEWER, fabricated, "ambiguous", None, "not sure after all")
    r = {x["item_id"]: x for x in transcripts.my_reviewed(demo_store, REVIEWER)}[fabricated]
    assert (r["verdict"], r["previous_verdict"], r["previous_class"], r["verdicts"]) == (
        "ambiguous", "system_failure", "generation_unfaithful", 3)
    assert len(_events(demo_store, fabricated)) == 3


def test_a_correction_is_refused_with_a_sentence_and_nothing_written(demo_store, tmp_path):
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [_record("q001"), _record("q003"),
                                                                    _record("q004")]))
    _, drawn = transcripts.draw(demo_store, REVIEWER, 2, seed=3, pass_share=0.0)
    item, unreviewed = drawn
    _surface_verdict(demo_store, item, "system_failure", "ranking")
    event = {r["item_id"]: r for r in transcripts.my_reviewed(demo_store, REVIEWER)}[item]["review_event_id"]
    (other,) = {"run-7|q001|0", "run-7|q003|0", "run-7|q004|0"} - set(drawn)
    _, rosa_drawn = transcripts.draw(demo_store, ROSA, 1, seed=0, pass_share=0.0)
    assert rosa_drawn == [other]
    transcripts.review(demo_store, REVIEWER, other, "no_failure")  # rita's verdict on an item of rosa's sample
    before = table_snapshot(demo_store)
    refusals = [
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "no_failure", None, ""), "say why"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "no_failure", None, "   "), "say why"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "system_failure", "ranking", "same"),
         "already your verdict"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "system_failure", None, "no class"),
         "needs its class"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "withdrawn", None, "undo it"),
         "is one of"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, item, "no_failure", None, "stale page",
                                             expected_event=event - 1), "changed since the page showed it"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, unreviewed, "no_failure", None, "not given"),
         "has no verdict now"),
        (lambda: transcripts.correct_verdict(demo_store, REVIEWER, other, "ambiguous", None, "not drawn by me"),
         "not in your samples"),
        (lambda: transcripts.correct_verdict(demo_store, ROSA, other, "ambiguous", None, "rita's verdict"),
         "is rita's, not yours"),
    ]
    for call, words in refusals:
        with pytest.raises(ValidationError, match=words):
            call()
    with pytest.raises(PermissionDenied):
        transcripts.correct_verdict(demo_store, ENGINEER, item, "no_failure", None, "an engineer")
    assert table_snapshot(demo_store) == before
    # an undone verdict is back in the queue, to be reviewed there, not corrected
    transcripts.submit(demo_store, REVIEWER, [{"id": "lbl-undo-0000002", "by": "rita", "item": {"item_id": item},
                                               "action": "undo", "target": "lbl-first-000001"}])
    with pytest.raises(ValidationError, match="has no verdict now"):
        transcripts.correct_verdict(demo_store, REVIEWER, item, "no_failure", None, "after the undo")
    assert [r["verdict"] for r in _history_rows(demo_store, item)] == ["system_failure", "withdrawn"]


def _history_rows(store, item_id):
    return transcripts.verdict_history(store, REVIEWER, item_id)


def test_adding_a_failure_asks_answerable_or_not(demo_store, tmp_path):
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [
        _record("p-002", source="production_log", stratum="paraphrase",
                question="how do I join the bike-to-work scheme?", trace_id="tr-2"),
        _record("p-003", source="production_log", stratum="paraphrase", question="taxi receipts?")]))
    for item in ("run-7|p-002|0", "run-7|p-003|0"):
        transcripts.review(demo_store, REVIEWER, item, "system_failure", "retrieval_miss")
    before = table_snapshot(demo_store)
    for kwargs, words in (
            ({"answerable": None}, "say whether the corpus answers"),
            ({"answerable": False}, "say why the corpus does not answer"),
            ({"answerable": False, "reason": "  "}, "say why the corpus does not answer"),
            ({"answerable": True, "stratum": "negative"}, "negative stratum means the corpus does not answer")):
        stratum = kwargs.pop("stratum", None)
        with pytest.raises(ValidationError, match=words):
            transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|p-002|0", stratum, **kwargs)
    with pytest.raises(TypeError):  # never a silent default: the caller must say it
        transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|p-002|0")  # type: ignore[call-arg]
    assert table_snapshot(demo_store) == before

    # not answerable: the negative stratum (the default), the reason first in the notes
    qid = transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|p-002|0", answerable=False,
                                        reason="The handbook has no bike scheme.")
    rec = queries.get_query(demo_store, qid)
    assert (qid, rec.answerable, rec.stratum, rec.source) == ("p-002", False, "negative", "production_log")
    assert rec.notes.startswith("Not answerable from the corpus: The handbook has no bike scheme. (added from "
                                "transcript run-7|p-002|0 (retrieval_miss) by rita; trace tr-2)")
    # answerable: as before, in the stratum chosen
    qid = transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|p-003|0", "lexical", answerable=True)
    rec = queries.get_query(demo_store, qid)
    assert (qid, rec.answerable, rec.stratum) == ("p-003", True, "lexical")
    assert "Not answerable" not in rec.notes
    assert transcripts.to_add(demo_store, REVIEWER) == []
