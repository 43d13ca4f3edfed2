"""How well the rubric judge's marks agree with people's, criterion by criterion (METHODOLOGY
§10.4's middle tier calibrated by its last, §11.1).

People grade a sample of answers per criterion; the judge grades every answer the same way.
On the (answer, criterion) items both marked, per criterion:

* **Cohen's κ** over the criterion's marks 0..scale_max in order. For a pass/fail criterion
  (scale 1) it is plain κ. For a criterion with partial credit (scale 2 or 3) the gated κ is
  *linearly weighted*: the answer's score uses ``mark / scale_max`` linearly, so a judge that
  gives 1 where people gave 2 moves the score half as far as one that gives 0, and linear
  weights charge the disagreement exactly in proportion to what it does to the score. The
  unweighted κ is reported beside it (every disagreement counted alike) for the strict reader.
* **Raw agreement**, the share of items with the same mark.
* **FAIL recall**: of the items people marked 0 (the criterion not met at all), the share the
  judge marked 0 too, with its counts and a Wilson interval. Accuracy hides this one: a judge
  that passes everything agrees with people on most items and catches no failure.

The bar (``KAPPA_BAR``, ``FAIL_RECALL_BAR``): the same κ ≥ 0.7 as the relevance judge's gate,
and a FAIL recall of at least 0.9 (the methodology names no number for it; a judge that lets
more than one failing answer in ten through is not one a gate can rest on). With no item
people marked 0 the FAIL recall is undefined and the bar cannot be checked: the verdict is
"undecided", never a pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golden_store.scoring import agreement
from golden_store.scoring.answers import Criterion, rubric_score
from golden_store.scoring.claim_agreement import wilson_interval

KAPPA_BAR = 0.7
FAIL_RECALL_BAR = 0.9
PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


@dataclass(frozen=True)
class CriterionAgreement:
    """Judge against people on one criterion over ``n`` items. ``confusion[i][j]``: items
    people marked ``i`` and the judge ``j``. ``kappa`` is the gated κ (linear-weighted when the
    scale has partial credit), None when undefined (``kappa_reason`` says why)."""

    criterion_id: str
    scale_max: int
    n: int
    kappa: float | None
    kappa_weights: str | None
    kappa_unweighted: float | None
    kappa_reason: str | None
    raw_agreement: float | None
    fail_recall: float | None
    fail_caught: int
    human_fail: int
    fail_interval: tuple[float, float] | None
    confusion: list[list[int]]
    human_counts: dict[int, int]
    judge_counts: dict[int, int]

    @property
    def verdict(self) -> str:
        """pass when κ and FAIL recall both meet their bars; fail when either is defined and
        below it; undecided when neither fails and one cannot be computed."""
        below = [(x is not None and x < bar) for x, bar in ((self.kappa, KAPPA_BAR),
                                                             (self.fail_recall, FAIL_RECALL_BAR))]
        if any(below):
            return FAIL
        return UNDECIDED if self.kappa is None or self.fail_recall is None else PASS

    def as_dict(self) -> dict[str, Any]:
        return {"criterion_id": self.criterion_id, "scale_max": self.scale_max, "n": self.n, "kappa": self.kappa,
                "kappa_weights": self.kappa_weights, "kappa_unweighted": self.kappa_unweighted,
                "kappa_reason": self.kappa_reason, "kappa_bar": KAPPA_BAR, "raw_agreement": self.raw_agreement,
                "fail_recall": self.fail_recall, "fail_caught": self.fail_caught, "human_fail": self.human_fail,
                "fail_interval": list(self.fail_interval) if self.fail_interval else None,
                "fail_recall_bar": FAIL_RECALL_BAR, "verdict": self.verdict,
                "marks": list(range(self.scale_max + 1)), "confusion": self.confusion,
                "human_counts": {str(k): v for k, v in self.human_counts.items()},
                "judge_counts": {str(k): v for k, v in self.judge_counts.items()}}


def _check(criterion_id: str, human: Sequence[int], judge: Sequence[int], scale_max: int) -> None:
    if scale_max not in (1, 2, 3):
        raise ValueError(f"criterion {criterion_id!r}: a scale tops at 1, 2 or 3, not {scale_max}.")
    if len(human) != len(judge):
        raise ValueError(f"criterion {criterion_id!r}: people marked {len(human)} items and the judge "
                         f"{len(judge)}; give the marks of the same items in the same order.")
    bad = sorted({m for m in (*human, *judge) if not (isinstance(m, int) and 0 <= m <= scale_max)}, key=str)
    if bad:
        raise ValueError(f"criterion {criterion_id!r}: marks {', '.join(map(repr, bad))} are outside 0..{scale_max}.")


def criterion_agreement(criterion_id: str, human: Sequence[int], judge: Sequence[int],
                        scale_max: int = 1) -> CriterionAgreement:
    """The figures of the module docstring for one criterion (``human[i]`` and ``judge[i]``
    mark the same item)."""
    _check(criterion_id, human, judge, scale_max)
    marks = list(range(scale_max + 1))
    cm, _ = agreement.confusion(list(human), list(judge), marks)
    weights: agreement.Weights = "linear" if scale_max > 1 else None
    kappa = agreement.kappa_from_confusion(cm, weights)
    plain = agreement.kappa_from_confusion(cm)
    fails = [j for h, j in zip(human, judge) if h == 0]
    caught = sum(j == 0 for j in fails)
    return CriterionAgreement(
        criterion_id=criterion_id, scale_max=scale_max, n=len(human), kappa=_none_if_nan(kappa),
        kappa_weights=weights, kappa_unweighted=_none_if_nan(plain), kappa_reason=kappa.reason,
        raw_agreement=sum(h == j for h, j in zip(human, judge)) / len(human) if human else None,
        fail_recall=caught / len(fails) if fails else None, fail_caught=caught, human_fail=len(fails),
        fail_interval=wilson_interval(caught, len(fails)),
        confusion=[[int(x) for x in row] for row in cm],
        human_counts={m: sum(h == m for h in human) for m in marks},
        judge_counts={m: sum(j == m for j in judge) for m in marks})


def overall_verdict(per_criterion: Sequence[CriterionAgreement]) -> str:
    """The rubric's verdict: pass only when every criterion passes; fail when any fails."""
    verdicts = [c.verdict for c in per_criterion]
    if not verdicts or UNDECIDED in verdicts and FAIL not in verdicts:
        return UNDECIDED
    return FAIL if FAIL in verdicts else PASS


def answer_score(criteria: Sequence[Mapping[str, Any]], marks: Mapping[str, float]) -> float | None:
    """One answer's rubric score from its criteria (``criterion_id``, ``weight``,
    ``scale_max``) and marks, combined in code by :func:`rubric_score`; None while a criterion
    is unmarked (an incomplete grading is not a score). Marks of criteria not in the rubric
    (since retired) are left out; a mark off its criterion's scale (the scale changed since the
    mark was given, e.g. a frozen rubric older than the grade) makes no score either."""
    rubric = [Criterion(str(c["criterion_id"]), float(c["weight"]), int(c["scale_max"])) for c in criteria]
    known = {c.id: c for c in rubric}
    kept = {k: v for k, v in marks.items() if k in known}
    if not rubric or len(kept) < len(rubric) or any(not 0 <= v <= known[k].scale_max for k, v in kept.items()):
        return None
    return rubric_score(rubric, kept)
