"""Statistics that make a delta mean something (METHODOLOGY §3.3, §13, §14.2).

* :func:`paired_bootstrap` - the default test: per-query differences resampled with
  replacement; percentile interval; two-sided p by shifting the bootstrap distribution to
  the null; wins / losses / ties. Resampling runs in chunks so that 10,000 queries x
  10,000 resamples never allocate a 10^8 matrix at once. Results depend only on
  (scores, n_boot, seed).
* :func:`sign_flip_p` - the paired randomization (sign-flip) test: exact over every sign
  pattern of the non-zero differences when there are few of them, else sampled. Small cells
  of a comparison take their p from it, because a bootstrap of a handful of equal deltas
  resamples the same mean every time and reads that as p = 0.
* :func:`mde_paired` / :func:`n_for_mde` - power calculation for paired designs.
* :func:`gate` - fail only on a regression that is both credible and large enough.
* :func:`benjamini_hochberg` - false-discovery control for sweeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

_CHUNK_ELEMENTS = 4_000_000  # resample indices generated per chunk (16 MB as int32)


@dataclass(frozen=True)
class BootstrapResult:
    delta: float
    ci95: tuple[float, float]
    p: float
    n: int
    wins: int
    losses: int
    ties: int
    n_boot: int
    seed: int
    level: float = 0.95

    def as_dict(self) -> dict:
        return {"delta": self.delta, "ci95": list(self.ci95), "p": self.p, "n": self.n, "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "n_boot": self.n_boot, "seed": self.seed,
                "level": self.level}


def _boot_means(d: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    n = d.size
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_ELEMENTS // max(n, 1))
    out = np.empty(n_boot)
    for start in range(0, n_boot, rows):
        b = min(rows, n_boot - start)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int32 if n < 2**31 else np.int64)
        out[start:start + b] = d[idx].mean(axis=1)
    return out


def paired_bootstrap(a, b, n_boot: int = 10_000, seed: int = 0, *, level: float = 0.95) -> BootstrapResult:
    """``a``, ``b``: per-query scores of the baseline and the candidate on the SAME queries
    in the SAME order. ``delta`` is mean(b - a)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores must be two 1-d arrays of equal length, got {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("no queries to compare")
    d = b - a
    obs = float(d.mean())
    boots = _boot_means(d, n_boot, seed)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(boots, [tail, 100 - tail])
    p = float((np.abs(boots - obs) >= abs(obs)).mean()) if obs != 0 else 1.0
    return BootstrapResult(obs, (float(lo), float(hi)), p, int(d.size), int((d > 0).sum()), int((d < 0).sum()),
                           int((d == 0).sum()), n_boot, seed, level)


EXACT_SIGN_FLIP_MAX = 30  # non-zero deltas up to which every sign pattern is counted (2^30, by halves)


def _half_sums(values: np.ndarray) -> np.ndarray:
    """The signed sums of ``values`` under every one of its 2^len sign patterns."""
    m = values.size
    codes = np.arange(1 << m, dtype=np.int64)
    signs = 1 - 2 * ((codes[:, None] >> np.arange(m)) & 1)
    return signs @ values


def sign_flip_p(d, n_resamples: int = 10_000, seed: int = 0) -> tuple[float, str]:
    """Two-sided p of the paired randomization test on the differences ``d``: under the null
    the sign of each difference is a coin flip, so p is the share of sign patterns whose mean
    is at least as far from 0 as the observed one. Zero differences cannot change sign and
    are left as they are (they still count in the mean's denominator, which then cancels).

    With at most :data:`EXACT_SIGN_FLIP_MAX` non-zero differences every pattern is counted
    (``"exact"``), by meeting in the middle: the sums of each half's 2^(k/2) patterns, one
    half sorted, pairs counted by binary search (2^15 sums a half at k = 30, not 2^30
    patterns). Above that ``n_resamples`` random patterns at ``seed`` are drawn and the
    observed pattern is counted as one of them (``(hits + 1) / (n + 1)``, never 0:
    ``"sampled"``). Returns (p, how). Five of five questions losing by the same amount give
    2 / 32 = 0.0625, as the exact sign test does; one question gives 1.0."""
    d = np.asarray(d, dtype=float)
    nz = d[d != 0]
    k = nz.size
    if k == 0:
        return 1.0, "exact"
    tol = 1e-12 * max(1.0, float(np.abs(nz).sum()))  # float sums of the same values in another order
    edge = abs(float(nz.sum())) - tol  # a pattern counts when |its sum| >= edge
    if edge <= 0:
        return 1.0, "exact"
    if k <= EXACT_SIGN_FLIP_MAX:
        left = _half_sums(nz[: k // 2])
        right = np.sort(_half_sums(nz[k // 2:]))
        # |l + r| >= edge: r >= edge - l, or r <= -edge - l (disjoint, as edge > 0)
        high = right.size - np.searchsorted(right, edge - left, side="left")
        low = np.searchsorted(right, -edge - left, side="right")
        return float((high + low).sum()) / float(1 << k), "exact"
    rng = np.random.default_rng(seed)
    hits = 0
    rows = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        signs = rng.integers(0, 2, size=(b, k), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ nz) >= edge).sum())
    return (hits + 1) / (n_resamples + 1), "sampled"


def bootstrap_ci(values, n_boot: int = 10_000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of one system's mean score."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return (0.0, 0.0)
    boots = _boot_means(v, n_boot, seed)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(boots, [tail, 100 - tail])
    return float(lo), float(hi)


def _z(alpha: float, power: float) -> float:
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def mde_paired(n: int, sigma_d: float, alpha: float = 0.05, power: float = 0.80) -> float:
    """Smallest true mean per-query difference detectable with probability ``power``
    (two-sided test at ``alpha``) on ``n`` paired queries."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return _z(alpha, power) * sigma_d / math.sqrt(n)


def n_for_mde(delta: float, sigma_d: float, alpha: float = 0.05, power: float = 0.80) -> int:
    """Queries needed to detect a true mean difference ``delta``."""
    if delta <= 0:
        raise ValueError("delta must be positive")
    return math.ceil((_z(alpha, power) * sigma_d / delta) ** 2)


def gate(baseline, candidate, *, min_meaningful: float = 0.02, alpha: float = 0.05,
         n_boot: int = 10_000, seed: int = 0) -> tuple[str, BootstrapResult]:
    """FAIL when the whole interval is below zero and the drop is at least
    ``min_meaningful``; WARN when it is credible but small; PASS otherwise."""
    r = paired_bootstrap(baseline, candidate, n_boot, seed, level=1 - alpha)
    if r.ci95[1] < 0:
        return ("FAIL" if abs(r.delta) >= min_meaningful else "WARN"), r
    return "PASS", r


def benjamini_hochberg(pvalues, q: float = 0.05) -> tuple[list[bool], list[float]]:
    """Which hypotheses are rejected at false-discovery rate ``q``, and adjusted p-values."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return [], []
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    out = np.empty(m)
    out[order] = adjusted
    return [bool(x <= q) for x in out], [float(x) for x in out]


CORRECTIONS = ("bh", "bonferroni", "none")


def adjust_pvalues(pvalues, method: str = "bh") -> list[float]:
    """Adjusted p-values of m simultaneous tests (METHODOLOGY §13.3): ``bh`` Benjamini-Hochberg
    (false-discovery rate; the step-up adjustment, as statsmodels' ``fdr_bh`` and scipy's
    ``false_discovery_control``), ``bonferroni`` (family-wise error: min(1, p * m)) or ``none``
    (p unchanged). A test is significant after correction when its adjusted p <= alpha."""
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1 or np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("p-values must be a flat list of numbers in [0, 1]")
    if method == "bh":
        return benjamini_hochberg(p)[1]
    if method == "bonferroni":
        return [float(x) for x in np.minimum(p * p.size, 1.0)]
    if method == "none":
        return [float(x) for x in p]
    raise ValueError(f"unknown correction {method!r}; use one of {', '.join(CORRECTIONS)}")
