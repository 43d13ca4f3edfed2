"""The agreement report (``agreement_report``) from counts instead of labels (issue 19).

Why: κ needs only each pair's confusion counts and α only each unit's count of every grade,
so the store aggregates those in SQL (a few thousand rows) and these functions turn them
into the same figures ``agreement_report`` computes from the per-label frame, through the
same κ/α code (``pairs_from_cells``, the ``krippendorff`` package), so the numbers are equal
(tests compare both ways on generated stores). Pure: plain frames in, plain data out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from golden_store.scoring.agreement import (
    BINARY_THRESHOLD,
    GRADES,
    krippendorff_alpha_counts,
    kappa_from_confusion,
    pairs_from_cells,
    pooled,
)
from golden_store.scoring.agreement_report import GRADED_WEIGHTS, GroupAgreement

K = len(GRADES)
_C = [f"c{g}" for g in GRADES]


def cells(pairs: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """(P × k × k confusion stack indexed i * r + j, rater names) from rows a, b, ga, gb, n."""
    # rater names to positions vectorised (pd.unique, Categorical codes): the pair frames of a
    # team hold ~10^5 rows, and a per-element Python map cost most of the Agreement page
    names = sorted(set(pd.unique(pairs["a"])) | set(pd.unique(pairs["b"]))) if len(pairs) else []
    r = len(names)
    out = np.zeros(r * r * K * K, dtype=np.int64)
    if r:
        ia = pd.Categorical(pairs["a"], categories=names).codes.astype(np.int64)
        ib = pd.Categorical(pairs["b"], categories=names).codes.astype(np.int64)
        idx = ((ia * r + ib) * K + pairs["ga"].to_numpy(np.int64)) * K + pairs["gb"].to_numpy(np.int64)
        np.add.at(out, idx, pairs["n"].to_numpy(np.int64))
    return out.reshape(r * r, K, K), names


def group(pairs: pd.DataFrame, units: pd.DataFrame, actors: list[str]) -> GroupAgreement:
    """``agreement_report.group`` from pair counts (a, b, ga, gb, n) and per-unit grade counts
    (c0..c3, units graded by two or more, in unit order); ``actors``: everyone who graded,
    named when no unit has two labels (as the per-label version does)."""
    if not len(units):
        nan = math.nan
        return GroupAgreement(0, list(actors), [], nan, nan, nan, nan, nan, nan, nan)
    cms, names = cells(pairs)
    return group_of_cells(cms, names, units, actors)


def group_of_cells(cms: np.ndarray, names: list[str], units: pd.DataFrame, actors: list[str]) -> GroupAgreement:
    """:func:`group` from the pairs' confusion stack (``cells``) and the per-unit counts."""
    if not len(units):
        nan = math.nan
        return GroupAgreement(0, list(actors), [], nan, nan, nan, nan, nan, nan, nan)
    ps = pairs_from_cells(cms, names)
    vc = units[_C].to_numpy(np.int64)
    binary = np.stack([vc[:, [g for g in GRADES if g < BINARY_THRESHOLD]].sum(axis=1),
                       vc[:, [g for g in GRADES if g >= BINARY_THRESHOLD]].sum(axis=1)], axis=1)
    raw_n = sum(p.raw * p.n for p in ps)
    return GroupAgreement(
        n_units=len(units), annotators=names, pairs=ps,
        kappa_binary=pooled(ps, "kappa_binary"), kappa_linear=pooled(ps, "kappa_linear"),
        kappa_quadratic=pooled(ps, "kappa_quadratic"), kappa_unweighted=pooled(ps, "kappa_unweighted"),
        raw=raw_n / sum(p.n for p in ps),
        alpha_ordinal=float(krippendorff_alpha_counts(vc, "ordinal", GRADES)),
        alpha_nominal_binary=float(krippendorff_alpha_counts(binary, "nominal", (0, 1))),
    )


def by(pairs: pd.DataFrame, units: pd.DataFrame, column: str) -> pd.DataFrame:
    """``agreement_report.by``: group figures per value of ``column`` (present in both)."""
    out: list[dict[str, Any]] = []
    if not len(units):
        return pd.DataFrame(out)
    units = units.dropna(subset=[column])
    # rater codes and row positions per value once for the whole frame (a Categorical and an
    # equality scan per value cost most of the Agreement page's cold time: 30+ weeks/strata)
    coded = _coded(pairs)
    rows = pairs.groupby(column, sort=False).indices if len(pairs) else {}
    empty = np.zeros(0, dtype=np.int64)
    for key, part in units.groupby(column, sort=True):
        g = _group_coded(coded, rows.get(key, empty), part)
        if g.n_units:
            out.append({column: key, **{k: v for k, v in g.summary().items() if k != "annotators"}})
    return pd.DataFrame(out)


