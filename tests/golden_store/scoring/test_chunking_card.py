"""The §5.4 report card of a passage run at a fixed token budget (golden_store.scoring.chunking),
checked against numbers counted by hand from the METHODOLOGY §5.1 / §5.2 formulas."""

from __future__ import annotations

import pytest

from golden_store.scoring.chunking import budget_card, take_at_budget

# "w0 w1 ... w2099": token i of the document is the word w{i}; its characters are found by
# searching, so the test does not lean on the tokenizer it checks
DOC = " ".join(f"w{i}" for i in range(2100))


def span(first: int, last: int) -> tuple[int, int]:
    """Characters of tokens first..last (inclusive)."""
    padded = f" {DOC} "
    start = padded.index(f" w{first} ")
    end = padded.index(f" w{last} ") + len(f"w{last}")
    return start, end


def test_take_at_budget_returns_what_it_used():
    sizes = {"a": 400, "b": 400, "c": 300}
    assert take_at_budget(["a", "b", "c"], 1000, sizes.__getitem__) == (["a", "b"], 800)  # 400+400 of 1,000
    assert take_at_budget(["c", "a", "b"], 1000, sizes.__getitem__) == (["c", "a"], 700)  # stops at the overflow
    assert take_at_budget(["a"], 399, sizes.__getitem__) == ([], 0)


def test_the_spec_example_forty_answer_tokens_in_two_thousand():
    # §5.2: 40 answer tokens, all retrieved among 2,000 -> recall 1.0, precision 0.02, IoU 0.02
    ex = [("q", "d", *span(100, 139))]
    run = {"q": [("d", *span(0, 999)), ("d", *span(1000, 1999)), ("d", *span(2000, 2099))]}
    card = budget_card({"d": DOC}, ex, run, budget_tokens=2000)
    (q,) = card["per_query"]
    assert (q["k"], q["tokens"], q["excerpt_tokens"]) == (2, 2000, 40)  # the third chunk would overflow
    assert q["recall"] == 1.0
    assert q["precision"] == pytest.approx(40 / 2000) == pytest.approx(0.02)
    assert q["iou"] == pytest.approx(40 / 2000)
    # Ω: only the first chunk holds answer tokens: 40 of its 1,000
    assert q["precision_omega"] == pytest.approx(40 / 1000)
    assert card["figures"]["recall"] == {"mean": 1.0, "sd": 0.0}


def test_overlap_pays_in_the_denominator_and_a_missing_query_scores_zero():
    ex = [("q1", "d", *span(10, 19)), ("q2", "d", *span(500, 509))]
    # two overlapping 20-token chunks both holding the answer: 40 tokens taken, 10 distinct answer tokens
    run = {"q1": [("d", *span(0, 19)), ("d", *span(10, 29))]}
    card = budget_card({"d": DOC}, ex, run, budget_tokens=100)
    q1, q2 = card["per_query"]
    assert q1["tokens"] == 40 and q1["recall"] == 1.0
    assert q1["precision"] == pytest.approx(10 / 40)       # repeats count in |R|
    assert q1["iou"] == pytest.approx(10 / 30)             # |E ∪ R| = 30 distinct tokens
    assert q1["precision_omega"] == pytest.approx(10 / 40)  # both chunks hold answer tokens
    assert card["missing"] == ["q2"] and (q2["recall"], q2["precision"], q2["k"]) == (0.0, 0.0, 0)
    # q2's answer is in no chunk of the run: Ω is over a partial chunking, and the card says so
    assert q2["omega_coverage"] == 0.0 and card["omega_coverage"] == pytest.approx(0.5)
    assert card["figures"]["recall"]["mean"] == pytest.approx(0.5)
    assert card["figures"]["recall"]["sd"] == pytest.approx(0.5)  # population SD of (1, 0)


def test_a_first_passage_larger_than_the_budget_takes_nothing():
    ex = [("q", "d", *span(0, 9))]
    card = budget_card({"d": DOC}, ex, {"q": [("d", *span(0, 99))]}, budget_tokens=50)
    assert card["first_over_budget"] == ["q"] and card["per_query"][0]["k"] == 0
    with pytest.raises(ValueError, match="budget"):
        budget_card({"d": DOC}, ex, {}, budget_tokens=0)
