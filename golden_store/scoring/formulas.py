"""The formulas of the measure registry (:mod:`golden_store.scoring.measures`), vectorized
over a whole run: each takes a :class:`Ranked` and a :class:`~golden_store.scoring.measures.Measure`
and returns one value per query (numpy, no Python loop per run line or per query).

The data (trec_eval's ``res_rels``): for every query, the ranks of the retrieved documents
that are in its judgments ("pool rows": any grade, a negative grade meaning "in the pool,
not judged"), the number retrieved, and the judgments themselves. A retrieved document
outside the judgments is never stored: it has no grade and counts only through the ranks
around it and the number retrieved. Each formula's docstring gives trec_eval's (or
ir_measures') definition it reproduces; the tests check every one against pytrec_eval,
ir_measures and trec_eval's own expected outputs. Where trec_eval divides 0 by 0 (iprec_at_recall
with nothing retrieved, possible under ``-J``) the value here is 0, not NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from golden_store.scoring.measures import Measure

MIN_GEO_MEAN = 1e-5    # trec_eval: gm_map, gm_bpref
INFAP_EPSILON = 1e-5   # trec_eval: infAP
ERR_MAX_GRADE = 4      # gdeval (ir_measures' ERR): gains (2^g - 1) / 2^4


class Ranked:
    """Pool rows sorted by query then rank, with per-query totals and cached helpers."""

    def __init__(self, qids: np.ndarray, qc: np.ndarray, rank: np.ndarray, grade: np.ndarray, n_ret: np.ndarray,
                 in_run: np.ndarray, j_q: np.ndarray, j_grade: np.ndarray, num_docs: int = 0) -> None:
        self.qids = qids
        self.nq = int(qids.size)
        self.qc = qc.astype(np.int64, copy=False)
        self.rank = rank.astype(np.int64, copy=False)
        self.grade = grade.astype(np.int64, copy=False)
        self.n_ret = n_ret.astype(np.int64, copy=False)
        self.in_run = in_run
        self.j_q = j_q.astype(np.int64, copy=False)
        self.j_grade = j_grade.astype(np.int64, copy=False)
        self.num_docs = num_docs
        self._cache: dict = {}

    # ---- trec_eval's -M and -J -------------------------------------------------------------

    def limited(self, max_docs: int | None = None, judged_only: bool = False) -> Ranked:
        """``-M max_docs``: only the first ``max_docs`` retrieved documents count. ``-J``:
        only judged documents (grade >= 0) count, ranked among themselves (applied after -M,
        as trec_eval does)."""
        qc, rank, grade, n_ret = self.qc, self.rank, self.grade, self.n_ret
        if max_docs is not None:
            keep = rank <= max_docs
            qc, rank, grade = qc[keep], rank[keep], grade[keep]
            n_ret = np.minimum(n_ret, max_docs)
        if judged_only:
            keep = grade >= 0
            qc, grade = qc[keep], grade[keep]
            starts = np.searchsorted(qc, np.arange(self.nq))
            rank = np.arange(qc.size, dtype=np.int64) - starts[qc] + 1
            n_ret = np.bincount(qc, minlength=self.nq)[: self.nq].astype(np.int64)
        return Ranked(self.qids, qc, rank, grade, n_ret, self.in_run, self.j_q, self.j_grade, self.num_docs)

    # ---- helpers ---------------------------------------------------------------------------

    def cached(self, key, make: Callable[[], np.ndarray]) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def per_query(self, values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sum of ``values`` (bool or numbers) over each query's pool rows (``mask``: some)."""
        w = values.astype(np.float64, copy=False)
        if mask is not None:
            return np.bincount(self.qc[mask], weights=w[mask], minlength=self.nq)[: self.nq]
        return np.bincount(self.qc, weights=w, minlength=self.nq)[: self.nq]

    def count(self, mask: np.ndarray) -> np.ndarray:
        return np.bincount(self.qc[mask], minlength=self.nq)[: self.nq].astype(np.float64)

    @property
    def judged(self) -> np.ndarray:
        """Pool rows with a judgment (grade >= 0)."""
        return self.cached("judged", lambda: self.grade >= 0)

    def rel(self, level: int) -> np.ndarray:
        """Pool rows that are relevant: grade >= level (never a negative grade)."""
        return self.cached(("rel", level), lambda: self.grade >= max(level, 0))

    def num_rel(self, level: int) -> np.ndarray:
        """Relevant documents of each query (trec_eval num_rel)."""
        return self.cached(("num_rel", level), lambda: np.bincount(
            self.j_q, weights=(self.j_grade >= max(level, 0)).astype(np.float64), minlength=self.nq)[: self.nq])

    def num_nonrel(self, level: int) -> np.ndarray:
        """Judged non-relevant documents of each query (0 <= grade < level)."""
        return self.cached(("num_nonrel", level), lambda: np.bincount(
            self.j_q, weights=((self.j_grade >= 0) & (self.j_grade < level)).astype(np.float64),
            minlength=self.nq)[: self.nq])

    def cumcount(self, mask: np.ndarray) -> np.ndarray:
        """For each pool row: how many rows of its query up to and including it are in
        ``mask`` (rows are in rank order)."""
        c = np.cumsum(mask, dtype=np.int64)
        starts = np.searchsorted(self.qc, np.arange(self.nq))
        before = np.concatenate([[0], c])[starts]
        return c - before[self.qc]

    def within(self, k: float | None) -> np.ndarray:
        return np.ones(self.rank.size, bool) if k is None else self.rank <= k

    def group_max(self, values: np.ndarray, mask: np.ndarray, empty: float = 0.0) -> np.ndarray:
        out = np.full(self.nq, -np.inf)
        if mask.any():
            np.maximum.at(out, self.qc[mask], values[mask])
        return np.where(np.isfinite(out), out, empty)

    # ---- gains (nDCG family, G, RBP) -------------------------------------------------------

    def gain_of(self, grades: np.ndarray, m: Measure) -> np.ndarray:
        """trec_eval's gain of a grade: the grade itself (or ``gains={level: gain}``), 2^g - 1
        for ``dcg='exp-log2'``; a negative grade (not judged) has gain 0."""
        g = grades.astype(np.float64)
        if m.gain == "exp":
            out = np.exp2(g) - 1.0
        else:
            out = g.copy()
            for level, gain in (m.get("gains") or {}).items():
                out[grades == int(level)] = float(gain)
        return np.where(grades >= 0, out, 0.0)

    def ideal(self, m: Measure, k: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ideal ranking of each query: its judged documents' positive gains, best first.
        Returns (query of each entry, gain, 0-based position)."""
        key = ("ideal", m.gain, tuple(sorted((m.get("gains") or {}).items())))

        def make():
            gains = self.gain_of(self.j_grade, m)
            pos = gains > 0
            iq, ig = self.j_q[pos], gains[pos]
            o = np.lexsort((-ig, iq))
            iq, ig = iq[o], ig[o]
            istart = np.searchsorted(iq, np.arange(self.nq))
            return iq, ig, np.arange(iq.size) - istart[iq]

        iq, ig, ipos = self.cached(key, make)
        if k is not None:
            keep = ipos < k
            return iq[keep], ig[keep], ipos[keep]
        return iq, ig, ipos

    def ideal_prefix(self, m: Measure, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query, cumulative sums of ``values`` (aligned with :meth:`ideal` entries) with a
        leading 0: (flat cumulative array, each query's offset into it). ``prefix[off[q] + n]``
        is the sum over the query's first n ideal positions."""
        iq, _, _ = self.ideal(m)
        counts = np.bincount(iq, minlength=self.nq)[: self.nq]
        off = np.concatenate([[0], np.cumsum(counts + 1)])[:-1]
        flat = np.zeros(iq.size + self.nq, dtype=np.float64)
        slot = np.arange(iq.size) + iq + 1  # entry j of query q goes to off[q] + pos + 1
        flat[slot] = values
        # cumulative within each query's block (blocks start with the 0)
        c = np.cumsum(flat)
        flat = c - np.repeat(c[off], counts + 1)
        return flat, off


# ---- aggregation ------------------------------------------------------------------------------


def aggregate(values: np.ndarray, how: str) -> float:
    if values.size == 0:
        return 0.0
    if how == "sum":
        return float(values.sum())
    if how == "gmean":  # trec_eval: log of max(value, MIN_GEO_MEAN), averaged, exponentiated
        return float(math.exp(np.log(np.maximum(values, MIN_GEO_MEAN)).mean()))
    return float(values.mean())


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    b = np.asarray(b, dtype=np.float64)
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


# ---- set measures and counts ------------------------------------------------------------------


def num_q(r: Ranked, m: Measure) -> np.ndarray:
    return np.ones(r.nq)


def num_ret(r: Ranked, m: Measure) -> np.ndarray:
    if m.rel is None:
        return r.n_ret.astype(np.float64)
    return r.count(r.rel(m.rel))


def num_rel(r: Ranked, m: Measure) -> np.ndarray:
    return r.num_rel(m.threshold).copy()


def num_nonrel_judged_ret(r: Ranked, m: Measure) -> np.ndarray:
    return r.count(r.judged & (r.grade < m.threshold))


def set_p(r: Ranked, m: Measure) -> np.ndarray:
    nrr = r.count(r.rel(m.threshold))
    if m.get("relative"):
        return np.where(r.n_ret > 0, _div(nrr, np.minimum(r.n_ret, r.num_rel(m.threshold))), 0.0)
    return _div(nrr, r.n_ret)


def set_r(r: Ranked, m: Measure) -> np.ndarray:
    return _div(r.count(r.rel(m.threshold)), r.num_rel(m.threshold))


def set_f(r: Ranked, m: Measure) -> np.ndarray:
    beta = float(m.get("beta"))
    nrr = r.count(r.rel(m.threshold))
    p = _div(nrr, r.n_ret)
    rc = _div(nrr, r.num_rel(m.threshold))
    return np.where(nrr > 0, _div((beta + 1.0) * p * rc, beta * p + rc), 0.0)


def set_ap(r: Ranked, m: Measure) -> np.ndarray:
    nrr = r.count(r.rel(m.threshold))
    return _div(nrr * nrr, r.n_ret * r.num_rel(m.threshold))


def utility(r: Ranked, m: Measure) -> np.ndarray:
    a, b, c, d = (float(m.get(x)) for x in "abcd")
    nrr = r.count(r.rel(m.threshold))
    n_rel, n_ret = r.num_rel(m.threshold), r.n_ret.astype(np.float64)
    u = a * nrr + b * (n_ret - nrr) + c * (n_rel - nrr) + d * (r.num_docs + nrr - n_ret - n_rel)
    return np.where(r.in_run, u, 0.0)  # trec_eval -c: a query missing from the run scores 0


# ---- cutoff measures ----------------------------------------------------------------------------


def precision(r: Ranked, m: Measure) -> np.ndarray:
    return r.count(r.rel(m.threshold) & r.within(m.k)) / m.cutoff


def recall(r: Ranked, m: Measure) -> np.ndarray:
    return _div(r.count(r.rel(m.threshold) & r.within(m.k)), r.num_rel(m.threshold))


def success(r: Ranked, m: Measure) -> np.ndarray:
    return (r.count(r.rel(m.threshold) & r.within(m.k)) > 0).astype(np.float64)


def relative_p(r: Ranked, m: Measure) -> np.ndarray:
    return _div(r.count(r.rel(m.threshold) & r.within(m.k)), np.minimum(m.cutoff, r.num_rel(m.threshold)))


def reciprocal_rank(r: Ranked, m: Measure) -> np.ndarray:
    hit = r.rel(m.threshold) & r.within(m.k)
    first = np.full(r.nq, np.inf)
    np.minimum.at(first, r.qc[hit], r.rank[hit])
    return np.where(np.isfinite(first), 1.0 / first, 0.0)


def average_precision(r: Ranked, m: Measure) -> np.ndarray:
    hit = r.rel(m.threshold) & r.within(m.k)
    prec = r.cumcount(hit) / r.rank
    return _div(r.per_query(prec, hit), r.num_rel(m.threshold))


def rprec(r: Ranked, m: Measure) -> np.ndarray:
    n_rel = r.num_rel(m.threshold)
    return _div(r.count(r.rel(m.threshold) & (r.rank <= n_rel[r.qc])), n_rel)


def rprec_mult(r: Ranked, m: Measure) -> np.ndarray:
    """Precision at (long)(mult * R + 0.9) documents; past the end of the list the
    relevant retrieved are divided by that cutoff (trec_eval Rprec_mult)."""
    cut = np.floor(float(m.cutoff) * r.num_rel(m.threshold) + 0.9)
    return _div(r.count(r.rel(m.threshold) & (r.rank <= cut[r.qc])), cut)


def judged(r: Ranked, m: Measure) -> np.ndarray:
    """ir_measures Judged: judged share of the results shown (at most k)."""
    shown = r.n_ret.astype(np.float64) if m.k is None else np.minimum(r.n_ret, m.k).astype(np.float64)
    return _div(r.count(r.judged & r.within(m.k)), shown)


def unjudged(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval unj_k: unjudged (not in the judgments, or a negative grade) in the top k,
    divided by k."""
    shown = np.minimum(r.n_ret, m.cutoff).astype(np.float64)
    return (shown - r.count(r.judged & r.within(m.k))) / m.cutoff


# ---- interpolated precision ---------------------------------------------------------------------


def _iprec_at(r: Ranked, level: int, x: float, rule: str) -> np.ndarray:
    """trec_eval's interpolated precision at recall x: with c = lround(x * R) (trec_eval
    10; ``rule='v9'``: (long)(x * R + 0.9), trec_eval 9 and pytrec_eval), the best precision
    at or after the c-th relevant retrieved document (the first when c is 0), 0 when fewer
    than c relevant documents were retrieved."""
    rel = r.rel(level)
    nth = r.cumcount(rel)
    prec = nth / r.rank
    n_rel = r.num_rel(level)
    nrr = r.count(rel)
    cut = np.floor(x * n_rel + 0.9) if rule == "v9" else np.floor(x * n_rel + 0.5)
    need = np.maximum(cut, 1)[r.qc]
    best = r.group_max(prec, rel & (nth >= need))
    return np.where((cut <= nrr) & (nrr > 0), best, 0.0)


def iprec(r: Ranked, m: Measure) -> np.ndarray:
    return _iprec_at(r, m.threshold, float(m.cutoff), m.get("cut"))


def iprec_avg(r: Ranked, m: Measure) -> np.ndarray:
    levels = m.get("levels")
    return np.mean([_iprec_at(r, m.threshold, float(x), m.get("cut")) for x in levels], axis=0)


# ---- judgment-based ---------------------------------------------------------------------------


def bpref(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval bpref: unjudged documents (and negative grades) are skipped; each relevant
    retrieved document scores 1 - min(judged non-relevant above, R) / min(N, R)."""
    rel = r.rel(m.threshold)
    nonrel = r.judged & ~rel
    above = r.cumcount(nonrel)  # at a relevant row, nonrel rows above it (it is not one)
    n_rel, n_non = r.num_rel(m.threshold), r.num_nonrel(m.threshold)
    denom = np.minimum(n_rel, n_non)[r.qc]
    term = np.where(above > 0, 1.0 - np.minimum(above, n_rel[r.qc]) / np.where(denom > 0, denom, 1.0), 1.0)
    return _div(r.per_query(term, rel), n_rel)


def infap(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval infAP (Yilmaz and Aslam): at each relevant document at 0-based position j,
    1/(j+1) + j/(j+1) * (pool docs above / j) * (rel above + e) / (judged above + 2e)."""
    rel = r.rel(m.threshold)
    rel_above = r.cumcount(rel) - 1
    nonrel_above = r.cumcount(r.judged & ~rel)
    pool_unj_above = r.cumcount(~r.judged)
    j = (r.rank - 1).astype(np.float64)
    js = np.where(j > 0, j, 1.0)
    term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_above + nonrel_above + pool_unj_above) / js) * \
        ((rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON))
    term = np.where(j == 0, 1.0, term)
    return _div(r.per_query(term, rel), r.num_rel(m.threshold))


# ---- gain-based ---------------------------------------------------------------------------------


def _dcg_rows(r: Ranked, m: Measure) -> tuple[np.ndarray, np.ndarray]:
    gain = r.gain_of(r.grade, m)
    return gain, gain / np.log2(r.rank + 1.0)


def ndcg(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval ndcg / ndcg_cut: DCG with gain / log2(rank + 1) over the ranking (cut at
    k), divided by the DCG of the ideal ranking (the query's judged gains, best first, cut
    at k)."""
    _, disc = _dcg_rows(r, m)
    dcg = r.per_query(disc, r.within(m.k))
    iq, ig, ipos = r.ideal(m, m.k)
    idcg = np.bincount(iq, weights=ig / np.log2(ipos + 2.0), minlength=r.nq)[: r.nq]
    return _div(dcg, idcg)


def _ideal_dcg_prefix(r: Ranked, m: Measure):
    iq, ig, ipos = r.ideal(m)
    flat, off = r.ideal_prefix(m, ig / np.log2(ipos + 2.0))
    n_pos = np.bincount(iq, minlength=r.nq)[: r.nq]
    return flat, off, n_pos


def ndcg_rel(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval ndcg_rel: nDCG averaged over the relevant (positive-gain) documents: at each
    retrieved one, DCG so far / ideal DCG so far; each one not retrieved adds the final
    DCG / ideal DCG."""
    gain, disc = _dcg_rows(r, m)
    dcg_cum = _cumsum_by_query(r, disc)
    flat, off, n_pos = _ideal_dcg_prefix(r, m)
    pos = gain > 0
    upto = np.minimum(r.rank, n_pos[r.qc])
    idcg_here = flat[off[r.qc] + upto]
    s = r.per_query(_safe_ratio(dcg_cum, idcg_here), pos)
    dcg_total = r.per_query(disc)
    idcg_total = flat[off + n_pos]
    s = s + (n_pos - r.count(pos)) * _div(dcg_total, idcg_total)
    return np.where(s > 0, _div(s, n_pos), 0.0)


def _cumsum_by_query(r: Ranked, values: np.ndarray) -> np.ndarray:
    c = np.cumsum(values)
    starts = np.searchsorted(r.qc, np.arange(r.nq))
    before = np.concatenate([[0.0], c])[starts]
    return c - before[r.qc]


def _safe_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(b != 0, a / np.where(b != 0, b, 1.0), 0.0)


def rndcg(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval Rndcg: nDCG averaged at the R-level points: each place b where the ideal
    gain changes (the end of a gain level, and where positive gains run out), nDCG over the
    first b documents; plus nDCG of the whole list when it runs on past the last relevant
    point (num_ret > R' + 1, trec_eval's exact rule)."""
    iq, ig, ipos = r.ideal(m)
    flat, off, n_pos = _ideal_dcg_prefix(r, m)
    _, disc = _dcg_rows(r, m)
    # boundaries b (1..P): ideal gain at position b differs from position b-1 (0 after the last)
    nxt = np.append(ig[1:], 0.0)
    last = np.append(iq[1:] != iq[:-1], True)
    nxt = np.where(last, 0.0, nxt)
    change = nxt != ig
    bq, b = iq[change], ipos[change] + 1
    # DCG over the first min(b, num_ret) ranks: pool rows with rank <= b
    dcg_at = _dcg_upto(r, disc, bq, b)
    terms = _safe_ratio(dcg_at, flat[off[bq] + b])
    total = np.bincount(bq, weights=terms, minlength=r.nq)[: r.nq]
    count = np.bincount(bq, minlength=r.nq)[: r.nq].astype(np.float64)
    tail = (n_pos + 1 < r.n_ret) & (flat[off + n_pos] > 0)
    total += np.where(tail, _safe_ratio(r.per_query(disc), flat[off + n_pos]), 0.0)
    count += tail
    out = _div(total, count)
    return np.where(r.num_rel(m.threshold) > 0, out, 0.0)


def _dcg_upto(r: Ranked, disc: np.ndarray, bq: np.ndarray, b: np.ndarray) -> np.ndarray:
    """DCG of query ``bq[i]`` over its ranks <= ``b[i]`` (pool rows carry all the gain)."""
    if r.rank.size == 0:
        return np.zeros(bq.size)
    cum = _cumsum_by_query(r, disc)
    scale = int(r.rank.max()) + 1
    keys = r.qc * scale + r.rank
    idx = np.searchsorted(keys, bq.astype(np.int64) * scale + np.minimum(b, scale - 1), side="right") - 1
    starts = np.searchsorted(r.qc, np.arange(r.nq))
    ok = idx >= starts[bq]
    return np.where(ok, cum[np.maximum(idx, 0)], 0.0)


def gain_g(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval G (experimental): each retrieved document with gain g at 0-based position i
    adds g / log2(2 + cost(i) - gain so far), cost(i) summing max(ideal gain, 1) over the
    first i + 1 positions; normalized by the total ideal gain."""
    iq, ig, ipos = r.ideal(m)
    extra, off = r.ideal_prefix(m, np.maximum(ig, 1.0) - 1.0)
    n_pos = np.bincount(iq, minlength=r.nq)[: r.nq]
    gain, _ = _dcg_rows(r, m)
    so_far = _cumsum_by_query(r, gain)
    cost = r.rank + extra[off[r.qc] + np.minimum(r.rank, n_pos[r.qc])]
    term = np.where(gain != 0, gain / np.log2(2.0 + cost - so_far), 0.0)
    sum_ideal = np.bincount(iq, weights=ig, minlength=r.nq)[: r.nq]
    return np.where(sum_ideal > 0, _safe_ratio(r.per_query(term), sum_ideal), 0.0)


def bin_g(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval binG: average over the relevant documents of 1 / log2(2 + non-relevant
    retrieved before it)."""
    rel = r.rel(m.threshold)
    term = 1.0 / np.log2(2.0 + r.rank - r.cumcount(rel))
    return np.where(r.count(rel) > 0, _div(r.per_query(term, rel), r.num_rel(m.threshold)), 0.0)


def err(r: Ranked, m: Measure) -> np.ndarray:
    """ERR@k as gdeval computes it (ir_measures' ERR): R = (2^g - 1) / 2^4 for grades 1-4;
    sum over ranks of R / rank times the chance no earlier document satisfied."""
    from golden_store.core.errors import ValidationError

    if (r.j_grade > ERR_MAX_GRADE).any():
        raise ValidationError(f"ERR takes grades up to {ERR_MAX_GRADE} (gdeval's scale); these judgments go to "
                              f"{int(r.j_grade.max())}.")
    hit = (r.grade > 0) & r.within(m.k)
    g = np.where(hit, r.grade, 0).astype(np.float64)
    rr = (np.exp2(g) - 1.0) / 2.0 ** ERR_MAX_GRADE
    keep = np.log1p(-rr)
    before = _cumsum_by_query(r, keep) - keep  # log of the chance no earlier document satisfied
    return r.per_query(rr * np.exp(before) / r.rank, hit)


def _rbp_gain(r: Ranked, m: Measure) -> np.ndarray:
    if m.rel is not None:
        return r.rel(m.rel).astype(np.float64)
    # trec_eval rbp: gain = grade over levels 0..top grade of the query, scaled to [0, 1]
    # when the top grade is above 1
    top = np.full(r.nq, 0.0)
    ok = r.j_grade >= 0
    np.maximum.at(top, r.j_q[ok], r.j_grade[ok].astype(np.float64))
    gain = r.gain_of(r.grade, m)
    scale = np.where(top > 1, top, 1.0)[r.qc]
    return gain / scale


def rbp(r: Ranked, m: Measure) -> np.ndarray:
    """Rank-biased precision (Moffat and Zobel): (1 - p) * sum of gain * p^(rank - 1)."""
    p = float(m.get("p"))
    gain = _rbp_gain(r, m)
    return (1.0 - p) * r.per_query(gain * np.power(p, r.rank - 1.0))


def rbp_resid(r: Ranked, m: Measure) -> np.ndarray:
    """trec_eval rbp_resid: what RBP could still gain if every unjudged retrieved document
    had gain 1: p^n + (1 - p) * sum over unjudged positions of p^(rank - 1); 0 when none is
    unjudged."""
    p = float(m.get("p"))
    n = r.n_ret.astype(np.float64)
    judged_w = r.per_query(np.power(p, r.rank - 1.0), r.judged)
    all_w = np.where(p == 1.0, n, (1.0 - np.power(p, n)) / (1.0 - p if p != 1.0 else 1.0))
    value = np.power(p, n) + (1.0 - p) * (all_w - judged_w)
    unj = n - r.count(r.judged)
    return np.where((unj > 0) & r.in_run, value, 0.0)
