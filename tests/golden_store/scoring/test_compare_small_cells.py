"""A comparison that compares nothing is an error, and a tiny cell gets no verdict (issue 36,
items 1 and 2). The small cells' p-values are checked against scipy's exact permutation and
binomial tests, never against the studio's own code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from golden_store.core.errors import ValidationError
from golden_store.scoring.cells import MIN_CELL_N, SMALL_CELL_N
from golden_store.scoring.compare import compare_runs, format_comparison
from golden_store.scoring.stats import sign_flip_p


def _long(values: dict[str, float], strata: dict[str, str], metric: str = "R(rel=2)@10") -> pd.DataFrame:
    return pd.DataFrame({"query_id": list(values), "stratum": [strata[q] for q in values], "metric": metric,
                         "value": list(values.values())})


def _scipy_sign_flip(d) -> float:
    """The exact paired permutation test of the mean difference, two-sided (scipy). Zero
    differences flip to themselves: scipy gets the non-zero ones, or it would enumerate
    2^n patterns of which most are the same."""
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    res = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                 n_resamples=np.inf, alternative="two-sided")
    return float(res.pvalue)


@pytest.mark.parametrize("seed", range(6))
def test_the_sign_flip_p_is_scipys_exact_permutation_p(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 13))
    d = rng.choice([-1.0, -0.5, 0.0, 0.25, 1.0], size=n)  # ties, zeros and repeated values on purpose
    p, how = sign_flip_p(d)
    assert how == "exact" and p == pytest.approx(_scipy_sign_flip(d))


def test_five_of_five_losing_is_the_exact_sign_test_not_zero():
    p, _ = sign_flip_p([-0.4] * 5)
    assert p == pytest.approx(stats.binomtest(0, 5).pvalue) == pytest.approx(0.0625)
    assert sign_flip_p([-0.6131])[0] == 1.0  # one question can never show anything


def _cells(strata_sizes: dict[str, int], loss: dict[str, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    qids, strata = [], {}
    for s, n in strata_sizes.items():
        for i in range(n):
            q = f"{s}-{i}"
            qids.append(q)
            strata[q] = s
    base = {q: 1.0 for q in qids}
    cand = {q: 1.0 - loss.get(strata[q], 0.0) for q in qids}
    return _long(base, strata), _long(cand, strata)


def test_a_one_question_stratum_says_too_few_and_is_not_corrected():
    # the methodology review's reproduction: one lexical question loses 0.6131 -> "FAIL p 0.0000" before
    a, b = _cells({"lexical": 1, "paraphrase": 40}, {"lexical": 0.6131})
    c = compare_runs(a, b)
    cell = c["metrics"]["R(rel=2)@10"]["strata"]["lexical"]
    assert cell["verdict"] == "too few" and cell["p"] is None and cell["ci95"] is None and cell["n"] == 1
    assert cell["losses"] == 1 and cell["delta"] == pytest.approx(-0.6131)
    assert c["correction"]["comparisons"] == 2 and c["correction"]["too_few"] == 1  # overall + paraphrase
    assert "lexical      too few (n = 1)" in format_comparison(c, "A", "B")


def test_five_equal_losses_get_the_exact_p_and_no_fail():
    # the long_tail reproduction: 5 of 5 lose 1.0 -> bootstrap p 0 and FAIL before; exact p 0.0625 now
    a, b = _cells({"long_tail": 5, "paraphrase": 40}, {"long_tail": 1.0})
    cell = compare_runs(a, b, min_n=1)["metrics"]["R(rel=2)@10"]["strata"]["long_tail"]
    assert cell["p"] == pytest.approx(stats.binomtest(0, 5).pvalue) and cell["test"] == "sign-flip (exact)"
    assert cell["verdict"] == "PASS" and not cell["significant"]
    assert compare_runs(a, b)["metrics"]["R(rel=2)@10"]["strata"]["long_tail"]["verdict"] == "too few"  # default 6


def test_eight_equal_losses_are_significant_by_the_exact_test():
    a, b = _cells({"long_tail": 8}, {"long_tail": 1.0})
    c = compare_runs(a, b, correction="none")
    e = c["metrics"]["R(rel=2)@10"]
    assert e["p"] == pytest.approx(stats.binomtest(0, 8).pvalue) == pytest.approx(2 / 256)
    assert e["verdict"] == "FAIL" and e["test"] == "sign-flip (exact)"


def test_small_cells_use_the_sign_flip_and_large_ones_the_bootstrap():
    rng = np.random.default_rng(3)
    n_small, n_large = SMALL_CELL_N - 1, SMALL_CELL_N + 10
    qids = [f"q{i}" for i in range(n_small + n_large)]
    strata = {q: ("small" if i < n_small else "large") for i, q in enumerate(qids)}
    base = dict(zip(qids, rng.random(len(qids))))
    cand = {q: v + rng.choice([-0.2, 0.0, 0.1]) for q, v in base.items()}
    e = compare_runs(_long(base, strata), _long(cand, strata), correction="none")["metrics"]["R(rel=2)@10"]
    small, large = e["strata"]["small"], e["strata"]["large"]
    assert small["test"].startswith("sign-flip") and large["test"] == "paired bootstrap"
    d = np.array([cand[q] - base[q] for q in qids if strata[q] == "small"])
    assert small["test"] == "sign-flip (exact)" and small["p"] == pytest.approx(_scipy_sign_flip(d))


def test_the_exact_count_by_halves_equals_scipy_for_many_nonzero_deltas():
    rng = np.random.default_rng(11)
    d = rng.choice([-0.3, -0.1, 0.2, 0.5], size=17)  # 2^17 patterns: scipy enumerates, the studio meets in the middle
    p, how = sign_flip_p(d)
    assert how == "exact" and p == pytest.approx(_scipy_sign_flip(d))
    big = rng.normal(size=40)  # above 30 non-zero deltas: sampled, near the exact value
    p_big, how_big = sign_flip_p(big, n_resamples=20_000, seed=1)
    ref = stats.permutation_test((big,), np.mean, permutation_type="samples", n_resamples=50_000,
                                 alternative="two-sided", random_state=2).pvalue
    assert how_big == "sampled" and abs(p_big - ref) < 0.03


def _pair(metrics_a: list[str], metrics_b: list[str], n: int = 10) -> tuple[pd.DataFrame, pd.DataFrame]:
    strata = {f"q{i}": "s" for i in range(n)}
    a = pd.concat([_long({q: 0.5 for q in strata}, strata, m) for m in metrics_a])
    b = pd.concat([_long({q: 0.4 for q in strata}, strata, m) for m in metrics_b])
    return a, b


def test_a_measure_neither_recorded_is_an_error_not_a_pass():
    a, b = _pair(["R(rel=2)@10"], ["R(rel=2)@10"])
    with pytest.raises(ValidationError, match=r"Cannot compare bogus: not recorded by both evaluations \(ev-a recorded "
                                              r"R\(rel=2\)@10; ev-b recorded R\(rel=2\)@10\)"):
        compare_runs(a, b, metrics=["bogus"], names=("ev-a", "ev-b"))
    with pytest.raises(ValidationError, match="Cannot compare nDCG@100"):
        compare_runs(a, b, metrics=["R(rel=2)@10", "nDCG@100"])


def test_a_measure_recorded_by_one_side_only_or_no_common_measure_is_an_error():
    a, b = _pair(["R(rel=2)@10", "nDCG@10"], ["R(rel=2)@10"])
    with pytest.raises(ValidationError, match="Cannot compare nDCG@10"):
        compare_runs(a, b, metrics=["nDCG@10"])
    a, b = _pair(["nDCG@10"], ["R(rel=2)@10"])
    with pytest.raises(ValidationError, match="share no measure"):
        compare_runs(a, b)


def test_the_short_name_finds_the_recorded_measure():
    a, b = _pair(["R(rel=2)@10", "AP(rel=2)"], ["R(rel=2)@10", "AP(rel=2)"])
    c = compare_runs(a, b, metrics=["R@10", "map"])
    assert list(c["metrics"]) == ["R(rel=2)@10", "AP(rel=2)"]


def test_no_question_in_common_or_too_few_overall_is_an_error():
    a = _long({"q1": 1.0, "q2": 0.0}, {"q1": "s", "q2": "s"})
    b = _long({"q3": 1.0}, {"q3": "s"})
    with pytest.raises(ValidationError, match="no question in common"):
        compare_runs(a, b)
    a, b = _pair(["R(rel=2)@10"], ["R(rel=2)@10"], n=MIN_CELL_N - 1)
    with pytest.raises(ValidationError, match=f"share only {MIN_CELL_N - 1} question"):
        compare_runs(a, b)
    assert compare_runs(a, b, min_n=1)["metrics"]["R(rel=2)@10"]["n"] == MIN_CELL_N - 1
    with pytest.raises(ValidationError, match="at least 1"):
        compare_runs(a, b, min_n=0)


def _by_metric(values: dict[str, dict[str, float]]) -> pd.DataFrame:
    """metric -> {query_id: value} as the long frame an evaluation gives."""
    return pd.DataFrame([{"query_id": q, "stratum": "s", "metric": m, "value": v}
                         for m, per in values.items() for q, v in per.items()])


def test_a_metric_few_questions_carry_is_too_few_unless_named():
    """Answer evaluations carry metrics a small human sample gives (rubric_human on 3 answers)
    beside metrics every question has. Before, the whole comparison was refused for the small
    one; now it reads "too few" like a small stratum and the others get their verdicts. Named,
    it still refuses (a gate on it must not pass unseen); every metric too few still refuses."""
    qs = [f"q{i}" for i in range(12)]
    a = _by_metric({"answer_f1": {q: 0.5 for q in qs}, "rubric_human": {q: 0.9 for q in qs[:3]}})
    b = _by_metric({"answer_f1": {q: 0.5 + (0.1 if i % 2 else 0.0) for i, q in enumerate(qs)},
               "rubric_human": {q: 0.1 for q in qs[:3]}})  # a drop a verdict would fail, on 3 questions
    c = compare_runs(a, b, n_boot=2000)
    few = c["metrics"]["rubric_human"]
    assert few["verdict"] == "too few" and few["n"] == 3 and few["ci95"] is None and few["p"] is None
    assert few["delta"] == pytest.approx(-0.8)
    assert c["metrics"]["answer_f1"]["verdict"] == "PASS" and c["metrics"]["answer_f1"]["n"] == 12
    assert c["correction"]["too_few"] >= 1
    assert "rubric_human: too few (n = 3)" in format_comparison(c, "a", "b")
    with pytest.raises(ValidationError, match="share only 3 question"):
        compare_runs(a, b, metrics=["rubric_human"], n_boot=200)
    with pytest.raises(ValidationError, match="for every metric"):
        compare_runs(a[a["query_id"].isin(qs[:3])], b[b["query_id"].isin(qs[:3])], n_boot=200)
