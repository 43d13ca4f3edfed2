"""Inter-annotator agreement (METHODOLOGY §3.7, §11.1): Cohen's κ (unweighted, linear,
quadratic), Krippendorff's α, raw agreement, confusion matrices, per-class precision/recall
between two raters, a bootstrap interval for κ, the Landis & Koch reading, and agreement on
evidence spans.

Pure functions over arrays; nothing here reads the store. κ follows scikit-learn's
definition exactly (weights by *position* in the label list), so the two can be checked
against each other; α is the ``krippendorff`` package, wrapped so an undefined value comes
back as NaN with a reason instead of an exception in the middle of a live page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

import numpy as np

from golden_store.scoring.types import ClassFigures

Weights = Literal["linear", "quadratic"] | None
# one rater's labels, in item order: a list, or a numpy array (the bootstrap indexes arrays)
Labels = Sequence[Any] | np.ndarray

# METHODOLOGY §3.7: the bar before work is split.
KAPPA_BAR_BINARY = 0.7
KAPPA_BAR_GRADED = 0.6
ALPHA_BAR_ORDINAL = 0.667  # Krippendorff's usual bar for tentative conclusions (three or more raters)
GRADES = (0, 1, 2, 3)
BINARY_THRESHOLD = 2  # binary relevance: grade >= 2


class Kappa(float):
    """A κ value that can say why it is undefined (NaN). Compares and formats as a float."""

    reason: str | None

    def __new__(cls, value: float, reason: str | None = None) -> Kappa:
        obj = super().__new__(cls, value)
        obj.reason = reason
        return obj

    @property
    def defined(self) -> bool:
        return not math.isnan(self)


def reading(kappa: float) -> str:
    """Landis & Koch's rough reading of a κ (or α) value; treat it as rough (§3.7)."""
    if math.isnan(kappa):
        return "undefined"
    if kappa < 0:
        return "poor"
    for upper, name in ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial")):
        if kappa <= upper:
            return name
    return "almost perfect"


def _codes(a: Labels, b: Labels, labels: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray, list]:
    """Map both raters' labels to positions in ``labels`` (sorted union if None); pairs where
    either label is outside ``labels`` are dropped, as scikit-learn's confusion matrix does."""
    if len(a) != len(b):
        raise ValueError(f"The two raters labelled different numbers of items ({len(a)} vs {len(b)}).")
    labs = list(labels) if labels is not None else sorted(set(a) | set(b))
    index = {lab: i for i, lab in enumerate(labs)}
    ia = np.fromiter((index.get(x, -1) for x in a), dtype=np.int64, count=len(a))
    ib = np.fromiter((index.get(x, -1) for x in b), dtype=np.int64, count=len(b))
    keep = (ia >= 0) & (ib >= 0)
    return ia[keep], ib[keep], labs


def confusion(a: Labels, b: Labels, labels: Sequence[Any] | None = None) -> tuple[np.ndarray, list]:
    """k×k counts: rows are rater a's label, columns rater b's, in ``labels`` order."""
    ia, ib, labs = _codes(a, b, labels)
    k = len(labs)
    return np.bincount(ia * k + ib, minlength=k * k).reshape(k, k), labs


def _weight_matrix(k: int, weights: Weights) -> np.ndarray:
    pos = np.arange(k)
    diff = np.abs(pos[:, None] - pos[None, :]).astype(float)
    if weights is None:
        return (diff > 0).astype(float)
    if weights == "linear":
        return diff
    if weights == "quadratic":
        return diff ** 2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}.")


def kappa_from_confusion(cm: np.ndarray, weights: Weights = None) -> Kappa:
    """κ = 1 − Σ w·O / Σ w·E, E the outer product of the marginals (scikit-learn's form)."""
    cm = np.asarray(cm, dtype=float)
    n = cm.sum()
    if n == 0:
        return Kappa(math.nan, "no item was labelled by both raters")
    expected = np.outer(cm.sum(axis=1), cm.sum(axis=0)) / n
    w = _weight_matrix(cm.shape[0], weights)
    denom = float((w * expected).sum())
    if denom == 0:
        return Kappa(math.nan, "chance agreement is total: both raters gave every item the same single "
                               "label, so κ is undefined (raw agreement says more here)")
    return Kappa(1.0 - float((w * cm).sum()) / denom)


