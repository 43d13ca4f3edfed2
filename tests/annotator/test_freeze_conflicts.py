"""Issue 37 item 9: no dead end before a freeze. The Freeze conflicts service lists every
conflict the freeze refuses on (its own check, so the two agree), each with the question, the
passage or quote, who labelled what and when, and the fixes this person's roles allow; each fix
works, is recorded as an event with its reason, and is refused with nothing written without the
role or the reason. On the demo store, on DuckDB and on PostgreSQL (``demo_store``)."""

from __future__ import annotations

import pytest

from annotator.versions import freeze_conflicts as fc
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import utcnow
from golden_store.freezing import (ANSWERED_UNANSWERABLE, QUOTED_UNANSWERABLE, STALE_GRADE, freeze,
                                   live_blockers)
from golden_store.live import grade_state
from golden_store.live.evidence import EvidenceSpan, append_evidence
from golden_store.versions import load_version
from tests.conftest import table_snapshot

LEAD = User("lena", "Lena", frozenset({Role.LEAD}))
ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))
ANNOTATOR = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
REASON = "the passage is about leave, not the CEO's salary"


def _grade(store, qid, doc, start, end, grade, actor, op="grade", sha=None):
    store.write(lambda cur: grade_state.append_tx(cur, query_id=qid, doc_id=doc, start=start, end=end, op=op,
                                                  grade=grade, actor=actor, created_at=utcnow(), doc_sha256=sha,
                                                  rubric_version=1))


def _quote_on(store, qid: str) -> str:
    """An exact quote of another question placed on ``qid`` too (an answer for it)."""
    eid, quote, doc, start, end, cs, ce = store.read_one(
        "SELECT evidence_id, quote, doc_id, start, \"end\", canonical_start, canonical_end FROM current_evidence "
        "WHERE match_kind = 'exact' ORDER BY query_id, evidence_id")
    append_evidence(store, [EvidenceSpan(qid, "e-conflict", quote, doc, start, end, cs, ce, "exact", 100.0)],
                    actor="ann")
    return "e-conflict"


def _conflicted(store) -> None:
    """q005 and q012 are unanswerable (negative stratum): q005 gets passages graded as answering it
    (one by ann alone, one by ann and bob, one by the lead herself), q012 a quote; q001 a grade made
    on an earlier text of its document."""
    _grade(store, "q005", "annual-leave", 0, 40, 3, "ann")
    _grade(store, "q005", "health-insurance", 5, 50, 2, "ann")
    _grade(store, "q005", "health-insurance", 5, 50, 2, "bob")
    _grade(store, "q005", "pension", 0, 30, 2, "lena")
    _grade(store, "q005", "pension", 30, 60, 1, "ann")  # related, not answering: no conflict
    _quote_on(store, "q012")
    _grade(store, "q001", "sick-leave", 0, 40, 2, "bob", sha="sha256:an-earlier-text")


def _by_place(conflicts):
    return {(c.kind, c.query_id, c.doc_id, c.start): c for c in conflicts}


def test_every_conflict_is_listed_with_its_labels_and_the_fixes_of_each_role(demo_store):
    _conflicted(demo_store)
    listed = fc.conflicts(demo_store, LEAD)
    got = _by_place(listed)
    assert set(got) == {
        (STALE_GRADE, "q001", "sick-leave", 0),
        (ANSWERED_UNANSWERABLE, "q005", "annual-leave", 0),
        (ANSWERED_UNANSWERABLE, "q005", "health-insurance", 5),
        (ANSWERED_UNANSWERABLE, "q005", "pension", 0),
        (QUOTED_UNANSWERABLE, "q012", listed[-1].doc_id, listed[-1].start),
    }
    # the list is the freeze's own check, in its order: labels off the corpus first
    assert [c.kind for c in listed] == [STALE_GRADE] + [ANSWERED_UNANSWERABLE] * 3 + [QUOTED_UNANSWERABLE]
    with pytest.raises(ValidationError) as err:
        freeze(demo_store, "v1", actor="eng")
    assert err.value.problems == [c.sentence for c in listed if c.kind == STALE_GRADE]
    assert "Freeze conflicts page" in err.value.summary

    both = got[(ANSWERED_UNANSWERABLE, "q005", "health-insurance", 5)]
    assert both.query_text == "What is the CEO's annual salary?" and both.stratum == "negative"
    assert both.passage is not None and len(both.passage) == 45
    assert [(x["kind"], x["actor"], x["grade"]) for x in both.labels] == [("grade", "ann", 2), ("grade", "bob", 2)]
    assert all(x["created_at"] is not None for x in both.labels)
    assert fc.label_line(both.labels[0]).startswith("ann graded 2 (partly answers) · 20")
    # a lead may re-grade (to 0 or 1), retract (by a decision: the grades are others') and mark answerable
    assert [(f.name, f.allowed) for f in both.fixes] == [("regrade", True), ("retract_grade", True),
                                                        ("mark_answerable", True)]
    assert both.fix("regrade").grades == (0, 1)
    assert "final grade 0" in both.fix("retract_grade").records
    own = got[(ANSWERED_UNANSWERABLE, "q005", "pension", 0)]
    assert "a retract event for your own grade" in own.fix("retract_grade").records
    quoted = listed[-1]
    assert quoted.evidence_id == "e-conflict" and quoted.labels[0]["actor"] == "ann"
    assert [f.name for f in quoted.fixes] == ["retract_quote", "mark_answerable"]
    stale = got[(STALE_GRADE, "q001", "sick-leave", 0)]
    assert stale.labels[0]["stale"] and stale.fix("regrade").grades == (0, 1, 2, 3)
    assert stale.fix("retract_grade") is None  # bob's grade: only bob withdraws it; the lead re-grades

    # an engineer sees the same list; only marking answerable is theirs, the rest says whom to ask
    eng = _by_place(fc.conflicts(demo_store, ENGINEER))[(ANSWERED_UNANSWERABLE, "q005", "health-insurance", 5)]
    assert [(f.name, f.allowed) for f in eng.fixes] == [("regrade", False), ("retract_grade", False),
                                                       ("mark_answerable", True)]
    assert "needs the admin or lead role" in eng.fix("regrade").why_not and "ask a lead" in eng.fix("regrade").why_not
    with pytest.raises(PermissionDenied):
        fc.conflicts(demo_store, ANNOTATOR)
    assert fc.count(demo_store, ENGINEER) == 5


