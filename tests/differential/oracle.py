"""Independent oracles for the differential harness (issue 36, the lasting fix).

Nothing here imports the studio (``golden_store``, ``annotator``, ``http_api``): every rule is
written from its statement (DESIGN.md's scoring conventions, the issue, the modules'
docstrings read as specifications), and the arithmetic is done by reference tools: pytrec_eval
(trec_eval), ir_measures, scipy, numpy. Inputs are plain Python data (tuples, dicts).

Labels, as the generated stores hold them:

* ``evidence``: (query, doc, start, end): an expert's quote, grade 3;
* ``grades``: (query, doc, start, end, grade, who): one person's (or one import's) current
  grade of an item; an item's FINAL grade is the grade when every grader of it agrees, none
  when they disagree (a disagreement waits for a lead);
* a grade whose item is the whole document ([0, len(text))) is a document-level grade.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pytrec_eval
import scipy.stats

REL = 2  # the studio's relevance level: binary measures count grade >= 2
# the studio's measure key -> (pytrec_eval measure, evaluated at relevance level 2?)
DOC_MEASURES = {
    "nDCG@10": ("ndcg_cut_10", False),
    "R(rel=2)@10": ("recall_10", True),
    "AP(rel=2)": ("map", True),
    "P(rel=2)@5": ("P_5", True),
    "RR(rel=2)": ("recip_rank", True),
}
IR_MEASURES = {"nDCG@10": "nDCG@10", "R(rel=2)@10": "R(rel=2)@10", "AP(rel=2)": "AP(rel=2)",
               "P(rel=2)@5": "P(rel=2)@5", "RR(rel=2)": "RR(rel=2)"}
NO_HIT = "__oracle_nothing_hit__"


# ---- labels -----------------------------------------------------------------------------------

def final_grades(grades: Iterable[tuple[str, str, int, int, int, str]]) -> dict[tuple[str, str, int, int], int]:
    """(query, doc, start, end) -> final grade: the grade every grader of the item gave (a
    later grade by the same grader replaces the earlier); items graded differently by two
    graders have none."""
    by_item: dict[tuple[str, str, int, int], dict[str, int]] = {}
    for q, d, s, e, g, who in grades:
        by_item.setdefault((q, d, int(s), int(e)), {})[who] = int(g)
    return {item: next(iter(set(gs.values()))) for item, gs in by_item.items() if len(set(gs.values())) == 1}


def document_qrels(evidence, finals: Mapping[tuple[str, str, int, int], int],
                   unanswerable: Iterable[str]) -> dict[str, dict[str, int]]:
    """A document run's qrels: per answerable question with any label, doc -> max(3 if the
    question has an evidence quote in the doc, the highest final grade of its items in the
    doc); grade-0 rows are kept (judged non-relevant)."""
    neg = set(unanswerable)
    out: dict[str, dict[str, int]] = {}
    for q, d, _s, _e in evidence:
        if q not in neg:
            out.setdefault(q, {})[d] = 3
    for (q, d, _s, _e), g in finals.items():
        if q not in neg:
            docs = out.setdefault(q, {})
            docs[d] = max(docs.get(d, g), g)
    return out


def trec_order(lines: Iterable[tuple[str, float]]) -> list[str]:
    """trec_eval's ranking of (id, score) lines: score descending, then id descending."""
    return [i for i, _ in sorted(lines, key=lambda t: (-t[1], _desc(t[0])))]


def _desc(s: str):
    # a key that sorts strings in descending order when used ascending
    return tuple(-ord(c) for c in s) + (1,)


# ---- pytrec_eval / ir_measures ------------------------------------------------------------------

def trec_scores(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                measures: Mapping[str, tuple[str, bool]] = DOC_MEASURES) -> dict[str, dict[str, float]]:
    """Per qrels question, each measure by pytrec_eval: binary measures at relevance level 2,
    nDCG on the grades (linear gain, trec_eval's ndcg_cut). A question the run does not rank
    scores 0 on every measure (trec_eval -c)."""
    binary = {pm for pm, b in measures.values() if b}
    graded = {pm for pm, b in measures.values() if not b}
    q = {k: {d: int(g) for d, g in v.items()} for k, v in qrels.items()}
    r = {k: {d: float(s) for d, s in v.items()} for k, v in run.items() if k in q and v}
    got_b = pytrec_eval.RelevanceEvaluator(q, binary, relevance_level=REL).evaluate(r) if binary else {}
    got_g = pytrec_eval.RelevanceEvaluator(q, graded).evaluate(r) if graded else {}
    out = {}
    for qid in q:
        row = {}
        for name, (pm, b) in measures.items():
            src = got_b if b else got_g
            row[name] = float(src[qid][pm]) if qid in src else 0.0
        out[qid] = row
    return out


