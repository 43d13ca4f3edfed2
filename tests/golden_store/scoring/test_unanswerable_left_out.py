"""Unanswerable questions are not scored by retrieval measures (METHODOLOGY §3.4, §8.1).

On the full demo, q005 (answerable = false) has one judged-0 pooled passage, so it is in the
version's qrels; it used to be scored 0 and lowered bm25's R@10 0.853 -> 0.829. The
reference numbers here come from pytrec_eval (trec_eval) on the answerable questions' qrels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

from annotator.demo import DEMO_DIR
from golden_store.scoring import evaluate, read_run
from golden_store.versions import load_version

BM25 = Path(DEMO_DIR) / "runs" / "bm25.trec"


@pytest.fixture
def full_demo(tmp_path):
    golden = str(Path(sys.executable).parent / "golden")
    out = subprocess.run([golden, "demo", "--full"], capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    return tmp_path, golden


def _reference(qrels: dict, run: pd.DataFrame, measure: str) -> dict[str, float]:
    trec_run = {}
    for r in run.itertuples():
        trec_run.setdefault(r.query_id, {})[r.doc_id] = float(r.score)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=2)
    return {q: v[measure] for q, v in ev.evaluate({q: trec_run.get(q, {}) for q in qrels}).items()}


def test_a_judged_negative_is_left_out_of_every_mean_doc_path(full_demo):
    cwd, golden = full_demo
    v = load_version("demo.v0", cwd / "versions")
    negatives = set(v.queries.loc[~v.queries["answerable"], "query_id"])
    qrels = v.qrels()
    judged_negatives = sorted(negatives & set(qrels))
    assert "q005" in judged_negatives  # the case the bug needs: a negative with a judged-0 passage
    assert all(g < 2 for g in qrels["q005"].values())

    out = subprocess.run([golden, "score", "--version", "demo.v0", "--run", str(BM25), "-m", "R@10", "-m", "nDCG@10",
                          "--per-query", "--json"], capture_output=True, text=True, cwd=cwd, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert not set(rep["per_query"]) & negatives
    assert rep["left_out"]["unanswerable"] == {"n": len(judged_negatives), "query_ids": judged_negatives}
    answerable = {q: d for q, d in qrels.items() if q not in negatives}
    run = read_run(BM25)
    ref = _reference(answerable, run, "recall_10")
    assert rep["n_queries"] == len(answerable)
    assert rep["mean"]["R(rel=2)@10"] == pytest.approx(sum(ref.values()) / len(ref), abs=1e-12)
    assert rep["mean"]["R(rel=2)@10"] == pytest.approx(0.8529, abs=1e-4)  # the review's answerable-only figure
    ndcg = _reference(answerable, run, "ndcg_cut_10")
    assert rep["mean"]["nDCG@10"] == pytest.approx(sum(ndcg.values()) / len(ndcg), abs=1e-12)
    # the text output says how many were left out
    text = subprocess.run([golden, "score", "--version", "demo.v0", "--run", str(BM25), "-m", "R@10"],
                          capture_output=True, text=True, cwd=cwd, env=dict(os.environ))
    assert f"{len(judged_negatives)} unanswerable question(s) with labels left out" in text.stderr


def test_a_judged_negative_is_left_out_on_the_passage_path(full_demo):
    cwd, _ = full_demo
    v = load_version("demo.v0", cwd / "versions")
    j = v.judgments
    neg = j[j["query_id"] == "q005"]
    assert len(neg) and (neg["grade"] < 2).all()
    # a passage run that retrieves every judged passage of every query, the negative's included
    passages = j.assign(score=1.0)[["query_id", "doc_id", "start", "end", "score"]]
    res = evaluate(v, passages, ["R@10"])
    assert "q005" not in res.per_query.index
    assert "q005" in res.left_out["unanswerable"]
    assert not set(res.per_query.index) & set(v.queries.loc[~v.queries["answerable"], "query_id"])
    assert "not scored" in res.definitions["_negatives"]
