"""Agreement between two authors' reference answers, on worked examples computed by hand (the
comments show the arithmetic), not by the code under test."""

from __future__ import annotations

import pytest

from golden_store.scoring.reference_agreement import (AuthoredAnswer, pair, question_agreement, round_agreement,
                                                      span_jaccard, weight_distance)


def test_short_answers_exact_match_and_token_f1_squad_normalised():
    # "EUR 58" -> [eur, 58]; "58 euros" -> [58, euros]: one token shared, P = R = 1/2, F1 = 1/2
    p = pair(AuthoredAnswer("EUR 58"), AuthoredAnswer("58 euros"))
    assert (p.short_em, p.short_f1) == (0.0, 0.5)
    # case, punctuation and the article go: "The EUR 58." and "eur 58" are the same answer
    p = pair(AuthoredAnswer("The EUR 58."), AuthoredAnswer("eur 58"))
    assert (p.short_em, p.short_f1) == (1.0, 1.0)
    # "up to 8 unused days" (5 tokens) against "8 days" (2): 2 shared, P = 2/5, R = 1, F1 = (4/5)/(7/5) = 4/7;
    # symmetric, so the order of the authors does not matter
    assert pair(AuthoredAnswer("up to 8 unused days"), AuthoredAnswer("8 days")).short_f1 == pytest.approx(4 / 7)
    assert pair(AuthoredAnswer("8 days"), AuthoredAnswer("up to 8 unused days")).short_f1 == pytest.approx(4 / 7)
    # only one wrote a short answer: nothing to compare, not a disagreement of 0
    p = pair(AuthoredAnswer("EUR 58"), AuthoredAnswer(None))
    assert (p.short_em, p.short_f1) == (None, None)


def test_evidence_overlap_character_jaccard_and_the_evidence_rounds_rule():
    # d:0-100 and d:50-150 share 50 characters of 150 cited: 1/3; overlap 50 = half the shorter span: agree
    assert span_jaccard([("d", 0, 100)], [("d", 50, 150)]) == pytest.approx(1 / 3)
    p = pair(AuthoredAnswer(spans=(("d", 0, 100),)), AuthoredAnswer(spans=(("d", 50, 150),)))
    assert p.spans_agree is True
    # one author's overlapping spans merge first: d:0-100 + d:80-120 = d:0-120; the other cites d:100-200
    # and e:0-10. Shared: d:100-120 = 20; cited by either: d:0-200 (200) + e:0-10 (10) = 210 -> 20/210 = 2/21.
    a = (("d", 0, 100), ("d", 80, 120))
    b = (("d", 100, 200), ("e", 0, 10))
    assert span_jaccard(a, b) == pytest.approx(2 / 21)
    assert pair(AuthoredAnswer(spans=a), AuthoredAnswer(spans=b)).spans_agree is False  # d:0-100 meets nothing
    # the same text cut differently is still the same text: d:0-50 + d:50-100 against d:0-100 -> 1
    assert span_jaccard([("d", 0, 50), ("d", 50, 100)], [("d", 0, 100)]) == 1.0
    # another document altogether: 0; neither cites anything: undefined
    assert span_jaccard([("d", 0, 10)], [("e", 0, 10)]) == 0.0
    p = pair(AuthoredAnswer("x"), AuthoredAnswer("x"))
    assert (p.span_jaccard, p.spans_agree) == (None, None)
    # one cites, the other not: they disagree (0), as an evidence round with one "no answer" would
    p = pair(AuthoredAnswer(spans=(("d", 0, 10),)), AuthoredAnswer())
    assert (p.span_jaccard, p.spans_agree) == (0.0, False)


def test_criteria_count_and_weight_distance():
    # (2, 1, 1) -> shares (1/2, 1/4, 1/4, 0); (1, 1, 1, 1) -> (1/4, 1/4, 1/4, 1/4):
    # |1/4| + 0 + 0 + |1/4| = 1/2, halved: 1/4 of the weight would have to move
    assert weight_distance([2, 1, 1], [1, 1, 1, 1]) == pytest.approx(0.25)
    # the same weighting at another scale, in another order: 0
    assert weight_distance([1, 3, 1], [9, 3, 3]) == pytest.approx(0.0)
    # (3, 1) -> (3/4, 1/4, 0, 0) against four equal: 1/2 + 0 + 1/4 + 1/4 = 1, halved: 1/2
    assert weight_distance([3, 1], [1, 1, 1, 1]) == pytest.approx(0.5)
    p = pair(AuthoredAnswer(weights=(2.0, 1.0, 1.0)), AuthoredAnswer(weights=(1.0, 1.0, 1.0, 1.0)))
    assert (p.criteria_counts, p.same_count, p.weight_distance) == ((3, 4), False, pytest.approx(0.25))
    p = pair(AuthoredAnswer(weights=(1.0,)), AuthoredAnswer())
    assert (p.same_count, p.weight_distance) == (None, None)


def test_three_authors_and_a_round():
    q1 = question_agreement({
        "ann": AuthoredAnswer("EUR 58", (("d", 0, 100),), (1.0, 1.0)),
        "ben": AuthoredAnswer("EUR 58", (("d", 0, 100),), (1.0, 1.0)),
        "cy": AuthoredAnswer("58 euros", (("d", 50, 150),), (2.0, 1.0, 1.0)),
    })
    assert q1 is not None
    # pairs: ann-ben EM 1 F1 1; ann-cy and ben-cy EM 0 F1 1/2 -> EM 1/3, F1 (1 + 1/2 + 1/2)/3 = 2/3
    assert q1.short_em == pytest.approx(1 / 3) and q1.short_f1 == pytest.approx(2 / 3)
    # Jaccard 1, 1/3, 1/3 -> 5/9; every pair's anchors agree under the half-overlap rule
    assert q1.span_jaccard == pytest.approx(5 / 9) and q1.spans_agree is True
    # weights (1/2, 1/2) vs (1/2, 1/2): 0; vs (1/2, 1/4, 1/4): (0 + 1/4 + 1/4)/2 = 1/4 -> (0 + 1/4 + 1/4)/3 = 1/6
    assert q1.same_count is False and q1.weight_distance == pytest.approx(1 / 6)
    assert q1.disagrees
    q2 = question_agreement({"ann": AuthoredAnswer("No"), "ben": AuthoredAnswer("no.")})
    assert q2 is not None and q2.short_em == 1.0 and not q2.disagrees and q2.span_jaccard is None
    assert question_agreement({"ann": AuthoredAnswer("No")}) is None  # one submission: nothing to compare
    r = round_agreement([q1, q2])
    # EM: (1/3 + 1)/2 = 2/3 over 2 questions; Jaccard only q1 defines it: 5/9 over 1
    assert (r.n_compared, r.n_disagreeing) == (2, 1)
    assert r.short_em.value == pytest.approx(2 / 3) and r.short_em.n == 2
    assert r.span_jaccard.value == pytest.approx(5 / 9) and r.span_jaccard.n == 1
    assert r.same_count.value == 0.0 and r.same_count.n == 1
    assert set(r.as_dict()["definitions"]) == {"short_em", "short_f1", "span_jaccard", "spans_agree", "same_count",
                                               "weight_distance"}
    empty = round_agreement([])
    assert empty.short_em.value is None and empty.short_em.n == 0
