"""TREC file reading (clear errors), scoring a frozen version (document and passage runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from golden_store.scoring import evaluate, evaluate_trec, read_qrels, read_run
from golden_store.versions import load_version


def test_reading_reports_file_and_line(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.5 t\n\nq1 Q0 d2 2 oops t\n")
    with pytest.raises(ValidationError, match=r"run.txt line 3: score 'oops' is not a number"):
        read_run(run)
    run.write_text("q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 2.0\n")
    with pytest.raises(ValidationError, match=r"run.txt line 2: not a run line: expected 6 fields"):
        read_run(run)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1.5\n")
    with pytest.raises(ValidationError, match=r"qrels.txt line 2: grade '1.5' is not an integer grade"):
        read_qrels(qrels)
    qrels.write_text("q1 0 d1 1\nq1 0 d1 1 extra\n")
    with pytest.raises(ValidationError, match="qrels.txt line 2: not a qrels line"):
        read_qrels(qrels)
    with pytest.raises(ValidationError, match="no such file"):
        read_run(tmp_path / "missing.txt")


def test_files_and_dicts_give_the_same_numbers(tmp_path):
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"x": 1}, "q3": {"y": 3}}
    run = {"q1": {"a": 1.0, "c": 3.0, "z": 2.0}, "q2": {"x": 5.0}, "other": {"a": 1.0}}
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds.items()))
    a = evaluate_trec(qrels, run, ["AP", "nDCG@10", "P@2"])
    b = evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", ["AP", "nDCG@10", "P@2"])
    pd.testing.assert_frame_equal(a.per_query, b.per_query)
    assert a.per_query.loc["q3"].tolist() == [0.0, 0.0, 0.0]  # judged, not in the run: 0 and counted
    assert a.n_queries == 3
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    assert a.per_query.at["q1", "AP"] == pytest.approx(ref["q1"]["map"])


def test_score_a_frozen_version_by_document_and_by_passage(demo_store):
    freeze(demo_store, "v1", actor="eng", hit_rule="min_overlap(0.5)")
    v = load_version("v1")
    spans = v.spans
    # a document run that puts each query's evidence document first
    rows = [(s.query_id, s.doc_id, 10.0) for s in spans.itertuples()] + \
           [(q, "pension", 1.0) for q in set(spans["query_id"])]
    doc_run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).drop_duplicates(["query_id", "doc_id"])
    res = evaluate(v, doc_run, ["R@10", "Success@1", "nDCG@10"])
    assert res.measures == ["R(rel=2)@10", "Success(rel=2)@1", "nDCG@10"]  # graded labels: relevant = grade >= 2
    assert res.mean["R(rel=2)@10"] == 1.0
    assert res.n_queries == spans["query_id"].nunique()
    assert set(res.strata) <= set(v.strata.values()) and "negative" not in res.strata
    assert res.ci95["R(rel=2)@10"] == (1.0, 1.0)
    assert res.definitions["dataset_version"] == "v1" and res.definitions["content_digest"].startswith("sha256:")
    # a passage run: one passage exactly on each span (ranked first), one elsewhere
    prows = []
    for s in spans.itertuples():
        prows.append((s.query_id, s.doc_id, int(s.start), int(s.end), 5.0))
        prows.append((s.query_id, s.doc_id, int(s.end) + 1000, int(s.end) + 1400, 2.0))
    passages = pd.DataFrame(prows, columns=["query_id", "doc_id", "start", "end", "score"])
    res = evaluate(v, passages, ["RR(rel=1)", "Success@1"])
    assert res.definitions["hit_rule"] == "min_overlap(0.5)"
    assert res.mean["RR"] == 1.0 and res.mean["Success(rel=2)@1"] == 1.0
    # the same passages moved off every span: nothing hits, every labeled query scores 0 and counts
    missed = passages.assign(start=passages["start"] + 20000, end=passages["end"] + 20000)
    res = evaluate(v, missed, ["RR"], hit_rule="any_overlap")
    assert res.mean["RR(rel=2)"] == 0.0 and res.n_queries == spans["query_id"].nunique()
    assert res.definitions["hit_rule"] == "any_overlap"


def test_golden_score_cli(tmp_path):
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    golden = str(Path(sys.executable).parent / "golden")
    (tmp_path / "q.txt").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 x 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 b 1 3.0 t\nq1 Q0 a 2 2.0 t\nq2 Q0 y 1 1.0 t\n")
    out = subprocess.run([golden, "score", "--qrels", "q.txt", "--run", "r.txt", "-m", "RR", "-m", "P@2",
                          "--per-query", "--json"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["measures"] == ["RR", "P@2"] and rep["n_queries"] == 2
    assert rep["per_query"]["q1"] == {"RR": 0.5, "P@2": 0.5} and rep["per_query"]["q2"] == {"RR": 0.0, "P@2": 0.0}
    assert rep["mean"]["RR"] == 0.25 and "RR" in rep["definitions"]
    out = subprocess.run([golden, "score", "--qrels", "q.txt", "--run", "r.txt", "-m", "nDCG@ten"],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 2 and "Unknown measure" in out.stderr


def test_record_and_compare_from_the_cli(tmp_path):
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    golden = str(Path(sys.executable).parent / "golden")

    def run(*args):
        return subprocess.run([golden, *args], capture_output=True, text=True, cwd=tmp_path, env=env)

    assert run("demo", "--small").returncode == 0 and run("freeze", "v1").returncode == 0
    v_qrels = load_version("v1", tmp_path / "versions").qrels()
    good = "".join(f"{q} Q0 {d} 1 9.0 good\n" for q, docs in v_qrels.items() for d in docs)
    bad = "".join(f"{q} Q0 pension 1 9.0 bad\n" for q in v_qrels)
    (tmp_path / "good.txt").write_text(good)
    (tmp_path / "bad.txt").write_text(bad)
    assert run("score", "--version", "v1", "--run", "good.txt", "-m", "R@10", "--record", "good").returncode == 0
    assert run("score", "--version", "v1", "--run", "bad.txt", "-m", "R@10", "--record", "bad").returncode == 0
    r = run("score", "--version", "v1", "--run", "bad.txt", "-m", "R@10", "--record", "bad")
    assert r.returncode == 2 and "never overwritten" in r.stderr
    r = run("compare", "good", "bad")
    assert r.returncode == 1 and "R(rel=2)@10: FAIL" in r.stdout
    r = run("compare", "bad", "good", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["metrics"]["R(rel=2)@10"]["verdict"] == "PASS"
    assert run("results", "export", "--out", "res.parquet").returncode == 0
    assert (tmp_path / "res.parquet").exists()


def test_a_document_listed_twice_is_an_error_judged_or_not(tmp_path):
    """trec_eval refuses a run that lists a document twice for one query ("duplicate
    docs"), whether the document is judged or not; so do both evaluation paths."""
    (tmp_path / "q.txt").write_text("q1 0 a 1\nq1 0 b 0\n")
    (tmp_path / "r.txt").write_text("q1 Q0 a 1 3.0 t\nq1 Q0 x 2 2.0 t\nq1 Q0 a 3 1.0 t\n")
    with pytest.raises(ValidationError, match="query q1 lists document a more than once"):
        evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", ["AP"])
    (tmp_path / "r2.txt").write_text("q1 Q0 x 1 3.0 t\nq1 Q0 x 2 2.0 t\nq1 Q0 a 3 1.0 t\n")
    with pytest.raises(ValidationError, match="query q1 lists document x more than once"):
        evaluate_trec(tmp_path / "q.txt", tmp_path / "r2.txt", ["RR"])
    frame = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["x", "x", "a"], "score": [3.0, 2.0, 1.0]})
    with pytest.raises(ValidationError, match="query q1 lists document x more than once"):
        evaluate_trec(tmp_path / "q.txt", frame, ["RR"])
    # a query without judgments is not evaluated, so its lines are not checked (as trec_eval)
    (tmp_path / "r3.txt").write_text("q1 Q0 a 1 3.0 t\nq9 Q0 x 1 2.0 t\nq9 Q0 x 2 1.0 t\n")
    assert evaluate_trec(tmp_path / "q.txt", tmp_path / "r3.txt", ["RR"]).mean["RR"] == 1.0
