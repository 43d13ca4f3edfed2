"""Answer scoring on hand-computed cases: SQuAD's exact match and token F1 (its normalisation,
multiplicity, best reference, the empty answer of an unanswerable question), a rubric's fixed
weights with partial credit, and faithfulness as the share of supported claims (the worked
example: 5 claims, 4 supported, 0.8)."""

from __future__ import annotations

import pytest

from golden_store.scoring.answers import (Criterion, exact_match, faithfulness, groundedness, normalize_answer,
                                          rubric_score, token_f1)


@pytest.mark.parametrize(("text", "normal"), [
    ("The Eiffel Tower.", "eiffel tower"),
    ("The Theater", "theater"),            # an article only as a whole word
    ("twenty-five  days", "twentyfive days"),  # punctuation dropped, not turned into a space
    ("An apple, a pear and THE plum!", "apple pear and plum"),
    ("café—bar", "café—bar"),             # only ASCII punctuation goes
])
def test_normalisation(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match():
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel Tower in Paris", "eiffel tower") == 0.0
    assert exact_match("25 days", ["twenty-five days", "25  days"]) == 1.0


def test_token_f1_by_hand():
    # "in paris eiffel tower" vs "eiffel tower": 2 common, P 2/4, R 2/2
    assert token_f1("in Paris, the Eiffel Tower", "Eiffel Tower") == pytest.approx(2 / 3)
    # multiplicity: x x y vs x y y share one x and one y: P 2/3, R 2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    # the best reference counts: "25 days" vs "twentyfive days" 0.5, vs "25 working days" P 1, R 2/3 -> 0.8
    assert token_f1("25 days", ["twenty-five days", "25 working days"]) == pytest.approx(0.8)
    assert token_f1("Paris", "Rome") == 0.0


def test_the_empty_answer_of_an_unanswerable_question():
    assert exact_match("", []) == 1.0 and token_f1("", []) == 1.0
    assert token_f1("Paris", []) == 0.0 and exact_match("Paris", []) == 0.0
    assert token_f1("", "Paris") == 0.0
    assert token_f1("The.", "") == 1.0  # normalises to nothing: the empty answer


def test_rubric_combines_fixed_weights_with_partial_credit():
    criteria = [Criterion("names the policy", 2), Criterion("states the carry-over limit", 2, scale_max=2),
                Criterion("says who approves", 1)]
    # 2 * 1 + 2 * (1 / 2) + 1 * 0 over a total weight of 5
    assert rubric_score(criteria, {"names the policy": 1, "states the carry-over limit": 1,
                                   "says who approves": 0}) == pytest.approx(0.6)
    assert rubric_score(criteria, {"names the policy": 1, "states the carry-over limit": 2,
                                   "says who approves": 1}) == 1.0
    with pytest.raises(ValueError, match="not marked yet: says who approves"):
        rubric_score(criteria, {"names the policy": 1, "states the carry-over limit": 2})
    with pytest.raises(ValueError, match="outside 0..2"):
        rubric_score(criteria, {"names the policy": 1, "states the carry-over limit": 3, "says who approves": 1})
    with pytest.raises(ValueError, match="does not have: tone"):
        rubric_score(criteria, {"names the policy": 1, "states the carry-over limit": 2, "says who approves": 1,
                                "tone": 1})
    with pytest.raises(ValueError, match="weight must be above 0"):
        Criterion("x", 0)


def test_faithfulness_five_claims_four_supported():
    f = faithfulness(["supported"] * 4 + ["insufficient"])
    assert (f.claims, f.supported, f.insufficient, f.share) == (5, 4, 1, 0.8)
    assert faithfulness(["supported", "contradicted"]).share == 0.5


def test_an_answer_without_claims_is_counted_apart():
    f = faithfulness([])
    assert f.share is None and "no claim" in f.reason
    with pytest.raises(ValueError, match="claim verdicts must be one of"):
        faithfulness(["supported", "maybe"])


def test_groundedness():
    assert groundedness([True, False, True, True]) == 0.75
    assert groundedness([]) is None
