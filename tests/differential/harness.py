"""The differential harness: drive the studio on a generated world and hold every number it
gives against the oracles (``tests/differential/oracle.py``, which share no code with it).

:func:`check_world` builds the world's store, runs the studio through its public entry points
(the ``golden`` CLI with ``--json``; ``golden_store.scoring.evaluate`` on the loaded version
for the passage runs of every chunker under both hit rules, with explicit passage ids and
ties in score), and returns the mismatches found, one sentence each (an empty list: every
number agreed). The mutation tests call it with a formula or a filter of the studio broken on
purpose and expect a non-empty list.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tests.differential import oracle
from tests.differential.world import World, build_store

MEASURE_ARGS = ["-m", "nDCG@10", "-m", "R@10", "-m", "AP", "-m", "P@5", "-m", "RR"]
MEASURES = list(oracle.DOC_MEASURES)  # the studio's keys for the above
PASSAGE_MEASURES = {"nDCG@10": ("ndcg_cut_10", False), "R(rel=2)@10": ("recall_10", True),
                    "RR(rel=2)": ("recip_rank", True)}
COMPARED = ["nDCG@10", "R(rel=2)@10"]
TOL = 1e-9
PARTS = ("score", "export", "passages", "compare", "pool")


@dataclass
class Report:
    mismatches: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)  # what was compared, how many numbers

    def count(self, what: str, n: int = 1) -> None:
        self.checked[what] = self.checked.get(what, 0) + n

    def expect(self, ok: bool, what: str) -> None:
        if not ok:
            self.mismatches.append(what)


def golden(db: Path, *args: str) -> tuple[int, str, str]:
    """``golden --db DB ARGS`` in this process (annotator.cli.main): exit code, stdout, stderr."""
    from annotator.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--db", str(db), *args])
    return rc, out.getvalue(), err.getvalue()


def _same(a: float, b: float, tol: float = TOL) -> bool:
    return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)


def check_world(w: World, root: Path, template: Path | None = None, parts: tuple[str, ...] = PARTS) -> Report:
    from annotator.process import context

    rep = Report()
    db = build_store(w, root, template)
    try:
        finals = oracle.final_grades(w.all_grades())
        qrels = oracle.document_qrels(w.evidence, finals, w.unanswerable)
        runs = {name: _run_dict(lines) for name, lines in w.doc_runs.items()}
        expected = {name: oracle.trec_scores(qrels, r) for name, r in runs.items()}
        refused = {name: _refused(qrels, lines) for name, lines in w.doc_runs.items()}
        if "score" in parts or "export" in parts:
            got = _check_score(rep, db, root, w, qrels, runs, expected, refused)
            if "export" in parts:
                _check_export(rep, db, root, qrels, runs, got, refused)
        if "passages" in parts:
            _check_passages(rep, db, root, w, finals, qrels)
        if "compare" in parts:
            _check_compare(rep, db, root, w, qrels, expected, refused)
        if "pool" in parts:
            _check_pool(rep, db, root, w, finals)
    finally:
        context.close_all()
    return rep


def _run_dict(lines) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, d, sc in lines:
        out.setdefault(q, {})[d] = float(sc)
    return out


def _refused(qrels, lines) -> list[tuple[str, str]]:
    """trec_eval's rule: a run listing a document twice for a scored question is refused."""
    seen, dup = set(), []
    for q, d, _sc in lines:
        if q in qrels and (q, d) in seen:
            dup.append((q, d))
        seen.add((q, d))
    return dup


# ---- 1. golden score --version V --run R (document runs) ---------------------------------------

