"""Judge calibration math against its references: scikit-learn's calibration_curve and
IsotonicRegression, an independent ECE, METHODOLOGY Case 3, and pick_band's promises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import cohen_kappa_score

from golden_store.scoring.calibration import (
    FAIL,
    PASS,
    band_decisions,
    cascade_report,
    fit_isotonic,
    judge_report,
    length_bias,
    pick_band,
    position_bias,
    reliability,
    split,
)


def _data(seed: int, n: int = 400, skew: float = 1.0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    p = np.clip(rng.beta(2, 5, n) + y * rng.beta(3, 2, n) * 0.6, 0, 1) ** skew
    return p, y


def test_case_3_the_judge_that_passes_everything():
    human = [FAIL] * 12 + [PASS] * 88
    # first judge: fails 4, of which 2 are truly bad
    first = [FAIL] * 2 + [PASS] * 10 + [FAIL] * 2 + [PASS] * 86
    r = judge_report(human, first)
    assert r["accuracy"] == pytest.approx(0.88)
    assert round(r["kappa"], 2) == 0.20
    assert round(r["fail_recall"], 2) == 0.17
    assert not r["passes_gate"]
    assert r["human_dist"] == {FAIL: 12, PASS: 88} and r["judge_dist"] == {FAIL: 4, PASS: 96}
    # fixed judge: fails 13, 10 truly bad
    fixed = [FAIL] * 10 + [PASS] * 2 + [FAIL] * 3 + [PASS] * 85
    r = judge_report(human, fixed)
    assert r["accuracy"] == pytest.approx(0.95)
    assert round(r["fail_recall"], 2) == 0.83 and round(r["fail_precision"], 2) == 0.77
    assert round(r["kappa"], 2) == 0.77 and r["passes_gate"]
    assert r["kappa"] == pytest.approx(cohen_kappa_score(human, fixed))


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("seed", range(6))
def test_reliability_bins_equal_scikit_learn(strategy, seed):
    p, y = _data(seed, n=int(np.random.default_rng(seed).integers(30, 500)), skew=1 + seed / 3)
    if seed == 0:  # probabilities exactly on bin edges go to the lower (right-closed) bin
        p[:20] = np.round(p[:20], 1)
    got = reliability(p, y, bins=10, strategy=strategy)
    frac, mean_p = calibration_curve(y, p, n_bins=10, strategy=strategy)
    assert [b[0] for b in got["bins"]] == pytest.approx(list(mean_p))
    assert [b[1] for b in got["bins"]] == pytest.approx(list(frac))
    # ECE computed independently: a plain loop over right-closed bins
    edges = got["edges"]
    ece = 0.0
    for i in range(10):
        lo, hi = edges[i], edges[i + 1]
        idx = [k for k, v in enumerate(p) if (lo < v <= hi) or (i == 0 and v == lo) or (v > edges[-1] and i == 9)]
        if idx:
            ece += len(idx) / len(p) * abs(np.mean(p[idx]) - np.mean(y[idx]))
    assert got["ece"] == pytest.approx(ece)
    assert sum(b[2] for b in got["bins"]) == len(p)


def test_quantile_bins_equal_scikit_learn_in_every_random_case():
    """The issue's repro and 300 random small cases (few distinct values, so probabilities
    sit on the quantile edges): every bin equals calibration_curve's, to the last bit."""
    cases = [(np.array([.05, .35, .65, .95]), np.array([0, 1, 0, 1]), 3)]
    rng = np.random.default_rng(15)
    for _ in range(300):
        n = int(rng.integers(2, 40))
        p = np.round(rng.random(n), int(rng.integers(1, 3)))
        y = rng.integers(0, 2, n)
        cases.append((p, y, int(rng.integers(2, 12))))
    for p, y, bins in cases:
        for strategy in ("quantile", "uniform"):
            got = reliability(p, y, bins=bins, strategy=strategy)
            frac, mean_p = calibration_curve(y, p, n_bins=bins, strategy=strategy)
            assert [b[0] for b in got["bins"]] == list(mean_p), (p.tolist(), y.tolist(), bins, strategy)
            assert [b[1] for b in got["bins"]] == list(frac), (p.tolist(), y.tolist(), bins, strategy)