def ir_measures_scores(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                       names: Iterable[str]) -> dict[str, dict[str, float]]:
    """The same through ir_measures (its own measure parser and provider choice); a question
    the run does not rank scores 0."""
    import ir_measures

    ms = {n: ir_measures.parse_measure(IR_MEASURES[n]) for n in names}
    q = [ir_measures.Qrel(qid, d, int(g)) for qid, docs in qrels.items() for d, g in docs.items()]
    r = [ir_measures.ScoredDoc(qid, d, float(s)) for qid, docs in run.items() if qid in qrels
         for d, s in docs.items()]
    out = {qid: {n: 0.0 for n in ms} for qid in qrels}
    back = {str(m): n for n, m in ms.items()}
    for m in ir_measures.iter_calc(list(ms.values()), q, r):
        out[m.query_id][back[str(m.measure)]] = float(m.value)
    return out


# ---- passage runs: units ----------------------------------------------------------------------

def hits(rule: str, span: tuple[int, int], chunk: tuple[int, int]) -> bool:
    (s, e), (cs, ce) = span, chunk
    if rule == "any_overlap":
        return cs < e and s < ce
    if rule == "contains_span":
        return cs <= s and e <= ce
    raise ValueError(rule)


def passage_unit_qrels(*, evidence, finals: Mapping[tuple[str, str, int, int], int], doc_len: Mapping[str, int],
                       lines: list[tuple[str, str, str, int, int, float]], rule: str,
                       queries: Iterable[str]) -> dict[str, dict[str, int]]:
    """A passage run's qrels, counted from scratch. ``lines``: (query, passage id, doc, start,
    end, score) of the run.

    Finer labels (evidence, grade 3; final grades of items that are not a whole document)
    reach every chunk the run shows (any question's line) through the hit rule: a chunk's
    grade is the highest grade of the question's finer labels it hits. A whole-document
    final grade is ONE unit of its (question, document), unless the question's finer labels
    in that document reach its grade: credited to the question's best-ranked chunk of the
    document (score descending, then id descending), whatever the hit rule; the document's
    other chunks in the question's ranking count 0; not retrieved, a unit no passage has.
    A subsumed document's chunks in the ranking count 0 where nothing finer grades them."""
    chunks: dict[str, tuple[str, int, int]] = {}
    for _q, pid, d, s, e, _sc in lines:
        chunks.setdefault(pid, (d, int(s), int(e)))
    finer: dict[str, list[tuple[str, int, int, int]]] = {}
    whole: dict[tuple[str, str], int] = {}
    for q, d, s, e in evidence:
        finer.setdefault(q, []).append((d, int(s), int(e), 3))
    for (q, d, s, e), g in finals.items():
        if s == 0 and e == doc_len[d]:
            whole[(q, d)] = max(whole.get((q, d), g), g)
        else:
            finer.setdefault(q, []).append((d, s, e, g))
    out: dict[str, dict[str, int]] = {}
    for q in queries:
        qr: dict[str, int] = {}
        for pid, (d, cs, ce) in chunks.items():
            gs = [g for fd, s, e, g in finer.get(q, []) if fd == d and hits(rule, (s, e), (cs, ce))]
            if gs:
                qr[pid] = max(gs)
        own = [(pid, d, sc) for lq, pid, d, _s, _e, sc in lines if lq == q]
        for (wq, d), g in sorted(whole.items()):
            if wq != q:
                continue
            top = max((g2 for fd, _s, _e, g2 in finer.get(q, []) if fd == d), default=None)
            mine = trec_order([(pid, sc) for pid, dd, sc in own if dd == d])
            if top is not None and top >= g:  # subsumed: no unit, its chunks judged
                for pid in mine:
                    qr.setdefault(pid, 0)
                continue
            if not mine:
                qr[f"__missed_unit__/{d}"] = g
                continue
            qr[mine[0]] = max(qr.get(mine[0], g), g)
            for pid in mine[1:]:
                qr.setdefault(pid, 0)
        out[q] = qr or {NO_HIT: 0}
    return out


# ---- comparisons ------------------------------------------------------------------------------

MIN_N, SMALL_N = 6, 30