def _check_score(rep, db, root, w, qrels, runs, expected, refused) -> dict[str, dict]:
    got_all = {}
    for name in runs:
        rc, out, err = golden(db, "score", "--version", "v1", "--run", str(root / f"{name}.trec"), *MEASURE_ARGS,
                              "--json", "--per-query")
        if not qrels:
            rep.expect(rc != 0 and "no labeled queries" in err, f"score {name}: no labeled question, expected a "
                       f"refusal, got rc {rc} {err[-300:]!r}")
            continue
        if refused[name]:
            q, d = refused[name][0]
            rep.expect(rc != 0 and "more than once" in err,
                       f"score {name}: the run lists {d} twice for {q}; trec_eval refuses it, studio rc {rc}")
            rep.count("duplicate refusals")
            continue
        if rc != 0:
            rep.mismatches.append(f"score {name}: rc {rc}: {err[-500:]}")
            continue
        res = json.loads(out)
        got_all[name] = res
        exp = expected[name]
        pq = res["per_query"]
        rep.expect(set(pq) == set(exp), f"score {name}: scored questions {sorted(pq)} != oracle {sorted(exp)}")
        rep.expect(res["n_queries"] == len(exp), f"score {name}: n_queries {res['n_queries']} != {len(exp)}")
        neg_labeled = sorted(q for q in w.unanswerable if q in _labeled(w))
        left = res.get("left_out", {}).get("unanswerable", {}).get("query_ids", [])
        rep.expect(sorted(left) == neg_labeled, f"score {name}: left out {left} != unanswerable labeled {neg_labeled}")
        irm = oracle.ir_measures_scores(qrels, runs[name], MEASURES)
        for q in exp:
            for m in MEASURES:
                g = pq.get(q, {}).get(m)
                rep.expect(g is not None and _same(g, exp[q][m]),
                           f"score {name}: {q} {m} studio {g} != pytrec_eval {exp[q][m]}")
                rep.expect(_same(exp[q][m], irm[q][m], 1e-6),
                           f"oracles disagree: {q} {m} pytrec_eval {exp[q][m]} ir_measures {irm[q][m]}")
        for m in MEASURES:
            mean = float(np.mean([exp[q][m] for q in exp]))
            rep.expect(_same(res["mean"][m], mean), f"score {name}: mean {m} studio {res['mean'][m]} != {mean}")
            # per stratum
            for s, v in res.get("strata", {}).items():
                vals = [exp[q][m] for q in exp if w.strata[q] == s]
                rep.expect(_same(v[m], float(np.mean(vals))), f"score {name}: stratum {s} {m} {v[m]} != "
                           f"{float(np.mean(vals))}")
        rep.count("document-run numbers", len(exp) * len(MEASURES) * 2)
    return got_all


def _labeled(w: World) -> set[str]:
    finals = oracle.final_grades(w.all_grades())
    return {q for q, *_ in w.evidence} | {q for q, *_ in finals}


# ---- 2. the export ------------------------------------------------------------------------------

def _check_export(rep, db, root, qrels, runs, got, refused) -> None:
    for fmt, qfile in (("trec", "qrels.txt"), ("beir", "qrels/test.tsv")):
        out_dir = root / f"export-{fmt}"
        rc, _out, err = golden(db, "export", "v1", "--format", fmt, "--out", str(out_dir))
        if rc != 0:
            rep.mismatches.append(f"export {fmt}: rc {rc}: {err[-400:]}")
            continue
        path = out_dir / qfile
        note = json.loads(path.with_name(path.stem + ".scoring.json").read_text())
        level = note["relevance_level"]
        exported: dict[str, dict[str, int]] = {}
        lines = path.read_text().splitlines()
        for line in lines[1:] if fmt == "beir" else lines:
            parts = line.split("\t") if fmt == "beir" else line.split()
            q, d, g = (parts[0], parts[1], parts[2]) if fmt == "beir" else (parts[0], parts[2], parts[3])
            exported.setdefault(q, {})[d] = int(g)
        rep.expect(exported == qrels, f"export {fmt}: qrels differ from the oracle's: "
                   f"{_dict_diff(exported, qrels)}")
        measures = {m: (pm, b) for m, (pm, b) in oracle.DOC_MEASURES.items()}
        for name, res in got.items():
            if refused[name]:
                continue
            q = {k: v for k, v in exported.items()}
            binary = {pm for pm, b in measures.values() if b}
            import pytrec_eval

            r = {k: v for k, v in runs[name].items() if k in q}
            eb = pytrec_eval.RelevanceEvaluator(q, binary, relevance_level=level).evaluate(r)
            eg = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut_10"}).evaluate(r)
            for qid in q:
                for m, (pm, b) in measures.items():
                    src = eb if b else eg
                    v = float(src[qid][pm]) if qid in src else 0.0
                    g = res["per_query"].get(qid, {}).get(m)
                    rep.expect(g is not None and _same(g, v), f"export {fmt} (level {level}) {name}: {qid} {m} "
                               f"trec_eval on the export {v} != golden score --version {g}")
            rep.count("export numbers", len(q) * len(measures))


