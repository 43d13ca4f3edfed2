"""Abstention per system (METHODOLOGY §10.5) with bootstrap intervals: the worked example of
"Start here" step 8, refusals as their own category, undefined rates that are not numbers,
and the interval checked against a plain resampling of questions."""

from __future__ import annotations

import numpy as np
import pytest

from golden_store.scoring import abstention_report, abstention_scores

# Start here step 8: 30 unanswerable questions, the bot declines 9 and invents 21; plus 20
# answerable ones of which it declines 4 (hand-computed below).
STEP_8 = [(False, "abstained")] * 9 + [(False, "answered")] * 21
ANSWERABLE = [(True, "abstained")] * 4 + [(True, "answered")] * 16


def test_start_here_step_8_abstention_recall_is_0_30():
    r = abstention_report(STEP_8 + ANSWERABLE, n_boot=2000, seed=7)
    rec = r.rates["abstention_recall"]
    assert rec.value == pytest.approx(9 / 30) == pytest.approx(0.30)
    assert (rec.numerator, rec.denominator) == (9, 30)
    # precision: 9 right declines of 13 declines; over-refusal: 4 of 20 answerable declined
    assert r.rates["abstention_precision"].value == pytest.approx(9 / 13)
    assert r.rates["over_refusal_rate"].value == pytest.approx(4 / 20)
    assert (r.declined_unanswerable, r.fabricated, r.declined_answerable, r.answered_answerable) == (9, 21, 4, 16)
    assert (r.n_answerable, r.n_unanswerable, r.n_scored, r.n_unmarked) == (20, 30, 50, 0) and r.complete
    lo, hi = rec.ci
    assert lo < 0.30 < hi and 0.10 < lo < 0.20 and 0.40 < hi < 0.50  # binomial(30, 0.3): sd ~0.084
    assert (r.n_boot, r.seed, r.level) == (2000, 7, 0.95)
    # the spec's own function agrees where both are defined
    spec = abstention_scores(STEP_8 + ANSWERABLE)
    assert spec["abstention_recall"] == pytest.approx(rec.value)
    assert spec["abstention_precision"] == pytest.approx(9 / 13)


def test_refusals_are_their_own_category_not_abstentions_nor_answers():
    base = abstention_report(STEP_8 + ANSWERABLE, n_boot=500)
    r = abstention_report(STEP_8 + ANSWERABLE + [(False, "refused")] * 2 + [(True, "refused")] * 3, n_boot=500)
    for name in ("abstention_precision", "abstention_recall", "over_refusal_rate"):
        assert r.rates[name].value == pytest.approx(base.rates[name].value), name
        assert r.rates[name].denominator == base.rates[name].denominator, name
    assert (r.refused, r.refused_unanswerable, r.refused_answerable) == (5, 2, 3)
    assert r.rates["refusal_rate"].value == pytest.approx(5 / 55)
    assert (r.n_answerable, r.n_unanswerable) == (23, 32)
    # a system that refuses everything: no abstention number, a refusal rate of 1
    all_refused = abstention_report([(False, "refused")] * 4 + [(True, "refused")] * 4, n_boot=100)
    assert all_refused.rates["abstention_recall"].value is None
    assert all_refused.rates["refusal_rate"].value == 1.0


def test_undefined_rates_are_none_with_a_reason_not_zero():
    never_declines = abstention_report([(False, "answered")] * 5 + [(True, "answered")] * 5, n_boot=100)
    p = never_declines.rates["abstention_precision"]
    assert p.value is None and p.ci is None and "never abstained" in p.reason
    assert abstention_scores([(False, False)] * 5)["abstention_precision"] == 0.0  # the spec's max(., 1)
    assert never_declines.rates["abstention_recall"].value == 0.0  # defined: it fabricated all 5
    only_answerable = abstention_report([(True, "answered")] * 3, n_boot=100)
    rec = only_answerable.rates["abstention_recall"]
    assert rec.value is None and "no unanswerable question" in rec.reason
    d = only_answerable.as_dict()
    assert d["rates"]["abstention_recall"]["value"] is None and "definitions" in d
    nothing = abstention_report([], n_boot=10)
    assert all(nothing.rates[k].value is None for k in nothing.rates)


def test_unmarked_answers_are_counted_and_left_out_and_a_bad_outcome_is_an_error():
    r = abstention_report(STEP_8 + [(False, "unknown"), (True, None)], n_boot=100)
    assert r.n_unmarked == 2 and not r.complete and r.n_unanswerable == 30
    assert r.rates["abstention_recall"].value == pytest.approx(0.30)
    with pytest.raises(ValueError, match="answered, abstained, refused"):
        abstention_report([(False, "declined")])


def test_the_interval_is_a_seeded_stratified_bootstrap_over_questions():
    rows = STEP_8 + ANSWERABLE
    a = abstention_report(rows, n_boot=4000, seed=3)
    assert a == abstention_report(rows, n_boot=4000, seed=3)  # reproducible from (rows, n_boot, seed)
    # a plain resampling of question indices within each stratum gives the same interval
    rng = np.random.default_rng(11)
    ans = np.array([o for ok, o in rows if ok])
    una = np.array([o for ok, o in rows if not ok])
    prec, rec, over = [], [], []
    for _ in range(4000):
        sa = ans[rng.integers(0, ans.size, ans.size)]
        su = una[rng.integers(0, una.size, una.size)]
        tp, fn = (su == "abstained").sum(), (su == "answered").sum()
        fp, tn = (sa == "abstained").sum(), (sa == "answered").sum()
        rec.append(tp / (tp + fn))
        over.append(fp / (fp + tn))
        if tp + fp:
            prec.append(tp / (tp + fp))
    for name, naive in (("abstention_recall", rec), ("over_refusal_rate", over), ("abstention_precision", prec)):
        lo, hi = np.percentile(naive, [2.5, 97.5])
        ci = a.rates[name].ci
        assert ci[0] == pytest.approx(lo, abs=0.04) and ci[1] == pytest.approx(hi, abs=0.04), name
