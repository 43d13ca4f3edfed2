"""Issue 36 item 7d: on the demo's judge calibration the isotonic map has a plateau at exactly 1/3
and pick_band returns low = 0.3333333323, high = 0.3333333343. The check said "one cut, not a
band ... Nothing between them goes to the LLM judge", while the items sitting at 1/3 (10% of the
fit split, 6.7% of the report split) fall between the thresholds and pool grading sends them to
people. The message now counts them with the rule pool grading routes by.

References: the isotonic map refitted here with scikit-learn on the fit split, the items counted
by hand against the band (low < p < high), and pool grading's own router (``cascade.route``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression

from annotator.judge.calibration import analyze
from golden_store.scoring import calibration as cal
from golden_store.scoring.cascade import ESCALATED, route

# the demo's calibration set before issue 38 (the demo now ships one that passes its checks)
CSV = Path(__file__).resolve().parent / "one_cut_calibration.csv"


def test_the_one_cut_message_states_the_share_pool_grading_sends_to_people():
    df = pd.read_csv(CSV)
    a = analyze(df)
    low, high = a.band["low"], a.band["high"]
    assert 0 < high - low < cal.SAME_CUT and f"{low:.10f}" == "0.3333333323"  # the case the issue saw

    # by hand: refit the monotone map on the fit split, then count low < p < high per split
    y = (df["human_label"] == "fail").to_numpy(dtype=float)
    p = df["judge_p"].to_numpy(dtype=float)
    iso = IsotonicRegression(out_of_bounds="clip").fit(p[a.fit_idx], y[a.fit_idx])
    p_used = iso.predict(p)
    counts = {}
    for name, idx in (("fit", a.fit_idx), ("report", a.report_idx)):
        between = [i for i in idx if low < p_used[i] < high]
        assert all(p_used[i] == pytest.approx(1 / 3) for i in between)  # the plateau at 1/3
        counts[name] = (len(between), len(idx))
    assert counts == {"fit": (3, 30), "report": (2, 30)}

    [check] = [c for c in a.checks if c.name == "band_two_thresholds"]
    assert not check.ok and "Nothing" not in check.message and "LLM judge" not in check.message
    for name, (k, n) in counts.items():
        m = re.search(rf"{name} split (\d+) of (\d+) \(([\d.]+)%\) to people, (\d+) keep the judge's label",
                      check.message)
        assert m, check.message
        assert (int(m[1]), int(m[2]), int(m[4])) == (k, n, n - k)
        assert float(m[3]) == pytest.approx(100 * k / n, abs=0.05)  # 10.0% and 6.7%
    assert "all at p = 0.333, a plateau of the isotonic map" in check.message
    # the band's own escalation rates are the same counts
    assert a.band["escalation_rate"] == pytest.approx(3 / 30) and a.band_report["escalation_rate"] == pytest.approx(2 / 30)

    # and pool grading's router sends exactly those items to people for being in the band
    for name, idx in (("fit", a.fit_idx), ("report", a.report_idx)):
        in_band = [i for i in idx if route(float(p_used[i]), 3, low=low, high=high).reason.endswith(
            f"is in the band ({low:.2f}, {high:.2f})")]
        assert len(in_band) == counts[name][0]
        assert all(route(float(p_used[i]), g, low=low, high=high).outcome == ESCALATED for i in in_band for g in (0, 3))


def test_a_clean_one_cut_says_nothing_goes_to_people():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    band = cal.pick_band(p, y, 0.0, 0.0)
    [c] = cal.fit_checks(isotonic_y=None, band=band, band_report=None, max_missed_bad=0.0, max_false_fail=0.0,
                         p_fit=p, p_report=p)
    # by hand: the cut sits at 0.5; three items at or under it pass, three at or over it fail
    assert band["low"] == band["high"] == pytest.approx(0.5)
    assert "Nothing lies between them" in c.message
    assert "fit split 0 of 6 (0.0%) to people, 6 keep the judge's label (3 auto-PASS, 3 auto-FAIL)" in c.message
