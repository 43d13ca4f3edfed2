"""What the scorers return: :class:`EvalResult` (split out of :mod:`trec`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

@dataclass
class EvalResult:
    """What :func:`evaluate_trec` and :func:`~golden_store.scoring.golden.evaluate` return.

    ``measures``: the measure names (canonical spelling, the keys below); ``per_query``:
    one row per evaluated query (sorted ids), one column per measure; ``mean``: each
    measure's overall value (the mean over queries; a sum or a geometric mean where
    ``aggregates`` says so, as trec_eval's "all" line); ``n_queries``; ``definitions``:
    each measure's definition and source, and the run-wide rules (keys starting with
    ``_``); ``trec_names``: trec_eval's name of each measure it has; ``ci95``, ``strata``
    and ``strata_n``: filled by ``evaluate`` (a frozen version).

    ``per_query`` is made into a DataFrame when first read: printing the means (``golden
    score --json``) or :meth:`per_query_items` needs no pandas."""

    measures: list[str]
    per_query: pd.DataFrame            # index: query_id (sorted), one column per measure
    mean: dict[str, float]
    n_queries: int
    definitions: dict[str, str] = field(default_factory=dict)
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)       # bootstrap interval of each mean
    strata: dict[str, dict[str, float]] = field(default_factory=dict)        # stratum -> measure -> mean
    strata_n: dict[str, int] = field(default_factory=dict)
    aggregates: dict[str, str] = field(default_factory=dict)   # measure -> sum | gmean (others: mean)
    trec_names: dict[str, str] = field(default_factory=dict)   # measure -> trec_eval's name, where it has one
    # queries of the labels that were not scored, by reason (e.g. "unanswerable"): filled by evaluate
    left_out: dict[str, list[str]] = field(default_factory=dict)
    judged: Any = None   # scoring.health.JudgedHealth of the run: filled by evaluate and golden score
    # which labels the numbers are on (issue 27), filled by evaluate (a frozen version): "human"
    # (people's labels only) or "human+judge"; None for a scoring against a qrels file
    labels: str | None = None
    # with "human+judge": the judge labels used (passages no person graded, of the scored
    # questions): n_passages, models, rubric_shas, calibration_ids, jobs
    judge_labels: dict[str, Any] | None = None

    def as_dict(self, per_query: bool = False) -> dict:
        out = {"measures": self.measures, "mean": self.mean, "n_queries": self.n_queries,
               "definitions": self.definitions, "trec_eval": self.trec_names}
        if self.aggregates:
            out["aggregates"] = self.aggregates
        if self.ci95:
            out["ci95"] = {m: list(v) for m, v in self.ci95.items()}
        if self.strata:
            out["strata"] = self.strata
            out["strata_n"] = self.strata_n
        if self.left_out:
            out["left_out"] = {why: {"n": len(q), "query_ids": q} for why, q in self.left_out.items()}
        if self.judged is not None:
            out["judged"] = self.judged.as_dict()
        if self.labels is not None:
            out["labels"] = self.labels
        if self.judge_labels is not None:
            out["judge_labels"] = self.judge_labels
        if per_query:
            out["per_query"] = dict(self.per_query_items())
        return out

    def per_query_items(self) -> Iterable[tuple[str, dict[str, float]]]:
        """(query id, {measure: value}) for every evaluated query, in ``per_query``'s order."""
        pq = self.__dict__["_per_query"]
        if isinstance(pq, _PerQueryColumns):
            yield from pq.items()
            return
        for q, row in pq.to_dict(orient="index").items():
            yield q, {m: float(v) for m, v in row.items()}


class _PerQueryColumns:
    """Per-query values as numpy columns, until someone reads ``EvalResult.per_query``."""

    __slots__ = ("qids", "values")

    def __init__(self, qids: np.ndarray, values: dict[str, np.ndarray]) -> None:
        self.qids, self.values = qids, values

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.values, index=pd.Index(self.qids, name="query_id"))

    def items(self) -> Iterable[tuple[str, dict[str, float]]]:
        cols = {m: v.tolist() for m, v in self.values.items()}
        for i, q in enumerate(self.qids.tolist()):
            yield q, {m: float(c[i]) for m, c in cols.items()}


def _get_per_query(self: EvalResult) -> pd.DataFrame:
    pq = self.__dict__["_per_query"]
    if isinstance(pq, _PerQueryColumns):
        pq = self.__dict__["_per_query"] = pq.frame()
    return pq


def _set_per_query(self: EvalResult, value) -> None:
    self.__dict__["_per_query"] = value


EvalResult.per_query = property(_get_per_query, _set_per_query,  # type: ignore[assignment]
                                doc="one row per evaluated query (index query_id, sorted), one column per measure")

