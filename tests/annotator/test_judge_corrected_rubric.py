"""The rubric judge's score corrected by people's grades of the answer sample (issue 40 item 7)
on a real store: answers, criteria, the judge's and people's marks of our own; the figure
worked out by hand and, stratum by stratum, against ``ppi_py`` (test-only reference)."""

from __future__ import annotations

import json
import math

import numpy as np
import ppi_py
import pytest

from annotator.evaluation.judge_corrected_rubric import NO_SAMPLE, corrected_rubric
from annotator.evidence import nuggets, reference_answers
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import PermissionDenied, Role
from golden_store.live import answer_grades

Z95 = 1.959963984540054
# every stratum's rubric: c1 (weight 2, 0-1), c2 (weight 1, 0-2), c3 (weight 1, 0-1):
# score = (2 c1 + c2 / 2 + c3) / 4
CRITERIA = [{"id": "c1", "text": "the fact", "example": "e", "weight": 2, "scale_max": 1},
            {"id": "c2", "text": "the detail", "example": "e", "weight": 1, "scale_max": 2},
            {"id": "c3", "text": "nothing added", "example": "e", "weight": 1, "scale_max": 1}]
# per stratum, per answer: (the judge's marks, a person's marks or None)
PLAN = {
    "A": [((1, 2, 1), (1, 1, 1)), ((1, 2, 1), (1, 2, 1)), ((0, 2, 1), None)],   # 1, 1, .5 | .875, 1
    "B": [((1, 2, 1), (1, 1, 1)), ((1, 2, 1), (0, 2, 1))],                     # 1, 1 | .875, .5
    "C": [((1, 1, 1), (1, 1, 1)), ((0, 0, 1), (0, 0, 1))],                     # .875, .25 | the same
}


def _strata(store) -> dict[str, list[str]]:
    """Three of the demo's strata (with 3, 2 and 2 live questions), as A, B and C."""
    by: dict[str, list[str]] = {}
    for q, s in store.read("SELECT query_id, stratum FROM queries WHERE NOT held_out AND stratum IS NOT NULL "
                           "ORDER BY query_id"):
        by.setdefault(str(s), []).append(str(q))
    names = sorted(by, key=lambda s: (-len(by[s]), s))[:3]
    assert len(by[names[2]]) >= 2
    return {"A": by[names[0]][:3], "B": by[names[1]][:2], "C": by[names[2]][:2], "_names": names}


def _graded(store, tmp_path, *, people: bool = True) -> None:
    picked = _strata(store)
    for name in picked["_names"]:
        reference_answers.set_criteria(store, LOCAL_USER, scope="stratum", scope_id=name,
                                       criteria=reference_answers.criteria_drafts(CRITERIA, "test"))
    qids = [q for key in "ABC" for q in picked[key]]
    path = tmp_path / "toy.jsonl"
    path.write_text("".join(json.dumps({"query_id": q, "answer": f"the answer to {q}"}) + "\n" for q in qids))
    nuggets.import_answers(store, LOCAL_USER, str(path), "rag-toy")

    def tx(cur):
        for key in "ABC":
            for qid, (judge, person) in zip(picked[key], PLAN[key]):
                text = f"the answer to {qid}"
                answer_grades.record_judge_tx(cur, system="rag-toy", query_id=qid, answer=text, model="judge-x",
                                              prompt_sha="p" * 16, marks=[answer_grades.JudgeMark(c, m, None)
                                                                          for c, m in zip(("c1", "c2", "c3"), judge)])
                if people and person is not None:
                    for c, m in zip(("c1", "c2", "c3"), person):
                        answer_grades.grade_tx(cur, system="rag-toy", query_id=qid, criterion_id=c, mark=m,
                                               grader="rita", kind="human", answer=text)
    store.write(tx)


def _ppi_py(y, yhat, rest):
    y, yhat, rest = (np.asarray(v, float) for v in (y, yhat, rest))
    mean = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=1))[0])
    low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=1))
    return mean, (high - low) / (2 * Z95)


