"""The prediction-powered mean: equal to the reference implementation (``ppi_py``, Angelopoulos
et al.) on the same data, right on a worked example by hand, and honest in simulation: with a
judge biased by a known amount the plain interval misses the truth while the corrected one
covers it at its nominal rate."""

from __future__ import annotations

import math

import numpy as np
import ppi_py  # the reference implementation (test-only dependency)
import pytest

from golden_store.scoring.ppi import Stratum, ppi_mean, stratified_ppi_mean




def _reference(y, yhat, rest, level):
    low, high = ppi_py.ppi_mean_ci(np.asarray(y, float), np.asarray(yhat, float), np.asarray(rest, float),
                                   alpha=1 - level, lam=1)
    mean = ppi_py.ppi_mean_pointestimate(np.asarray(y, float), np.asarray(yhat, float), np.asarray(rest, float), lam=1)
    return float(np.ravel(mean)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


@pytest.mark.parametrize("seed", range(12))
def test_equals_ppi_py_on_the_same_data(seed):
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(5, 300)), int(rng.integers(5, 3000))
    graded = seed % 3 == 0
    truth = rng.integers(0, 4, n + big_n) if graded else rng.binomial(1, rng.uniform(0.1, 0.9), n + big_n)
    noise = rng.integers(-1, 2, n + big_n) if graded else rng.binomial(1, 0.2, n + big_n)
    judge = np.clip(truth + noise, 0, 3) if graded else np.abs(truth - noise)
    level = (0.95, 0.9, 0.99)[seed % 3]
    est = ppi_mean(truth[:n], judge[:n], judge[n:], level=level)
    mean, low, high = _reference(truth[:n], judge[:n], judge[n:], level)
    assert est.ppi.mean == pytest.approx(mean, abs=1e-12)
    assert est.ppi.low == pytest.approx(low, abs=1e-12)
    assert est.ppi.high == pytest.approx(high, abs=1e-12)
    assert est.ppi.n == n + big_n


def test_a_worked_example_by_hand():
    # people labelled 4 items: 1, 1, 0, 1; the judge said 1, 1, 1, 1 on them (lenient on one)
    # and 1, 0, 1, 1, 1, 1 on the 6 items nobody labelled.
    est = ppi_mean([1, 1, 0, 1], [1, 1, 1, 1], [1, 0, 1, 1, 1, 1])
    # judge elsewhere: mean 5/6; rectifier person - judge = 0, 0, -1, 0: mean -1/4
    assert est.ppi.mean == pytest.approx(5 / 6 - 1 / 4)
    # var (denominator N): judge elsewhere 5/6 * 1/6 = 5/36; rectifier: mean of squares 1/4 - (1/4)^2 = 3/16
    se = math.sqrt((5 / 36) / 6 + (3 / 16) / 4)
    z = 1.959963984540054
    assert est.ppi.low == pytest.approx(7 / 12 - z * se)
    assert est.ppi.high == pytest.approx(7 / 12 + z * se)
    assert est.bias == pytest.approx(0.25)  # the judge passes a quarter more of the sample than people
    assert est.judge_only.mean == pytest.approx(9 / 10)
    assert est.people_only.mean == pytest.approx(3 / 4)


def test_a_biased_judge_the_plain_interval_misses_and_the_corrected_one_covers():
    """1,000 simulated sets: 2,000 items, a random sample of 200 labelled by people, a judge that
    passes 30% of the true fails (and misses 5% of the true passes). The truth is the share of
    passes people would give, 0.6."""
    rng = np.random.default_rng(20261207)
    sets, items, n, p = 1000, 2000, 200, 0.6
    covered_ppi = covered_plain = 0
    widths = []
    for _ in range(sets):
        truth = rng.binomial(1, p, items)
        judge = np.where(truth == 1, rng.binomial(1, 0.95, items), rng.binomial(1, 0.30, items))
        sample = rng.permutation(items)
        on, off = sample[:n], sample[n:]
        est = ppi_mean(truth[on], judge[on], judge[off])
        covered_ppi += est.ppi.low <= p <= est.ppi.high
        covered_plain += est.judge_only.low <= p <= est.judge_only.high
        widths.append(est.ppi.high - est.ppi.low)
    assert abs(covered_ppi / sets - 0.95) <= 0.02, covered_ppi / sets
    # the judge's mean is 0.6 * 0.95 + 0.4 * 0.30 = 0.69: its interval (about ±0.02) never reaches 0.6
    assert covered_plain / sets < 0.05, covered_plain / sets


def test_a_perfect_judge_gives_the_judges_interval_and_people_alone_are_wider():
    rng = np.random.default_rng(3)
    truth = rng.binomial(1, 0.5, 1000)
    est = ppi_mean(truth[:100], truth[:100], truth[100:])
    assert est.bias == 0
    assert est.ppi.mean == pytest.approx(truth[100:].mean())
    assert (est.ppi.high - est.ppi.low) < (est.people_only.high - est.people_only.low)


