"""The scorers against the reference tools: per-query values equal pytrec_eval's
(trec_eval semantics) to 1e-9 on generated graded qrels and runs with ties, missing
queries, unjudged documents, and queries with no relevant document."""

from __future__ import annotations

import random

import ir_measures
import pytest
import pytrec_eval

from golden_store.scoring import retrieval as R
from golden_store.scoring.trec import evaluate_trec

PAIRS = {
    "P@5": "P_5", "P@10": "P_10", "R@10": "recall_10", "R@100": "recall_100", "RR": "recip_rank",
    "AP": "map", "AP@10": "map_cut_10", "nDCG@10": "ndcg_cut_10", "nDCG@5": "ndcg_cut_5", "nDCG": "ndcg",
    "Bpref": "bpref", "Success@5": "success_5", "Success@1": "success_1",
}


def generated(seed: int, n_queries: int = 300):
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q:03d}"
        docs = [f"d{i}" for i in range(80)]
        judged = rng.sample(docs, rng.randint(0, 20))
        qrels[qid] = {d: rng.choice([0, 0, 1, 2, 3]) for d in judged} or {"d0": 0}  # some with no relevant doc
        if q % 10 == 0:
            continue  # judged but missing from the run: scores 0, counts (trec_eval -c)
        run[qid] = {d: float(rng.randint(0, 12)) for d in rng.sample(docs, rng.randint(1, 60))}  # many ties
    run["not-judged"] = {"d1": 1.0}  # ignored
    return qrels, run


@pytest.fixture(scope="module", params=[1, 2])
def data(request):
    return generated(request.param)


def test_vectorized_equals_pytrec_eval_per_query(data):
    qrels, run = data
    res = evaluate_trec(qrels, run, list(PAIRS))
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS.values())).evaluate(run)
    assert res.n_queries == len(qrels) and "not-judged" not in res.per_query.index
    for qid in res.per_query.index:
        for ours, theirs in PAIRS.items():
            expected = ref[qid][theirs] if qid in ref else 0.0
            assert res.per_query.at[qid, ours] == pytest.approx(expected, abs=1e-9), (qid, ours)
    assert res.mean["AP"] == pytest.approx(sum(res.per_query["AP"]) / len(qrels))


def test_binary_threshold_equals_trec_eval_l2(data):
    qrels, run = data
    res = evaluate_trec(qrels, run, ["P(rel=2)@10", "AP(rel=2)", "Bpref(rel=2)", "R(rel=2)@10", "RR(rel=2)"])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P_10", "map", "bpref", "recall_10", "recip_rank"},
                                         relevance_level=2).evaluate(run)
    for qid in res.per_query.index:
        for ours, theirs in [("P(rel=2)@10", "P_10"), ("AP(rel=2)", "map"), ("Bpref(rel=2)", "bpref"),
                             ("R(rel=2)@10", "recall_10"), ("RR(rel=2)", "recip_rank")]:
            expected = ref[qid][theirs] if qid in ref else 0.0
            assert res.per_query.at[qid, ours] == pytest.approx(expected, abs=1e-9), (qid, ours)


def test_pure_functions_equal_pytrec_eval(data):
    qrels, run = data
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS.values())).evaluate(run)
    for qid, scores in run.items():
        if qid not in qrels:
            continue
        ranked = sorted(scores, key=lambda d: (scores[d], d), reverse=True)
        g = qrels[qid]
        rel = R.relevant_set(g)
        ours = {
            "P_5": R.precision_at_k(ranked, rel, 5), "recall_100": R.recall_at_k(ranked, rel, 100),
            "recip_rank": R.reciprocal_rank(ranked, rel), "map": R.average_precision(ranked, rel),
            "map_cut_10": R.average_precision(ranked, rel, 10), "ndcg_cut_10": R.ndcg_at_k(ranked, g, 10),
            "bpref": R.bpref(ranked, g), "success_5": R.success_at_k(ranked, rel, 5),
        }
        for name, value in ours.items():
            assert value == pytest.approx(ref[qid][name], abs=1e-9), (qid, name)


def test_judged_at_k_and_rr_at_k_equal_ir_measures(data):
    """ir_measures breaks score ties its own way; ties are checked against trec_eval above,
    so here the scores are made distinct (same order as trec_eval's)."""
    qrels, tied = data
    run = {q: {d: float(i) for i, d in enumerate(sorted(docs, key=lambda d: (docs[d], d)))}
           for q, docs in tied.items()}
    measures = [ir_measures.Judged @ 10, ir_measures.Judged @ 5, ir_measures.RR @ 10]
    ref = {(m.query_id, str(m.measure)): m.value
           for m in ir_measures.iter_calc(measures, _qrels_iter(qrels), _run_iter(run))}
    res = evaluate_trec(qrels, run, ["Judged@10", "Judged@5", "RR@10"])
    for (qid, name), value in ref.items():
        assert res.per_query.at[qid, name] == pytest.approx(value, abs=1e-9), (qid, name)


def _qrels_iter(qrels):
    return [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]


def _run_iter(run):
    return [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]


def test_exp_gain_ndcg_equals_sklearn_with_burges_gains():
    """nDCG(dcg='exp-log2') is Burges' 2^g - 1 gain. ranx (the issue's reference) breaks on
    pandas 3, and ir_measures needs ranx for it; scikit-learn's ndcg_score with the gains
    given as y_true is the same definition on tie-free data where every top-k is retrieved."""
    import numpy as np
    from sklearn.metrics import ndcg_score

    rng = random.Random(5)
    qrels = {f"q{q}": {f"d{i}": rng.choice([0, 1, 2, 3]) for i in rng.sample(range(50), 12)} for q in range(100)}
    run = {q: {f"d{i}": float(s) for s, i in enumerate(rng.sample(range(50), 30))} for q in qrels}
    res = evaluate_trec(qrels, run, ["nDCG(dcg='exp-log2')@10", "nDCG(dcg='exp-log2')@5"])
    for qid, judged in qrels.items():
        docs = sorted(set(run[qid]) | set(judged))
        gains = np.array([[2.0 ** judged.get(d, 0) - 1 for d in docs]])
        scores = np.array([[run[qid].get(d, -1000.0 - i) for i, d in enumerate(docs)]])
        if gains.sum() == 0:
            assert res.per_query.at[qid, "nDCG(dcg='exp-log2')@10"] == 0.0
            continue
        for k in (10, 5):
            assert res.per_query.at[qid, f"nDCG(dcg='exp-log2')@{k}"] == pytest.approx(
                ndcg_score(gains, scores, k=k), abs=1e-9), (qid, k)


def test_run_files_take_the_fast_path_and_agree_with_the_dataframe_path(data, tmp_path):
    """Files are read by Arrow and only judged rows are ranked precisely: same numbers as
    the general path, whether the file is in TREC order or shuffled."""
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    ordered = sorted(rows, key=lambda r: (r[0], -r[2]))
    rng = random.Random(9)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    general = evaluate_trec(qrels, run, list(PAIRS) + ["Judged@10"])
    for name, lines in (("ordered", ordered), ("shuffled", shuffled)):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, d, s in lines))
        fast = evaluate_trec(tmp_path / "q.txt", path, list(PAIRS) + ["Judged@10"])
        assert fast.n_queries == general.n_queries
        for m in fast.measures:
            diff = (fast.per_query[m] - general.per_query[m]).abs().max()
            assert diff < 1e-12, (name, m, diff)