def sign_flip_p_scipy(d: np.ndarray, n_resamples: float = np.inf, seed: int = 1) -> float:
    """scipy's paired randomization (sign-flip) test, two-sided, on the non-zero differences."""
    nz = np.asarray(d, dtype=float)
    nz = nz[nz != 0]
    if nz.size <= 1:  # no difference, or one: both of its sign patterns are as far from 0 (scipy needs 2)
        return 1.0
    # the mean rounded to 12 decimals: sign patterns whose sums are equal in exact arithmetic
    # (+0.3691 and -0.3691 swapped, with the rest cancelling) differ by float noise (~1e-17) when
    # summed in another order, and scipy's tie tolerance, relative to the observed statistic,
    # then counts some tied patterns as less extreme (0.9985 where exact counting gives 1.0)
    res = scipy.stats.permutation_test((nz,), lambda x, axis: np.round(np.mean(x, axis=axis), 12),
                                       permutation_type="samples",
                                       alternative="two-sided", n_resamples=n_resamples,
                                       rng=np.random.default_rng(seed))
    return float(res.pvalue)


def exact_possible(d: np.ndarray, limit: int = 20) -> bool:
    return int((np.asarray(d) != 0).sum()) <= limit


def compare_cells(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]],
                  strata: Mapping[str, str], metrics: list[str]) -> dict:
    """The expected comparison of two per-question score tables (question -> metric -> value):
    per metric, the overall cell and one per stratum: n, delta = mean(b - a), wins/losses/
    ties, and (n >= 6) the sign-flip p from scipy for n < 30. Then BH over every cell that has
    a p (scipy.stats.false_discovery_control)."""
    out: dict = {}
    for m in metrics:
        qs = sorted(set(a) & set(b))
        d_all = np.array([b[q][m] - a[q][m] for q in qs], dtype=float)

        def cell(d: np.ndarray) -> dict:
            c = {"n": int(d.size), "delta": float(np.mean(d)) if d.size else 0.0, "wins": int((d > 0).sum()),
                 "losses": int((d < 0).sum()), "ties": int((d == 0).sum()), "d": d}
            if d.size < MIN_N:
                c["verdict"] = "too few"
            return c

        entry = cell(d_all)
        entry["strata"] = {}
        for s in sorted({strata[q] for q in qs}):
            idx = [i for i, q in enumerate(qs) if strata[q] == s]
            entry["strata"][s] = cell(d_all[idx])
        out[m] = entry
    return out


def bh(ps: list[float]) -> list[float]:
    return [float(x) for x in scipy.stats.false_discovery_control(np.asarray(ps, dtype=float), method="bh")] \
        if ps else []


def bootstrap_interval(d: np.ndarray, seed: int, n_boot: int = 10_000, level: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval of mean(d) by scipy (its own resampling), to bound
    the studio's at another seed."""
    if np.all(d == d[0]):
        return float(d[0]), float(d[0])
    res = scipy.stats.bootstrap((d,), np.mean, n_resamples=n_boot, method="percentile", confidence_level=level,
                                rng=np.random.default_rng(seed), vectorized=True)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


# ---- the pool ----------------------------------------------------------------------------------

def pool_figures(finals: Mapping[tuple[str, str, int, int], int], unanswerable: Iterable[str],
                 run_lines: list[tuple[str, str, float]], doc_len: Mapping[str, int]) -> dict[str, float]:
    """AP and Bpref (relevant = final grade >= 2) of a TREC document run over the items people
    graded, by pytrec_eval: the qrels are the answerable questions' final grades keyed by item
    (a document result is the item [0, len)); the mean is over every such question, a
    question the run does not rank scoring 0. The run in trec_eval's order; a document the run
    repeats for a question (trec_eval refuses such a run) keeps its first place, its later
    places are held by an unjudged stand-in."""
    neg = set(unanswerable)
    qrels: dict[str, dict[str, int]] = {}
    for (q, d, s, e), g in finals.items():
        if q not in neg:
            qrels.setdefault(q, {})[f"{d}|{s}|{e}"] = g
    by_q: dict[str, list[tuple[str, float]]] = {}
    for q, d, sc in run_lines:
        by_q.setdefault(q, []).append((d, sc))
    run: dict[str, dict[str, float]] = {}
    for q, ls in by_q.items():
        if q not in qrels:
            continue
        order = [d for d, _ in sorted(ls, key=lambda t: (-t[1], _desc(t[0])))]
        seen: set[str] = set()
        r: dict[str, float] = {}
        for pos, d in enumerate(order):
            key = f"{d}|0|{doc_len[d]}" if d not in seen else f"__stand_in__{pos}"
            seen.add(d)
            r[key] = float(len(order) - pos)
        run[q] = r
    if not qrels:
        return {}
    got = pytrec_eval.RelevanceEvaluator(qrels, {"map", "bpref"}, relevance_level=REL).evaluate(run)
    n = len(qrels)
    return {"ap": sum(got[q]["map"] for q in got) / n, "bpref": sum(got[q]["bpref"] for q in got) / n,
            "n": n}


def close(x: float, y: float, tol: float = 1e-9) -> bool:
    return math.isclose(x, y, rel_tol=tol, abs_tol=tol)