def _dict_diff(a, b) -> str:
    keys = sorted(set(a) | set(b))
    diffs = [f"{k}: {a.get(k)} vs {b.get(k)}" for k in keys if a.get(k) != b.get(k)]
    return "; ".join(diffs[:5])


# ---- 3. passage runs -----------------------------------------------------------------------------

def _check_passages(rep, db, root, w, finals, qrels) -> None:
    from golden_store.scoring import evaluate
    from golden_store.versions import load_version

    if not qrels:
        return
    v = load_version("v1", db.parent / "versions")
    scored = sorted(qrels)
    for ci, (name, lines) in enumerate(w.passage_runs.items()):
        for rule in ("any_overlap", "contains_span"):
            # (a) the CLI on the JSONL file: passages ranked by score, ties in file order (the
            # reader's rule), named doc:start-end
            if ci == 0:
                ranked = _file_order_ranks(lines)
                olines = [(q, f"{d}:{s}-{e}", d, s, e, -float(r)) for q, d, s, e, r in ranked]
                _passage_case(rep, w, finals, scored, olines, rule, f"CLI {name} {rule}",
                              lambda: _cli_passages(db, root / f"{name}.jsonl", rule))
            # (b) evaluate() with explicit passage ids and the run's own scores (ties: trec_eval's
            # order, id descending, for ranking and for the chunk a document grade credits)
            ids = {c: f"p{(i * 7919) % 1000:03d}{c[0]}" for i, c in
                   enumerate(sorted({(d, s, e) for _q, d, s, e, _sc in lines}))}
            olines = [(q, ids[(d, s, e)], d, s, e, float(sc)) for q, d, s, e, sc in lines]
            frame = pd.DataFrame(olines, columns=["query_id", "passage_id", "doc_id", "start", "end", "score"])
            _passage_case(rep, w, finals, scored, olines, rule, f"evaluate {name} {rule}",
                          lambda f=frame, r=rule: _eval_passages(evaluate, v, f, r))


def _file_order_ranks(lines):
    by_q: dict[str, list] = {}
    for i, (q, d, s, e, sc) in enumerate(lines):
        by_q.setdefault(q, []).append((-sc, i, d, s, e))
    out = []
    for q, ls in by_q.items():
        for r, (_nsc, _i, d, s, e) in enumerate(sorted(ls), start=1):
            out.append((q, d, s, e, r))
    return out


def _cli_passages(db, path, rule) -> dict[str, dict[str, float]]:
    rc, out, err = golden(db, "score", "--version", "v1", "--run", str(path), "-m", "nDCG@10", "-m", "R@10", "-m", "RR",
                          "--hit-rule", rule, "--json", "--per-query")
    if rc != 0:
        raise AssertionError(f"rc {rc}: {err[-400:]}")
    return json.loads(out)["per_query"]


def _eval_passages(evaluate, v, frame, rule) -> dict[str, dict[str, float]]:
    res = evaluate(v, frame, ["nDCG@10", "R@10", "RR"], hit_rule=rule, n_boot=10)
    return {q: {m: float(x) for m, x in row.items()} for q, row in res.per_query.to_dict(orient="index").items()}


def _passage_case(rep, w, finals, scored, olines, rule, label, studio) -> None:
    units = oracle.passage_unit_qrels(evidence=w.evidence, finals=finals, doc_len=w.doc_len, lines=olines,
                                      rule=rule, queries=scored)
    run: dict[str, dict[str, float]] = {}
    for q, pid, _d, _s, _e, sc in olines:
        run.setdefault(q, {})[pid] = sc
    exp = oracle.trec_scores(units, run, PASSAGE_MEASURES)
    try:
        got = studio()
    except AssertionError as exc:
        rep.mismatches.append(f"passages {label}: {exc}")
        return
    rep.expect(set(got) == set(exp), f"passages {label}: scored {sorted(got)} != oracle {sorted(exp)}")
    for q in exp:
        for m in PASSAGE_MEASURES:
            g = got.get(q, {}).get(m)
            rep.expect(g is not None and _same(g, exp[q][m]),
                       f"passages {label}: {q} {m} studio {g} != unit counter + pytrec_eval {exp[q][m]} "
                       f"(units {units[q]})")
    rep.count("passage-run numbers", len(exp) * len(PASSAGE_MEASURES))


