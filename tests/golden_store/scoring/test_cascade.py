"""The cascade's pure functions (METHODOLOGY §11.1 step 6, §11.7, §11.8): the routing rule
against ``calibration.band_decisions``, the stratified standing sample (exact per stratum,
whatever the chunking of a job), the sample's figures against scikit-learn, the drift flags,
and the cost arithmetic against §11.8's worked example and by hand."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import cohen_kappa_score, recall_score

from golden_store.scoring.calibration import FAIL, PASS, band_decisions
from golden_store.scoring.cascade import (
    ESCALATED,
    LABELED,
    binary,
    cascade_vs_alternatives,
    draw_sample,
    drift_flags,
    route,
    sample_figures,
    two_tier_cost,
)
from golden_store.scoring.cost import eval_run_cost

LOW, HIGH = 0.1, 0.8


# ---- route: every branch ---------------------------------------------------------------------------


def test_route_without_a_probability_escalates():
    for p in (None, math.nan, np.float64("nan")):
        d = route(p, 3, low=LOW, high=HIGH)
        assert d.outcome == ESCALATED and "no probability" in d.reason


def test_route_insufficient_escalates_wherever_p_is():
    for p in (0.0, 0.5, 1.0):
        d = route(p, None, low=LOW, high=HIGH)
        assert d.outcome == ESCALATED and "insufficient" in d.reason


def test_route_in_band_escalates_whatever_the_grade():
    for g in range(4):
        for p in (0.1000001, 0.5, 0.7999999):
            d = route(p, g, low=LOW, high=HIGH)
            assert d.outcome == ESCALATED and "in the band" in d.reason


def test_route_pass_zone():
    # a pass grade at or under low stands, the edge included
    for p in (0.0, 0.05, 0.1):
        for g in (2, 3):
            d = route(p, g, low=LOW, high=HIGH)
            assert d.outcome == LABELED and "the judge's pass" in d.reason
    # a fail grade in the pass zone contradicts p: a person decides
    for g in (0, 1):
        d = route(0.05, g, low=LOW, high=HIGH)
        assert d.outcome == ESCALATED and f"grade {g} is a fail" in d.reason


def test_route_fail_zone():
    for p in (0.8, 0.9, 1.0):
        for g in (0, 1):
            d = route(p, g, low=LOW, high=HIGH)
            assert d.outcome == LABELED and "the judge's fail" in d.reason
    for g in (2, 3):
        d = route(0.95, g, low=LOW, high=HIGH)
        assert d.outcome == ESCALATED and f"grade {g} is a pass" in d.reason


def test_route_quote_backstop_only_guards_a_pass():
    d = route(0.02, 3, low=LOW, high=HIGH, quote_ok=False)
    assert d.outcome == ESCALATED and "not verbatim" in d.reason
    # a fail carries no supporting quote: the backstop does not apply
    assert route(0.95, 0, low=LOW, high=HIGH, quote_ok=False).outcome == LABELED
    # in the band the item escalates anyway (for the band's reason)
    assert "in the band" in route(0.5, 3, low=LOW, high=HIGH, quote_ok=False).reason


def test_route_cut_moves_the_pass_side():
    assert route(0.05, 1, low=LOW, high=HIGH, cut=1).outcome == LABELED  # grade 1 is a pass at cut 1
    assert route(0.05, 2, low=LOW, high=HIGH, cut=3).outcome == ESCALATED  # grade 2 is a fail at cut 3
    assert route(0.95, 2, low=LOW, high=HIGH, cut=3).outcome == LABELED


def test_route_collapsed_band_escalates_nothing_by_band():
    low = high = 0.4
    assert route(0.4, 3, low=low, high=high).outcome == LABELED  # on the cut: the pass side, as band_decisions
    assert route(0.4000001, 0, low=low, high=high).outcome == LABELED
    assert route(0.3999999, 2, low=low, high=high).outcome == LABELED
    assert list(band_decisions([0.4, 0.4000001, 0.3999999], low, high)) == [PASS, FAIL, PASS]
    # only disagreement between grade and p still escalates
    assert route(0.4, 0, low=low, high=high).outcome == ESCALATED


_p = st.floats(0, 1, allow_nan=False)


@st.composite
def _band(draw):
    a, b = draw(_p), draw(_p)
    if draw(st.booleans()):
        return a, a  # collapsed
    return min(a, b), max(a, b)


@given(band=_band(), ps=st.lists(_p, min_size=1, max_size=30), cut=st.integers(1, 3), data=st.data())
def test_route_agrees_with_band_decisions(band, ps, cut, data):
    """Whenever the judge's grade is on the side of its p, route labels exactly the items
    band_decisions does not escalate, on the same side; in the band it never labels."""
    low, high = band
    decisions = band_decisions(ps, low, high)
    for p, dec in zip(ps, decisions):
        if dec == PASS:
            grade = data.draw(st.integers(cut, 3))
        elif dec == FAIL:
            grade = data.draw(st.integers(0, cut - 1))
        else:
            grade = data.draw(st.integers(0, 3))
        d = route(p, grade, low=low, high=high, cut=cut)
        assert (d.outcome == LABELED) == (dec != "escalate"), (p, low, high, grade, d)
        if d.outcome == LABELED:
            assert binary([grade], cut)[0] == dec
        # a grade on the other side of p never stands
        if dec != "escalate":
            other = data.draw(st.integers(0, cut - 1) if dec == PASS else st.integers(cut, 3))
            assert route(p, other, low=low, high=high, cut=cut).outcome == ESCALATED


# ---- draw_sample --------------------------------------------------------------------------------


def _expected(share: float, n: int) -> int:
    """round(share x n), halves up (the sample's total size)."""
    return math.floor(share * n + 0.5)


def _pool(n_per: dict[str, int]) -> list[tuple[str, str]]:
    items = [(f"{s}-{i:05d}", s) for s, n in n_per.items() for i in range(n)]
    random.Random(7).shuffle(items)
    return items


def test_draw_sample_is_exact_per_stratum():
    n_per = {"lexical": 1234, "paraphrase": 617, "multi_hop": 95, "negative": 5, "tiny": 4, "one": 1}
    items = _pool(n_per)
    got = draw_sample(items, share=0.1, seed=3)
    stratum = dict(items)
    counts = Counter(stratum[k] for k in got)
    assert len(got) == _expected(0.1, sum(n_per.values()))  # 196 of 1,956
    # floors 123 + 61 + 9 + 0 + 0 + 0 = 193; the 3 left go to the largest remainders (.7, .5, .5)
    assert {s: counts.get(s, 0) for s in n_per} == {"lexical": 123, "paraphrase": 62, "multi_hop": 10,
                                                    "negative": 1, "tiny": 0, "one": 0}
    assert got <= set(stratum)


def test_draw_sample_share_0_and_1_and_empty():
    items = _pool({"a": 30, "b": 7})
    assert draw_sample(items, share=0.0) == set()
    assert draw_sample(items, share=1.0) == {k for k, _ in items}
    assert draw_sample([], share=0.5) == set()


@pytest.mark.parametrize("share", [-0.01, 1.0001, 2, math.nan])
def test_draw_sample_refuses_a_bad_share(share):
    with pytest.raises(ValueError, match="between 0 and 1"):
        draw_sample([("k", "s")], share=share)


def test_draw_sample_missing_stratum_is_unassigned():
    items: list[tuple[str, Any]] = [(f"k{i}", "" if i % 2 else None) for i in range(20)]
    assert len(draw_sample(items, share=0.5)) == 10  # one stratum, 'unassigned'
    # the earlier chunk's counts are found under that name: 40 labeled, 20 to sample in all
    assert len(draw_sample(items, share=0.5, before={"unassigned": (20, 10)})) == 10
    assert draw_sample(items, share=0.5, before={"unassigned": (20, 20)}) == set()
    assert len(draw_sample(items, share=0.5, before={"other": (20, 20)})) == 10


def test_draw_sample_depends_on_seed_not_on_order():
    items = _pool({"a": 200, "b": 100})
    one = draw_sample(items, share=0.1, seed=1)
    assert draw_sample(list(reversed(items)), share=0.1, seed=1) == one
    assert draw_sample(items, share=0.1, seed=2) != one


def _chunked(items, cuts, share, seed):
    """Feed a job's chunks one after another, as the pool grading job does: each chunk sees
    what the earlier ones labeled and sampled through ``before``."""
    before: dict[str, tuple[int, int]] = {}
    drawn: set[str] = set()
    bounds = [0, *sorted(cuts), len(items)]
    for a, b in zip(bounds, bounds[1:]):
        chunk = items[a:b]
        got = draw_sample(chunk, share=share, seed=seed, before=before)
        assert not got & drawn
        drawn |= got
        stratum = dict(chunk)
        for s, n in Counter(s or "unassigned" for _, s in chunk).items():
            n0, k0 = before.get(s, (0, 0))
            before[s] = (n0 + n, k0 + sum(1 for k in got if (stratum[k] or "unassigned") == s))
    return drawn, before


@settings(max_examples=150)
@given(sizes=st.lists(st.integers(0, 120), min_size=1, max_size=5),
       share=st.sampled_from([0.0, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0]), seed=st.integers(0, 10**6),
       data=st.data())
def test_draw_sample_chunking_keeps_each_stratum_within_its_share(sizes, share, seed, data):
    """One shot: round(share x all) in total, each stratum floor or ceil of its exact share
    (largest remainder). In chunks, as a job draws: each stratum still within floor..ceil of
    its exact share, the total within one item per stratum of exact (a leftover item goes only
    to a stratum with new items in the chunk), and the same chunks draw the same items."""
    items = _pool({f"s{i}": n for i, n in enumerate(sizes)})
    cuts = data.draw(st.lists(st.integers(0, len(items)), max_size=8))
    drawn, before = _chunked(items, cuts, share, seed)
    stratum = dict(items)
    one_shot = draw_sample(items, share=share, seed=seed)
    total = sum(sizes)
    assert len(one_shot) == math.floor(share * total + 0.5)
    assert abs(len(drawn) - math.floor(share * total + 0.5)) <= len(sizes)
    for i, n in enumerate(sizes):
        s = f"s{i}"
        lo, hi = math.floor(share * n), math.ceil(share * n)
        assert lo <= sum(1 for k in one_shot if stratum[k] == s) <= hi
        got = sum(1 for k in drawn if stratum[k] == s)
        assert lo <= got <= hi
        if n:
            assert before[s] == (n, got)
    assert _chunked(items, cuts, share, seed)[0] == drawn


def test_draw_sample_gives_a_small_job_its_share():
    """Seven strata of three items each: a tenth of 21 is 2 items, not 0 per stratum."""
    items = _pool({f"s{i}": 3 for i in range(7)})
    assert len(draw_sample(items, share=0.1, seed=0)) == 2


# ---- sample_figures against scikit-learn -------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_sample_figures_equal_scikit_learn(seed, cut):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    human = rng.choice(4, n, p=[0.35, 0.25, 0.22, 0.18])
    judge = np.where(rng.random(n) < 0.8, human, rng.integers(0, 4, n))
    f = sample_figures(judge.tolist(), human.tolist(), cut=cut)
    hb, jb = binary(human.tolist(), cut), binary(judge.tolist(), cut)
    assert f["n"] == n
    assert f["kappa"] == pytest.approx(cohen_kappa_score(hb, jb), abs=1e-12)
    assert f["fail_recall"] == pytest.approx(recall_score(hb, jb, pos_label=FAIL), abs=1e-12)
    assert f["grade_agreement"] == pytest.approx(float(np.mean(judge == human)))
    assert f["clears_gate"] == (f["kappa"] >= 0.7)


def test_sample_figures_small_cases():
    f = sample_figures([0, 0, 3, 3], [0, 1, 2, 3])
    assert f["kappa"] == 1.0 and f["fail_recall"] == 1.0 and f["grade_agreement"] == 0.5 and f["clears_gate"]
    f = sample_figures([3, 3, 3, 3], [0, 1, 3, 3])  # misses both bad items
    assert f["fail_recall"] == 0.0 and f["kappa"] == 0.0 and not f["clears_gate"]
    empty = sample_figures([], [])
    assert empty["n"] == 0 and math.isnan(empty["kappa"]) and not empty["clears_gate"]
    with pytest.raises(ValueError, match="3 judge grades but 2 human"):
        sample_figures([0, 1, 2], [0, 1])


# ---- drift_flags -----------------------------------------------------------------------------------


def _w(n=50, kappa=0.85, fail_recall=0.9, model="m1", rubric_sha="r1", **kw):
    return {"n": n, "kappa": kappa, "fail_recall": fail_recall, "model": model, "rubric_sha": rubric_sha, **kw}


def test_drift_flags_quiet_when_all_is_well():
    assert drift_flags([_w(), _w(kappa=0.8)], calibration_kappa=0.82) == []
    assert drift_flags([], calibration_kappa=0.8) == []


def test_drift_flags_kappa_under_the_gate_and_small_windows():
    flags = drift_flags([_w(window="week 1", kappa=0.6)], calibration_kappa=0.8)
    assert flags == ["week 1: κ 0.60 on 50 sampled items is under the gate 0.70"]  # not also "under calibration"
    assert drift_flags([_w(n=19, kappa=0.1, fail_recall=0.1)], calibration_kappa=0.8) == []  # too few to say
    assert drift_flags([_w(kappa=math.nan, fail_recall=0.1)], calibration_kappa=0.8) == []
    assert drift_flags([_w(kappa=None)], calibration_kappa=0.8) == []
    assert drift_flags([_w(kappa=0.75)], calibration_kappa=0.8, gate=0.8)[0].startswith("window 1: κ 0.75")


def test_drift_flags_kappa_under_calibration_and_fail_recall():
    flags = drift_flags([_w(kappa=0.74)], calibration_kappa=0.9)
    assert flags == ["window 1: κ 0.74 is 0.16 under the calibration's 0.90"]
    assert drift_flags([_w(kappa=0.74)], calibration_kappa=None) == []
    assert drift_flags([_w(kappa=0.81)], calibration_kappa=0.9) == []  # 0.09 under: within 0.1
    flags = drift_flags([_w(fail_recall=0.7)], calibration_kappa=0.85)
    assert flags == ["window 1: FAIL recall 0.70 is under 0.8"]
    assert drift_flags([_w(fail_recall=math.nan)], calibration_kappa=0.85) == []


def test_drift_flags_judge_change():
    ws = [_w(window="a"), _w(window="b"), _w(window="c", model="m2"), _w(window="d", model="m2", rubric_sha="r2")]
    flags = drift_flags(ws, calibration_kappa=0.85)
    assert flags == [f"{w}: the judge changed (model or rubric); re-validate it on the calibration set" for w in "cd"]
    # a change is flagged even on a window too small for κ
    assert len(drift_flags([_w(n=1), _w(n=1, rubric_sha="r9")], calibration_kappa=None)) == 1


# ---- cost ------------------------------------------------------------------------------------------


def test_two_tier_cost_reproduces_section_11_8():
    opus_batch_cached = eval_run_cost(5000, 1800, 150, 5.00, 25.00, batch=True, cache_hit_frac=0.99,
                                      cached_frac_of_input=0.78)
    assert round(opus_batch_cached, 2) == 16.28  # §11.7
    c = two_tier_cost(5000, 1800, 0.042, 0.20, 16.28)
    assert c["first_tier"] == pytest.approx(0.378) and round(c["first_tier"], 2) == 0.38
    assert c["second_tier"] == pytest.approx(3.256) and round(c["second_tier"], 2) == 3.26
    assert c["total"] == pytest.approx(c["first_tier"] + c["second_tier"])
    # §11.8 writes the total as ~$3.64: the sum of its parts rounded to the cent. Unrounded it
    # is $3.634, which rounds to $3.63 (what §11.8's own print(round(jev + llm, 2)) prints).
    assert round(round(c["first_tier"], 2) + round(c["second_tier"], 2), 2) == 3.64
    assert c["total"] == pytest.approx(3.634) and round(c["total"], 2) == 3.63
    none = two_tier_cost(5000, 1800, 0.042, 0.0, 16.28)
    assert none["second_tier"] == 0 and none["total"] == none["first_tier"]


def test_cascade_vs_alternatives_by_hand():
    # 1,000 items, judge $0.01 an item, people $0.75 an item (45 s at $60/h), 30% escalated, 10% sample:
    # judged 700, people label 300 + 70 = 370, save 630; $ = 10 + 370 x 0.75 = 287.50
    r = cascade_vs_alternatives(1000, judge_cost_per_item=0.01, human_cost_per_item=0.75, escalation_rate=0.3,
                                sample_share=0.1)
    assert r["all_human"] == {"usd": pytest.approx(750.0), "human_items": 1000.0}
    assert r["all_judge"] == {"usd": pytest.approx(10.0), "human_items": 0.0}
    assert r["cascade"]["human_items"] == pytest.approx(370.0)
    assert r["cascade"]["human_items_saved"] == pytest.approx(630.0)
    assert r["cascade"]["usd"] == pytest.approx(287.5)
    # nothing escalated, no sample: the cascade costs what the judge alone costs
    r = cascade_vs_alternatives(1000, judge_cost_per_item=0.01, human_cost_per_item=0.75, escalation_rate=0.0,
                                sample_share=0.0)
    assert r["cascade"]["usd"] == pytest.approx(10.0) and r["cascade"]["human_items"] == 0
    # everything escalated: people label it all and the judge was paid on top
    r = cascade_vs_alternatives(1000, judge_cost_per_item=0.01, human_cost_per_item=0.75, escalation_rate=1.0)
    assert r["cascade"]["human_items"] == 1000 and r["cascade"]["usd"] == pytest.approx(760.0)
    assert r["cascade"]["human_items_saved"] == 0
