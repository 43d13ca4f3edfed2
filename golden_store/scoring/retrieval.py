"""Retrieval metrics as pure functions over one ranked list (METHODOLOGY §8-9).

Definitions follow trec_eval wherever trec_eval has the measure, so the numbers agree
with pytrec_eval to floating-point precision (tests check it):

* ``ranked`` is best-first; ``k`` cuts it (``None``: no cut). Precision divides by ``k``
  even when fewer than ``k`` results came back (trec_eval ``P_k``).
* ``relevant`` is a set of ids; graded functions take ``grades`` {id: grade}; "relevant"
  means grade >= ``rel`` (default 1, trec_eval ``-l``).
* A query with no relevant documents scores 0 on every measure here (trec_eval does the
  same for these measures).
* nDCG: linear gain (trec_eval ``ndcg_cut``) or ``exp`` (Burges, 2^g - 1); discount
  1/log2(rank + 1); the ideal ranking uses every judged grade of the query, cut at ``k``.
* AP@k divides by the number of relevant documents, not by min(k, R) (trec_eval
  ``map_cut``).
* Judged@k: ir_measures' definition (judged share of the results shown, at most k).
* bpref: trec_eval's definition: unjudged documents are skipped; each relevant retrieved
  document scores 1 - min(judged non-relevant above it, R) / min(R, N).
* A grade below 0 means "in the pool, not judged" (trec_eval): never relevant, never judged
  non-relevant (bpref skips it; give ``judged_at_k`` only the ids graded 0 or more).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence


def _cut(ranked: Sequence[str], k: int | None) -> Sequence[str]:
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return ranked if k is None else ranked[:k]


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int | None) -> float:
    if not relevant:
        return 0.0
    return sum(1 for d in _cut(ranked, k) if d in relevant) / len(relevant)


def precision_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return sum(1 for d in ranked[:k] if d in relevant) / k


def success_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    return 1.0 if any(d in relevant for d in _cut(ranked, k)) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float:
    for i, d in enumerate(_cut(ranked, k), start=1):
        if d in relevant:
            return 1.0 / i
    return 0.0


def average_precision(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float:
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for i, d in enumerate(_cut(ranked, k), start=1):
        if d in relevant:
            hits += 1
            total += hits / i
    return total / len(relevant)


def _gain(grade: float, gain: str) -> float:
    if gain == "linear":
        return float(grade)
    if gain == "exp":
        return 2.0 ** grade - 1.0
    raise ValueError(f"gain must be 'linear' or 'exp', got {gain!r}")


def ndcg_at_k(ranked: Sequence[str], grades: Mapping[str, float], k: int | None, gain: str = "linear") -> float:
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)
    ideal = ideal if k is None else ideal[:k]
    idcg = sum(_gain(g, gain) / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    if idcg == 0:
        return 0.0
    dcg = sum(
        _gain(grades[d], gain) / math.log2(i + 1)
        for i, d in enumerate(_cut(ranked, k), start=1)
        if grades.get(d, 0) > 0
    )
    return dcg / idcg


def bpref(ranked: Sequence[str], grades: Mapping[str, float], rel_threshold: int = 1) -> float:
    n_rel = sum(1 for g in grades.values() if g >= rel_threshold)
    n_nonrel = sum(1 for g in grades.values() if 0 <= g < rel_threshold)
    if n_rel == 0:
        return 0.0
    denom = min(n_rel, n_nonrel)
    nonrel_above, total = 0, 0.0
    for d in ranked:
        if d not in grades or grades[d] < 0:
            continue  # unjudged (a grade below 0 is "in the pool, not judged"): neither helps nor hurts
        if grades[d] >= rel_threshold:
            total += 1.0 - (min(nonrel_above, n_rel) / denom if denom else 0.0)
        else:
            nonrel_above += 1
    return total / n_rel


def judged_at_k(ranked: Sequence[str], judged_ids: Collection[str], k: int) -> float:
    """Share of the returned top-k that carry a judgment (ir_measures ``Judged@k``: divides
    by the number of results shown, at most k; an empty ranking scores 0)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    top = ranked[:k]
    return sum(1 for d in top if d in judged_ids) / len(top) if top else 0.0


def relevant_set(grades: Mapping[str, float], rel: int = 1) -> set[str]:
    return {d for d, g in grades.items() if g >= rel}


def dedupe(ranked: Iterable[str]) -> list[str]:
    """First occurrence wins (a run listing a document twice counts it once)."""
    return list(dict.fromkeys(ranked))  # a dict keeps its keys in first-insertion order
