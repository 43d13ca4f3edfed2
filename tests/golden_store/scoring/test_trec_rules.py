"""trec_eval's input rules, checked against trec_eval (pytrec_eval) and against the same data
without the feature: negative grades ("in the pool, not judged"), ``#`` comment lines, text
after the run tag, whitespace, and clean refusals (one message, no pandas warning)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval

from golden_store.core.errors import ValidationError
from golden_store.scoring import retrieval as R
from golden_store.scoring.trec import evaluate_trec, read_qrels, read_run

PAIRS = {
    "P@5": "P_5", "P@10": "P_10", "R@10": "recall_10", "RR": "recip_rank", "AP": "map", "AP@10": "map_cut_10",
    "nDCG@10": "ndcg_cut_10", "nDCG": "ndcg", "Bpref": "bpref", "Success@5": "success_5",
}


def with_negative_grades(seed: int, n_queries: int = 200):
    """Graded qrels where some judged documents carry -1 or -2 (pooled, not judged), runs
    with ties; a few queries missing from the run."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q:03d}"
        docs = [f"d{i}" for i in range(60)]
        judged = rng.sample(docs, rng.randint(1, 25))
        qrels[qid] = {d: rng.choice([-2, -1, -1, 0, 0, 1, 2, 3]) for d in judged}
        qrels[qid][judged[0]] = max(0, qrels[qid][judged[0]])  # all-negative judgments crash trec_eval
        if q % 13 == 0:
            continue
        run[qid] = {d: float(rng.randint(0, 9)) for d in rng.sample(docs, rng.randint(1, 50))}
    return qrels, run


@pytest.fixture(scope="module", params=[3, 4])
def neg(request):
    return with_negative_grades(request.param)


def test_the_issue_repro_bpref_is_one():
    qrels = {"q1": {"a": -1, "b": 1, "d": 0, "e": 0}}
    run = {"q1": {"a": 2.0, "b": 1.0}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)["q1"]["bpref"]
    assert evaluate_trec(qrels, run, ["Bpref"]).mean["Bpref"] == pytest.approx(ref)
    assert R.bpref(["a", "b"], qrels["q1"]) == pytest.approx(ref)


@pytest.mark.parametrize("level", [1, 2])
def test_every_measure_follows_trec_eval_on_negative_grades(neg, level, tmp_path):
    qrels, run = neg
    ours = [m if level == 1 or m.startswith("nDCG") else m.replace("@", f"(rel={level})@") if "@" in m
            else f"{m}(rel={level})" for m in PAIRS]
    ref = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS.values()), relevance_level=level).evaluate(run)
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()))
    (tmp_path / "r.txt").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, ds in run.items() for d, s in ds.items()))
    for res in (evaluate_trec(qrels, run, ours), evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", ours)):
        for qid in qrels:
            for name, theirs in zip(ours, PAIRS.values()):
                expected = ref[qid][theirs] if qid in ref else 0.0
                assert res.per_query.at[qid, name] == pytest.approx(expected, abs=1e-9), (qid, name)


def test_pure_bpref_follows_trec_eval_on_negative_grades(neg):
    qrels, run = neg
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    for qid, scores in run.items():
        ranked = sorted(scores, key=lambda d: (scores[d], d), reverse=True)
        assert R.bpref(ranked, qrels[qid]) == pytest.approx(ref[qid]["bpref"], abs=1e-9), qid


def test_judged_counts_only_grades_of_zero_or_more(neg):
    """Judged@k is ir_measures' measure; a negative grade is "not judged" (trec_eval's rule),
    so it equals ir_measures run on the qrels without the negative-graded lines. Scores are
    made distinct: ir_measures breaks ties its own way."""
    qrels, tied = neg
    run = {q: {d: float(i) for i, d in enumerate(sorted(docs, key=lambda d: (docs[d], d)))}
           for q, docs in tied.items()}
    judged = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items() if g >= 0]
    measures = [ir_measures.Judged @ 10, ir_measures.Judged @ 3]
    ref = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
        measures, judged, [ir_measures.ScoredDoc(q, d, s) for q, ds in run.items() for d, s in ds.items()])}
    res = evaluate_trec(qrels, run, ["Judged@10", "Judged@3"])
    for (qid, name), value in ref.items():
        assert res.per_query.at[qid, name] == pytest.approx(value, abs=1e-9), (qid, name)