def test_each_fix_clears_its_conflict_and_then_the_freeze_goes_through(demo_store, tmp_path):
    _conflicted(demo_store)
    got = _by_place(fc.conflicts(demo_store, LEAD))
    said = fc.regrade(demo_store, LEAD, got[(ANSWERED_UNANSWERABLE, "q005", "annual-leave", 0)], 1, REASON)
    assert said.startswith("Re-graded q005 · annual-leave [0:40]: final grade 1")
    said = fc.retract_grade(demo_store, LEAD, got[(ANSWERED_UNANSWERABLE, "q005", "health-insurance", 5)], REASON)
    assert "by your decision as lead: final grade 0" in said
    said = fc.retract_grade(demo_store, LEAD, got[(ANSWERED_UNANSWERABLE, "q005", "pension", 0)], REASON)
    assert said == "Retracted your grade on q005 · pension [0:30], with the reason."
    said = fc.regrade(demo_store, LEAD, got[(STALE_GRADE, "q001", "sick-leave", 0)], 3, "reads the same on the new text")
    left = fc.conflicts(demo_store, LEAD)
    assert [c.kind for c in left] == [QUOTED_UNANSWERABLE]  # the list follows every fix
    fc.retract_quote(demo_store, LEAD, left[0], "a copy of q001's quote, placed here by mistake")
    assert fc.conflicts(demo_store, LEAD) == [] and live_blockers(demo_store) == []

    # each fix is an event with its author and reason
    events = demo_store.read("SELECT query_id, doc_id, op, grade, actor, note FROM grade_events WHERE actor = 'lena' "
                             "ORDER BY event_id")
    assert events == [
        ("q005", "pension", "grade", 2, "lena", None),
        ("q005", "annual-leave", "adjudicate", 1, "lena", REASON),
        ("q005", "health-insurance", "adjudicate", 0, "lena", f"retracted: {REASON}"),
        ("q005", "pension", "retract", None, "lena", REASON),
        ("q001", "sick-leave", "adjudicate", 3, "lena", "reads the same on the new text"),
    ]
    assert demo_store.read("SELECT op, actor, note FROM evidence_events WHERE evidence_id = 'e-conflict' "
                           "ORDER BY event_id") == [("set", "ann", None),
                                                    ("retract", "lena", "a copy of q001's quote, placed here by "
                                                                        "mistake")]
    # a lead's decision also tells the webhooks, as on the Adjudication page
    assert demo_store.read_one("SELECT count(*) FROM webhook_events WHERE event_type = 'adjudication.decided'")[0] == 3
    v = freeze(demo_store, "v1", actor="eng")
    frozen = load_version("v1").qrels()
    assert frozen["q005"] == {"annual-leave": 1, "health-insurance": 0, "pension": 1}
    assert frozen["q001"]["sick-leave"] == 3 and v.manifest["n_queries"] == 40


def test_marking_the_question_answerable_with_a_reason_clears_all_its_conflicts(demo_store):
    _conflicted(demo_store)
    q005 = [c for c in fc.conflicts(demo_store, ENGINEER) if c.query_id == "q005"]
    assert len(q005) == 3
    with pytest.raises(ValidationError, match="choose the stratum it belongs in"):
        fc.mark_answerable(demo_store, ENGINEER, "q005", "the handbook states it")
    said = fc.mark_answerable(demo_store, ENGINEER, "q005", "the handbook states it", stratum="lexical")
    assert said == "Marked q005 answerable (stratum lexical), with the reason recorded on its revision."
    assert demo_store.read_one("SELECT answerable, stratum, actor, change_reason FROM query_revisions "
                               "WHERE query_id = 'q005' ORDER BY event_id DESC LIMIT 1") == (
        True, "lexical", "eng", "the handbook states it")
    assert {c.query_id for c in fc.conflicts(demo_store, ENGINEER)} == {"q001", "q012"}
    with pytest.raises(ValidationError, match="already answerable"):
        fc.mark_answerable(demo_store, ENGINEER, "q005", "again", stratum="lexical")


