"""Library-level scorers over frozen versions and TREC data: pure functions over plain
data (no database). Definitions follow trec_eval / ir_measures and are recorded with every
result; see each module's docstring."""

from __future__ import annotations

from golden_store.scoring.compare import compare_runs
from golden_store.scoring.cost import eval_run_cost
from golden_store.scoring.generation import (
    abstention_scores,
    citation_scores,
    movement_breakdown,
    nugget_scores,
    rerank_movement,
)
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
from golden_store.scoring.stats import (
    benjamini_hochberg,
    bootstrap_ci,
    gate,
    mde_paired,
    n_for_mde,
    paired_bootstrap,
)
from golden_store.scoring.tokens import (
    Chunking,
    chunking_report,
    precision_omega,
    retrieve_at_budget,
    token_metrics,
    version_chunking_report,
)
from golden_store.scoring.trec import EvalResult, evaluate_trec, read_qrels, read_run

__all__ = [
    "Chunking",
    "EvalResult",
    "abstention_scores",
    "benjamini_hochberg",
    "bootstrap_ci",
    "chunking_report",
    "citation_scores",
    "compare_runs",
    "eval_run_cost",
    "gate",
    "mde_paired",
    "movement_breakdown",
    "n_for_mde",
    "nugget_scores",
    "paired_bootstrap",
    "precision_omega",
    "rerank_movement",
    "retrieve_at_budget",
    "token_metrics",
    "version_chunking_report",
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
