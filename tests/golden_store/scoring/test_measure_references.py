"""The measures users bring from trec_eval and ir_measures, each against its reference on
generated graded data with ties, negative grades, queries missing from the run and queries
without a relevant document:

* pytrec_eval (trec_eval 9's code) for every measure it has, with trec_eval's ``-c`` for the
  missing queries reproduced the way trec_eval does it (one document nobody judged), and for
  ``-M`` (the run cut to its first M documents in trec_eval order) and ``-J`` (its
  ``judged_docs_only_flag``);
* ir_measures for Judged (no cutoff), ERR@k (gdeval) and binary RBP (cwl_eval, when
  installed), and for the meaning of ir_measures' names (SetP, NumRet(rel=1), …);
* trec_eval 10's own outputs for the rest (``test_trec_eval_conformance.py``).
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval

from golden_store.scoring.measures import parse_measures
from golden_store.scoring.trec import evaluate_trec

# ours -> pytrec_eval's name (trec_eval's)
PYTREC = {
    "Rprec": "Rprec", "SetP": "set_P", "SetR": "set_recall", "SetF": "set_F", "SetP(relative=True)": "set_relative_P",
    "SetAP": "set_map", "NumQ": "num_q", "NumRet": "num_ret", "NumRel": "num_rel", "NumRet(rel=1)": "num_rel_ret",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret", "infAP": "infAP", "Bpref": "bpref", "AP": "map",
    "AP@10": "map_cut_10", "RR": "recip_rank", "P@5": "P_5", "P@20": "P_20", "R@10": "recall_10",
    "Success@1": "success_1", "Success@5": "success_5", "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10",
    "relative_P@5": "relative_P_5", "relative_P@20": "relative_P_20", "binG": "binG", "G": "G",
    "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg", "utility": "utility",
    **{f"Rprec_mult@{x:g}": f"Rprec_mult_{x:.2f}" for x in (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)},
    **{f"IPrec(cut=v9)@{x:g}": f"iprec_at_recall_{x:.2f}" for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                                                                      0.9, 1.0)},
    "11pt_avg(cut=v9)": "11pt_avg",
}
GEOMETRIC = {"gm_map": "gm_map", "gm_bpref": "gm_bpref"}  # compared on the overall value
RESET_WHEN_MISSING = {"NumRet", "utility"}  # trec_eval -c zeroes these for a query missing from the run


def generated(seed: int, n_queries: int = 150, numeric_ids: bool = False):
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = str(100 + q) if numeric_ids else f"q{q:03d}"
        docs = [f"d{i}" for i in range(70)]
        judged = rng.sample(docs, rng.randint(1, 30))
        grades = [-1, 0, 0, 0, 1, 1, 2, 3, 4] if not numeric_ids else [0, 0, 0, 1, 1, 2, 3, 4]
        qrels[qid] = {d: rng.choice(grades if q % 7 else [-1, 0]) for d in judged}  # every 7th: nothing relevant
        qrels[qid][judged[0]] = max(0, qrels[qid][judged[0]])  # all-negative judgments crash trec_eval
        if q % 11 == 3:
            continue  # judged, missing from the run
        run[qid] = {d: float(rng.randint(0, 15)) for d in rng.sample(docs, rng.randint(1, 60))}  # many ties
    run["not-judged" if not numeric_ids else "9999"] = {"d1": 1.0}
    return qrels, run


def trec_order(docs: dict[str, float]) -> list[str]:
    return sorted(docs, key=lambda d: (docs[d], d), reverse=True)


def with_missing_as_trec_eval_c(qrels, run):
    """trec_eval -c scores a query missing from the run on one document nobody judged."""
    return {**run, **{q: {"ceci_nest_pas_un_docno": 1.0} for q in qrels if q not in run}}


def pytrec(qrels, run, names, **kw):
    return pytrec_eval.RelevanceEvaluator(qrels, set(names), **kw).evaluate(with_missing_as_trec_eval_c(qrels, run))


@pytest.fixture(scope="module", params=[21, 22])
def data(request):
    return generated(request.param)


def check_against_pytrec(res, ref, qrels, run, pairs):
    for qid in qrels:
        for ours, theirs in pairs.items():
            expected = ref[qid][theirs]
            if qid not in run and ours.split("(")[0] in RESET_WHEN_MISSING:
                expected = 0.0
            assert res.per_query.at[qid, ours] == pytest.approx(expected, abs=1e-9), (qid, ours, theirs)


@pytest.mark.parametrize("level", [1, 2])
def test_every_trec_eval_measure_equals_pytrec_eval(data, level, tmp_path):
    qrels, run = data
    ours = [m if level == 1 else _with_level(m, level) for m in PYTREC]
    ref = pytrec(qrels, run, set(PYTREC.values()) | set(GEOMETRIC.values()), relevance_level=level)
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds.items()))
    measures = ours + list(GEOMETRIC)
    for res in (evaluate_trec(qrels, run, measures, rel=level),
                evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", measures, rel=level)):
        check_against_pytrec(res, ref, qrels, run, dict(zip(ours, PYTREC.values())))
        for ours_name, theirs in GEOMETRIC.items():
            key = ours_name if level == 1 else f"{ours_name}(rel={level})"
            expected = math.exp(sum(ref[q][theirs] for q in qrels) / len(qrels))
            assert res.mean[key] == pytest.approx(expected, rel=1e-9), key
        assert res.mean["NumQ"] == len(qrels)
        assert res.mean["NumRet"] == sum(len(run[q]) for q in qrels if q in run)


def _with_level(name: str, level: int) -> str:
    """The name with rel=level where the measure takes a threshold (as -l would)."""
    (m,) = parse_measures([name.replace("(rel=1)", f"(rel={level})")], rel=level)
    return str(m)


@pytest.mark.parametrize("max_docs", [1, 7, 25])
def test_max_docs_is_trec_eval_M(data, max_docs):
    """-M: trec_eval (pytrec_eval) on the run cut to its first M documents in trec_eval's order."""
    qrels, run = data
    cut = {q: {d: docs[d] for d in trec_order(docs)[:max_docs]} for q, docs in run.items()}
    ref = pytrec(qrels, cut, set(PYTREC.values()))
    res = evaluate_trec(qrels, run, list(PYTREC), max_docs=max_docs)
    check_against_pytrec(res, ref, qrels, run, PYTREC)


