"""Judge-vs-people agreement per rubric criterion: κ equal to scikit-learn's (plain on a
pass/fail criterion, linear-weighted with partial credit), a hand-computed example, FAIL recall
with its counts, the bar's verdicts, and an answer's rubric score by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from golden_store.scoring import rubric_agreement as ra


def test_kappa_equals_sklearn_plain_on_pass_fail_and_linear_with_partial_credit():
    rng = np.random.default_rng(7)
    for scale in (1, 2, 3):
        human = [int(x) for x in rng.integers(0, scale + 1, 60)]
        judge = [h if rng.random() < 0.7 else int(rng.integers(0, scale + 1)) for h in human]
        a = ra.criterion_agreement("c", human, judge, scale)
        weights = "linear" if scale > 1 else None
        assert a.kappa == pytest.approx(cohen_kappa_score(human, judge, weights=weights,
                                                          labels=list(range(scale + 1))))
        assert a.kappa_unweighted == pytest.approx(cohen_kappa_score(human, judge, labels=list(range(scale + 1))))
        assert a.kappa_weights == weights


def test_a_hand_computed_pass_fail_criterion():
    # 10 answers. people: 4 fail (0), 6 pass (1); the judge catches 3 of the 4 failures and passes 6 of 6.
    human = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    judge = [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    a = ra.criterion_agreement("amount", human, judge, 1)
    # p_o = 9/10; p_e = (4/10)(3/10) + (6/10)(7/10) = 0.12 + 0.42 = 0.54; κ = (0.9 - 0.54) / 0.46
    assert a.raw_agreement == pytest.approx(0.9)
    assert a.kappa == pytest.approx(0.36 / 0.46)  # 0.7826
    assert (a.fail_caught, a.human_fail, a.fail_recall) == (3, 4, 0.75)
    assert a.confusion == [[3, 1], [0, 6]]
    assert a.human_counts == {0: 4, 1: 6} and a.judge_counts == {0: 3, 1: 7}
    # κ meets 0.7 but FAIL recall 0.75 is below 0.9: the criterion fails the bar
    assert a.verdict == ra.FAIL
    assert a.fail_interval is not None and a.fail_interval[0] < 0.75 < a.fail_interval[1]


def test_a_judge_that_passes_everything_catches_nothing():
    human = [0] * 12 + [1] * 88
    judge = [1] * 100
    a = ra.criterion_agreement("c", human, judge, 1)
    assert a.raw_agreement == pytest.approx(0.88) and a.kappa == pytest.approx(0.0)
    assert a.fail_recall == 0.0 and a.verdict == ra.FAIL


def test_verdicts_pass_and_undecided():
    good = ra.criterion_agreement("c", [0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], 2)
    assert good.kappa == pytest.approx(1.0) and good.fail_recall == 1.0 and good.verdict == ra.PASS
    no_fail = ra.criterion_agreement("c", [1, 1, 1], [1, 1, 1], 1)  # nobody failed it: nothing to recall
    assert no_fail.fail_recall is None and no_fail.kappa is None and no_fail.kappa_reason
    assert no_fail.verdict == ra.UNDECIDED
    assert ra.overall_verdict([good, no_fail]) == ra.UNDECIDED
    assert ra.overall_verdict([good, good]) == ra.PASS
    assert ra.overall_verdict([]) == ra.UNDECIDED


@pytest.mark.parametrize("human, judge, scale, message", [
    ([0, 1], [0], 1, "same items"),
    ([0, 2], [0, 1], 1, "outside 0..1"),
    ([0], [0], 5, "tops at 1, 2 or 3"),
])
def test_bad_input_is_one_sentence(human, judge, scale, message):
    with pytest.raises(ValueError, match=message):
        ra.criterion_agreement("c", human, judge, scale)


def test_an_answers_rubric_score_by_hand():
    criteria = [{"criterion_id": "amount", "weight": 2, "scale_max": 1},
                {"criterion_id": "condition", "weight": 1, "scale_max": 2},
                {"criterion_id": "no_invention", "weight": 1, "scale_max": 1}]
    # amount met (1/1), condition half (1/2), no invention failed (0/1): (2*1 + 1*0.5 + 1*0) / 4
    assert ra.answer_score(criteria, {"amount": 1, "condition": 1, "no_invention": 0}) == pytest.approx(0.625)
    assert ra.answer_score(criteria, {"amount": 1, "condition": 2}) is None  # incomplete: no score
    # a mark of a criterion the rubric no longer has is left out, not an error
    assert ra.answer_score(criteria, {"amount": 0, "condition": 2, "no_invention": 1, "old": 1}) == pytest.approx(0.5)
    assert ra.answer_score([], {}) is None
    # a mark off the rubric's scale (the criterion's scale changed since): no score, never an error
    assert ra.answer_score(criteria, {"amount": 2, "condition": 2, "no_invention": 1}) is None
