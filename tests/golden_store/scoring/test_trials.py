"""Repeats of one evaluation (METHODOLOGY §10.8): pass@1, pass^k, pass^j and per-item
variance, on data small enough to check by hand. Pure: no store."""

from __future__ import annotations

import pandas as pd
import pytest

from golden_store.scoring.trials import pass_hat, trials_report


def _rows(values: dict[str, list[float]], metric: str = "Success@1") -> pd.DataFrame:
    return pd.DataFrame([{"query_id": q, "trial": t, "metric": metric, "value": v, "stratum": "s"}
                         for q, vs in values.items() for t, v in enumerate(vs)])


def test_pass_hat_is_the_unbiased_estimator():
    assert pass_hat(3, 3, 3) == 1.0 and pass_hat(2, 3, 3) == 0.0
    assert pass_hat(2, 3, 1) == pytest.approx(2 / 3)
    assert pass_hat(9, 10, 2) == pytest.approx(36 / 45)  # C(9,2) / C(10,2)
    with pytest.raises(ValueError):
        pass_hat(1, 3, 4)


def test_three_items_three_trials_by_hand():
    # a: passes 3/3; b: 2/3; c: 0/3 -> pass@1 = 5/9, pass^3 = 1/3, pass@1^3 = (5/9)^3
    rep = trials_report(_rows({"a": [1, 1, 1], "b": [1, 0, 1], "c": [0, 0, 0]}))
    e = rep["metrics"]["Success@1"]
    assert (e["k"], e["items"], e["items_incomplete"]) == (3, 3, 0)
    assert e["pass_at_1"] == pytest.approx(5 / 9) and e["pass_hat_k"] == pytest.approx(1 / 3)
    assert e["at_least_one_failure"] == pytest.approx(2 / 3)
    assert e["pass_hat_k_if_independent"] == pytest.approx((5 / 9) ** 3)
    assert e["pass_at_1_per_trial"] == {0: pytest.approx(2 / 3), 1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}
    # pass^2: a 1, b C(2,2)/C(3,2) = 1/3, c 0
    assert e["pass_hat_j"][2] == pytest.approx((1 + 1 / 3) / 3)
    # variance: only b varies (1, 0, 1: sample variance 1/3)
    assert e["items_varying"] == 1 and e["variance_mean"] == pytest.approx(1 / 9)
    assert [(i["query_id"], i["passes"], i["values"]) for i in e["highest_variance"]] == [("b", 2, [1.0, 0.0, 1.0])]


def test_threshold_incomplete_items_and_a_single_trial():
    # graded values: pass at >= 0.5; item z misses trial 1 and is left out, counted
    rows = _rows({"x": [0.6, 0.4], "y": [0.9, 0.8], "z": [1.0]}, metric="nDCG@10")
    e = trials_report(rows, threshold=0.5)["metrics"]["nDCG@10"]
    assert e["items"] == 2 and e["items_incomplete"] == 1 and e["incomplete"] == ["z"]
    assert e["pass_at_1"] == pytest.approx(0.75) and e["pass_hat_k"] == pytest.approx(0.5)
    assert e["highest_variance"][0]["query_id"] == "x" and e["highest_variance"][0]["variance"] == pytest.approx(0.02)
    one = trials_report(_rows({"x": [1.0], "y": [0.0]}))["metrics"]["Success@1"]
    assert one["k"] == 1 and one["pass_hat_k"] == one["pass_at_1"] == 0.5
    assert one["variance_mean"] is None and one["highest_variance"] == []
    with pytest.raises(ValueError, match="no recorded metric"):
        trials_report(rows, metrics=["AP"])
