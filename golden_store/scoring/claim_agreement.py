"""How well the faithfulness judge's claim verdicts agree with people's (METHODOLOGY §11.1).

A person reviews a claim blind and says supported, contradicted or insufficient; the judge said
one of the same three. Accuracy alone hides the failure that matters (a judge that calls every
claim supported agrees with people on most claims and catches no unfaithful one), so besides
Cohen's κ and raw agreement this reports the **FAIL recall**: of the claims a person called
not supported (contradicted or insufficient), the share the judge did not call supported
either, with its counts and a Wilson interval; the confusion table and both label
distributions show where the rest went.

Pure functions over label lists; κ is :func:`golden_store.scoring.agreement.cohens_kappa`
(scikit-learn's definition) over the three verdicts in a fixed order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from golden_store.scoring import agreement

VERDICTS = ("supported", "contradicted", "insufficient")
NOT_SUPPORTED = frozenset({"contradicted", "insufficient"})
KAPPA_BAR = 0.7  # §11.1 step 4: below it the judge's verdicts may not gate anything
WILSON_Z = 1.959963984540054  # two-sided 95%


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials (None with no trial): it
    stays inside [0, 1] and is honest at the small counts a review sample has."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class FailRecall:
    """Of ``human_fail`` claims a person called not supported, ``caught`` the judge did not
    call supported either; ``recall`` is None when the person called no claim unsupported."""

    caught: int
    human_fail: int
    recall: float | None
    interval: tuple[float, float] | None

    def as_dict(self) -> dict[str, Any]:
        return {"caught": self.caught, "human_fail": self.human_fail, "recall": self.recall,
                "interval": list(self.interval) if self.interval else None}


def fail_recall(human: Sequence[str], judge: Sequence[str]) -> FailRecall:
    """The judge's recall on the claims people say fail (see the module docstring)."""
    _check(human, judge)
    fails = [j for h, j in zip(human, judge) if h in NOT_SUPPORTED]
    caught = sum(j in NOT_SUPPORTED for j in fails)
    n = len(fails)
    return FailRecall(caught, n, caught / n if n else None, wilson_interval(caught, n))


@dataclass(frozen=True)
class ClaimAgreement:
    """The reviewer-vs-judge figures over ``n`` claims. ``confusion[i][j]``: claims the person
    called ``VERDICTS[i]`` and the judge ``VERDICTS[j]``. ``kappa`` is None when undefined
    (no claim, or both gave every claim one and the same verdict), ``kappa_reason`` says why."""

    n: int
    kappa: float | None
    kappa_reason: str | None
    raw_agreement: float | None
    confusion: list[list[int]]
    fail_recall: FailRecall
    fail_precision: float | None  # of the claims the judge did not call supported, the share people did not either
    per_class: dict[str, dict[str, Any]]
    human_counts: dict[str, int]
    judge_counts: dict[str, int]

    @property
    def meets_bar(self) -> bool | None:
        """κ at or above the §11.1 bar (None when κ is undefined)."""
        return None if self.kappa is None else self.kappa >= KAPPA_BAR

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "kappa": self.kappa, "kappa_reason": self.kappa_reason, "kappa_bar": KAPPA_BAR,
                "meets_bar": self.meets_bar, "raw_agreement": self.raw_agreement, "labels": list(VERDICTS),
                "confusion": self.confusion, "fail_recall": self.fail_recall.as_dict(),
                "fail_precision": self.fail_precision, "per_class": self.per_class,
                "human_counts": self.human_counts, "judge_counts": self.judge_counts}


def _check(human: Sequence[str], judge: Sequence[str]) -> None:
    if len(human) != len(judge):
        raise ValueError(f"The reviewer and the judge labelled different numbers of claims ({len(human)} vs "
                         f"{len(judge)}).")
    bad = sorted({str(v) for v in (*human, *judge) if v not in VERDICTS})
    if bad:
        raise ValueError(f"Unknown claim verdict(s) {', '.join(map(repr, bad))}: a verdict is one of "
                         f"{', '.join(VERDICTS)}.")


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def claim_agreement(human: Sequence[str], judge: Sequence[str]) -> ClaimAgreement:
    """Agreement of the judge (``judge[i]``) with a person (``human[i]``) on the same claims."""
    _check(human, judge)
    cm, _ = agreement.confusion(human, judge, VERDICTS)
    kappa = agreement.kappa_from_confusion(cm)
    judge_fail = [h for h, j in zip(human, judge) if j in NOT_SUPPORTED]
    per = agreement.per_class_from_confusion(cm, VERDICTS)
    return ClaimAgreement(
        n=len(human),
        kappa=_none_if_nan(kappa),
        kappa_reason=kappa.reason,
        raw_agreement=_none_if_nan(agreement.raw_agreement(human, judge)),
        confusion=[[int(x) for x in row] for row in cm],
        fail_recall=fail_recall(human, judge),
        fail_precision=sum(h in NOT_SUPPORTED for h in judge_fail) / len(judge_fail) if judge_fail else None,
        per_class={v: {"precision": _none_if_nan(f["precision"]), "recall": _none_if_nan(f["recall"]),
                       "n_human": f["n_reference"], "n_judge": f["n_other"]} for v, f in per.items()},
        human_counts={v: sum(h == v for h in human) for v in VERDICTS},
        judge_counts={v: sum(j == v for j in judge) for v in VERDICTS},
    )
