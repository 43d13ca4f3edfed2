"""How far two authors who wrote a question's reference answer apart agree (double authoring of
reference answers, METHODOLOGY §3.7 applied to the answer layer, as evidence rounds apply it to
quotes). Pure functions over plain data; each figure is one that a lead can read and recompute
by hand, and each is reported only where both sides give something to compare (``None``
otherwise, never a made-up 0 or 1).

* **Short answer: exact match and token F1 between the two authors**, normalised as SQuAD does
  (:func:`golden_store.scoring.answers.exact_match` / :func:`~golden_store.scoring.answers.token_f1`,
  the same functions that score a system's answer against the approved reference). Why: the
  short answer is what systems are scored against with these two numbers, so two references
  that would score the same answer differently are the disagreement that matters; both are
  symmetric, so which author is "reference" does not change them. EM says "the same answer",
  F1 says how close ("EUR 58" against "58 euros": EM 0, one of two tokens shared each way, F1 1/2).
* **Anchoring: character Jaccard of the cited evidence** - per document, the characters both
  authors' spans cover over the characters either covers (overlapping spans of one author
  merged first). Why: it is the share of the cited text both rest the answer on, independent
  of how each cut it into spans; 1 is the same text, 0 nothing in common. Beside it, the
  evidence rounds' rule (:func:`golden_store.scoring.agreement.spans_agree`: every span of each
  matched on the same document by one of the other overlapping at least half of the shorter),
  so "agree" means the same here as for quotes.
* **Criteria: count and weights.** Criteria written apart are texts that cannot be matched
  mechanically, so what is compared is their shape: whether both wrote the same number
  (each criterion is one independently checkable part of a good answer, §10.4), and the
  *weight distance*: each author's weights as shares of their total, sorted from heaviest,
  the shorter list padded with zeros, and half the sum of absolute differences (total
  variation distance). It is the share of the total weight that would have to move to turn
  one weighting into the other: 0 when both weight alike (three equal criteria each), 0.25
  for (2, 1, 1) against (1, 1, 1, 1).

With more than two authors each figure is the mean over every pair of authors for whom it is
defined; "agree" needs every pair to agree. Over a round each figure is the mean over the
questions where it is defined, with its count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from golden_store.scoring.agreement import spans_agree
from golden_store.scoring.answers import exact_match, token_f1

Span = tuple[str, int, int]  # (doc_id, start, end)
SPAN_OVERLAP = 0.5  # the evidence rounds' rule: same document, overlap >= half of the shorter span

DEFINITIONS = {
    "short_em": "exact match between the authors' short answers after SQuAD normalisation (lower case, no ASCII "
                "punctuation, no articles, single spaces); mean over author pairs and questions where both wrote one",
    "short_f1": "token F1 between the authors' short answers (SQuAD normalisation, tokens counted with multiplicity; "
                "symmetric); mean over author pairs and questions where both wrote one",
    "span_jaccard": "characters of the documents both authors cite over characters either cites (spans of one author "
                    "merged per document); mean over pairs and questions where at least one cited a span",
    "spans_agree": "share of questions where every span of each author is matched on the same document by a span of "
                   "the other overlapping at least half of the shorter (the evidence rounds' rule)",
    "same_count": "share of questions where the authors wrote the same number of criteria (both wrote some)",
    "weight_distance": "total variation distance between the authors' criterion weights as shares of their total, "
                       "sorted from heaviest and padded with zeros: the share of weight that would have to move "
                       "(0 = the same weighting); mean over pairs and questions where both wrote criteria",
}


@dataclass(frozen=True)
class AuthoredAnswer:
    """What one author submitted for one question, as far as agreement reads it."""

    short_answer: str | None = None
    spans: tuple[Span, ...] = ()
    weights: tuple[float, ...] = ()  # their criteria's weights, in any order


def _merged(spans: Sequence[Span]) -> dict[str, list[tuple[int, int]]]:
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for doc, start, end in sorted(spans):
        if end <= start:
            continue
        runs = by_doc.setdefault(doc, [])
        if runs and start <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return by_doc


def _length(runs: Mapping[str, list[tuple[int, int]]]) -> int:
    return sum(e - s for rs in runs.values() for s, e in rs)


def span_jaccard(a: Sequence[Span], b: Sequence[Span]) -> float | None:
    """Characters both cite over characters either cites; None when neither cites anything."""
    ma, mb = _merged(a), _merged(b)
    union_parts = _merged([(d, s, e) for m in (ma, mb) for d, rs in m.items() for s, e in rs])
    union = _length(union_parts)
    if union == 0:
        return None
    inter = 0
    for doc in set(ma) & set(mb):
        i = j = 0
        xs, ys = ma[doc], mb[doc]
        while i < len(xs) and j < len(ys):
            lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
            inter += max(0, hi - lo)
            if xs[i][1] < ys[j][1]:
                i += 1
            else:
                j += 1
    return inter / union


def weight_distance(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Total variation distance between two weightings as sorted shares (see the module
    docstring); None unless both have criteria with a positive total."""
    ta, tb = sum(a), sum(b)
    if not a or not b or ta <= 0 or tb <= 0:
        return None
    sa = sorted((w / ta for w in a), reverse=True)
    sb = sorted((w / tb for w in b), reverse=True)
    n = max(len(sa), len(sb))
    sa += [0.0] * (n - len(sa))
    sb += [0.0] * (n - len(sb))
    return 0.5 * sum(abs(x - y) for x, y in zip(sa, sb))