@pytest.mark.parametrize("seed", range(5))
def test_isotonic_map_equals_scikit_learn(seed):
    p, y = _data(seed, skew=2.0)
    fit_idx, rep_idx = split(y, 0.5, seed)
    m = fit_isotonic(p[fit_idx], y[fit_idx])
    ref = IsotonicRegression(out_of_bounds="clip").fit(p[fit_idx], y[fit_idx])
    probe = np.r_[p[rep_idx], -0.5, 0.0, 1.0, 2.0, np.linspace(0, 1, 50)]
    assert m(probe) == pytest.approx(ref.predict(probe))
    assert np.all(np.diff(m(np.linspace(0, 1, 200))) >= -1e-12)  # monotone
    assert fit_isotonic(**{"p": p[fit_idx], "y": y[fit_idx]}).as_dict() == m.as_dict()


def test_recalibration_lowers_ece_on_the_report_split():
    p, y = _data(3, n=3000, skew=3.0)  # a badly calibrated judge
    fit_idx, rep_idx = split(y, 0.5, 1)
    m = fit_isotonic(p[fit_idx], y[fit_idx])
    before = reliability(p[rep_idx], y[rep_idx])["ece"]
    after = reliability(m(p[rep_idx]), y[rep_idx])["ece"]
    assert after < before / 2


def test_split_is_stratified_deterministic_and_disjoint():
    y = [1] * 30 + [0] * 70
    f1, r1 = split(y, 0.5, 7)
    f2, r2 = split(y, 0.5, 7)
    assert (f1 == f2).all() and (r1 == r2).all()
    assert not set(f1) & set(r1) and len(f1) + len(r1) == 100
    assert sum(y[i] for i in f1) == 15 and sum(y[i] for i in r1) == 15
    assert not (split(y, 0.5, 8)[0] == f1).all()


@pytest.mark.parametrize("seed", range(8))
def test_pick_band_meets_both_limits_on_the_fit_split(seed):
    p, y = _data(seed, n=500)
    for mb, mf in ((0.02, 0.02), (0.05, 0.1), (0.0, 0.0), (0.2, 0.01)):
        band = pick_band(p, y, mb, mf)
        d = band_decisions(p, band["low"], band["high"])
        missed = np.mean(d[y == 1] == PASS)
        false_fail = np.mean(d[y == 0] == FAIL)
        assert missed <= mb + 1e-12 and false_fail <= mf + 1e-12, (mb, mf, band)
        assert band["escalation_rate"] == pytest.approx(np.mean(d == "escalate"))


def test_clean_separation_collapses_the_band_to_one_cut():
    p = [0.05, 0.1, 0.2, 0.3, 0.7, 0.8, 0.9, 0.95]
    y = [0, 0, 0, 0, 1, 1, 1, 1]
    band = pick_band(p, y, 0.25, 0.25)
    assert band["low"] == band["high"] and 0.3 < band["low"] < 0.7
    assert band["escalation_rate"] == 0.0
    d = band_decisions(p, band["low"], band["high"])
    assert list(d) == [PASS] * 4 + [FAIL] * 4


def test_cascade_report_rule_one():
    rng = np.random.default_rng(0)
    n = 600
    y = (rng.random(n) < 0.25).astype(int)
    human = [FAIL if v else PASS for v in y]
    p = np.clip(0.25 + 0.5 * y + rng.normal(0, 0.22, n), 0, 1)  # decision model: noisy in the middle
    llm = [h if rng.random() < 0.95 else (PASS if h == FAIL else FAIL) for h in human]  # a good LLM judge
    band = pick_band(p, y, 0.05, 0.05)
    rep = cascade_report(p, human, llm, band["low"], band["high"], n_boot=300)
    assert rep["cascade"]["kappa"] > rep["decision_model"]["kappa"]
    assert rep["rule1_ok"] and rep["within_noise_of_llm"]
    assert 0 < rep["escalation_rate"] < 1
    # the cascade's figures are those of its decisions, recomputed independently
    d = band_decisions(p, band["low"], band["high"])
    cas = [llm[i] if v == "escalate" else v for i, v in enumerate(d)]
    assert rep["cascade"]["kappa"] == pytest.approx(cohen_kappa_score(human, cas))
    # a wrong band (auto-passing most bad items) fails rule 1 on both counts
    wrong = cascade_report(p, human, llm, 0.7, 0.99, n_boot=300)
    assert not wrong["beats_decision_model"] and not wrong["within_noise_of_llm"] and not wrong["rule1_ok"]
    assert wrong["kappa_diff_vs_llm_ci"][1] < 0


