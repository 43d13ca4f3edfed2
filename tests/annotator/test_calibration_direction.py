"""Issue 29, H2, as a lead meets it: the walkthrough's file (120 items, judge_p = P(pass)) is
refused with the column and its AUC named; flipped with consent, the report is recomputed
from 1 − judge_p and every figure matches a computation done here from the METHODOLOGY's
own reference code and scikit-learn; a missed target is a failed check with the measured
share; a failing calibration is saved only when acknowledged, and a flipped one says so in
the store and in the manifest."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import roc_auc_score

from annotator.judge import calibration
from annotator.people.identity import LOCAL_USER
from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from tests.conftest import table_snapshot
from tests.inverted_calibration import review_csv, review_frame


def _doc_pick_band(p, y, max_missed_bad, max_false_fail):
    """METHODOLOGY §11.8's pick_band, as printed there."""
    bad = sorted(pi for pi, yi in zip(p, y) if yi == 1)
    good = sorted((pi for pi, yi in zip(p, y) if yi == 0), reverse=True)
    k_bad = int(max_missed_bad * len(bad))
    k_good = int(max_false_fail * len(good))
    low = bad[k_bad] - 1e-9 if bad else 1.0
    high = good[k_good] + 1e-9 if good else 0.0
    if low >= high:
        low = high = (low + high) / 2
    return low, high


def _ece(p, y, bins=10):
    """ECE over scikit-learn's reliability bins (calibration_curve), weighted by bin counts."""
    frac, mean_p = calibration_curve(y, p, n_bins=bins, strategy="uniform")
    edges = np.linspace(0, 1, bins + 1)
    ids = np.searchsorted(edges[1:-1], p)
    counts = np.bincount(ids, minlength=bins)
    counts = counts[counts > 0]
    return float(np.sum(counts / len(p) * np.abs(mean_p - frac)))


def _frame():
    raw = review_frame()
    return raw, calibration.load_upload("review.csv", review_csv())


def test_an_inverted_column_is_refused_with_its_auc():
    raw, df = _frame()
    auc = roc_auc_score(raw["human_label"] == "fail", raw["judge_p"])
    assert auc < 0.5 and calibration.judge_p_auc(df) == pytest.approx(auc)
    with pytest.raises(ValidationError) as e:
        calibration.analyze(df)
    assert str(e.value) == (f"judge_p decreases with FAIL (AUC {auc:.2f} < 0.5): is it P(pass)? "
                            "Tick 'flip' to use 1 − judge_p.")
    # a column that already points to FAIL is never flipped
    right = calibration.load_upload("right.csv", raw.assign(judge_p=1 - raw["judge_p"]).to_csv(index=False).encode())
    assert calibration.inverted_judge_p(right) is None
    with pytest.raises(ValidationError, match=r"already rises with FAIL \(AUC 0\.91"):
        calibration.analyze(right, flip=True)


@pytest.mark.parametrize("max_missed", [0.02, 0.10, 0.15])
def test_flipped_the_report_is_the_hand_computation(max_missed):
    raw, df = _frame()
    a = calibration.analyze(df, flip=True, max_missed_bad=max_missed, max_false_fail=0.02)
    assert a.flipped and a.auc_as_given == pytest.approx(calibration.judge_p_auc(df))
    p = 1 - raw["judge_p"].to_numpy()  # P(FAIL)
    y = (raw["human_label"] == "fail").to_numpy(dtype=int)
    fit, rep = a.fit_idx, a.report_idx
    assert not set(fit) & set(rep) and len(fit) + len(rep) == 120
    assert a.reliability_raw["ece"] == pytest.approx(_ece(p[rep], y[rep]), abs=1e-12)
    iso = IsotonicRegression(out_of_bounds="clip").fit(p[fit], y[fit])
    p_used = iso.predict(p)
    assert np.ptp(iso.y_thresholds_) > 0  # a real map, not a constant
    assert a.reliability_cal["ece"] == pytest.approx(_ece(p_used[rep], y[rep]), abs=1e-12)
    low, high = _doc_pick_band(p_used[fit].tolist(), y[fit].tolist(), max_missed, 0.02)
    assert (a.band["low"], a.band["high"]) == (pytest.approx(low), pytest.approx(high)) and low < high
    pr, yr = p_used[rep], y[rep]
    escalated = float(np.mean((pr > low) & (pr < high)))
    missed = float(np.mean(pr[yr == 1] <= low))
    false_fail = float(np.mean(pr[yr == 0] >= high))
    assert a.band_report["escalation_rate"] == pytest.approx(escalated) and 0 < escalated < 1
    assert a.band_report["missed_bad_share"] == pytest.approx(missed)
    checks = {c.name: c for c in a.checks}
    assert checks["missed_bad_within_target"].ok is (missed <= max_missed)
    assert checks["false_fail_within_target"].ok is (false_fail <= 0.02)
    assert f"{missed:.3f}" in checks["missed_bad_within_target"].message
    assert checks["isotonic_not_constant"].ok and checks["band_two_thresholds"].ok
    assert checks["escalates_less_than_all"].ok


