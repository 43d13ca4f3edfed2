"""The rubric tiers as per-question answer metrics: people's and the judge's rubric scores are
columns of their own, missing (never 0) where an answer was not fully graded."""

from __future__ import annotations

import math

from golden_store.scoring.answer_metrics import ANSWER_METRICS, Question, SystemAnswer, answer_metrics


def test_rubric_scores_are_their_own_columns_and_missing_where_not_graded():
    qs = [Question("a1", "tabular", True), Question("a2", "tabular", True), Question("u1", "negative", False)]
    answers = {"a1": SystemAnswer("EUR 58", "answered", rubric_human=0.625, rubric_judge=0.75),
               "a2": SystemAnswer("EUR 29", "answered", rubric_judge=0.0),
               "u1": SystemAnswer("It does not say.", "abstained")}
    f = answer_metrics(qs, answers, {})
    assert {"rubric_human", "rubric_judge"} <= set(ANSWER_METRICS) and list(f.columns) == list(ANSWER_METRICS)
    assert (f.loc["a1", "rubric_human"], f.loc["a1", "rubric_judge"]) == (0.625, 0.75)
    assert f.loc["a2", "rubric_judge"] == 0.0  # a real zero stays a zero
    assert math.isnan(f.loc["a2", "rubric_human"]) and math.isnan(f.loc["u1", "rubric_judge"])
