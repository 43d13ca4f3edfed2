"""One judged@10 per scoring, named, and on screen when it is low (METHODOLOGY §3.6).

The demo's bm25 run had two "judged@10": 0.085 in the manifest and pool status (passages a
person graded) and 0.211 from ``golden score -m Judged@10`` (results carrying any label of the
scored qrels, evidence included). They are now two names: the pool's graded@10 and a
scoring's Judged@10; ``golden score`` always reports the latter and warns below 0.8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest

from golden_store.scoring import read_run
from golden_store.scoring.health import judged_health
from golden_store.versions import load_version
from tests.golden_store.scoring.test_unanswerable_left_out import BM25, full_demo  # noqa: F401 (fixture)


def _golden(cwd, golden, *args):
    return subprocess.run([golden, *args], capture_output=True, text=True, cwd=cwd, env=dict(os.environ))


def test_score_reports_the_runs_judged_at_10_and_warns_below_the_bar(full_demo):  # noqa: F811
    cwd, golden = full_demo
    out = _golden(cwd, golden, "score", "--version", "demo.v0", "--run", str(BM25), "-m", "R@10", "-m", "Judged@10",
                  "--json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    # the health figure is the scorer's own Judged@10, not a second definition
    assert rep["judged"]["mean"] == pytest.approx(rep["mean"]["Judged@10"], abs=1e-12)
    assert rep["judged"]["suspect"] is True and rep["judged"]["threshold"] == 0.8
    # and equals ir_measures' Judged@10 on the scored (answerable) qrels
    v = load_version("demo.v0", cwd / "versions")
    neg = set(v.queries.loc[~v.queries["answerable"], "query_id"])
    qrels = {q: d for q, d in v.qrels().items() if q not in neg}
    run = read_run(BM25)
    trec_run = {}
    for r in run.itertuples():
        trec_run.setdefault(r.query_id, {})[r.doc_id] = float(r.score)
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels,
                                                              {q: trec_run.get(q, {"__none__": 0.0}) for q in qrels})}
    assert rep["judged"]["mean"] == pytest.approx(sum(ref.values()) / len(qrels), abs=1e-9)
    # on screen, not in a footnote
    text = _golden(cwd, golden, "score", "--version", "demo.v0", "--run", str(BM25), "-m", "R@10")
    assert "warning: the run: judged@10 is 0.2" in text.stderr and "below 0.8" in text.stderr
    # the pool's figure has its own name; live, it counts every person's grade, the standing
    # sample people graded after the freeze too (by hand: the share of bm25's top 10 per query
    # whose whole document a person graded)
    pool = _golden(cwd, golden, "pool", "status")
    graded = _people_graded_documents()
    tops: dict[str, list[str]] = {}
    for r in sorted(run.itertuples(), key=lambda r: (r.query_id, -float(r.score), [-ord(c) for c in r.doc_id])):
        tops.setdefault(r.query_id, []).append(r.doc_id)
    by_hand = sum(sum((q, d) in graded for d in docs[:10]) / len(docs[:10]) for q, docs in tops.items()) / len(tops)
    assert f"bm25: graded@10 {by_hand:.3f}" in pool.stdout and "judged@10" not in pool.stdout
    manifest = json.loads((cwd / "versions" / "demo.v0" / "manifest.json").read_text())
    assert manifest["pool_graded_at_10_per_run"]["bm25"] == pytest.approx(0.085)
    assert "judged_fraction_at_10" not in manifest


def _people_graded_documents() -> set[tuple[str, str]]:
    """(query, document) pairs whose whole document a person graded, from the test's store."""
    from golden_store.db.store import Store

    s = Store.open(os.environ["GOLDEN_DB"])
    try:
        return {(q, d) for q, d in s.read(
            "SELECT g.query_id, g.doc_id FROM grade_item_state g JOIN documents d USING (doc_id) "
            "WHERE g.n_graded > 0 AND g.start = 0 AND g.\"end\" = length(d.raw_text)")}
    finally:
        s.close()


