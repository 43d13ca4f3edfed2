"""Correctness by rubric in answer evaluations: ``rubric_human`` from people's grades and
``rubric_judge`` from the judge's, each the frozen version's criteria combined with their
weights (by hand below); stale grades not used; the judge recorded with its model and prompt
sha, and faithfulness and the rubric judge recorded together honestly when they differ."""

from __future__ import annotations

import functools
import json
import os

import pytest

from annotator import cli
from annotator.demo import load_demo
from annotator.evaluation import answer_evaluation as ae
from annotator.labeling import answer_grading
from annotator.people.identity import User, cli_user
from annotator.people.roles import Role
from golden_store.freezing import freeze
from golden_store.live import answer_grades, faithfulness
from golden_store.live.faithfulness import ClaimRow
from tests.conftest import prepared_store

SYSTEM = "rubric-sys"
TEXTS = {"q004": "EUR 58 for a full day in Berlin.", "q013": "EUR 240 a night.", "q001": "Renew the certificate."}
ANNA = User("t-anna", "Anna", frozenset({Role.ANNOTATOR}))
BEN = User("t-ben", "Ben", frozenset({Role.ANNOTATOR}))


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def frozen(request, golden_db, tmp_path):
    """The demo with its workflows (criteria for the tabular stratum: amount w2 0-1, condition
    w1 0-2, no_invention w1 0-1) frozen as rub.v1, and a system's answers to two tabular
    questions and one without criteria."""
    def build(s, folder):
        load_demo(s, cli_user(), workflows=True, pool_job=False)
        freeze(s, "rub.v1", actor="eng")
        p = folder / "rubric-sys.jsonl"
        p.write_text("".join(json.dumps({"query_id": q, "answer": a, "outcome": "answered"}) + "\n"
                             for q, a in TEXTS.items()))
        from annotator.evidence import nuggets
        nuggets.import_answers(s, cli_user(), str(p), SYSTEM)

    store, _ = prepared_store(request, "answer-rubric-demo", build)
    return store


def _judge(store, qid: str, marks: dict[str, int], model: str = "judge-y", sha: str = "r" * 64,
           answer: str | None = None) -> None:
    store.write(functools.partial(
        answer_grades.record_judge_tx, system=SYSTEM, query_id=qid, answer=answer or TEXTS[qid], model=model,
        prompt_sha=sha, marks=[answer_grades.JudgeMark(c, m, "why") for c, m in marks.items()]))


def _evaluate(capsys, record: str | None = None) -> dict:
    args = ["answers", "evaluate", "--version", "rub.v1", "--system", SYSTEM, "--json"]
    rc, out, err = golden(capsys, *args, *(["--record", record] if record else []))
    assert rc == 0, err
    return json.loads(out)


def test_people_and_judge_rubric_scores_by_hand(frozen, capsys):
    # q004: Anna 1/2/1, Ben 1/1/1 -> condition mean 1.5 of 2: (2*1 + 1*0.75 + 1*1) / 4 = 0.9375
    answer_grading.grade(frozen, ANNA, system=SYSTEM, query_id="q004",
                         marks={"amount": 1, "condition": 2, "no_invention": 1})
    answer_grading.grade(frozen, BEN, system=SYSTEM, query_id="q004",
                         marks={"amount": 1, "condition": 1, "no_invention": 1})
    answer_grading.grade(frozen, ANNA, system=SYSTEM, query_id="q013", marks={"amount": 0})  # incomplete: no score
    _judge(frozen, "q004", {"amount": 1, "condition": 2, "no_invention": 0})  # (2 + 1 + 0) / 4 = 0.75
    _judge(frozen, "q013", {"amount": 0, "condition": 1, "no_invention": 1})  # (0 + 0.5 + 1) / 4 = 0.375
    got = _evaluate(capsys, "rub-1")
    assert got["means"]["rubric_human"] == pytest.approx(0.9375) and got["n"]["rubric_human"] == 1
    assert got["means"]["rubric_judge"] == pytest.approx((0.75 + 0.375) / 2) and got["n"]["rubric_judge"] == 2
    assert (got["judge_model"], got["rubric_sha"]) == ("judge-y", f"rubric:{'r' * 64}")
    rows = frozen.read("SELECT metric, query_id, value, judge_model, rubric_sha FROM eval_results WHERE "
                       "evaluation_id = 'rub-1' AND metric LIKE 'rubric%' ORDER BY metric, query_id")
    assert rows == [("rubric_human", "q004", pytest.approx(0.9375), None, None),
                    ("rubric_judge", "q004", pytest.approx(0.75), "judge-y", f"rubric:{'r' * 64}"),
                    ("rubric_judge", "q013", pytest.approx(0.375), "judge-y", f"rubric:{'r' * 64}")]


def test_a_grade_of_since_changed_text_is_not_used(frozen, capsys):
    _judge(frozen, "q004", {"amount": 1, "condition": 2, "no_invention": 1}, answer="an older text")
    _judge(frozen, "q013", {"amount": 1, "condition": 2, "no_invention": 1})
    got = _evaluate(capsys)
    assert got["n"]["rubric_judge"] == 1 and got["means"]["rubric_judge"] == 1.0


def test_faithfulness_and_the_rubric_judge_are_recorded_together_honestly(frozen, capsys):
    def check(cur):
        faithfulness.record_tx(cur, system=SYSTEM, query_id="q004", answer=TEXTS["q004"], outcome="ok",
                               model="judge-x", decompose_sha="d", check_sha="c", input_tokens=1, output_tokens=1,
                               claims=[ClaimRow("c", "supported", "supported", None, True, None)], actor="eng")
    frozen.write(check)
    _judge(frozen, "q004", {"amount": 1, "condition": 2, "no_invention": 1})
    got = _evaluate(capsys, "rub-2")
    assert got["judge_model"] == "faithfulness=judge-x; rubric_judge=judge-y"
    assert got["rubric_sha"] == f"faithfulness=decompose:d+check:c; rubric_judge=rubric:{'r' * 64}"
    rows = frozen.read("SELECT DISTINCT metric, judge_model FROM eval_results WHERE evaluation_id = 'rub-2' AND "
                       "judge_model IS NOT NULL ORDER BY metric")
    assert rows == [("faithfulness", got["judge_model"]), ("rubric_judge", got["judge_model"])]
    assert ae.combined_judge({"faithfulness": ("m", "a"), "rubric_judge": ("m", "b")}) == (
        "m", "faithfulness=a; rubric_judge=b")  # one model: named once


def test_two_rubric_judges_are_refused_with_a_sentence(frozen, capsys):
    _judge(frozen, "q004", {"amount": 1, "condition": 2, "no_invention": 1})
    _judge(frozen, "q013", {"amount": 1, "condition": 2, "no_invention": 1}, model="judge-z")
    before = frozen.read("SELECT count(*) FROM eval_results")
    rc, _, err = golden(capsys, "answers", "evaluate", "--version", "rub.v1", "--system", SYSTEM, "--record", "x")
    assert rc == 2 and "more than one judge or prompt (judge-y, judge-z)" in err
    assert frozen.read("SELECT count(*) FROM eval_results") == before