@dataclass(frozen=True)
class PairFigures:
    """Two authors' answers to one question compared; a figure is None where undefined."""

    short_em: float | None
    short_f1: float | None
    span_jaccard: float | None
    spans_agree: bool | None
    criteria_counts: tuple[int, int]
    same_count: bool | None
    weight_distance: float | None


def pair(a: AuthoredAnswer, b: AuthoredAnswer) -> PairFigures:
    both_short = bool(a.short_answer and a.short_answer.strip() and b.short_answer and b.short_answer.strip())
    em = exact_match(a.short_answer or "", b.short_answer or "") if both_short else None
    f1 = token_f1(a.short_answer or "", b.short_answer or "") if both_short else None
    cited = bool(a.spans or b.spans)
    both_criteria = bool(a.weights and b.weights)
    return PairFigures(
        short_em=em, short_f1=f1,
        span_jaccard=span_jaccard(a.spans, b.spans) if cited else None,
        spans_agree=spans_agree(list(a.spans), list(b.spans), SPAN_OVERLAP) if cited else None,
        criteria_counts=(len(a.weights), len(b.weights)),
        same_count=(len(a.weights) == len(b.weights)) if both_criteria else None,
        weight_distance=weight_distance(a.weights, b.weights) if both_criteria else None)


def _mean(xs: Sequence[float | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _all(xs: Sequence[bool | None]) -> bool | None:
    vals = [x for x in xs if x is not None]
    return all(vals) if vals else None


@dataclass(frozen=True)
class QuestionAgreement:
    """Every pair of the question's authors who submitted, and the question's figures (means
    over the pairs; "agree" flags need every pair)."""

    authors: tuple[str, ...]
    pairs: dict[tuple[str, str], PairFigures]
    short_em: float | None
    short_f1: float | None
    span_jaccard: float | None
    spans_agree: bool | None
    same_count: bool | None
    weight_distance: float | None

    @property
    def disagrees(self) -> bool:
        """What a lead should look at: different short answers, anchors that do not agree, or
        criteria of another number or weighting."""
        return (self.short_em is not None and self.short_em < 1.0) or self.spans_agree is False \
            or self.same_count is False or (self.weight_distance is not None and self.weight_distance > 1e-9)

    def as_dict(self) -> dict:
        return {"authors": list(self.authors), "short_em": self.short_em, "short_f1": self.short_f1,
                "span_jaccard": self.span_jaccard, "spans_agree": self.spans_agree, "same_count": self.same_count,
                "weight_distance": self.weight_distance, "disagrees": self.disagrees,
                "pairs": [{"a": a, "b": b, "short_em": p.short_em, "short_f1": p.short_f1,
                           "span_jaccard": p.span_jaccard, "spans_agree": p.spans_agree,
                           "criteria_counts": list(p.criteria_counts), "same_count": p.same_count,
                           "weight_distance": p.weight_distance} for (a, b), p in self.pairs.items()]}


def question_agreement(answers: Mapping[str, AuthoredAnswer]) -> QuestionAgreement | None:
    """The agreement of the authors who submitted (``author -> answer``); None under two."""
    if len(answers) < 2:
        return None
    names = tuple(sorted(answers))
    pairs = {(a, b): pair(answers[a], answers[b]) for a, b in combinations(names, 2)}
    ps = list(pairs.values())
    return QuestionAgreement(
        authors=names, pairs=pairs,
        short_em=_mean([p.short_em for p in ps]), short_f1=_mean([p.short_f1 for p in ps]),
        span_jaccard=_mean([p.span_jaccard for p in ps]), spans_agree=_all([p.spans_agree for p in ps]),
        same_count=_all([p.same_count for p in ps]), weight_distance=_mean([p.weight_distance for p in ps]))


@dataclass(frozen=True)
class Figure:
    """A round's figure: its value (None when no question defines it), over ``n`` questions."""

    value: float | None
    n: int


@dataclass(frozen=True)
class RoundAgreement:
    n_compared: int  # questions with two or more submissions
    n_disagreeing: int
    short_em: Figure
    short_f1: Figure
    span_jaccard: Figure
    spans_agree: Figure  # the share of questions whose anchors agree
    same_count: Figure   # the share of questions whose authors wrote as many criteria
    weight_distance: Figure
    definitions: dict[str, str] = field(default_factory=lambda: dict(DEFINITIONS))

    def as_dict(self) -> dict:
        figs = {k: {"value": getattr(self, k).value, "n": getattr(self, k).n} for k in DEFINITIONS}
        return {"n_compared": self.n_compared, "n_disagreeing": self.n_disagreeing, **figs,
                "definitions": self.definitions}


def _figure(xs: Sequence[float | bool | None]) -> Figure:
    vals = [float(x) for x in xs if x is not None]
    return Figure(sum(vals) / len(vals) if vals else None, len(vals))


def round_agreement(questions: Sequence[QuestionAgreement]) -> RoundAgreement:
    """Each figure's mean over the questions that define it."""
    qs = list(questions)
    return RoundAgreement(
        n_compared=len(qs), n_disagreeing=sum(1 for q in qs if q.disagrees),
        short_em=_figure([q.short_em for q in qs]), short_f1=_figure([q.short_f1 for q in qs]),
        span_jaccard=_figure([q.span_jaccard for q in qs]), spans_agree=_figure([q.spans_agree for q in qs]),
        same_count=_figure([q.same_count for q in qs]), weight_distance=_figure([q.weight_distance for q in qs]))