def test_a_fully_judged_run_gets_no_warning_on_either_path(tmp_path):
    golden = str(Path(sys.executable).parent / "golden")
    (tmp_path / "q.txt").write_text("q1 0 a 2\nq1 0 b 0\nq2 0 x 1\n")
    (tmp_path / "full.txt").write_text("q1 Q0 b 1 3.0 t\nq1 Q0 a 2 2.0 t\nq2 Q0 x 1 1.0 t\n")
    (tmp_path / "thin.txt").write_text("q1 Q0 b 1 3.0 t\nq1 Q0 z 2 2.0 t\nq2 Q0 y 1 1.0 t\nq2 Q0 w 2 1.0 t\n")
    ok = _golden(tmp_path, golden, "score", "--qrels", "q.txt", "--run", "full.txt", "-m", "P@2")
    assert ok.returncode == 0 and "warning" not in ok.stderr and "# judged@10 1.000" in ok.stderr
    thin = _golden(tmp_path, golden, "score", "--qrels", "q.txt", "--run", "thin.txt", "-m", "P@2", "--json")
    rep = json.loads(thin.stdout)
    # q1: 1 of 2 shown judged, q2: 0 of 2 -> 0.25, both queries below
    assert rep["judged"]["mean"] == pytest.approx(0.25) and rep["judged"]["queries_below"] == 2
    assert judged_health({"q1": {"a": 2, "b": 0}, "q2": {"x": 1}}, read_run(tmp_path / "thin.txt")).below == ["q1", "q2"]


def test_the_health_figure_of_a_file_scoring_is_ir_measures_judged_at_10_after_minus_m_and_not_minus_j(tmp_path):
    """`golden score --qrels` computes the health figure from the ranking it scores with (one
    read of the run): -M cuts it, -J does not (it counts unjudged results); checked against
    ir_measures' Judged@10 on the run cut by hand to trec_eval's order."""
    import random

    rng = random.Random(7)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    lines, qlines = [], []
    for q in range(30):
        qid = f"q{q}"
        docs = rng.sample(range(60), 25)
        scores = [float(rng.randint(0, 8)) for _ in docs]  # many ties: ranked by document id descending
        run[qid] = {f"d{d}": s for d, s in zip(docs, scores)}
        lines += [f"{qid} Q0 d{d} 0 {s} t" for d, s in zip(docs, scores)]
        judged = rng.sample(range(60), rng.randint(1, 30))
        qrels[qid] = {f"d{d}": rng.choice([-1, 0, 1, 2]) for d in judged}
        qlines += [f"{qid} 0 {d} {g}" for d, g in qrels[qid].items()]
    lines.append("unjudged Q0 d1 1 1.0 t")
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(qlines) + "\n")
    golden = str(Path(sys.executable).parent / "golden")
    for extra, cut in (([], None), (["-M", "7"], 7), (["-M", "7", "-J"], 7), (["-J"], None)):
        out = _golden(tmp_path, golden, "score", "--qrels", "qrels.txt", "--run", "run.txt", "-m", "P@5", *extra,
                      "--json")
        assert out.returncode == 0, out.stderr
        rep = json.loads(out.stdout)["judged"]
        # trec_eval's order (score descending, then document id descending), cut at -M; the
        # reference gets the ranks as scores so that it does not break ties its own way
        top = {}
        for q, d in run.items():
            order = sorted(sorted(d, reverse=True), key=lambda doc: -d[doc])[:cut]
            top[q] = {doc: -float(i) for i, doc in enumerate(order)}
        # ir_measures counts a negative grade as judged; trec_eval (and the studio) as in the pool, not judged
        ref_qrels = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}
        ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.Judged @ 10], ref_qrels, top)}
        want = sum(ref.get(q, 0.0) for q in qrels) / len(qrels)
        assert rep["mean"] == pytest.approx(want, abs=1e-12), extra
        assert rep["queries"] == len(qrels)
        assert rep["queries_below"] == sum(ref.get(q, 0.0) < 0.8 for q in qrels)
