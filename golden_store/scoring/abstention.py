"""Abstention per system (METHODOLOGY §10.5), with bootstrap intervals (§13): pure functions.

One answer per question, each with an outcome:

* ``answered`` - the system gave an answer;
* ``abstained`` - it declined ("the documents do not say");
* ``refused`` - a safety refusal (``stop_reason: "refusal"``): its own category, neither an
  abstention nor an answer;
* ``unknown`` (or ``None``) - nobody has said which: not scored, counted as unmarked.

On the questions the corpus cannot answer (``answerable`` false) and the ones it can:

===================  =========================================  ======================================
abstention_precision declined unanswerable / all declined        "when it declines, is it right to?"
abstention_recall    declined unanswerable / unanswerable         1 - fabrication rate on unanswerables
over_refusal_rate    declined answerable / answerable             the cost of tuning too far the other way
refusal_rate         refused / scored questions                   §10.7 "refusal rate: alert on shift"
===================  =========================================  ======================================

How refusals enter: §10.5 says to "count refusals as their own category rather than silently
scoring them as failures". A refused question is therefore left out of the three abstention
rates - out of their numerators *and* denominators (a refusal on an unanswerable question is
not credited as a correct decline, nor charged as a fabrication; on an answerable one it is
not an over-refusal) - and counted apart: ``refused``, split into ``refused_answerable`` and
``refused_unanswerable``, and ``refusal_rate`` over every scored question. So a system that
refuses everything has undefined abstention rates and a refusal rate of 1.0, not a perfect
recall.

Undefined numbers are not numbers. §10.5 writes ``tp / max(tp + fp, 1)``, which reports 0.0
when the denominator is empty (a system that never declines would get precision 0.0, the same
as one that always declines wrongly); :func:`golden_store.scoring.generation.abstention_scores`
keeps that formula as written. Here an empty denominator gives ``value=None`` with a
``reason`` ("the system never abstained", "no unanswerable question was scored", ...), and no
interval.

Intervals: percentile bootstrap over questions, stratified by answerability: each resample
draws, with replacement, as many answerable questions as were scored from the answerable ones
and as many unanswerable from the unanswerable ones (the set's mix of the two is a design
choice, §3.4, not a random quantity). Drawing n questions with replacement and counting their
outcomes is exactly a multinomial draw of n over the observed outcome shares, which is how it
is computed (O(n_boot), whatever the number of questions). A resample in which a rate's
denominator is empty is left out of that rate's interval and counted in
``undefined_resamples``. Results depend only on (rows, n_boot, seed, level).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import numpy as np

OUTCOMES = ("answered", "abstained", "refused")
UNMARKED = "unknown"
RATES = ("abstention_precision", "abstention_recall", "over_refusal_rate", "refusal_rate")

DEFINITIONS: dict[str, str] = {
    "abstention_precision": "declined unanswerable / (declined unanswerable + declined answerable); refusals left out",
    "abstention_recall": "declined unanswerable / (declined unanswerable + answered unanswerable, i.e. fabricated); "
                         "refusals left out",
    "over_refusal_rate": "declined answerable / (declined answerable + answered answerable); refusals left out",
    "refusal_rate": "refused / every scored question (answerable or not)",
    "interval": "percentile bootstrap over questions, resampled within answerable and within unanswerable",
    "unmarked": "answers whose outcome nobody has given (not imported, not marked): not scored",
}


@dataclass(frozen=True)
class Rate:
    """One rate: ``value`` and ``ci`` are None when the denominator is empty (``reason`` says why)."""

    value: float | None
    ci: tuple[float, float] | None
    numerator: int
    denominator: int
    reason: str | None = None
    undefined_resamples: int = 0


@dataclass(frozen=True)
class AbstentionReport:
    """A system's abstention figures over its scored (marked) answers."""

    n_scored: int                 # answers with an outcome (answered / abstained / refused)
    n_answerable: int             # scored answers to answerable questions (refusals included)
    n_unanswerable: int           # scored answers to unanswerable questions (refusals included)
    n_unmarked: int               # answers with outcome unknown: not scored
    declined_unanswerable: int    # tp: correctly declined
    fabricated: int               # fn: answered a question the corpus cannot answer
    declined_answerable: int      # fp: declined a question the corpus answers
    answered_answerable: int      # tn
    refused: int
    refused_answerable: int
    refused_unanswerable: int
    rates: dict[str, Rate] = field(default_factory=dict)
    n_boot: int = 10_000
    seed: int = 0
    level: float = 0.95

    @property
    def complete(self) -> bool:
        """Every answer has an outcome (no unmarked answer left out)."""
        return self.n_unmarked == 0

    def as_dict(self) -> dict:
        out = asdict(self)
        out["rates"] = {k: {**asdict(r), "ci": list(r.ci) if r.ci else None} for k, r in self.rates.items()}
        out["complete"] = self.complete
        out["definitions"] = dict(DEFINITIONS)
        return out