# ---- 4. golden compare --------------------------------------------------------------------------

def _check_compare(rep, db, root, w, qrels, expected, refused) -> None:
    if not qrels or any(refused.values()):
        return
    for name in ("base", "cand"):
        rc, _o, err = golden(db, "score", "--version", "v1", "--run", str(root / f"{name}.trec"), *MEASURE_ARGS,
                             "--record", name, "--system", name, "--git-sha", "0" * 40)
        if rc != 0:
            rep.mismatches.append(f"score --record {name}: rc {rc}: {err[-300:]}")
            return
    rc, _o, err = golden(db, "compare", "base", "cand", "-m", "P@20")
    rep.expect(rc == 2, f"compare -m P@20 (not recorded): exit {rc}, expected 2 ({err[-200:]!r})")
    rc, out, err = golden(db, "compare", "base", "cand", "-m", "nDCG@10", "-m", "R@10", "--json")
    a, b = expected["base"], expected["cand"]
    exp = oracle.compare_cells(a, b, w.strata, COMPARED)
    n = len(set(a) & set(b))
    if n < oracle.MIN_N:
        rep.expect(rc == 2, f"compare over {n} questions (< 6): exit {rc}, expected 2 ({err[-200:]!r})")
        rep.count("compare refusals")
        return
    if rc not in (0, 1):
        rep.mismatches.append(f"compare: exit {rc}: {err[-400:]}")
        return
    c = json.loads(out)
    cells = []  # (label, expected cell, studio cell)
    for m in COMPARED:
        e, g = exp[m], c["metrics"][m]
        cells.append((f"{m} overall", e, g))
        rep.expect(set(g["strata"]) == set(e["strata"]), f"compare {m}: strata {sorted(g['strata'])} != "
                   f"{sorted(e['strata'])}")
        for s in e["strata"]:
            if s in g["strata"]:
                cells.append((f"{m} stratum {s}", e["strata"][s], g["strata"][s]))
    with_p = []
    for label, e, g in cells:
        d = e["d"]
        for k in ("n", "wins", "losses", "ties"):
            rep.expect(g[k] == e[k], f"compare {label}: {k} studio {g[k]} != {e[k]}")
        rep.expect(_same(g["delta"], e["delta"], 1e-12), f"compare {label}: delta studio {g['delta']} != numpy "
                   f"{e['delta']}")
        if e["n"] < oracle.MIN_N:
            rep.expect(g["verdict"] == "too few" and g.get("p") is None,
                       f"compare {label}: n {e['n']} < 6 must be 'too few' without p; got {g['verdict']} p {g.get('p')}")
            continue
        if e["n"] < oracle.SMALL_N:
            exact = oracle.exact_possible(d)
            p = oracle.sign_flip_p_scipy(d, np.inf if exact else 20_000)
            tol = 1e-9 if exact else 0.03
            rep.expect(g.get("p") is not None and abs(g["p"] - p) <= tol,
                       f"compare {label}: sign-flip p studio {g.get('p')} != scipy permutation_test {p} "
                       f"({'exact' if exact else 'sampled'}; d = {np.round(d, 4).tolist()})")
        else:
            p = oracle.sign_flip_p_scipy(d, 20_000)
            rep.expect(g.get("p") is not None and abs(g["p"] - p) <= 0.08,
                       f"compare {label}: bootstrap p {g.get('p')} far from scipy's permutation p {p} (n {e['n']})")
            lo, hi = g["ci95"]
            rep.expect(lo <= e["delta"] + 1e-12 and e["delta"] - 1e-12 <= hi,
                       f"compare {label}: interval [{lo}, {hi}] does not bracket delta {e['delta']}")
            olo, ohi = oracle.bootstrap_interval(d, seed=12345)
            sd = float(np.std(d)) / math.sqrt(d.size)
            tol = 0.35 * sd + float(np.max(np.abs(d))) / d.size + 1e-12
            rep.expect(abs(lo - olo) <= tol and abs(hi - ohi) <= tol,
                       f"compare {label}: interval [{lo:.4f}, {hi:.4f}] far from scipy's bootstrap "
                       f"[{olo:.4f}, {ohi:.4f}] (tolerance {tol:.4f})")
        with_p.append((label, e, g, g.get("p")))
    ps = [p for *_x, p in with_p if p is not None]
    adj = oracle.bh(ps) if len(ps) == len(with_p) else []
    expected_gate = "PASS"
    for (label, e, g, _p), pa in zip(with_p, adj):
        rep.expect(_same(g.get("p_adj", float("nan")), pa, 1e-9),
                   f"compare {label}: p_adj studio {g.get('p_adj')} != scipy false_discovery_control {pa}")
        credible = g["ci95"][1] < 0 and pa <= 0.05
        verdict = "FAIL" if credible and abs(e["delta"]) >= 0.02 else "WARN" if credible else "PASS"
        rep.expect(g["verdict"] == verdict, f"compare {label}: verdict {g['verdict']} != {verdict} "
                   f"(ci upper {g['ci95'][1]}, p_adj {pa}, delta {e['delta']})")
        if label.endswith("overall") and verdict != "PASS" and expected_gate != "FAIL":
            expected_gate = verdict
    rep.expect(c.get("gate") == expected_gate, f"compare: gate {c.get('gate')} != {expected_gate}")
    rep.expect(rc == (1 if expected_gate == "FAIL" else 0), f"compare: exit {rc} for gate {expected_gate}")
    rep.count("comparison cells", len(cells))


