"""Per-question answer metrics, the numbers an answer evaluation records (one row per question,
one column per metric), so that answers are compared and gated exactly as retrieval runs are:
paired over the questions both systems answered, with a bootstrap interval per metric and per
stratum (:mod:`golden_store.scoring.compare`).

Every metric here is "higher is better", because the gate fails a candidate whose interval lies
below the baseline's. That is why over-refusal is recorded as its complement
(``answerable_answered``: an answerable question the system did answer).

A metric that does not apply to a question is missing (NaN), never 0: exact match on an
unanswerable question, faithfulness of an answer with no claim, citation validity of an answer
that cites nothing. A missing value is left out of the mean and out of the pairing, so a
system is never rewarded or punished for a question the metric cannot judge.

Outcomes (answered / abstained / refused / unknown) follow the abstention definitions: a refusal
(a safety refusal) and an unmarked answer are left out of both abstention figures; declining an
answerable question scores 0 on correctness, because the person asking got no answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from golden_store.scoring.answers import exact_match, token_f1

ANSWER_METRICS: dict[str, str] = {
    "answer_em": "exact match with the short reference answer (SQuAD normalisation), answerable questions",
    "answer_f1": "token F1 with the short reference answer (SQuAD normalisation), answerable questions",
    "faithfulness": "share of the answer's claims the judge found supported by its context",
    "citation_validity": "share of the answer's citations that resolve to a real span of the corpus",
    "rubric_human": "rubric score from people's grades of each criterion (weighted, partial credit), graded answers",
    "rubric_judge": "rubric score from the judge's grades of each criterion (weighted, partial credit), graded answers",
    "nugget_v": "vital nuggets the answer holds (V: support 1, partial 0.5)",
    "nugget_a": "all nuggets the answer holds (A: support 1, partial 0.5)",
    "abstention_recall": "unanswerable questions the system declined (1) rather than answered (0)",
    "answerable_answered": "answerable questions the system answered (1) rather than declined (0): 1 - over-refusal",
}
DECLINED = ("abstained",)
LEFT_OUT_OF_ABSTENTION = ("refused", "unknown")


@dataclass(frozen=True)
class Question:
    """One question of the frozen version: its stratum and whether the corpus answers it."""

    query_id: str
    stratum: str | None
    answerable: bool


@dataclass(frozen=True)
class SystemAnswer:
    """One system's answer to a question, with what is known about it: its outcome, the
    supported and total claims of its current faithfulness check (None: not checked), its
    valid and total citations, its nugget scores (None: not assigned), and its rubric scores
    from people's and from the judge's criterion marks (None: not every criterion marked)."""

    text: str
    outcome: str = "unknown"
    claims_supported: int | None = None
    claims: int | None = None
    citations_valid: int = 0
    citations: int = 0
    nugget_v: float | None = None
    nugget_a: float | None = None
    rubric_human: float | None = None  # the rubric score from people's marks (None: not fully graded by people)
    rubric_judge: float | None = None  # the rubric score from the judge's current marks (None: not fully graded)


def _correctness(q: Question, a: SystemAnswer, refs: list[str]) -> tuple[float, float]:
    if not q.answerable or not refs:
        return np.nan, np.nan
    if a.outcome in DECLINED or a.outcome == "refused":
        return 0.0, 0.0
    return exact_match(a.text, refs), token_f1(a.text, refs)


def _share(num: int | None, den: int | None) -> float:
    return float(num) / den if num is not None and den else np.nan


def _abstention(q: Question, a: SystemAnswer) -> tuple[float, float]:
    if a.outcome in LEFT_OUT_OF_ABSTENTION:
        return np.nan, np.nan
    declined = 1.0 if a.outcome in DECLINED else 0.0
    if q.answerable:
        return np.nan, 1.0 - declined
    return declined, np.nan


def _value(v: float | None) -> float:
    return np.nan if v is None or v != v else float(v)


def answer_metrics(questions: Iterable[Question], answers: Mapping[str, SystemAnswer],
                   references: Mapping[str, list[str]]) -> pd.DataFrame:
    """The per-question frame (index ``query_id``, the columns of :data:`ANSWER_METRICS`) for
    the questions that have an answer; a question without one is not scored (the caller counts
    it). ``references``: query_id -> the short reference answers (any of them counts as a
    match, as in SQuAD)."""
    rows: dict[str, dict[str, float]] = {}
    for q in questions:
        a = answers.get(q.query_id)
        if a is None:
            continue
        em, f1 = _correctness(q, a, [r for r in references.get(q.query_id, []) if r and r.strip()])
        recall, answered = _abstention(q, a)
        rows[q.query_id] = {
            "answer_em": em, "answer_f1": f1,
            "faithfulness": _share(a.claims_supported, a.claims),
            "citation_validity": _share(a.citations_valid, a.citations),
            "rubric_human": _value(a.rubric_human), "rubric_judge": _value(a.rubric_judge),
            "nugget_v": _value(a.nugget_v), "nugget_a": _value(a.nugget_a),
            "abstention_recall": recall, "answerable_answered": answered,
        }
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(ANSWER_METRICS), dtype=float)
    frame.index.name = "query_id"
    return frame.sort_index()
