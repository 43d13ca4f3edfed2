"""Library-level scorers over frozen versions and TREC data: pure functions over plain
data (no database). Definitions follow trec_eval / ir_measures and are recorded with every
result; see each module's docstring."""

from __future__ import annotations

from golden_store.scoring.golden import evaluate
from golden_store.scoring.measures import Measure, parse_measure
from golden_store.scoring.retrieval import (
    average_precision,
    bpref,
    judged_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    success_at_k,
)
from golden_store.scoring.trec import EvalResult, evaluate_trec, read_qrels, read_run

__all__ = [
    "EvalResult",
    "Measure",
    "average_precision",
    "bpref",
    "evaluate",
    "evaluate_trec",
    "judged_at_k",
    "ndcg_at_k",
    "parse_measure",
    "precision_at_k",
    "read_qrels",
    "read_run",
    "recall_at_k",
    "reciprocal_rank",
    "success_at_k",
]
