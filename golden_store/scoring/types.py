"""The result types of the scorers that return plain data (``dict`` at run time, so they
serialize as they are): each key, its meaning and its type. Scorers returning objects
(:class:`~golden_store.scoring.agreement.Kappa`, :class:`~golden_store.scoring.stats.BootstrapResult`,
:class:`~golden_store.scoring.trec.EvalResult`, …) document their fields on the class.

Typing only: importing this module costs nothing but ``typing``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # typing.NotRequired is 3.11+; the annotations are strings, never evaluated
    from typing_extensions import NotRequired


class ClassFigures(TypedDict):
    """One class of :func:`~golden_store.scoring.agreement.per_class` (NaN where undefined)."""

    precision: float    # of the other rater on this class
    recall: float       # of the reference rater's items of this class
    n_reference: int    # items the reference rater put in the class
    n_other: int        # items the other rater put in the class


class JudgeReport(TypedDict):
    """:func:`~golden_store.scoring.calibration.judge_report`: a judge against humans."""

    n: int
    accuracy: float
    kappa: float                 # Cohen's κ (unweighted); NaN when undefined
    kappa_reason: str | None     # why κ is undefined, else None
    passes_gate: bool            # κ ≥ KAPPA_GATE (0.7)
    per_class: dict[Any, ClassFigures]
    fail_recall: float
    fail_precision: float
    human_dist: dict[Any, int]
    judge_dist: dict[Any, int]


class GradedReport(TypedDict):
    """:func:`~golden_store.scoring.calibration.graded_report`: a graded judge against humans."""

    n: int                          # items both graded
    grades: list[int]               # the scale, in order (rows and columns of the matrix)
    confusion: list[list[int]]      # rows: human grade, columns: judge grade
    kappa: float                    # unweighted Cohen's κ over the grades
    kappa_linear: float             # linear weighted
    kappa_quadratic: float          # quadratic weighted
    kappa_reason: str | None        # why κ is undefined, else None
    exact_agreement: float
    within_one: float               # |human − judge| ≤ 1
    per_grade: dict[Any, ClassFigures]
    human_dist: dict[int, int]
    judge_dist: dict[int, int]


class Reliability(TypedDict):
    """:func:`~golden_store.scoring.calibration.reliability`."""

    ece: float                                # count-weighted |mean p - share of FAIL|
    bins: list[tuple[float, float, int]]      # non-empty bins: (mean p, share of FAIL, count)
    edges: list[float]                        # bin edges, bins + 1 of them


class Band(TypedDict):
    """:func:`~golden_store.scoring.calibration.pick_band`: the cascade band."""

    low: float              # p ≤ low: auto-PASS
    high: float             # p ≥ high: auto-FAIL
    escalation_rate: float  # share of items strictly between (sent to the LLM judge)


class CascadeFigures(TypedDict):
    kappa: float
    fail_recall: float
    accuracy: float


class CascadeReport(TypedDict):
    """:func:`~golden_store.scoring.calibration.cascade_report` (METHODOLOGY §11.8 rule 1)."""

    n: int
    escalation_rate: float
    decision_model: CascadeFigures
    llm_judge: CascadeFigures
    cascade: CascadeFigures
    kappa_diff_vs_llm_ci: tuple[float, float]   # 95% bootstrap interval of κ(cascade) − κ(LLM)
    beats_decision_model: bool
    within_noise_of_llm: bool
    rule1_ok: bool


class LengthBias(TypedDict):
    """:func:`~golden_store.scoring.calibration.length_bias`."""

    slope_per_100_chars: float
    r: float
    n: int


class PositionBias(TypedDict):
    """:func:`~golden_store.scoring.calibration.position_bias`."""

    disagreement_rate: float
    first_slot_win_share: float
    n: int


class MovementShares(TypedDict):
    """:func:`~golden_store.scoring.generation.movement_breakdown`: share of queries per movement."""

    rescued: float
    broke: float
    kept: float
    missed_both: float
    n: int


class AbstentionScores(TypedDict):
    """:func:`~golden_store.scoring.generation.abstention_scores`."""

    abstention_precision: float
    abstention_recall: float
    over_refusal_rate: float
    declined_unanswerable: int
    declined_answerable: int
    fabricated: int
    answered: int
    refusals: int


class CitationScores(TypedDict):
    """:func:`~golden_store.scoring.generation.citation_scores`."""

    citation_precision: float
    citation_recall: float
    citation_validity: float
    citations: int
    invalid_citations: int


class NuggetScores(TypedDict):
    """:func:`~golden_store.scoring.generation.nugget_scores` (TREC-RAG)."""

    v_strict: float
    v: float
    a_strict: float
    a: float


class TokenMetrics(TypedDict):
    """:func:`~golden_store.scoring.tokens.token_metrics`."""

    recall: float
    precision: float
    iou: float


class ChunkingRow(TypedDict):
    """One chunker of :func:`~golden_store.scoring.tokens.chunking_report` (the §5.4 card);
    the ``*_at_budget`` figures are None without a run."""

    chunker: str
    chunks: int
    mean_chunk_tokens: float
    precision_omega: float
    p95_chunks_per_answer_span: float
    recall_at_budget: float | None
    precision_at_budget: float | None
    iou_at_budget: float | None
    tokens_per_answer_at_budget: float | None
    budget_tokens: int
    dataset_version: NotRequired[str | None]   # version_chunking_report: the frozen version scored


class Comparison(TypedDict):
    """:func:`~golden_store.scoring.compare.compare_runs`: per metric, the gate verdict and
    :meth:`BootstrapResult.as_dict` figures, plus ``only_in_a`` / ``only_in_b`` and
    ``strata`` (stratum -> the same figures), and with cohorts ``cohorts`` (cohort -> the same
    figures and its ``strata``). Every verdict also carries ``p_adj`` (its p after the
    correction) and ``significant``; ``correction`` says which correction over how many
    comparisons (method, name, alpha, comparisons, too_few); ``cohort_by`` names the cohorts.
    A cell under ``min_n`` questions has verdict "too few", no ``ci95`` and no ``p``; cells under
    ``small_n`` take p from the sign-flip test (``test`` names the test of each cell)."""

    metrics: dict[str, dict[str, Any]]
    min_meaningful: float
    n_boot: int
    seed: int
    correction: dict[str, Any]
    min_n: int
    small_n: int
    cohort_by: NotRequired[str]
