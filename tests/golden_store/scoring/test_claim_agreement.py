"""Reviewer-vs-judge agreement on claim verdicts (METHODOLOGY §11.1): κ equals scikit-learn's
over the three verdicts, the Wilson interval statsmodels', and a small example computed by hand
gives raw agreement, the confusion table, the FAIL recall and its counts."""

from __future__ import annotations

import math
import random

import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from golden_store.scoring.claim_agreement import VERDICTS, claim_agreement, fail_recall, wilson_interval

S, C, I = VERDICTS  # noqa: E741


def test_kappa_equals_scikit_learns_on_random_verdicts():
    rng = random.Random(7)
    for _ in range(50):
        n = rng.randint(2, 60)
        human = [rng.choice(VERDICTS) for _ in range(n)]
        judge = [h if rng.random() < 0.6 else rng.choice(VERDICTS) for h in human]
        expected = cohen_kappa_score(human, judge, labels=list(VERDICTS))
        got = claim_agreement(human, judge).kappa
        if math.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_a_hand_computed_example():
    # 10 claims. Person: 5 S, 3 C, 2 I. Judge: agrees on 4 S, calls one S claim I; on the C
    # claims says C, S, I; on the I claims says S, I.
    human = [S, S, S, S, S, C, C, C, I, I]
    judge = [S, S, S, S, I, C, S, I, S, I]
    r = claim_agreement(human, judge)
    assert r.n == 10
    assert r.confusion == [[4, 0, 1], [1, 1, 1], [1, 0, 1]]  # rows: the person's, columns: the judge's
    assert r.raw_agreement == pytest.approx(0.6)
    # p_o = 0.6; marginals person (5, 3, 2), judge (6, 1, 3): p_e = (30 + 3 + 6) / 100 = 0.39
    assert r.kappa == pytest.approx((0.6 - 0.39) / (1 - 0.39))
    # the person calls 5 claims not supported (3 C, 2 I); the judge calls 3 of them C or I
    assert (r.fail_recall.caught, r.fail_recall.human_fail, r.fail_recall.recall) == (3, 5, 0.6)
    # the judge calls 4 claims not supported; the person agrees they fail on 3
    assert r.fail_precision == pytest.approx(0.75)
    assert r.human_counts == {S: 5, C: 3, I: 2} and r.judge_counts == {S: 6, C: 1, I: 3}
    assert r.per_class[C] == {"precision": 1.0, "recall": pytest.approx(1 / 3), "n_human": 3, "n_judge": 1}
    assert r.meets_bar is False


def test_a_judge_that_passes_everything_catches_no_failure():
    """§11's own example: 12 of 100 bad by people, a judge that says supported to all: 88% raw
    agreement, κ 0, FAIL recall 0 of 12."""
    human = [C] * 12 + [S] * 88
    judge = [S] * 100
    r = claim_agreement(human, judge)
    assert r.raw_agreement == pytest.approx(0.88) and r.kappa == pytest.approx(0.0)
    assert (r.fail_recall.caught, r.fail_recall.human_fail, r.fail_recall.recall) == (0, 12, 0.0)
    assert r.fail_precision is None  # the judge failed nothing


def test_undefined_figures_are_none_with_a_reason():
    r = claim_agreement([S, S], [S, S])
    assert r.kappa is None and "undefined" in (r.kappa_reason or "") and r.raw_agreement == 1.0
    assert r.fail_recall.recall is None and r.fail_recall.interval is None and r.meets_bar is None
    empty = claim_agreement([], [])
    assert empty.n == 0 and empty.kappa is None and empty.raw_agreement is None


def test_wilson_interval_equals_statsmodels():
    for k, n in ((0, 5), (3, 5), (5, 5), (12, 40), (1, 1)):
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
        got = wilson_interval(k, n)
        assert got is not None and got == pytest.approx((lo, hi), abs=1e-12)
    assert fail_recall([C, I, S], [C, S, S]).interval == pytest.approx(proportion_confint(1, 2, method="wilson"))


def test_bad_labels_are_one_clear_sentence():
    with pytest.raises(ValueError, match="Unknown claim verdict.*'yes'.*one of supported, contradicted, insufficient"):
        claim_agreement([S, "yes"], [S, S])
    with pytest.raises(ValueError, match="different numbers of claims"):
        claim_agreement([S], [S, S])