@pytest.mark.parametrize("max_docs", [None, 10])
def test_judged_only_is_trec_eval_J(data, max_docs):
    qrels, run = data
    if max_docs:
        run = {q: {d: docs[d] for d in trec_order(docs)[:max_docs]} for q, docs in run.items()}
    ref = pytrec(qrels, run, set(PYTREC.values()), judged_docs_only_flag=True)
    res = evaluate_trec(qrels, run, list(PYTREC), judged_only=True, max_docs=max_docs)
    for qid in qrels:
        for ours, theirs in PYTREC.items():
            expected = ref[qid][theirs]
            if ours.split("(")[0] in RESET_WHEN_MISSING and qid not in run:
                expected = 0.0
            if math.isnan(expected):  # nothing judged retrieved: trec_eval divides 0 by 0; the value here is 0
                assert ref[qid]["num_ret"] == 0 and theirs.startswith(("iprec", "11pt")), (qid, theirs)
                expected = 0.0
            assert res.per_query.at[qid, ours] == pytest.approx(expected, abs=1e-9), (qid, ours)


def test_ir_measures_names_mean_the_same(data):
    """Our spelling of ir_measures' names gives ir_measures' numbers (through its own
    providers) on queries present in the run."""
    qrels, run = data
    names = ["SetP", "SetP(relative=True)", "SetR", "SetF", "SetF(beta=0.5)", "SetAP", "NumRet", "NumRet(rel=1)",
             "NumRel", "Rprec", "Rprec(rel=2)", "infAP", "IPrec(cut=v9)@0.3", "AP(rel=2)", "NumQ"]
    irm = {"IPrec(cut=v9)@0.3": "IPrec@0.3"}
    measures = [ir_measures.parse_measure(irm.get(n, n)) for n in names]
    ref = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, _qrels(qrels), _run(run))}
    res = evaluate_trec(qrels, run, names)
    for name, measure in zip(names, measures):
        for qid in run:
            if qid in qrels:
                assert res.per_query.at[qid, name] == pytest.approx(ref[(qid, str(measure))], abs=1e-9), (qid, name)