def _coded(pairs: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(every rater name sorted, each row's cell index in the all-raters stack, its count)."""
    names = sorted(set(pd.unique(pairs["a"])) | set(pd.unique(pairs["b"]))) if len(pairs) else []
    r = len(names)
    if not r:
        return names, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ia = pd.Categorical(pairs["a"], categories=names).codes.astype(np.int64)
    ib = pd.Categorical(pairs["b"], categories=names).codes.astype(np.int64)
    idx = ((ia * r + ib) * K + pairs["ga"].to_numpy(np.int64)) * K + pairs["gb"].to_numpy(np.int64)
    return names, idx, pairs["n"].to_numpy(np.int64)


def _group_coded(coded: tuple[list[str], np.ndarray, np.ndarray], rows: np.ndarray,
                 units: pd.DataFrame) -> GroupAgreement:
    """:func:`group` of the pair rows at positions ``rows``: their cells summed in the
    all-raters stack, then narrowed to the raters those rows name (what :func:`cells` of the
    same rows gives: the same integer counts, the same sorted names)."""
    names, idx, n = coded
    r = len(names)
    full = np.zeros(r * r * K * K, dtype=np.int64)
    if len(rows):
        np.add.at(full, idx[rows], n[rows])
    cells = full.reshape(r, r, K, K)
    per_rater = cells.sum(axis=(2, 3))
    present = np.flatnonzero((per_rater.sum(axis=1) + per_rater.sum(axis=0)) > 0)
    sub = cells[np.ix_(present, present)].reshape(len(present) ** 2, K, K)
    return group_of_cells(sub, [names[i] for i in present], units, [])


def distributions(grades: pd.DataFrame) -> pd.DataFrame:
    """``agreement_report.distributions`` from (actor, grade, n) counts."""
    if not len(grades):
        return pd.DataFrame(columns=list(GRADES))
    counts = grades.pivot_table(index="actor", columns="grade", values="n", aggfunc="sum", fill_value=0)
    counts = counts.reindex(columns=list(GRADES), fill_value=0).astype(np.int64)
    counts.columns.name = "grade"
    return counts.div(counts.sum(axis=1), axis=0)


def drift(gold: pd.DataFrame) -> pd.DataFrame:
    """``agreement_report.drift`` from (actor, grade, gold, adjudicated, n) counts."""
    if not len(gold):
        return pd.DataFrame()
    out = []
    for actor, part in gold.groupby("actor", sort=True):
        cm = _confusion(part, "grade", "gold")
        adj = part[part["adjudicated"]]
        n, n_adj = int(cm.sum()), int(adj["n"].sum())
        bcm = np.array([[cm[:BINARY_THRESHOLD, :BINARY_THRESHOLD].sum(), cm[:BINARY_THRESHOLD, BINARY_THRESHOLD:].sum()],
                        [cm[BINARY_THRESHOLD:, :BINARY_THRESHOLD].sum(), cm[BINARY_THRESHOLD:, BINARY_THRESHOLD:].sum()]])
        out.append({
            "annotator": actor, "n_units": n, "n_adjudicated": n_adj,
            "raw_vs_gold": float(np.trace(cm)) / n if n else math.nan,
            "kappa_binary_vs_gold": float(kappa_from_confusion(bcm)),
            "kappa_linear_vs_gold": float(kappa_from_confusion(cm, GRADED_WEIGHTS)),
            "raw_on_adjudicated": float(np.trace(_confusion(adj, "grade", "gold"))) / n_adj if n_adj else math.nan,
        })
    return pd.DataFrame(out)


def _confusion(rows: pd.DataFrame, a: str, b: str) -> np.ndarray:
    cm = np.zeros((K, K), dtype=np.int64)
    np.add.at(cm, (rows[a].to_numpy(np.int64), rows[b].to_numpy(np.int64)), rows["n"].to_numpy(np.int64))
    return cm
