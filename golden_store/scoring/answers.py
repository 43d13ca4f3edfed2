"""Scoring a system's answer against the golden set's answer labels: pure functions.

Three families, cheapest first (deterministic before judged before human):

* **Exact match and token F1** against a short reference answer, SQuAD's way: both texts are
  lower-cased, ASCII punctuation is dropped, the articles "a", "an" and "the" are dropped as
  whole words, and whitespace is collapsed; EM is 1 when the normalised texts are equal, F1
  is the harmonic mean of token precision and recall over the normalised tokens counted with
  multiplicity. Several references: the best one counts. An unanswerable question's
  reference is the empty answer, and against an empty text F1 is 1 only when both are empty
  (SQuAD 2.0), so an abstention scores 1 there and 0 on an answerable question.
* **Rubric grading**: each criterion is marked on its own small scale (binary or 0-2) by a
  judge or a person, and the answer's score is the criteria's marks, each as a share of its
  scale, combined with the rubric's fixed weights here, in code, never a model's holistic
  number.
* **Faithfulness by claims**: an answer decomposed into atomic claims, each with a verdict
  against the retrieved context - supported, contradicted, or insufficient information (the
  explicit way out). Faithfulness is the share of claims supported; an answer without a claim
  (an abstention) has none, and is counted apart rather than scored 0 or 1. Groundedness is
  the cheaper sentence-level share.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no ASCII punctuation, no articles, single spaces."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def answer_tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def _references(references: str | Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else list(references)
    return refs or [""]  # no reference: the question has no answer, and the empty answer is right


def exact_match(prediction: str, references: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised reference, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(r) for r in _references(references)))


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: str | Sequence[str]) -> float:
    """Token F1 of the prediction against its best reference (see the module docstring)."""
    pred = answer_tokens(prediction)
    return max(_f1(pred, answer_tokens(r)) for r in _references(references))


# ---- rubric grading -------------------------------------------------------------------------


@dataclass(frozen=True)
class Criterion:
    """One independently checkable criterion: its fixed weight and the top of its scale
    (1 for pass/fail, 2 for a 0-1-2 mark)."""

    id: str
    weight: float
    scale_max: int = 1

    def __post_init__(self) -> None:
        if not self.weight > 0:
            raise ValueError(f"criterion {self.id!r}: its weight must be above 0, got {self.weight}")
        if self.scale_max not in (1, 2, 3):
            raise ValueError(f"criterion {self.id!r}: its scale tops at 1, 2 or 3 (narrow scales agree best), got {self.scale_max}")


def rubric_score(criteria: Sequence[Criterion], marks: Mapping[str, float]) -> float:
    """The weighted mean of each criterion's mark as a share of its scale: partial credit, with
    the weights fixed by the rubric. Every criterion must be marked (an unmarked one is not a
    zero: the grading is incomplete) and no mark may name an unknown criterion."""
    if not criteria:
        raise ValueError("the rubric has no criterion")
    known = {c.id for c in criteria}
    if unknown := sorted(set(marks) - known):
        raise ValueError(f"marks name criteria the rubric does not have: {', '.join(unknown)}")
    if missing := [c.id for c in criteria if c.id not in marks]:
        raise ValueError(f"criteria not marked yet: {', '.join(missing)}; mark every criterion before scoring")
    total = sum(c.weight for c in criteria)
    score = 0.0
    for c in criteria:
        mark = marks[c.id]
        if not 0 <= mark <= c.scale_max:
            raise ValueError(f"criterion {c.id!r}: mark {mark} is outside 0..{c.scale_max}")
        score += c.weight * (mark / c.scale_max)
    return score / total


# ---- faithfulness ----------------------------------------------------------------------------

Verdict = Literal["supported", "contradicted", "insufficient"]
VERDICTS: tuple[str, ...] = ("supported", "contradicted", "insufficient")


@dataclass(frozen=True)
class Faithfulness:
    """One answer's claims against its retrieved context: ``share`` = supported / claims,
    None (with ``reason``) for an answer that makes no claim."""

    claims: int
    supported: int
    contradicted: int
    insufficient: int
    share: float | None
    reason: str | None = None


def faithfulness(verdicts: Sequence[str]) -> Faithfulness:
    """Count one answer's claim verdicts and the share supported."""
    if bad := sorted({v for v in verdicts if v not in VERDICTS}):
        raise ValueError(f"claim verdicts must be one of {', '.join(VERDICTS)}, got {', '.join(map(repr, bad))}")
    counts = Counter(verdicts)
    n = len(verdicts)
    return Faithfulness(claims=n, supported=counts["supported"], contradicted=counts["contradicted"],
                        insufficient=counts["insufficient"],
                        share=counts["supported"] / n if n else None,
                        reason=None if n else "the answer makes no claim (an abstention, say): counted apart, not scored")


def groundedness(sentence_supported: Sequence[bool]) -> float | None:
    """The share of an answer's sentences with a supporting span (None without a sentence)."""
    return sum(map(bool, sentence_supported)) / len(sentence_supported) if sentence_supported else None