def test_undefined_cases_say_why():
    assert ppi_mean([1], [1], [0, 1, 1]).ppi.reason.startswith("people labelled 1 item")
    assert "people_only" in ppi_mean([1, 0, 1], [1, 1, 1], [1]).ppi.reason
    with pytest.raises(ValueError, match="same items"):
        ppi_mean([1, 0], [1], [1, 1])
    with pytest.raises(ValueError, match="missing or infinite"):
        ppi_mean([1, float("nan")], [1, 1], [1, 1])
    with pytest.raises(ValueError, match="level"):
        ppi_mean([1, 0], [1, 1], [1, 1], level=95)


def test_stratified_by_the_judges_verdict_by_hand():
    """Claims sampled evenly across the judge's verdicts. The judge called 8 claims supported
    and 2 not; people reviewed 4 of the supported (1, 1, 0, 1) and both others (0, 1)."""
    est = stratified_ppi_mean({
        "supported": Stratum(people=[1, 1, 0, 1], judge_on_sample=[1, 1, 1, 1], judge_elsewhere=[1, 1, 1, 1]),
        "not": Stratum(people=[0, 1], judge_on_sample=[0, 0], judge_elsewhere=[]),
    })
    # supported: judge elsewhere 1, rectifier mean -1/4 -> 3/4, weight 8/10; not: people's mean
    # 1/2 (the whole stratum reviewed), weight 2/10: 0.8 * 0.75 + 0.2 * 0.5 = 0.7
    assert est.ppi.mean == pytest.approx(0.7)
    # variances: supported 0 / 4 + (3/16) / 4 = 3/64; not (1/4) / 2 = 1/8
    se = math.sqrt(0.64 * 3 / 64 + 0.04 / 8)
    assert est.ppi.high - est.ppi.mean == pytest.approx(1.959963984540054 * se)
    assert est.judge_only.mean == pytest.approx(0.8)
    # one rectifier pooled over both strata weighs the 'not' stratum (2 of 10 claims but 2 of 6
    # reviews) too much: judge elsewhere 1 + rectifier (0 + 0 - 1 + 0 + 0 + 1) / 6 = 1.0, not 0.7
    pooled = ppi_mean([1, 1, 0, 1, 0, 1], [1, 1, 1, 1, 0, 0], [1, 1, 1, 1])
    assert pooled.ppi.mean == pytest.approx(1.0)


def test_stratified_sample_of_a_biased_judge_covers_what_people_would_say():
    """1,000 simulated sets of 2,000 claims; a judge that calls 30% of the truly unsupported
    claims supported and 5% of the supported ones not; 60 claims reviewed per judge verdict
    (over-sampling the rarer verdict). The truth is the share people would find supported over
    all 2,000 claims of the set. The judge's own interval misses it; the stratified PPI
    interval covers it at its nominal 95%, within 2 points."""
    rng = np.random.default_rng(20261208)
    sets, items, per_stratum = 1000, 2000, 60
    covered = covered_plain = 0
    for _ in range(sets):
        truth = rng.binomial(1, 0.6, items)
        judge = np.where(truth == 1, rng.binomial(1, 0.95, items), rng.binomial(1, 0.30, items))
        strata = {}
        for verdict in (0, 1):
            idx = rng.permutation(np.flatnonzero(judge == verdict))
            on, off = idx[:per_stratum], idx[per_stratum:]
            strata[str(verdict)] = Stratum(truth[on], judge[on], judge[off])
        est = stratified_ppi_mean(strata)
        target = truth.mean()
        covered += est.ppi.low <= target <= est.ppi.high
        covered_plain += est.judge_only.low <= target <= est.judge_only.high
    assert abs(covered / sets - 0.95) <= 0.02, covered / sets
    assert covered_plain / sets < 0.05, covered_plain / sets


def test_a_stratum_with_fewer_than_two_reviews_is_undefined_and_says_so():
    est = stratified_ppi_mean({"a": Stratum([1, 0], [1, 1], [1, 1, 1]), "b": Stratum([1], [0], [0, 0])})
    assert est.ppi.mean is None and "stratum b" in (est.ppi.reason or "")


@pytest.mark.parametrize("share", [0.1, 0.5])
def test_the_judge_over_all_items_covers_at_its_nominal_rate_and_keeps_an_agreeing_judge(share):
    """The form the studio reports for pool items and rubric scores (the judge labelled the sampled
    items too): the judge's share of all items plus the difference on the sample. 1,000 simulated
    sets with the biased judge above, at a small and a large sample share; the truth is the share
    people would give, 0.6. And a judge that agrees with people on the sample keeps its figure."""
    rng = np.random.default_rng(20261208)
    sets, items, p = 1000, 1000, 0.6
    n = int(items * share)
    covered = 0
    for _ in range(sets):
        truth = rng.binomial(1, p, items)
        judge = np.where(truth == 1, rng.binomial(1, 0.95, items), rng.binomial(1, 0.30, items))
        sample = rng.permutation(items)
        on, off = sample[:n], sample[n:]
        est = ppi_mean(truth[on], judge[on], judge[off], judge_over="all")
        covered += est.ppi.low <= p <= est.ppi.high
    assert abs(covered / sets - 0.95) <= 0.02 or 0.95 <= covered / sets <= 0.99, covered / sets
    agree = ppi_mean([1, 0, 1, 1], [1, 0, 1, 1], [0, 0, 1, 0, 1, 0], judge_over="all")
    assert agree.ppi.mean == pytest.approx(agree.judge_only.mean) == pytest.approx(5 / 10)
