"""Which way a judge's p points, and the checks a fitted calibration must pass (issue 29, H2):
the AUC against scikit-learn, the refusal sentence, and each degenerate fit of the
walkthrough's inverted column (a constant isotonic map, one threshold on both sides of the
band, every item escalated, rule 1 holding only trivially) caught; a missed target named with
its measured value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from golden_store.scoring import calibration as cal


@pytest.mark.parametrize("seed", range(6))
def test_auc_matches_scikit_learn_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    y = rng.random(n) < rng.uniform(0.1, 0.9)
    y[0], y[1] = True, False  # both classes
    p = np.round(rng.random(n) * (1 + y), 1) / 2  # coarse: many ties, within and across classes
    assert cal.auc(p, y.astype(int)) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert cal.auc(1 - p, y.astype(int)) == pytest.approx(1 - roc_auc_score(y, p), abs=1e-12)


def test_auc_of_one_class_is_undefined_and_not_inverted():
    assert math.isnan(cal.auc([0.1, 0.9], [1, 1]))
    assert cal.inverted_message(math.nan) is None
    assert cal.inverted_message(0.5) is None and cal.inverted_message(0.93) is None


def test_the_refusal_names_the_column_and_the_auc():
    assert cal.inverted_message(0.1234) == ("judge_p decreases with FAIL (AUC 0.12 < 0.5): is it P(pass)? "
                                            "Tick 'flip' to use 1 − judge_p.")
    # never "0.50 < 0.5": a value just under one half keeps its third place
    assert "(AUC 0.498 < 0.5)" in cal.inverted_message(0.498)


def _inverted(seed: int = 3, n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    """P(pass) of a decent judge: falls as items get worse."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    p_fail = np.clip(np.where(y == 1, 0.7, 0.3) + rng.normal(0, 0.2, n), 0.01, 0.99)
    return 1 - p_fail, y


def test_the_walkthroughs_degenerate_fit_is_caught():
    p, y = _inverted()
    fit, rep = cal.split(y.tolist(), 0.5, 0)
    assert cal.auc(p, y) < 0.5
    iso = cal.fit_isotonic(p[fit], y[fit])
    # anti-monotone data: the monotone fit pools everything into the fit split's FAIL share
    assert np.ptp(iso.y) == 0 and iso.y[0] == pytest.approx(y[fit].mean())
    p_used = iso(p)
    band = cal.pick_band(p_used[fit], y[fit], 0.02, 0.02)
    d = cal.band_decisions(p_used[rep], band["low"], band["high"])
    band_report = {"escalation_rate": float(np.mean(d == "escalate")),
                   "missed_bad_share": float(np.mean(d[y[rep] == 1] == cal.PASS)),
                   "false_fail_share": float(np.mean(d[y[rep] == 0] == cal.FAIL))}
    assert band_report["escalation_rate"] == 1.0 and f"{band['low']:.3f}" == f"{band['high']:.3f}"
    labels = np.where(y == 1, cal.FAIL, cal.PASS)
    judge = labels.copy()  # a perfect LLM judge: the cascade that escalates everything equals it
    casc = cal.cascade_report(p_used[rep], labels[rep].tolist(), judge[rep].tolist(), band["low"], band["high"],
                              n_boot=200)
    assert casc["rule1_ok"]  # what the page showed in green
    checks = {c.name: c for c in cal.fit_checks(isotonic_y=iso.y, band=band, band_report=band_report,
                                                 max_missed_bad=0.02, max_false_fail=0.02, cascade=casc)}
    failed = {name for name, c in checks.items() if not c.ok}
    assert failed == {"isotonic_not_constant", "band_two_thresholds", "escalates_less_than_all", "rule1"}
    assert checks["isotonic_not_constant"].severity == "error"
    assert f"the constant {y[fit].mean():.3f}" in checks["isotonic_not_constant"].message
    assert "escalation rate 1.000" in checks["escalates_less_than_all"].message
    assert checks["rule1"].message.startswith("Rule 1 holds only trivially")


def test_a_clean_separation_is_one_cut_and_says_so():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    band = cal.pick_band(p, y, 0.0, 0.0)
    assert band["low"] == band["high"]
    c = cal.fit_checks(isotonic_y=None, band=band, band_report=None, max_missed_bad=0.0, max_false_fail=0.0)
    assert [(x.name, x.ok, x.severity) for x in c] == [("band_two_thresholds", False, "warning")]
    assert f"auto-PASS at p ≤ {band['low']:.3f} and auto-FAIL at p ≥ {band['high']:.3f}" in c[0].message


@pytest.mark.parametrize(("missed", "target", "ok"), [(0.28, 0.10, False), (0.10, 0.10, True), (0.0, 0.0, True),
                                                      (0.05, 0.0, False)])
def test_a_target_is_judged_on_the_measured_share(missed, target, ok):
    c = cal.fit_checks(isotonic_y=None, band=None, max_missed_bad=target, max_false_fail=0.02,
                       band_report={"escalation_rate": 0.4, "missed_bad_share": missed, "false_fail_share": 0.0})
    got = {x.name: x for x in c}["missed_bad_within_target"]
    assert got.ok is ok
    assert f"{missed:.3f}" in got.message and f"target {target:.2f}" in got.message
    if not ok:
        assert got.severity == "error" and "misses it" in got.message


def test_a_target_without_items_to_measure_is_not_a_pass():
    c = cal.fit_checks(isotonic_y=None, band=None, max_missed_bad=0.1, max_false_fail=0.02,
                       band_report={"escalation_rate": 0.4, "missed_bad_share": math.nan, "false_fail_share": 0.0})
    got = {x.name: x for x in c}["missed_bad_within_target"]
    assert not got.ok and "cannot be checked" in got.message