@pytest.mark.parametrize("who,reason", [(LEAD, ""), (LEAD, "   "), (LEAD, "x" * 501), (ENGINEER, REASON),
                                        (ANNOTATOR, REASON)])
def test_a_fix_without_the_role_or_a_reason_is_refused_and_writes_nothing(demo_store, who, reason):
    _conflicted(demo_store)
    got = _by_place(fc.conflicts(demo_store, LEAD))
    graded = got[(ANSWERED_UNANSWERABLE, "q005", "annual-leave", 0)]
    quoted = [c for c in got.values() if c.kind == QUOTED_UNANSWERABLE][0]
    before = table_snapshot(demo_store)
    fixes = [lambda: fc.regrade(demo_store, who, graded, 1, reason),
             lambda: fc.retract_grade(demo_store, who, graded, reason),
             lambda: fc.retract_quote(demo_store, who, quoted, reason)]
    if who is not ENGINEER:  # marking answerable is an engineer's too
        fixes.append(lambda: fc.mark_answerable(demo_store, who, "q012", reason, stratum="lexical"))
    for fix in fixes:
        with pytest.raises(GoldenError) as err:
            fix()
        if who is LEAD:
            assert "reason" in str(err.value) and "nothing was saved" in str(err.value)
        else:
            assert isinstance(err.value, PermissionDenied)
    assert table_snapshot(demo_store) == before
    assert len(fc.conflicts(demo_store, LEAD)) == 5


def test_a_re_grade_that_would_answer_the_question_or_acts_on_changed_labels_is_refused(demo_store):
    _conflicted(demo_store)
    c = _by_place(fc.conflicts(demo_store, LEAD))[(ANSWERED_UNANSWERABLE, "q005", "annual-leave", 0)]
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match="mark the question answerable instead"):
        fc.regrade(demo_store, LEAD, c, 2, REASON)
    assert table_snapshot(demo_store) == before
    # someone grades the passage after the list was read: the fix refuses rather than act unseen
    _grade(demo_store, "q005", "annual-leave", 0, 40, 3, "bob")
    with pytest.raises(ValidationError, match="changed since they were shown"):
        fc.regrade(demo_store, LEAD, c, 1, REASON)
    fresh = _by_place(fc.conflicts(demo_store, LEAD))[(ANSWERED_UNANSWERABLE, "q005", "annual-leave", 0)]
    assert [x["actor"] for x in fresh.labels] == ["ann", "bob"]
    fc.regrade(demo_store, LEAD, fresh, 0, REASON)


def test_a_decision_made_again_on_the_current_text_settles_a_stale_one(demo_store):
    """A lead's decision on an earlier text refused every freeze for good (each adjudicate event
    ever made was checked, not the one in force); now the latest decision counts, and a decision on
    the current text settles the annotators' earlier-text grades."""
    _grade(demo_store, "q002", "pension", 10, 60, 3, "ann", sha="sha256:earlier")
    _grade(demo_store, "q002", "pension", 10, 60, 0, "bob", sha="sha256:earlier")
    _grade(demo_store, "q002", "pension", 10, 60, 2, "lead", op="adjudicate", sha="sha256:earlier")
    kinds = [(c.kind, c.labels[0]["actor"], c.labels[0]["kind"]) for c in fc.conflicts(demo_store, LEAD)]
    assert sorted(kinds) == [(STALE_GRADE, "ann", "grade"), (STALE_GRADE, "bob", "grade"),
                             (STALE_GRADE, "lead", "decision")]
    c = fc.conflicts(demo_store, LEAD)[0]
    fc.regrade(demo_store, LEAD, c, 2, "re-read on the current text")
    assert fc.conflicts(demo_store, LEAD) == []
    freeze(demo_store, "v1", actor="eng")
    assert load_version("v1").qrels()["q002"]["pension"] == 2


def test_the_cli_refusal_names_the_place(demo_store, golden_db, capsys):
    from annotator import cli

    _grade(demo_store, "q005", "annual-leave", 0, 40, 3, "ann")
    assert cli.main(["--db", golden_db, "freeze", "v1"]) != 0
    err = capsys.readouterr().err
    assert "Freeze refused: 1 question(s) marked unanswerable" in err
    assert "the Freeze conflicts page (Review → Freeze conflicts in the app) lists each with its fixes" in err
    assert "Fix it on the Freeze conflicts page" in err  # the question's own line too