def test_the_corrected_score_equals_the_hand_worked_one_and_ppi_py_per_stratum(demo_store, tmp_path):
    _graded(demo_store, tmp_path)
    got = corrected_rubric(demo_store, LOCAL_USER, "rag-toy")["rag-toy"]
    assert (got.answers, got.graded) == (7, 6)
    e = got.estimate
    assert e.judge_only.mean == pytest.approx(5.625 / 7)
    # A: the judge's mean of its three answers (1 + 1 + .5) / 3 corrected by person - judge on the
    # two graded, (-.125 + 0) / 2: 2.5/3 - .0625 = .7708 (= people's .875 and 1 and the third's
    # .5 - .0625, over 3); B and C people graded whole: their means .6875 and .5625. Weights 3/7, 2/7, 2/7.
    a = 2.5 / 3 - 0.0625
    assert a == pytest.approx((0.875 + 1 + 0.4375) / 3)
    assert e.ppi.mean == pytest.approx((3 * a + 2 * 0.6875 + 2 * 0.5625) / 7)
    judge_a = np.array([1.0, 1.0, 0.5])
    var_a = float(judge_a.var()) / 3 + (0.0625 ** 2) / 2  # the judge over all three; rectifier -.125, 0 over n = 2
    var_b, var_c = 0.1875 ** 2 / 2, 0.3125 ** 2 / 2
    se = math.sqrt((3 / 7) ** 2 * var_a + (2 / 7) ** 2 * (var_b + var_c))
    assert (e.ppi.low, e.ppi.high) == (pytest.approx(e.ppi.mean - Z95 * se), pytest.approx(e.ppi.mean + Z95 * se))
    assert e.bias == pytest.approx(0.75 / 6)
    # stratum A is a plain PPI mean: ppi_py's on the same numbers (the judge's labels of every
    # answer of A as its "unlabelled" set), combined by the strata's weights
    mean_a, se_a = _ppi_py([0.875, 1.0], [1.0, 1.0], [1.0, 1.0, 0.5])
    assert mean_a == pytest.approx(a) and se_a ** 2 == pytest.approx(var_a)
    assert e.ppi.mean == pytest.approx(3 / 7 * mean_a + 2 / 7 * np.mean([0.875, 0.5]) + 2 / 7 * np.mean([0.875, 0.25]))
    assert sorted(v["answers"] for v in got.per_stratum.values()) == [2, 2, 3]
    assert got.judges == ["judge-x @ pppppppppppp"]


def test_with_every_answer_graded_the_peoples_mean_is_reported(demo_store, tmp_path):
    _graded(demo_store, tmp_path)
    qid = _strata(demo_store)["A"][2]
    demo_store.write(lambda cur: [answer_grades.grade_tx(cur, system="rag-toy", query_id=qid, criterion_id=c, mark=m,
                                                         grader="sam", kind="human", answer=f"the answer to {qid}")
                                  for c, m in (("c1", 0), ("c2", 2), ("c3", 1))])
    got = corrected_rubric(demo_store, LOCAL_USER, "rag-toy")["rag-toy"]
    people = [0.875, 1.0, 0.5, 0.875, 0.5, 0.875, 0.25]
    assert got.graded == got.answers == 7
    assert got.corrected.mean == pytest.approx(np.mean(people))
    half = Z95 * np.std(people, ddof=1) / math.sqrt(7)
    assert got.corrected.high - got.corrected.low == pytest.approx(2 * half)


def test_without_people_grades_the_plain_figure_stands_alone(demo_store, tmp_path, golden_db, capsys):
    from annotator import cli

    _graded(demo_store, tmp_path, people=False)
    got = corrected_rubric(demo_store, LOCAL_USER, "rag-toy")["rag-toy"]
    assert got.graded == 0 and got.as_dict()["corrected"] is None and got.as_dict()["note"] == NO_SAMPLE
    capsys.readouterr()
    assert cli.main(["--db", golden_db, "answers", "rubric-corrected", "--system", "rag-toy"]) == 0
    out = capsys.readouterr().out
    assert f"judge alone {5.625 / 7:.4f} [" in out and f"; {NO_SAMPLE}" in out


def test_a_grader_may_not_see_a_systems_numbers(demo_store):
    with pytest.raises(PermissionDenied):
        corrected_rubric(demo_store, User("gina", "Gina", frozenset({Role.ANNOTATOR})))


def test_the_cli_shows_both_readings(demo_store, tmp_path, golden_db, capsys):
    from annotator import cli

    _graded(demo_store, tmp_path)
    capsys.readouterr()
    assert cli.main(["--db", golden_db, "answers", "rubric-corrected", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["rag-toy"]
    assert got["corrected"]["mean"] == pytest.approx((3 * (2.5 / 3 - 0.0625) + 2 * 0.6875 + 2 * 0.5625) / 7) and (got["answers"], got["graded"]) == (7, 6)
    assert cli.main(["--db", golden_db, "answers", "rubric-corrected", "--system", "rag-toy"]) == 0
    out = capsys.readouterr().out
    assert (f"corrected by people's grades of 6 answer(s) (prediction-powered, per question stratum): "
            f"{(3 * (2.5 / 3 - 0.0625) + 2 * 0.6875 + 2 * 0.5625) / 7:.4f} [") in out
    assert "judge minus people on the graded answers +0.1250" in out
