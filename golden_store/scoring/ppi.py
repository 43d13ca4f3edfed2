"""A mean measured with a judge's labels, corrected by the people's labels on a sample:
prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, *Science* 2023).

Why: a metric computed on judge labels inherits the judge's bias. The plain estimate (the
judge's mean over every item) and its interval are then both wrong in the same direction,
and the interval gets *narrower* as the set grows: it certifies the bias. When people have
labelled a random sample of the same items (the judge calibration set, the standing sample),
the difference between the people's label and the judge's on that sample measures the bias,
and subtracting it puts the estimate back where the people would have put it:

    estimate = mean(judge on the N items people did not label)
             + mean(person - judge on the n items they did)

The first term is cheap and precise (N is large); the second is the *rectifier*, unbiased
because the sample is random. Their variances add (the two parts are disjoint, hence
independent), so the interval is the normal one with

    se^2 = var(judge on the N items) / N + var(person - judge on the n items) / n

(variances with denominator N and n, as in the reference implementation ``ppi_py``). A good
judge makes the rectifier's variance small and the interval nearly as narrow as the judge's
own; a biased judge moves the estimate; a noisy judge widens the interval - never the reverse.

This is the classical estimator (``lam = 1`` in ``ppi_py``; no power tuning). Each label is a
number: 1/0 for pass/fail, a grade, a per-question score. Pure: plain sequences in, a
:class:`Estimate` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided normal interval (``low``/``high`` None when undefined)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    reason: str | None = None  # why the figure is undefined, else None


@dataclass(frozen=True)
class Estimate:
    """The three readings of one mean, side by side:

    * ``ppi`` - the judge's labels corrected by the people's (what to report);
    * ``judge_only`` - the judge's mean over every item, as if it were right (the plain one);
    * ``people_only`` - the people's mean over their sample alone (unbiased, wide).

    ``bias`` is the mean of judge - person on the sample (positive: the judge is lenient)."""

    ppi: Interval
    judge_only: Interval
    people_only: Interval
    bias: float | None
    level: float


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"the interval's level must be between 0 and 1, got {level}")
    return float(norm.ppf(1 - (1 - level) / 2))


def _normal(mean: float, se: float, n: int, z: float) -> Interval:
    return Interval(mean, mean - z * se, mean + z * se, n)


def _as_array(name: str, values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat list of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds a missing or infinite value; leave such items out of both lists")
    return arr


def ppi_mean(people: Sequence[float], judge_on_sample: Sequence[float], judge_elsewhere: Sequence[float],
             *, level: float = 0.95, judge_over: str = "elsewhere") -> Estimate:
    """The prediction-powered mean and interval (see the module docstring).

    ``people[i]`` and ``judge_on_sample[i]`` are the two labels of the i-th sampled item;
    ``judge_elsewhere`` holds the judge's label on each item people did not label. The
    sample must have been drawn at random from all the items (a sample chosen for being hard
    or disputed measures a different bias).

    ``judge_over``: which items the judge's term averages. ``"elsewhere"`` (the textbook form,
    with a labelled set apart from the unlabelled one) uses the items people did not label;
    ``"all"`` uses every item, the sampled ones too: the judge's own share of all items plus the
    people-minus-judge difference on the sample. Both are unbiased when the sample is drawn at
    random from the items; "all" is what a reader expects when the judge labelled the sampled
    items as well (no difference on the sample leaves the judge's share as it is), and its
    variance term var(all) / N slightly overstates the uncertainty (the shared items make the two
    terms covary negatively), so its interval is, if anything, wide."""
    if judge_over not in ("elsewhere", "all"):
        raise ValueError(f"judge_over is 'elsewhere' or 'all', not {judge_over!r}")
    z = _z(level)
    y = _as_array("people", people)
    yhat = _as_array("judge_on_sample", judge_on_sample)
    rest = _as_array("judge_elsewhere", judge_elsewhere)
    if len(y) != len(yhat):
        raise ValueError(f"people ({len(y)} labels) and judge_on_sample ({len(yhat)}) must label the same items")
    n, big_n = len(y), len(rest)
    everything = np.concatenate([yhat, rest])

    if len(everything) >= 2:
        judge_only = _normal(float(everything.mean()), float(everything.std(ddof=1)) / math.sqrt(len(everything)),
                             len(everything), z)
    else:
        judge_only = Interval(float(everything.mean()) if len(everything) else None, None, None, len(everything),
                              "fewer than two judge labels")
    if n >= 2:
        people_only = _normal(float(y.mean()), float(y.std(ddof=1)) / math.sqrt(n), n, z)
    else:
        people_only = Interval(float(y.mean()) if n else None, None, None, n, "fewer than two people's labels")

    bias = float((yhat - y).mean()) if n else None
    if n < 2:
        ppi = Interval(None, None, None, n + big_n, f"people labelled {n} item(s) of the sample; the correction needs 2 or more")
    elif big_n < 2:
        ppi = Interval(None, None, None, n + big_n,
                       "people labelled (nearly) every item: their own mean is the estimate (people_only)")
    else:
        rectifier = y - yhat
        judged = everything if judge_over == "all" else rest
        mean = float(judged.mean() + rectifier.mean())
        se = math.sqrt(float(judged.var()) / len(judged) + float(rectifier.var()) / n)
        ppi = _normal(mean, se, n + big_n, z)
    return Estimate(ppi=ppi, judge_only=judge_only, people_only=people_only, bias=bias, level=level)


@dataclass(frozen=True)
class Stratum:
    """One stratum of a sample drawn per stratum (e.g. per judge verdict): the people's and the
    judge's labels on its sampled items, and the judge's labels on the rest of it."""

    people: Sequence[float]
    judge_on_sample: Sequence[float]
    judge_elsewhere: Sequence[float]


def stratified_ppi_mean(strata: dict[str, Stratum], *, level: float = 0.95, judge_over: str = "elsewhere"
                        ) -> Estimate:
    """The prediction-powered mean when the people's sample was drawn *per stratum* at
    different rates (claims sampled evenly across the judge's verdicts, so the rare failing
    verdicts are not drowned by supported ones). A pooled rectifier would then weigh the
    over-sampled strata too much; instead each stratum is corrected by its own sample and the
    strata are combined by their share of all items:

        estimate = sum_s (N_s / N) * (mean(judge on the rest of s) + mean(person - judge on s's sample))
        se^2     = sum_s (N_s / N)^2 * se_s^2      (se_s as in :func:`ppi_mean`)

    With the judge's verdict as the strata the judge's label is constant within a stratum, and
    the estimate reduces to the people's mean per verdict weighted by how often the judge gave
    it: what the people would have said, at the precision the strata allow. Every stratum that
    holds items needs two or more people's labels, unless the people labelled all of it (then
    its own mean is used, with no judge term). ``judge_only`` and
    ``people_only`` are pooled readings for comparison (the latter is biased by the sampling
    rates: shown, not to be reported)."""
    z = _z(level)
    sizes = {k: len(s.judge_on_sample) + len(s.judge_elsewhere) for k, s in strata.items()}
    total = sum(sizes.values())
    pooled = ppi_mean([v for s in strata.values() for v in s.people],
                      [v for s in strata.values() for v in s.judge_on_sample],
                      [v for s in strata.values() for v in s.judge_elsewhere], level=level, judge_over=judge_over)
    mean, var = 0.0, 0.0
    for key, s in strata.items():
        if sizes[key] == 0:
            continue
        y, yhat = _as_array("people", s.people), _as_array("judge_on_sample", s.judge_on_sample)
        rest = _as_array("judge_elsewhere", s.judge_elsewhere)
        if len(y) != len(yhat):
            raise ValueError(f"stratum {key}: people ({len(y)} labels) and judge_on_sample ({len(yhat)}) must label "
                             f"the same items")
        if len(y) < 2 and not (len(y) and len(rest) == 0):
            reason = f"people labelled {len(y)} item(s) of stratum {key}; each stratum's correction needs 2 or more"
            return Estimate(ppi=Interval(None, None, None, total, reason), judge_only=pooled.judge_only,
                            people_only=pooled.people_only, bias=pooled.bias, level=level)
        w = sizes[key] / total
        rect = y - yhat
        if len(rest) == 0:  # the whole stratum was labelled by people
            m, v = float(y.mean()), float(y.var()) / len(y)
        else:
            judged = np.concatenate([yhat, rest]) if judge_over == "all" else rest  # see ppi_mean
            m = float(judged.mean() + rect.mean())
            v = float(judged.var()) / len(judged) + float(rect.var()) / len(y)
        mean += w * m
        var += w * w * v
    ppi = _normal(mean, math.sqrt(var), total, z)
    return Estimate(ppi=ppi, judge_only=pooled.judge_only, people_only=pooled.people_only, bias=pooled.bias,
                    level=level)