def test_the_walkthroughs_missed_target_fails_and_a_met_one_earns_rule_1():
    _, df = _frame()
    missed = calibration.analyze(df, flip=True, max_missed_bad=0.10)
    share = missed.band_report["missed_bad_share"]
    assert share > 0.10  # the band lets more bad items through on the report split than it was fitted for
    assert [c.name for c in missed.failed_checks] == ["missed_bad_within_target"]
    assert f"{share:.3f} against the target 0.10" in missed.failed_checks[0].message
    met = calibration.analyze(df, flip=True, max_missed_bad=0.15)
    assert met.band_report["missed_bad_share"] <= 0.15 and met.failed_checks == []
    assert {c.name: c for c in met.checks}["rule1"].ok and met.cascade["rule1_ok"]


def test_save_flipped_and_failing_only_with_consent_and_the_manifest_says_so(demo_store, tmp_path):
    raw, df = _frame()
    a = calibration.analyze(df, flip=True, max_missed_bad=0.10)
    kw = dict(judge_model="judge-p", rubric="rubric", question_sha=None, source="upload:review.csv", seed=0,
              fit_share=0.5, max_missed_bad=0.10, max_false_fail=0.02)
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match=r"fails 1 check\(s\): Share of bad items auto-passed"):
        calibration.save(demo_store, LOCAL_USER, df, a, **kw)
    assert table_snapshot(demo_store) == before  # refused: the store exactly as it was
    n_before = len(calibration.saved(demo_store, LOCAL_USER))
    cid = calibration.save(demo_store, LOCAL_USER, df, a, acknowledge_failed_checks=True, **kw)
    good = calibration.analyze(df, flip=True, max_missed_bad=0.15)
    cid2 = calibration.save(demo_store, LOCAL_USER, df, good, **{**kw, "rubric": "rubric 2", "max_missed_bad": 0.15})
    rows = {r["calibration_id"]: r for r in calibration.saved(demo_store, LOCAL_USER)}
    assert len(rows) == n_before + 2
    rep = rows[cid]["report"]
    assert rep["judge_p"] == {"means": "P(FAIL)", "flipped": True, "auc_as_given": pytest.approx(a.auc_as_given, abs=1e-6)}
    assert rep["saved_despite_failed_checks"] is True and len(rep["checks_failed"]) == 1
    archived = dict(demo_store.read("SELECT item_id, judge_p FROM calibration_items WHERE calibration_id = ?", [cid]))
    assert archived == {i: pytest.approx(1 - p) for i, p in zip(raw["item_id"], raw["judge_p"])}  # stored as P(FAIL)
    entries = {e["calibration_id"]: e for e in
               freeze(demo_store, "h2.v1", actor="eng", versions_dir=tmp_path / "v").manifest["judge_calibrations"]}
    assert entries[cid]["judge_p"]["flipped"] is True
    assert list(entries[cid]["checks_failed"]) == [c.message for c in a.failed_checks]
    assert entries[cid2]["judge_p"]["flipped"] is True and list(entries[cid2]["checks_failed"]) == []