def _qrels(qrels):
    return [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]


def _run(run):
    return [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]


def _distinct(run):
    """The same rankings with distinct scores (ir_measures' providers break ties their own way)."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(trec_order(docs))} for q, docs in run.items()}


def test_judged_without_a_cutoff_equals_ir_measures(data):
    qrels, tied = data
    run = _distinct(tied)
    judged = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items() if g >= 0]
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged], judged, _run(run))}
    res = evaluate_trec(qrels, run, ["Judged"])
    for qid, value in ref.items():
        assert res.per_query.at[qid, "Judged"] == pytest.approx(value, abs=1e-9), qid
    assert set(ref) == set(qrels)  # missing queries too (0), as golden scores them


@pytest.mark.parametrize("k", [5, 20])
def test_err_equals_ir_measures_gdeval(k):
    """ERR@k is gdeval's (ir_measures' provider; it prints 5 decimals). gdeval breaks ties by
    document id descending, as trec_eval does, so the tied run goes in as it is."""
    qrels, run = generated(31, numeric_ids=True)
    measure = ir_measures.parse_measure(f"ERR@{k}")
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([measure], _qrels(qrels), _run(run))}
    res = evaluate_trec(qrels, run, [f"ERR@{k}"])
    assert len(ref) > 50
    for qid in qrels:
        assert res.per_query.at[qid, f"ERR@{k}"] == pytest.approx(ref.get(qid, 0.0), abs=5e-6 + 1e-12), qid


@pytest.mark.parametrize("p,rel", [(0.8, 1), (0.5, 2), (0.95, 1)])
def test_binary_rbp_equals_ir_measures(data, p, rel):
    pytest.importorskip("cwl", reason="ir_measures' RBP(rel=...) provider is cwl-eval (pip install cwl-eval)")
    qrels, tied = data
    run = _distinct(tied)
    measure = ir_measures.parse_measure(f"RBP(rel={rel},p={p})")
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([measure], _qrels(qrels), _run(run))}
    name = f"RBP(rel={rel},p={p})"
    res = evaluate_trec(qrels, run, [name])
    ours = str(parse_measures([name])[0])
    for qid, value in ref.items():
        assert res.per_query.at[qid, ours] == pytest.approx(value, abs=1e-9), qid


def test_golden_score_passes_trec_eval_options(data, tmp_path):
    """-l, -M and -J on the command line are the library's rel, max_docs and judged_only."""
    qrels, run = data
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds.items()))
    golden = str(Path(sys.executable).parent / "golden")
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    out = subprocess.run([golden, "score", "--qrels", "q.txt", "--run", "r.txt", "-m", "map", "-m", "P.5,10",
                          "-m", "num_rel_ret", "-l", "2", "-M", "8", "-J", "--json", "--per-query"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    cut = {q: {d: docs[d] for d in trec_order(docs)[:8]} for q, docs in run.items()}
    ref = pytrec(qrels, cut, {"map", "P_5", "P_10", "num_rel_ret"}, relevance_level=2, judged_docs_only_flag=True)
    names = {"AP(rel=2)": "map", "P(rel=2)@5": "P_5", "P(rel=2)@10": "P_10", "NumRet(rel=2)": "num_rel_ret"}
    assert set(got["measures"]) == set(names)
    for qid in qrels:
        for ours, theirs in names.items():
            assert got["per_query"][qid][ours] == pytest.approx(ref[qid][theirs], abs=1e-9), (qid, ours)
    assert "trec_eval -M" in got["definitions"]["_max_docs"] and "trec_eval -J" in got["definitions"]["_judged_only"]
