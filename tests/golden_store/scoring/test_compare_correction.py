"""`golden compare` survives a sweep (issue 25, item 9; METHODOLOGY §13.3): every metric x
stratum (x cohort) verdict is one comparison, the p-values of all of them are adjusted together
(Benjamini-Hochberg by default, Bonferroni, or none), and the gate fails only on a regression
that is significant after the correction. Reference values are computed independently here
(scipy's false_discovery_control; by hand on a fixed list)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from golden_store.scoring import stats
from golden_store.scoring.compare import compare_runs, format_comparison

P = [0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.0, 1.0, 0.049, 0.013]


def test_bh_matches_scipy_and_bonferroni_matches_hand_values():
    scipy_stats = pytest.importorskip("scipy.stats")
    assert stats.adjust_pvalues(P, "bh") == pytest.approx(list(scipy_stats.false_discovery_control(P, method="bh")))
    # by hand, m = 6: sorted .005 .01 .03 .04 .2 .5 -> p*m/rank .03 .03 .06 .06 .24 .5 -> step-up min from the top
    assert stats.adjust_pvalues([0.01, 0.04, 0.03, 0.005, 0.2, 0.5], "bh") == pytest.approx(
        [0.03, 0.06, 0.06, 0.03, 0.24, 0.5])
    assert stats.adjust_pvalues([0.01, 0.04, 0.03, 0.005, 0.2, 0.5], "bonferroni") == pytest.approx(
        [0.06, 0.24, 0.18, 0.03, 1.0, 1.0])
    assert stats.adjust_pvalues(P, "none") == P
    assert stats.adjust_pvalues([], "bh") == []
    with pytest.raises(ValueError, match="unknown correction"):
        stats.adjust_pvalues(P, "holm")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.adjust_pvalues([0.1, 1.5], "bh")


def _sweep() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Nine strata of 60 queries: seven unchanged (noise only), one regressing by 0.08, one by
    0.3. Seed 1 gives one of the unchanged strata a raw 'regression' at p = 0.039."""
    rng = np.random.default_rng(1)
    rows_a, rows_b = [], []
    for k, shift in enumerate([0, 0, 0, 0, 0, 0, 0, -0.07, -0.3]):
        base = rng.random(60)
        cand = base + shift + rng.normal(0, 0.12, 60)
        for i in range(60):
            rows_a.append((f"s{k}q{i}", f"s{k}", "R@10", base[i]))
            rows_b.append((f"s{k}q{i}", f"s{k}", "R@10", cand[i]))
    cols = ["query_id", "stratum", "metric", "value"]
    return pd.DataFrame(rows_a, columns=cols), pd.DataFrame(rows_b, columns=cols)


def _all_p(e: dict) -> list[float]:
    return [e["p"], *(s["p"] for s in e["strata"].values())]


def test_a_sweep_of_strata_is_corrected_and_the_gate_uses_the_adjusted_p():
    a, b = _sweep()
    none = compare_runs(a, b, correction="none")
    bh = compare_runs(a, b)  # Benjamini-Hochberg by default
    bonf = compare_runs(a, b, correction="bonferroni")
    for c, method in ((none, "none"), (bh, "bh"), (bonf, "bonferroni")):
        assert c["correction"]["method"] == method and c["correction"]["comparisons"] == 10  # overall + 9 strata
    e_none, e_bh, e_bonf = (c["metrics"]["R@10"] for c in (none, bh, bonf))
    raw = _all_p(e_none)
    assert _all_p(e_bh) == raw  # the raw p-values do not depend on the correction
    # the adjusted p-values are the reference adjustment of the raw ones (scipy's BH; p * m)
    scipy_stats = pytest.importorskip("scipy.stats")
    adj_bh = [e_bh["p_adj"], *(s["p_adj"] for s in e_bh["strata"].values())]
    assert adj_bh == pytest.approx(list(scipy_stats.false_discovery_control(raw, method="bh")))
    adj_bonf = [e_bonf["p_adj"], *(s["p_adj"] for s in e_bonf["strata"].values())]
    assert adj_bonf == pytest.approx([min(1.0, p * 10) for p in raw])
    # uncorrected, noise in stratum s5 fails the gate; corrected it does not; real drops still fail
    assert e_none["strata"]["s5"]["verdict"] == "FAIL" and e_none["strata"]["s5"]["p"] < 0.05
    assert e_bh["strata"]["s5"]["verdict"] == "PASS" and e_bh["strata"]["s5"]["p_adj"] > 0.05
    assert e_bonf["strata"]["s5"]["verdict"] == "PASS"
    for e in (e_none, e_bh, e_bonf):
        assert e["verdict"] == "FAIL" and e["strata"]["s7"]["verdict"] == "FAIL" and e["strata"]["s8"]["verdict"] == "FAIL"
    assert e_none["strata"]["s3"]["significant"] and not e_bh["strata"]["s3"]["significant"]  # a raw 'win' too
    text = format_comparison(bh, "A", "B")
    assert "correction: Benjamini-Hochberg over 10 comparisons" in text and "adjusted p <= 0.05" in text
    assert "p_adj" in text and "s5           PASS" in text
    assert "correction: no correction over 10" in format_comparison(none, "A", "B")


def test_cohorts_are_compared_apart_and_counted_in_the_correction():
    a, b = _sweep()
    qids = a["query_id"].unique()
    # the regressing strata's questions are the 'flywheel' cohort, the rest 'expert'
    cohort = {q: ("flywheel" if q.startswith(("s7", "s8")) else "expert") for q in qids}
    del cohort["s0q0"]  # a question without the attribute is in cohort '?'
    c = compare_runs(a, b, cohorts=cohort, cohort_by="source")
    e = c["metrics"]["R@10"]
    assert c["cohort_by"] == "source" and set(e["cohorts"]) == {"expert", "flywheel", "?"}
    assert e["cohorts"]["flywheel"]["n"] == 120 and e["cohorts"]["flywheel"]["verdict"] == "FAIL"
    assert e["cohorts"]["expert"]["n"] == 60 * 7 - 1 and e["cohorts"]["?"]["n"] == 1
    assert set(e["cohorts"]["flywheel"]["strata"]) == {"s7", "s8"}
    # the one-question cohort '?' and its stratum get no verdict and no p (too few), and are not corrected
    for cell in (e["cohorts"]["?"], e["cohorts"]["?"]["strata"]["s0"]):
        assert cell["verdict"] == "too few" and cell["p"] is None and cell["ci95"] is None and cell["n"] == 1
    # overall + 9 strata, then per cohort overall + its strata: expert 1 + 7, flywheel 1 + 2 (? 1 + 1 too few)
    assert c["correction"]["comparisons"] == 10 + 8 + 3 and c["correction"]["too_few"] == 2
    assert "source ?: too few (n = 1)" in format_comparison(c, "A", "B")
    assert "source flywheel: FAIL" in format_comparison(c, "A", "B")
    assert "cohorts" not in compare_runs(a, b)["metrics"]["R@10"]  # only when asked for


def test_unknown_correction_is_refused():
    a, b = _sweep()
    with pytest.raises(ValueError, match="unknown correction"):
        compare_runs(a, b, correction="holm")