# ---- reading: comments, text after the run tag, whitespace --------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_comment_lines_and_text_after_the_run_tag_are_skipped_like_trec_eval(tmp_path):
    qrels = "q1 0 a 2\nq1 0 b#1 0\nq1 0 c 1\nq2 0 x 1\n"
    run = "q1 Q0 a 1 3.0 t\nq1 Q0 b#1 2 2.0 t\nq1 Q0 c 3 1.0 t\nq2 Q0 x 1 1.0 t\n"
    commented_qrels = "# comment here\n" + qrels.replace("q1 0 c 1\n", "q1 0 c 1\n# and comment here\n")
    odd_run = ("  # a comment line\n" + run.replace("2.0 t\n", "2.0 t more junk at\n")
               .replace("q2 Q0 x 1 1.0 t", "q2\tQ0\tx\t1\t  1.000\tt\tend of line")
               .replace("q1 Q0 a 1 3.0 t", "q1  Q0 a 1 3.0 t  "))
    measures = ["AP", "nDCG@10", "Bpref", "P@2"]
    ref = evaluate_trec(_write(tmp_path / "q", qrels), _write(tmp_path / "r", run), measures)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = evaluate_trec(_write(tmp_path / "qc", commented_qrels), _write(tmp_path / "rc", odd_run), measures)
        assert read_qrels(tmp_path / "qc").equals(read_qrels(tmp_path / "q"))
        assert read_run(tmp_path / "rc").equals(read_run(tmp_path / "r"))
    assert got.per_query.equals(ref.per_query)
    # and the numbers are trec_eval's
    te = pytrec_eval.RelevanceEvaluator({"q1": {"a": 2, "b#1": 0, "c": 1}, "q2": {"x": 1}}, {"map"}).evaluate(
        {"q1": {"a": 3.0, "b#1": 2.0, "c": 1.0}, "q2": {"x": 1.0}})
    assert got.per_query.at["q1", "AP"] == pytest.approx(te["q1"]["map"])


def test_a_bad_line_is_named_once_without_a_pandas_warning(tmp_path):
    qrels = _write(tmp_path / "q.txt", "# judged\nq1 0 a 1\nq1 0 b 1 extra\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValidationError, match=r"q.txt line 3: not a qrels line: expected 4 fields"):
            read_qrels(qrels)
        run = _write(tmp_path / "r.txt", "# run\nq1 Q0 a 1 2.0 t\nq1 Q0 b 2 x t\n")
        with pytest.raises(ValidationError, match=r"r.txt line 3: score 'x' is not a number"):
            read_run(run)
        short = _write(tmp_path / "s.txt", "q1 Q0 a 1 2.0 t\n\n# c\nq1 Q0 b 2\n")
        with pytest.raises(ValidationError, match=r"s.txt line 4: not a run line: expected 6 fields"):
            read_run(short)
    golden = str(Path(sys.executable).parent / "golden")
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    good = _write(tmp_path / "good.txt", "q1 Q0 a 1 2.0 t\n")
    out = subprocess.run([golden, "score", "--qrels", str(qrels), "--run", str(good), "-m", "AP"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "line 3: not a qrels line" in lines[0], out.stderr
    assert "Warning" not in out.stderr


@pytest.mark.parametrize("measure, says", [
    (("P", None, 1), "needs a cutoff"),        # P@k divides by k
    (("IPrec", None, 1), "needs a cutoff"),    # a recall level
    (("AP", None, None), "needs rel"),         # counts relevant documents: grade >= rel
])
def test_a_measure_built_by_hand_without_what_its_formula_needs_is_refused_by_name(measure, says):
    """The parser always gives P its k and AP its rel; a Measure built in Python may not. It
    is refused with a message naming what is missing (before, a bare TypeError)."""
    from golden_store.scoring.measures import Measure

    name, k, rel = measure
    qrels, run = {"q1": {"a": 1, "b": 0}}, {"q1": {"a": 2.0, "b": 1.0}}
    with pytest.raises(ValidationError, match=says):
        evaluate_trec(qrels, run, [Measure(name, k, rel)])