def cohens_kappa(a: Labels, b: Labels, weights: Weights = None,
                 labels: Sequence[Any] | None = None) -> Kappa:
    """Cohen's κ between two raters over the same items (equal to
    ``sklearn.metrics.cohen_kappa_score``). Weighted κ weights disagreements by the distance
    between *positions* in ``labels``, so pass the ordered grade list for ordinal data.
    Undefined κ is NaN with a ``reason``."""
    cm, _ = confusion(a, b, labels)
    return kappa_from_confusion(cm, weights)


def raw_agreement(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of items on which the two raters gave the same label (NaN with no items)."""
    if len(a) != len(b):
        raise ValueError(f"The two raters labelled different numbers of items ({len(a)} vs {len(b)}).")
    if not len(a):
        return math.nan
    return float(np.mean(np.asarray(a, dtype=object) == np.asarray(b, dtype=object)))


def per_class(reference: Sequence[Any], other: Sequence[Any], labels: Sequence[Any] | None = None) -> dict[Any, ClassFigures]:
    """Per-class precision and recall of ``other`` against ``reference`` (e.g. a judge against
    humans, or annotator B against A), with each rater's count of the class. A class the other
    rater never used has precision NaN; one the reference never used has recall NaN."""
    cm, labs = confusion(reference, other, labels)
    return per_class_from_confusion(cm, labs)


def per_class_from_confusion(cm: np.ndarray, labels: Sequence[Any]) -> dict[Any, ClassFigures]:
    """:func:`per_class` from the confusion matrix (rows: the reference's label), for callers
    that hold counts rather than the labels themselves (the store aggregates them in SQL)."""
    out: dict[Any, ClassFigures] = {}
    for i, lab in enumerate(labels):
        tp = cm[i, i]
        pred, true = cm[:, i].sum(), cm[i, :].sum()
        out[lab] = ClassFigures(
            precision=float(tp / pred) if pred else math.nan,
            recall=float(tp / true) if true else math.nan,
            n_reference=int(true),
            n_other=int(pred),
        )
    return out


def kappa_bootstrap_ci(a: Sequence[Any], b: Sequence[Any], weights: Weights = None,
                       labels: Sequence[Any] | None = None, n_boot: int = 2000, alpha: float = 0.05,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile interval for κ, resampling items with replacement (seeded). Replicates
    where κ is undefined are dropped; (NaN, NaN) if all are."""
    ia, ib, labs = _codes(a, b, labels)
    n, k = len(ia), len(labs)
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    cell = ia * k + ib
    w = _weight_matrix(k, weights)
    vals = np.empty(n_boot)
    for lo in range(0, n_boot, 256):  # chunks keep memory flat for large n
        m = min(256, n_boot - lo)
        idx = rng.integers(0, n, size=(m, n))
        counts = np.zeros((m, k * k))
        np.add.at(counts, (np.repeat(np.arange(m), n), cell[idx].ravel()), 1)
        cms = counts.reshape(m, k, k)
        rows, cols = cms.sum(axis=2), cms.sum(axis=1)
        expected = rows[:, :, None] * cols[:, None, :] / n
        num = (cms * w).sum(axis=(1, 2))
        den = (expected * w).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            vals[lo:lo + m] = np.where(den > 0, 1.0 - num / den, np.nan)
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return math.nan, math.nan
    return float(np.quantile(vals, alpha / 2)), float(np.quantile(vals, 1 - alpha / 2))


def kappa_bootstrap_ci_counts(cm: np.ndarray, weights: Weights = None, n_boot: int = 2000, alpha: float = 0.05,
                              seed: int = 0) -> tuple[float, float]:
    """:func:`kappa_bootstrap_ci` from the k×k confusion counts: resampling n items with
    replacement is one multinomial draw over the cells with probabilities count / n, so
    each replicate costs O(k²) instead of O(n) (items in the same cell are interchangeable
    for κ). The same distribution as resampling items; not the same draws for a seed."""
    cm = np.asarray(cm, dtype=np.int64)
    n, k = int(cm.sum()), cm.shape[0]
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    cms = rng.multinomial(n, cm.ravel() / n, size=n_boot).reshape(n_boot, k, k).astype(float)
    w = _weight_matrix(k, weights)
    expected = cms.sum(axis=2)[:, :, None] * cms.sum(axis=1)[:, None, :] / n
    num = (cms * w).sum(axis=(1, 2))
    den = (expected * w).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = np.where(den > 0, 1.0 - num / den, np.nan)
    vals = vals[~np.isnan(vals)]
    if not len(vals):
        return math.nan, math.nan
    return float(np.quantile(vals, alpha / 2)), float(np.quantile(vals, 1 - alpha / 2))


def krippendorff_alpha_counts(value_counts: np.ndarray, level: Literal["nominal", "ordinal", "interval", "ratio"],
                              value_domain: Sequence[Any]) -> Kappa:
    """:func:`krippendorff_alpha` from units × values counts (how many raters gave each value
    to each unit), which SQL can aggregate without handing every label to Python. The
    ``krippendorff`` package computes α from exactly these counts either way, so the value
    is the same; rows in the same unit order give the same floating-point sums."""
    import krippendorff

    vc = np.asarray(value_counts, dtype=np.int64).reshape(-1, len(value_domain))
    if not (vc.sum(axis=1) >= 2).any():
        return Kappa(math.nan, "no unit was labelled by two or more raters")
    try:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = krippendorff.alpha(value_counts=vc, value_domain=list(value_domain), level_of_measurement=level)
    except (ValueError, ZeroDivisionError) as exc:
        return Kappa(math.nan, str(exc))
    if value is None or math.isnan(value):
        return Kappa(math.nan, "expected disagreement is zero (a single value was used)")
    return Kappa(float(value))


def krippendorff_alpha(reliability_data: Any, level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
                       value_domain: Sequence[Any] | None = None) -> Kappa:
    """Krippendorff's α over raters × units (NaN = missing), from the ``krippendorff``
    package. For ordinal grades pass ``value_domain=(0, 1, 2, 3)`` so grades nobody used
    still count in the ordinal distances. Undefined α is NaN with a reason."""
    import krippendorff  # imported here: the package pulls in nothing else we need at startup

    data = np.asarray(reliability_data, dtype=float)
    if data.ndim != 2:
        raise ValueError("reliability data is raters × units (a 2-D array).")
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return Kappa(math.nan, "no unit was labelled by two or more raters")
    values = np.unique(data[:, pairable][~np.isnan(data[:, pairable])])
    if len(values) < 2 and value_domain is None:
        return Kappa(math.nan, "every pairable label is the same value, so α is undefined")
    try:
        kwargs = {"value_domain": list(value_domain)} if value_domain is not None else {}
        with np.errstate(invalid="ignore", divide="ignore"):
            value = krippendorff.alpha(reliability_data=data, level_of_measurement=level, **kwargs)
    except (ValueError, ZeroDivisionError) as exc:
        return Kappa(math.nan, str(exc))
    if value is None or math.isnan(value):
        return Kappa(math.nan, "expected disagreement is zero (a single value was used)")
    return Kappa(float(value))


# ---- pairwise tables over many annotators ------------------------------------------------------


@dataclass(frozen=True)
class PairAgreement:
    a: str
    b: str
    n: int
    raw: float
    kappa_binary: Kappa
    kappa_linear: Kappa
    kappa_quadratic: Kappa
    kappa_unweighted: Kappa  # on the 0-3 grades, every disagreement counted alike (§3.7's own κ)

    def as_row(self) -> dict[str, Any]:
        return {"annotator_a": self.a, "annotator_b": self.b, "n_items": self.n, "raw_agreement": self.raw,
                "kappa_binary": float(self.kappa_binary), "kappa_unweighted": float(self.kappa_unweighted),
                "kappa_linear": float(self.kappa_linear), "kappa_quadratic": float(self.kappa_quadratic),
                "reading_binary": reading(self.kappa_binary), "reading_unweighted": reading(self.kappa_unweighted),
                "reading_linear": reading(self.kappa_linear), "reading_quadratic": reading(self.kappa_quadratic)}


def grade_matrix(units: Sequence[Any], raters: Sequence[str], grades: Sequence[int]) -> tuple[np.ndarray, list, list]:
    """Long (unit, rater, grade) rows → a raters × units float matrix (NaN = not labelled),
    with the rater and unit orders. The one pivot every agreement figure is computed from."""
    rater_ids, r_idx = np.unique(np.asarray(raters, dtype=object), return_inverse=True)
    unit_ids, u_idx = np.unique(np.asarray([str(u) for u in units], dtype=object), return_inverse=True)
    m = np.full((len(rater_ids), len(unit_ids)), np.nan)
    m[r_idx, u_idx] = np.asarray(grades, dtype=float)
    return m, list(rater_ids), list(unit_ids)


def pairwise(matrix: np.ndarray, raters: Sequence[str], labels: Sequence[int] = GRADES,
             threshold: int = BINARY_THRESHOLD) -> list[PairAgreement]:
    """κ for every pair of raters over the units both labelled: unweighted on binary
    relevance (grade ≥ threshold), unweighted, linear and quadratic on the grades. Pairs with no shared
    unit are left out."""
    k = len(labels)
    pos = {lab: i for i, lab in enumerate(labels)}
    codes = np.full(matrix.shape, -1, dtype=np.int64)
    for lab, i in pos.items():
        codes[matrix == lab] = i
    binary = np.where(np.isnan(matrix), -1, (matrix >= threshold).astype(np.int64))
    present = codes >= 0
    out = []
    for i, j in combinations(range(len(raters)), 2):
        both = present[i] & present[j]
        n = int(both.sum())
        if not n:
            continue
        ca, cb = codes[i, both], codes[j, both]
        cm = np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)
        ba, bb = binary[i, both], binary[j, both]
        cmb = np.bincount(ba * 2 + bb, minlength=4).reshape(2, 2)
        out.append(PairAgreement(raters[i], raters[j], n, float(np.trace(cm)) / n,
                                 kappa_from_confusion(cmb), kappa_from_confusion(cm, "linear"),
                                 kappa_from_confusion(cm, "quadratic"), kappa_from_confusion(cm)))
    return out


def _kappas(cms: np.ndarray, weights: Weights) -> np.ndarray:
    """κ for a stack of confusion matrices (P × k × k), NaN where undefined."""
    n = cms.sum(axis=(1, 2)).astype(float)
    w = _weight_matrix(cms.shape[1], weights)
    expected = cms.sum(axis=2)[:, :, None] * cms.sum(axis=1)[:, None, :] / np.where(n > 0, n, 1)[:, None, None]
    den = (expected * w).sum(axis=(1, 2))
    num = (cms * w).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((den > 0) & (n > 0), 1.0 - num / den, np.nan)


def pairwise_long(units: np.ndarray, raters: np.ndarray, grades: np.ndarray, names: Sequence[str],
                  labels: Sequence[int] = GRADES, threshold: int = BINARY_THRESHOLD) -> list[PairAgreement]:
    """The same table as :func:`pairwise`, from long (unit code, rater code, grade) arrays
    with one label per (unit, rater). Work grows with the number of labels, not with
    pairs × units: units are sorted, and labels d places apart within a unit form the
    pairs, so 190 pairs over 20,000 units cost a handful of array passes."""
    k, r = len(labels), len(names)
    pos = np.full(int(max(labels)) + 1, -1, dtype=np.int64)
    pos[np.asarray(labels, dtype=np.int64)] = np.arange(k)
    g = pos[np.asarray(grades, dtype=np.int64)]
    keep = g >= 0
    order = np.lexsort((raters[keep], units[keep]))
    u, rr, gg = units[keep][order], raters[keep][order], g[order]
    cells = np.zeros(r * r * k * k, dtype=np.int64)
    if len(u):
        sizes = np.diff(np.flatnonzero(np.r_[True, u[1:] != u[:-1], True]))
        for d in range(1, int(sizes.max())):
            same = u[:-d] == u[d:]
            a, b = rr[:-d][same], rr[d:][same]  # a < b: sorted by rater within a unit
            cells += np.bincount(((a * r + b) * k + gg[:-d][same]) * k + gg[d:][same], minlength=cells.size)
    return pairs_from_cells(cells.reshape(r * r, k, k), names, labels, threshold)


def pairs_from_cells(cms: np.ndarray, names: Sequence[str], labels: Sequence[int] = GRADES,
                     threshold: int = BINARY_THRESHOLD) -> list[PairAgreement]:
    """The pair table from per-pair confusion counts: ``cms[i * r + j]`` is the k×k matrix of
    rater i's grade (rows) against rater j's (columns) for i < j, raters in ``names`` order.
    Shared by :func:`pairwise_long` and the store's SQL aggregation, so both give the same
    floats from the same counts."""
    r = len(names)
    binpos = (np.asarray(labels) >= threshold).astype(np.int64)
    onehot = np.eye(2, dtype=np.int64)[binpos]  # k × 2
    cmb = np.einsum("pij,ia,jb->pab", cms, onehot, onehot)
    n = cms.sum(axis=(1, 2))
    kb, kl, kq, ku = _kappas(cmb, None), _kappas(cms, "linear"), _kappas(cms, "quadratic"), _kappas(cms, None)
    raw = np.trace(cms, axis1=1, axis2=2)
    out = []
    for i, j in combinations(range(r), 2):
        p = i * r + j
        if n[p]:
            out.append(PairAgreement(names[i], names[j], int(n[p]), float(raw[p] / n[p]),
                                     _as_kappa(kb[p], cmb[p]), _as_kappa(kl[p], cms[p], "linear"),
                                     _as_kappa(kq[p], cms[p], "quadratic"), _as_kappa(ku[p], cms[p])))
    return out


def _as_kappa(value: float, cm: np.ndarray, weights: Weights = None) -> Kappa:
    # undefined values get their reason from the scalar path (rare, cheap)
    return Kappa(float(value)) if not math.isnan(value) else kappa_from_confusion(cm, weights)


def pooled(pairs: Sequence[PairAgreement], field: str) -> float:
    """Mean of a pairwise κ over pairs, weighted by shared items (undefined pairs skipped):
    the one number a manifest carries for a group (Light's κ, weighted)."""
    vals = [(getattr(p, field), p.n) for p in pairs if not math.isnan(getattr(p, field))]
    if not vals:
        return math.nan
    return float(sum(v * n for v, n in vals) / sum(n for _, n in vals))


# ---- evidence spans ------------------------------------------------------------------------------

Span = tuple[str, int, int]  # (doc_id, start, end)


def span_overlap(x: Span, y: Span) -> float:
    """Overlap of two spans as intersection over the shorter span (0 on different documents):
    a short quote inside a longer one counts as the same evidence."""
    if x[0] != y[0]:
        return 0.0
    inter = min(x[2], y[2]) - max(x[1], y[1])
    shorter = min(x[2] - x[1], y[2] - y[1])
    return max(0, inter) / shorter if shorter > 0 else 0.0


def spans_agree(a: Sequence[Span], b: Sequence[Span], threshold: float = 0.5) -> bool:
    """Two annotators' evidence for one question agrees when both marked it unanswerable (no
    spans), or when every span of each is matched by a span of the other on the same
    document overlapping at least ``threshold``."""
    if not a or not b:
        return not a and not b
    return (all(any(span_overlap(x, y) >= threshold for y in b) for x in a)
            and all(any(span_overlap(y, x) >= threshold for x in a) for y in b))