def test_bias_diagnostics():
    lengths = np.arange(10, 1010, 10)
    scores = 0.2 + lengths / 1000 * 0.5  # longer answers score higher
    lb = length_bias(scores, lengths)
    assert lb["slope_per_100_chars"] == pytest.approx(0.05) and lb["r"] == pytest.approx(1.0)
    assert math.isnan(length_bias([1, 2, 3], [5, 5, 5])["slope_per_100_chars"])
    pb = position_bias(["A", "A", "B", "tie"], ["A", "B", "B", "tie"])
    assert pb["disagreement_rate"] == 0.25
    # first slot wins: A-first says A twice of 3 decided; B-first says B twice of 3 decided
    assert pb["first_slot_win_share"] == pytest.approx(4 / 6)


# ---- graded calibration (§11.4) ------------------------------------------------------------------


def _graded(seed: int, n: int = 300, scale: int = 4):
    """Human grades and a judge that is off by one grade now and then, off by more rarely."""
    rng = np.random.default_rng(seed)
    human = rng.integers(0, scale, n)
    step = rng.choice([0, 0, 0, 1, -1, 2], n)
    judge = np.clip(human + step, 0, scale - 1)
    return human.tolist(), judge.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_graded_report_equals_scikit_learn(seed):
    from sklearn.metrics import confusion_matrix, precision_score, recall_score

    from golden_store.scoring.calibration import graded_report

    human, judge = _graded(seed)
    r = graded_report(human, judge)
    assert r["confusion"] == confusion_matrix(human, judge, labels=[0, 1, 2, 3]).tolist()
    assert r["kappa"] == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3]))
    for w in ("linear", "quadratic"):
        assert r[f"kappa_{w}"] == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3], weights=w))
    assert r["kappa_quadratic"] >= r["kappa_linear"] >= r["kappa"]  # near misses are most of the errors
    prec = precision_score(human, judge, labels=[0, 1, 2, 3], average=None, zero_division=np.nan)
    rec = recall_score(human, judge, labels=[0, 1, 2, 3], average=None, zero_division=np.nan)
    for g in range(4):
        assert r["per_grade"][g]["precision"] == pytest.approx(prec[g], nan_ok=True)
        assert r["per_grade"][g]["recall"] == pytest.approx(rec[g], nan_ok=True)
    assert r["human_dist"] == {g: human.count(g) for g in range(4)}
    assert r["judge_dist"] == {g: judge.count(g) for g in range(4)}
    assert r["exact_agreement"] == pytest.approx(np.mean(np.array(human) == np.array(judge)))


def test_graded_report_on_the_nugget_scale_and_a_grade_never_used():
    from sklearn.metrics import confusion_matrix

    from golden_store.scoring.calibration import graded_report

    human, judge = _graded(7, scale=3)
    r = graded_report(human, judge, grades=(0, 1, 2))
    assert r["confusion"] == confusion_matrix(human, judge, labels=[0, 1, 2]).tolist()
    assert r["kappa_linear"] == pytest.approx(cohen_kappa_score(human, judge, weights="linear"))
    # the judge never says 3: its precision there is undefined, the matrix still has the column
    r = graded_report([0, 1, 2, 3, 3], [0, 1, 2, 2, 2])
    assert [row[3] for row in r["confusion"]] == [0, 0, 0, 0] and math.isnan(r["per_grade"][3]["precision"])
    assert r["per_grade"][3]["recall"] == 0.0
    with pytest.raises(ValueError, match="grades must be one of"):
        graded_report([0, 1], [0, 4])


def test_at_cut_makes_the_binary_labels_the_lead_chooses():
    from golden_store.scoring.calibration import at_cut

    grades = [0, 1, 2, 3, "insufficient", None]
    assert at_cut(grades, 2) == [FAIL, FAIL, PASS, PASS, "insufficient", None]
    assert at_cut(grades, 1) == [FAIL, PASS, PASS, PASS, "insufficient", None]
    assert at_cut(grades, 3) == [FAIL, FAIL, FAIL, PASS, "insufficient", None]
    # the binary κ at the cut equals scikit-learn's on the thresholded grades
    human, judge = _graded(3)
    for cut in (1, 2, 3):
        r = judge_report(at_cut(human, cut), at_cut(judge, cut))
        assert r["kappa"] == pytest.approx(cohen_kappa_score([h >= cut for h in human], [j >= cut for j in judge]))
