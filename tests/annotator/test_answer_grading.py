"""People grade answers per rubric criterion on a real store (DuckDB file or PostgreSQL): a seeded
sample stratified by stratum and blind to the system; grades are events, the latest counts, a
grade of since-changed text is stale; bad marks write nothing; the calibration report pairs
people's and the judge's current grades per criterion, per judge."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets, reference_answers
from annotator.labeling import answer_grading as ag
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live import answer_grades as live
from tests.conftest import table_snapshot

ANNA = User("t-anna", "Anna", frozenset({Role.ANNOTATOR}))
BEN = User("t-ben", "Ben", frozenset({Role.ANNOTATOR}))
LEAD = User("t-lead", "Lead", frozenset({Role.LEAD}))
REVIEWER = User("t-rita", "Rita", frozenset({Role.REVIEWER}))
SYSTEM = "grading-test"
TABULAR = ("q004", "q013", "q023", "q031", "q039")


def _import(store, tmp: Path, texts: dict[str, str], system: str = SYSTEM) -> None:
    p = tmp / f"{system}.jsonl"
    p.write_text("".join(json.dumps({"query_id": q, "answer": a}) + "\n" for q, a in texts.items()))
    nuggets.import_answers(store, LOCAL_USER, str(p), system, replace=True)


@pytest.fixture
def graded(demo_store, tmp_path):
    """A system's answers to the tabular questions (criteria: amount, condition 0-2, no_invention)
    and to one question of another stratum, which has no criteria."""
    _import(demo_store, tmp_path, {q: f"Answer of {q}" for q in (*TABULAR, "q001")})
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(demo_store, LOCAL_USER, scope="stratum", scope_id="tabular",
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))
    reference_answers.write(demo_store, LOCAL_USER, "q004", short_answer="EUR 58", full_answer=None)
    reference_answers.approve(demo_store, LOCAL_USER, "q004")
    return demo_store


def test_the_sample_is_seeded_stratified_and_blind(graded, tmp_path):
    cards = ag.sample(graded, ANNA, system=SYSTEM, n=3, seed=5)
    assert len(cards) == 3 and {c["query_id"] for c in cards} <= set(TABULAR)  # q001 has no criteria
    assert cards == ag.sample(graded, BEN, system=SYSTEM, n=3, seed=5)  # the same for everyone
    bigger = ag.sample(graded, ANNA, system=SYSTEM, n=4, seed=5)
    assert {c["key"] for c in cards} <= {c["key"] for c in bigger}  # a larger n only adds
    assert all(SYSTEM not in json.dumps(c) for c in cards)  # blind: the system is named nowhere
    assert [c["criterion_id"] for c in cards[0]["criteria"]] == ["amount", "condition", "no_invention"]
    q004 = next(c for c in ag.sample(graded, ANNA, system=SYSTEM, n=5) if c["query_id"] == "q004")
    assert q004["reference"]["short_answer"]  # the demo approved q004's reference answer
    with pytest.raises(NotFoundError, match="no-such-system"):
        ag.sample(graded, ANNA, system="no-such-system")
    with pytest.raises(ValidationError, match="1 to 2000"):
        ag.sample(graded, ANNA, system=SYSTEM, n=0)
    with pytest.raises(PermissionDenied):
        ag.sample(graded, REVIEWER, system=SYSTEM)


def test_stratified_sample_goes_round_the_strata():
    rows = [{"system": "s", "query_id": f"a{i}", "stratum": "big"} for i in range(20)] + \
           [{"system": "s", "query_id": f"b{i}", "stratum": "small"} for i in range(2)] + \
           [{"system": "t", "query_id": f"a{i}", "stratum": "big"} for i in range(3)]
    got = ag.stratified_sample(rows, 4, seed=1)
    assert sorted(r["stratum"] for r in got if r["system"] == "s") == ["big", "big", "small", "small"]
    assert sum(r["system"] == "t" for r in got) == 3  # per system: t has only 3
    # two systems answering the same questions are sampled on the same questions (their scores pair)
    both = [{"system": s, "query_id": f"a{i}", "stratum": "big"} for s in ("s", "u") for i in range(20)]
    for seed in range(5):
        got = ag.stratified_sample(both, 5, seed)
        assert {r["query_id"] for r in got if r["system"] == "s"} == {r["query_id"] for r in got if r["system"] == "u"}


def test_grades_are_events_the_latest_counts_and_changed_text_makes_them_stale(graded, tmp_path):
    ids = ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks={"amount": 1, "condition": 2})
    assert len(ids) == 2
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks={"condition": 1, "no_invention": 1})
    mine = {g["criterion_id"]: g for g in live.current_grades(graded, SYSTEM, "human") if g["query_id"] == "q004"}
    assert {c: g["mark"] for c, g in mine.items()} == {"amount": 1, "condition": 1, "no_invention": 1}
    assert not any(g["stale"] for g in mine.values())
    key = ag.answer_key(SYSTEM, "q004")
    card = next(c for c in ag.sample(graded, ANNA, system=SYSTEM, n=5) if c["key"] == key)
    assert card["mine"] == {"amount": 1, "condition": 1, "no_invention": 1}
    assert ag.resolve_key(graded, key) == (SYSTEM, "q004")
    # the system's answer is replaced: the grades describe text it no longer gives
    _import(graded, tmp_path, {q: f"New answer of {q}" for q in TABULAR})
    assert all(g["stale"] for g in live.current_grades(graded, SYSTEM, "human"))
    assert next(c for c in ag.sample(graded, ANNA, system=SYSTEM, n=5) if c["key"] == key)["mine"] == {}


@pytest.mark.parametrize("marks, message", [
    ({"amount": 2}, "marked 0 to 1, not 2"),
    ({"condition": -1}, "marked 0 to 2"),
    ({"amount": 1, "speed": 1}, "no criterion 'speed'"),
    ({"amount": "1"}, "not '1'"),
    ({}, "at least one"),
])
def test_a_bad_grade_is_one_sentence_and_writes_nothing(graded, marks, message):
    before = table_snapshot(graded)
    with pytest.raises(ValidationError, match=message):
        ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks=marks)
    with pytest.raises(NotFoundError, match="no criteria"):
        ag.grade(graded, ANNA, system=SYSTEM, query_id="q001", marks={"amount": 1})
    with pytest.raises(NotFoundError, match="No answer"):
        ag.grade(graded, ANNA, system="nobody", query_id="q004", marks={"amount": 1})
    with pytest.raises(PermissionDenied):
        ag.grade(graded, REVIEWER, system=SYSTEM, query_id="q004", marks={"amount": 1})
    assert table_snapshot(graded) == before


def _judge(store, qid: str, marks: dict[str, int], *, model: str = "judge-a", sha: str = "sha-a",
           answer: str | None = None) -> None:
    store.write(functools.partial(
        live.record_judge_tx, system=SYSTEM, query_id=qid, answer=answer or f"Answer of {qid}", model=model,
        prompt_sha=sha, marks=[live.JudgeMark(c, m, "because") for c, m in marks.items()]))


def test_the_report_pairs_current_grades_per_criterion_and_per_judge(graded):
    # people: amount fails on q004 and q013 (two graders on q004); the judge misses q013's failure
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks={"amount": 0, "condition": 2})
    ag.grade(graded, BEN, system=SYSTEM, query_id="q004", marks={"amount": 0})
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q013", marks={"amount": 0, "condition": 1})
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q023", marks={"amount": 1, "condition": 0})
    _judge(graded, "q004", {"amount": 1, "condition": 2})  # an older judge grade, replaced below
    _judge(graded, "q004", {"amount": 0, "condition": 2})
    _judge(graded, "q013", {"amount": 1, "condition": 1})
    _judge(graded, "q023", {"amount": 1, "condition": 0}, model="judge-b", sha="sha-b")
    _judge(graded, "q031", {"amount": 1}, answer="text it no longer gives")  # stale: left out
    rep = ag.report(graded, LEAD, SYSTEM)
    assert rep["stale_left_out"] == 1
    a, b = rep["judges"]
    assert (a["model"], a["prompt_sha"], b["model"]) == ("judge-a", "sha-a", "judge-b")
    amount = next(c for c in a["criteria"] if c["criterion_id"] == "amount")
    # pairs: (0,0) anna q004, (0,0) ben q004, (0,1) anna q013
    assert (amount["n"], amount["human_fail"], amount["fail_caught"]) == (3, 3, 2)
    assert amount["fail_recall"] == pytest.approx(2 / 3) and amount["verdict"] == "fail"
    condition = next(c for c in a["criteria"] if c["criterion_id"] == "condition")
    assert condition["n"] == 2 and condition["kappa_weights"] == "linear" and condition["raw_agreement"] == 1.0
    assert a["verdict"] == "fail" and a["graders"] == ["t-anna", "t-ben"] and a["answers"] == 2
    assert b["items"] == 2 and b["answers"] == 1
    with pytest.raises(PermissionDenied):
        ag.report(graded, ANNA, SYSTEM)


def test_a_criterion_retired_after_grading_is_not_calibrated(graded):
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks={"amount": 0, "no_invention": 1})
    _judge(graded, "q004", {"amount": 0, "no_invention": 1})
    ag.grade(graded, ANNA, system=SYSTEM, query_id="q004", marks={"condition": 2})
    _judge(graded, "q004", {"condition": 2})
    drafts = reference_answers.criteria_drafts([{"id": "amount", "text": "States the amount", "example": "EUR 58"},
                                                {"id": "condition", "text": "Names the case", "example": "Berlin",
                                                 "scale_max": 1}], "test")  # condition now pass/fail
    reference_answers.set_criteria(graded, LOCAL_USER, scope="stratum", scope_id="tabular", criteria=drafts)
    (judge,) = ag.report(graded, LEAD, SYSTEM)["judges"]
    assert [c["criterion_id"] for c in judge["criteria"]] == ["amount"]  # no_invention retired; condition's 2
    # is off its new scale, so that pair is left out rather than failing the report
