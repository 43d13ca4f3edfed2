"""Library-level scorers over frozen versions and TREC data: pure functions over plain
data (no database). Definitions follow trec_eval / ir_measures and are recorded with every
result; see each module's docstring.

Every public scorer is importable from here (``from golden_store.scoring import
cohens_kappa``); the names load lazily, on first use, so ``import golden_store`` does not pay
for numpy, pandas, pyarrow or scikit-learn. What each returns:

* objects with documented fields: :class:`EvalResult` (``evaluate``, ``evaluate_trec``),
  :class:`Kappa` (a float that can say why it is NaN), :class:`BootstrapResult`,
  :class:`PairAgreement`, :class:`GroupAgreement`, :class:`EvidenceAgreement`,
  :class:`IsotonicMap`, :class:`Measure`, :class:`AbstentionReport` (``abstention_report``);
* plain ``dict`` results typed in :mod:`golden_store.scoring.types` (``JudgeReport``,
  ``Reliability``, ``Band``, ``CascadeReport``, ``NuggetScores``, …), named on each function;
* plain floats, tuples and lists otherwise (see each function).

Helpers with generic names stay in their modules: ``calibration.split``,
``agreement_report.group`` / ``by`` / ``over_time`` / ``drift`` / ``distributions`` /
``evidence`` / ``evidence_pairs``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module (inside golden_store.scoring) that defines it
_EXPORTS: dict[str, str] = {}


def _export(module: str, *names: str) -> None:
    for name in names:
        _EXPORTS[name] = module


_export("abstention", "AbstentionReport", "Rate", "abstention_report")
_export("agreement", "Kappa", "PairAgreement", "ALPHA_BAR_ORDINAL", "KAPPA_BAR_BINARY", "KAPPA_BAR_GRADED", "cohens_kappa",
        "confusion", "grade_matrix", "kappa_bootstrap_ci", "kappa_bootstrap_ci_counts", "kappa_from_confusion",
        "krippendorff_alpha", "krippendorff_alpha_counts", "pairs_from_cells", "pairwise", "pairwise_long",
        "per_class", "per_class_from_confusion", "pooled", "raw_agreement", "reading", "span_overlap", "spans_agree")
_export("agreement_report", "AgreementBar", "BarCheck", "EvidenceAgreement", "GroupAgreement", "clears_bar")
_export("calibration", "FAIL", "INSUFFICIENT", "IsotonicMap", "KAPPA_GATE", "PASS", "Check", "at_cut", "auc",
        "band_decisions", "band_zone", "cascade_report", "fit_checks", "fit_isotonic", "inverted_message", "graded_report", "judge_report", "length_bias", "pick_band",
        "position_bias", "reliability")
_export("chunking", "budget_card")
_export("compare", "compare_runs", "format_comparison")
_export("cost", "eval_run_cost")
_export("generation", "Citation", "Claim", "MOVEMENTS", "Nugget", "abstention_scores", "citation_scores",
        "citation_valid", "movement_breakdown", "nugget_scores", "rerank_movement")
_export("golden", "evaluate", "judge_labels_used", "unanswerable_ids")
_export("health", "JUDGED_THRESHOLD", "JudgedHealth", "judged_health")
_export("impl_sha", "metric_impl_sha", "scorer_sources")
_export("measures", "REGISTRY", "Measure", "MeasureDef", "parse_measure", "parse_measures", "parse_trec_eval")
_export("retrieval", "average_precision", "bpref", "judged_at_k", "ndcg_at_k", "precision_at_k", "recall_at_k",
        "reciprocal_rank", "success_at_k")
_export("stats", "BootstrapResult", "adjust_pvalues", "benjamini_hochberg", "bootstrap_ci", "gate", "mde_paired", "n_for_mde",
        "paired_bootstrap", "sign_flip_p")
_export("tokens", "Chunking", "DocTokens", "chunking_report", "precision_omega", "retrieve_at_budget", "take_at_budget",
        "token_metrics", "version_chunking_report")
_export("trec", "EvalResult", "evaluate_trec", "read_qrels", "read_run")
_export("trials", "ItemVariance", "MetricTrials", "TrialsReport", "format_trials", "pass_hat", "trials_report")
_export("types", "AbstentionScores", "Band", "CascadeFigures", "CascadeReport", "ChunkingRow", "CitationScores",
        "ClassFigures", "Comparison", "JudgeReport", "LengthBias", "MovementShares", "NuggetScores", "PositionBias",
        "Reliability", "TokenMetrics")

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # for type checkers and editors; never executed
    from golden_store.scoring.agreement import *  # noqa: F401,F403
    from golden_store.scoring.agreement_report import (  # noqa: F401
        AgreementBar, BarCheck, EvidenceAgreement, GroupAgreement, clears_bar)
    from golden_store.scoring.calibration import *  # noqa: F401,F403
    from golden_store.scoring.chunking import budget_card  # noqa: F401
    from golden_store.scoring.compare import compare_runs, format_comparison  # noqa: F401
    from golden_store.scoring.cost import eval_run_cost  # noqa: F401
    from golden_store.scoring.generation import *  # noqa: F401,F403
    from golden_store.scoring.golden import evaluate, judge_labels_used, unanswerable_ids  # noqa: F401
    from golden_store.scoring.health import JUDGED_THRESHOLD, JudgedHealth, judged_health  # noqa: F401
    from golden_store.scoring.impl_sha import metric_impl_sha, scorer_sources  # noqa: F401
    from golden_store.scoring.measures import (  # noqa: F401
        REGISTRY, Measure, MeasureDef, parse_measure, parse_measures, parse_trec_eval)
    from golden_store.scoring.retrieval import *  # noqa: F401,F403
    from golden_store.scoring.stats import *  # noqa: F401,F403
    from golden_store.scoring.tokens import *  # noqa: F401,F403
    from golden_store.scoring.trec import EvalResult, evaluate_trec, read_qrels, read_run  # noqa: F401
    from golden_store.scoring.trials import (  # noqa: F401
        ItemVariance, MetricTrials, TrialsReport, format_trials, pass_hat, trials_report)
    from golden_store.scoring.types import *  # noqa: F401,F403
