"""METHODOLOGY "Start here", step 3-7: the vacation carry-over example, by hand."""

from __future__ import annotations

import pytest

from golden_store.scoring import retrieval as R
from golden_store.scoring.trec import evaluate_trec

GRADES = {"D3": 3, "D7": 2, "D5": 1}
RIGHT = {"D3", "D7"}  # "the right passages" (grade >= 2)
BEFORE = ["D5", "D3", "D9", "D7", "D2"]
AFTER = ["D3", "D7", "D5", "D9", "D2"]


def test_before_reranking():
    assert R.recall_at_k(BEFORE, RIGHT, 5) == 1.0
    assert R.recall_at_k(BEFORE, RIGHT, 3) == 0.5
    assert R.precision_at_k(BEFORE, RIGHT, 5) == 0.4
    assert R.reciprocal_rank(BEFORE, RIGHT) == 0.5
    assert round(R.ndcg_at_k(BEFORE, GRADES, 5, gain="exp"), 2) == 0.71


def test_after_reranking_only_order_changes():
    assert R.ndcg_at_k(AFTER, GRADES, 5, gain="exp") == pytest.approx(1.0)
    assert R.reciprocal_rank(AFTER, RIGHT) == 1.0
    assert R.recall_at_k(AFTER, RIGHT, 5) == 1.0  # a reranker only reorders


def test_the_vectorized_evaluator_agrees():
    qrels = {"q": GRADES}
    run = {"q": {d: float(10 - i) for i, d in enumerate(BEFORE)}}
    res = evaluate_trec(qrels, run, ["R(rel=2)@5", "P(rel=2)@5", "RR(rel=2)", "nDCG(dcg='exp-log2')@5"])
    assert res.mean["R(rel=2)@5"] == 1.0 and res.mean["P(rel=2)@5"] == 0.4 and res.mean["RR(rel=2)"] == 0.5
    assert round(res.mean["nDCG(dcg='exp-log2')@5"], 2) == 0.71
