"""Per-question answer metrics on a worked example computed by hand (issue 40, items 2 and 6):
each value below is worked out in its comment, not by the studio's code."""

from __future__ import annotations

import math

from golden_store.scoring.answer_metrics import ANSWER_METRICS, Question, SystemAnswer, answer_metrics

QUESTIONS = [Question("a1", "lexical", True), Question("a2", "lexical", True), Question("a3", "tabular", True),
             Question("u1", "negative", False), Question("u2", "negative", False), Question("a4", "lexical", True)]
REFS = {"a1": ["EUR 58"], "a2": ["before 10:00 on the first morning"], "a3": ["30 days", "thirty days"]}


def _frame():
    answers = {
        # "The EUR 58." normalises to "eur 58" (article and full stop gone): EM 1, F1 1
        "a1": SystemAnswer("The EUR 58.", "answered", claims_supported=4, claims=5, citations_valid=1, citations=2),
        # "by 1000 on first morning" (5 tokens: the colon and "the" go); reference "before 1000
        # on first morning" (5 tokens); common 1000, on, first, morning = 4; P = R = 4/5, F1 0.8
        "a2": SystemAnswer("By 10:00 on the first morning", "answered", nugget_v=0.5, nugget_a=0.75),
        # declined an answerable question: correctness 0, answerable_answered 0
        "a3": SystemAnswer("I cannot find that.", "abstained"),
        # answered an unanswerable question: abstention_recall 0; no reference: no EM/F1
        "u1": SystemAnswer("The CEO earns a lot.", "answered"),
        # declined an unanswerable question: abstention_recall 1; no claims checked
        "u2": SystemAnswer("The handbook does not say.", "abstained", claims_supported=0, claims=0),
        # a4 has no reference: no EM/F1; its outcome is unmarked: left out of both abstention figures
        "a4": SystemAnswer("Something", "unknown"),
    }
    return answer_metrics(QUESTIONS, answers, REFS)


def test_each_value_equals_the_hand_computed_one():
    f = _frame()
    assert list(f.columns) == list(ANSWER_METRICS)
    assert (f.loc["a1", "answer_em"], f.loc["a1", "answer_f1"]) == (1.0, 1.0)
    assert f.loc["a2", "answer_em"] == 0.0 and math.isclose(f.loc["a2", "answer_f1"], 0.8)
    assert (f.loc["a3", "answer_em"], f.loc["a3", "answer_f1"]) == (0.0, 0.0)
    assert math.isclose(f.loc["a1", "faithfulness"], 0.8)  # 4 of 5 claims supported
    assert f.loc["a1", "citation_validity"] == 0.5
    assert (f.loc["a2", "nugget_v"], f.loc["a2", "nugget_a"]) == (0.5, 0.75)
    assert (f.loc["u1", "abstention_recall"], f.loc["u2", "abstention_recall"]) == (0.0, 1.0)
    assert (f.loc["a1", "answerable_answered"], f.loc["a3", "answerable_answered"]) == (1.0, 0.0)


def test_a_metric_that_does_not_apply_is_missing_never_zero():
    """Fails if an unanswerable question got an exact match of 0 (it would drag a system's
    correctness down for declining correctly), if an answer with no claims got faithfulness 0
    or 1, or if an unmarked answer counted in the abstention figures."""
    f = _frame()
    for qid in ("u1", "u2", "a4"):
        assert math.isnan(f.loc[qid, "answer_em"]) and math.isnan(f.loc[qid, "answer_f1"])
    assert math.isnan(f.loc["u2", "faithfulness"]) and math.isnan(f.loc["a2", "faithfulness"])
    assert math.isnan(f.loc["a2", "citation_validity"])
    assert math.isnan(f.loc["a4", "abstention_recall"]) and math.isnan(f.loc["a4", "answerable_answered"])
    assert math.isnan(f.loc["u1", "answerable_answered"]) and math.isnan(f.loc["a1", "abstention_recall"])
    # means over the questions each applies to: EM (1 + 0 + 0) / 3, abstention recall (0 + 1) / 2
    assert math.isclose(f["answer_em"].mean(), 1 / 3) and f["abstention_recall"].mean() == 0.5


def test_a_question_without_an_answer_is_not_scored():
    f = answer_metrics(QUESTIONS, {"a1": SystemAnswer("EUR 58", "answered")}, REFS)
    assert list(f.index) == ["a1"]


def test_a_refused_answer_is_wrong_on_correctness_and_out_of_abstention():
    f = answer_metrics(QUESTIONS, {"a1": SystemAnswer("EUR 58", "refused"), "u1": SystemAnswer("no", "refused")},
                       REFS)
    assert f.loc["a1", "answer_em"] == 0.0
    assert math.isnan(f.loc["a1", "answerable_answered"]) and math.isnan(f.loc["u1", "abstention_recall"])