# cells of the per-group count vectors
_ANS, _ABS, _REF = 0, 1, 2


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _rate(num: int, den: int, boots: np.ndarray, level: float, reason: str) -> Rate:
    defined = boots[~np.isnan(boots)]
    undefined = int(boots.size - defined.size)
    if den == 0:
        return Rate(None, None, num, den, reason, undefined)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(defined, [tail, 100 - tail])
    return Rate(num / den, (float(lo), float(hi)), num, den, None, undefined)


def abstention_report(rows: Iterable[tuple[bool, str | None]], *, n_boot: int = 10_000, seed: int = 0,
                      level: float = 0.95) -> AbstentionReport:
    """``rows``: ``(answerable, outcome)`` per question, one system; outcome is answered,
    abstained, refused, or unknown / None (unmarked: not scored). See the module docstring
    for the definitions, how refusals enter, and the interval."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    counts = {True: [0, 0, 0], False: [0, 0, 0]}
    unmarked = 0
    for answerable, outcome in rows:
        if outcome is None or outcome == UNMARKED:
            unmarked += 1
            continue
        if outcome not in OUTCOMES:
            raise ValueError(f"an answer's outcome is one of {', '.join(OUTCOMES)} or {UNMARKED}, got {outcome!r}")
        counts[bool(answerable)][OUTCOMES.index(outcome)] += 1
    a, u = counts[True], counts[False]
    rng = np.random.default_rng(seed)

    def draw(cells: list[int]) -> np.ndarray:
        n = sum(cells)
        if n == 0:
            return np.zeros((n_boot, 3), dtype=np.int64)
        return rng.multinomial(n, np.asarray(cells, dtype=float) / n, size=n_boot)

    A, U = draw(a), draw(u)
    tp, fn, fp, tn = u[_ABS], u[_ANS], a[_ABS], a[_ANS]
    n_a, n_u = sum(a), sum(u)
    refused = a[_REF] + u[_REF]
    rates = {
        "abstention_precision": _rate(tp, tp + fp, _ratio(U[:, _ABS], U[:, _ABS] + A[:, _ABS]), level,
                                      "the system never abstained (no declined answer to be right or wrong about)"),
        "abstention_recall": _rate(tp, tp + fn, _ratio(U[:, _ABS], U[:, _ABS] + U[:, _ANS]), level,
                                   "no unanswerable question was scored (none in the set, all unmarked or all "
                                   "refused)"),
        "over_refusal_rate": _rate(fp, fp + tn, _ratio(A[:, _ABS], A[:, _ABS] + A[:, _ANS]), level,
                                   "no answerable question was scored (none in the set, all unmarked or all "
                                   "refused)"),
        "refusal_rate": _rate(refused, n_a + n_u, _ratio(A[:, _REF] + U[:, _REF], np.full(n_boot, n_a + n_u)),
                              level, "no answer has an outcome yet"),
    }
    return AbstentionReport(
        n_scored=n_a + n_u, n_answerable=n_a, n_unanswerable=n_u, n_unmarked=unmarked,
        declined_unanswerable=tp, fabricated=fn, declined_answerable=fp, answered_answerable=tn,
        refused=refused, refused_answerable=a[_REF], refused_unanswerable=u[_REF],
        rates=rates, n_boot=n_boot, seed=seed, level=level)
