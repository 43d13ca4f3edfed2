"""Generation metrics and the cost model: METHODOLOGY's definitions and worked figures."""

from __future__ import annotations

import math

import pytest

from golden_store.scoring.cost import eval_run_cost
from golden_store.scoring.generation import (
    Citation, Claim, Nugget, abstention_scores, citation_scores, movement_breakdown, nugget_scores,
    rerank_movement,
)


def test_start_here_abstention_example():
    # 30 unanswerable questions: declines 9, invents an answer 21 -> recall 0.30
    rows = [(False, True)] * 9 + [(False, False)] * 21 + [(True, False)] * 160 + [(True, True)] * 10
    s = abstention_scores(rows + [(True, "refusal")])
    assert s["abstention_recall"] == pytest.approx(0.30)
    assert s["abstention_precision"] == pytest.approx(9 / 19)
    assert s["over_refusal_rate"] == pytest.approx(10 / 170)
    assert s["refusals"] == 1 and s["fabricated"] == 21


def test_rerank_movement_four_ways():
    rel = {"d1"}
    assert rerank_movement(["x", "y", "d1"], ["d1", "x", "y"], rel, 2) == "rescued"
    assert rerank_movement(["d1", "x"], ["x", "y", "d1"], rel, 2) == "broke"
    assert rerank_movement(["d1"], ["d1"], rel, 1) == "kept"
    assert rerank_movement(["x"], ["y"], rel, 1) == "missed_both"
    b = movement_breakdown(["rescued"] * 12 + ["broke"] * 3 + ["kept"] * 55 + ["missed_both"] * 30)
    assert b == {"rescued": 0.12, "broke": 0.03, "kept": 0.55, "missed_both": 0.30, "n": 100}


def test_citations_validity_is_mechanical():
    docs = {"d": "The carry-over limit is 8 days from April 2025."}
    good = Citation("d", 4, 30, "carry-over limit is 8 days", supports=True)
    wrong_text = Citation("d", 4, 30, "carry-over limit is 9 days", supports=True)
    made_up = Citation("nope", 0, 5, None, supports=True)
    unsupportive = Citation("d", 0, 3, None, supports=False)
    claims = [Claim(True, (good,)), Claim(True, (wrong_text, made_up)), Claim(True, (unsupportive,)),
              Claim(False, ())]
    s = citation_scores(claims, docs)
    assert s["citation_validity"] == pytest.approx(2 / 4)
    assert s["citation_precision"] == pytest.approx(1 / 4)   # invalid citations never support
    assert s["citation_recall"] == pytest.approx(1 / 3)
    assert s["invalid_citations"] == 2


def test_nugget_scores_strict_and_partial():
    ns = [Nugget("a", "8 days carry over", True), Nugget("b", "approved in Pulse", True),
          Nugget("c", "before 15 December", False)]
    s = nugget_scores(ns, {"a": "support", "b": "partial"})
    assert s == {"v_strict": 0.5, "v": 0.75, "a_strict": pytest.approx(1 / 3), "a": pytest.approx(1.5 / 3)}
    # METHODOLOGY §10.9: no vital nugget -> V undefined (NaN), left out of means; A still defined
    no_vital = nugget_scores([Nugget("c", "x", False)], {"c": "support"})
    assert math.isnan(no_vital["v_strict"]) and math.isnan(no_vital["v"]) and no_vital["a"] == 1.0
    assert all(math.isnan(v) for v in nugget_scores([], {}).values())
    # castorini's nuggetizer convention, by name: 0
    nz = nugget_scores([Nugget("c", "x", False)], {"c": "support"}, no_vital="nuggetizer")
    assert nz["v_strict"] == 0.0 and nz["v"] == 0.0 and nz["a"] == 1.0
    with pytest.raises(ValueError, match="no_vital"):
        nugget_scores(ns, {}, no_vital="zero")
    with pytest.raises(ValueError):
        nugget_scores(ns, {"a": "yes"})


@pytest.mark.parametrize("kwargs,expected", [
    (dict(price_in=5.0, price_out=25.0, batch=False), 63.75),
    (dict(price_in=5.0, price_out=25.0, batch=True, cache_hit_frac=0.99, cached_frac_of_input=0.78), 16.28),
    (dict(price_in=1.0, price_out=5.0, batch=True), 6.375),
])
def test_cost_figures_of_section_11_7(kwargs, expected):
    assert eval_run_cost(5000, 1800, 150, **kwargs) == pytest.approx(expected, abs=0.01)