# ---- 5. golden pool status ----------------------------------------------------------------------

def _all_repeats(lines):
    """(query, document) pairs a run lists more than once, for any question (the importer
    refuses them all, scored or not)."""
    seen = set()
    for q, d, _score in lines:
        if (q, d) in seen:
            yield q, d
        seen.add((q, d))


def _check_pool(rep, db, root, w, finals) -> None:
    imported = []
    for name, lines in w.doc_runs.items():
        rc, _o, err = golden(db, "runs", "import", str(root / f"{name}.trec"), "--system", name)
        if any(True for _ in _all_repeats(lines)):  # trec_eval's rule holds at import too (probe U4)
            rep.expect(rc == 2 and "lists document" in err and "again" in err,
                       f"runs import {name}: a document listed twice was not refused (rc {rc})")
            rep.count("duplicate refusals")
            continue
        if rc != 0:
            rep.mismatches.append(f"runs import {name}: rc {rc}: {err[-300:]}")
            return
        imported.append(name)
    if not imported:
        return
    rc, _o, err = golden(db, "pool", "build", "--depth", "10")
    if rc != 0:
        rep.mismatches.append(f"pool build: rc {rc}: {err[-300:]}")
        return
    rc, out, err = golden(db, "pool", "status", "--json")
    if rc != 0:
        rep.mismatches.append(f"pool status: rc {rc}: {err[-300:]}")
        return
    st = json.loads(out)
    rep.expect(st.get("relevance_level") == 2, f"pool status: relevance level {st.get('relevance_level')} != 2")
    for name, lines in w.doc_runs.items():
        if name not in imported:
            continue
        exp = oracle.pool_figures(finals, w.unanswerable, lines, w.doc_len)
        e = st["runs"].get(name, {})
        if not exp:
            rep.expect("ap" not in e, f"pool status {name}: AP {e.get('ap')} with no answerable graded question")
            continue
        rep.expect(st.get("ap_queries") == exp["n"], f"pool status: ap_queries {st.get('ap_queries')} != {exp['n']}")
        for k in ("ap", "bpref"):
            rep.expect(k in e and _same(e[k], exp[k]), f"pool status {name}: {k} studio {e.get(k)} != pytrec_eval "
                       f"{exp[k]} (level 2, {exp['n']} answerable graded questions)")
        rep.count("pool figures", 2)
