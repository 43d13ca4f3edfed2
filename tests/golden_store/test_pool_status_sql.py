"""pool_status counted in SQL (issue 19) gives the figures of the per-run scorer passes it
replaced, on the demo store with extra grades, a retired run and k other than 10."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.live import judging, pool, runs
from golden_store.scoring.trec import evaluate_trec


def _reference(store, k: int = 10, threshold: float = 0.8) -> dict:
    """The implementation before issue 19: every run's results and every grade into pandas,
    two scorer passes per run."""
    grades = store.df("SELECT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, grade FROM final_grades")
    negatives = {r[0] for r in store.read("SELECT query_id FROM queries WHERE NOT answerable")}
    left_out = sorted(set(grades["query_id"]) & negatives)
    grades = grades[~grades["query_id"].isin(negatives)]  # unanswerable: left out of AP and Bpref
    judged_any = store.df("SELECT DISTINCT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, 0 AS grade "
                          "FROM current_grades")
    out: dict = {"k": k, "threshold": threshold, "relevance_level": 2, "ap_queries": int(grades["query_id"].nunique()),
                 "left_out": {"unanswerable": left_out}, "runs": {}}
    for system in runs.active_systems(store):
        run = store.df("SELECT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, -rank AS score "
                       "FROM run_results WHERE system = ?", [system])
        queries = sorted(set(run["query_id"]))
        anyq = pd.concat([judged_any, pd.DataFrame({"query_id": queries, "doc_id": "__none__", "grade": 0})])
        cov = evaluate_trec(anyq, run, ["Judged@10", f"Judged@{k}"] if k != 10 else ["Judged@10"])
        low = sorted(cov.per_query.index[cov.per_query["Judged@10"] < threshold])
        entry = {"queries": len(queries), "graded_at_10": cov.mean["Judged@10"],
                 f"graded_at_{k}": cov.mean[f"Judged@{k}"], "queries_below_threshold": len(low),
                 "below_threshold": low[:50]}
        if len(grades):
            rel = evaluate_trec(grades, run, ["AP(rel=2)", "Bpref(rel=2)"])
            entry["ap"] = rel.mean["AP(rel=2)"]
            entry["bpref"] = rel.mean["Bpref(rel=2)"]
        out["runs"][system] = entry
    return out


@pytest.mark.parametrize("k", [10, 5, 20])
def test_pool_status_equals_the_scorer_passes(store, k):
    load_demo(store, cli_user(), workflows=True)
    assert pool.pool_status(store, k=k) == _reference(store, k)
    rng = random.Random(k)
    items = store.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")
    for q, d, s, e in rng.sample(items, min(60, len(items))):
        for who in rng.sample(["ann", "bob", "cy"], rng.randint(1, 3)):
            judging.record(store, who, q, d, s, e, op="grade", grade=rng.randint(0, 3))
    runs.set_retired(store, runs.active_systems(store)[0], True, actor="lead", reason="old")
    got, ref = pool.pool_status(store, k=k), _reference(store, k)
    assert got["runs"] and got.keys() == ref.keys()
    for system, entry in ref["runs"].items():
        for f, v in entry.items():
            assert got["runs"][system][f] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), (system, f)


def _trec_eval_ap_bpref(store, system: str) -> tuple[float, float]:
    """AP and Bpref of a run by pytrec_eval (:func:`pytrec_pool_reference`, defined below)."""
    ap, bpref, _ = pytrec_pool_reference(store, system)
    return ap, bpref


@pytest.mark.parametrize("seed", [3, 11])
def test_pool_status_on_a_generated_store(any_store, tmp_path, seed):
    """A generated store (several runs of passages, disputes, adjudications, runs that leave
    judged queries out, queries without a relevant item): every figure equals the former
    scorer passes, and AP/Bpref equal trec_eval's (pytrec_eval), on both engines."""
    from tests.golden_store import pool_gen

    pool_gen.fill(any_store, tmp_path, seed=seed)
    runs.set_retired(any_store, "sys1", True, actor="lead", reason="old")
    for k in (10, 3):
        got, ref = pool.pool_status(any_store, k=k), _reference(any_store, k)
        assert list(got["runs"]) == ["sys0", "sys2", "sys3"] and got.keys() == ref.keys()
        for system, entry in ref["runs"].items():
            assert got["runs"][system].keys() == entry.keys()
            for f, v in entry.items():
                assert got["runs"][system][f] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), \
                    (system, f)
            ap, bpref = _trec_eval_ap_bpref(any_store, system)
            assert got["runs"][system]["ap"] == pytest.approx(ap, rel=1e-12)
            assert got["runs"][system]["bpref"] == pytest.approx(bpref, rel=1e-12)
        assert 0 < got["runs"]["sys0"]["ap"] < got["runs"]["sys0"]["bpref"] <= 1


def test_pool_status_leaves_unanswerable_questions_out_of_ap_and_bpref(store, capsys):
    """Issue 36 item 5: the demo's q005 (answerable = false) has a final grade 0 on a pooled
    passage; pool status counted it as a 0 in every run's AP and Bpref (bm25 0.9167 / 0.9167
    over 12 questions) where pytrec_eval on the answerable questions' final grades gives
    1.000 / 1.000 over 11. Now the means are over the answerable questions, as golden score's,
    and the result says the level and what was left out."""
    load_demo(store, cli_user(), workflows=True, pool_job=False)  # the people's grades as loaded, before the judge
    got = pool.pool_status(store)
    assert got["relevance_level"] == 2
    assert got["left_out"] == {"unanswerable": ["q005"]}
    assert got["ap_queries"] == len(pytrec_pool_reference(store, "bm25")[2]) == 11
    for system, entry in got["runs"].items():
        ap, bpref, _ = pytrec_pool_reference(store, system)
        assert entry["ap"] == pytest.approx(ap, abs=1e-12), system
        assert entry["bpref"] == pytest.approx(bpref, abs=1e-12), system
    assert got["runs"]["bm25"]["ap"] == pytest.approx(1.0) and got["runs"]["bm25"]["bpref"] == pytest.approx(1.0)
    # the CLI says the level and what was left out, beside the figures
    from annotator import cli

    assert cli.main(["pool", "status"]) == 0
    out = capsys.readouterr()
    assert "bm25: graded@10" in out.out and "AP 1.000 vs Bpref 1.000" in out.out
    assert ("# AP and Bpref: relevant = final human grade >= 2 (as golden score --version), mean over 11 answerable "
            "question(s) with a final grade; 1 unanswerable question(s) left out (retrieval measures are undefined "
            "for them): q005") in out.err


def pytrec_pool_reference(store, system: str) -> tuple[float, float, list[str]]:
    """(AP, Bpref, the questions averaged over) of ``system`` by pytrec_eval at relevance
    level 2 on the store's final human grades of the answerable questions (a question the run
    left out scores 0, as trec_eval -c); a passage a run lists twice counts at its first rank.
    Shared with the page and API tests."""
    import pytrec_eval

    key = "doc_id || ':' || start || '-' || \"end\""
    negatives = {r[0] for r in store.read("SELECT query_id FROM queries WHERE NOT answerable")}
    qrels: dict = {}
    for q, d, g in store.read(f"SELECT query_id, {key}, grade FROM final_grades"):
        if q not in negatives:
            qrels.setdefault(q, {})[d] = int(g)
    run: dict = {}
    for q, d, r in store.read(f"SELECT query_id, {key}, rank FROM run_results WHERE system = ? ORDER BY rank DESC",
                              [system]):
        if q in qrels:
            run.setdefault(q, {})[d] = -float(r)  # DESC: a repeated passage keeps its first (best) rank
    per = pytrec_eval.RelevanceEvaluator(qrels, {"map", "bpref"}, relevance_level=2).evaluate(run)
    n = len(qrels)
    return (sum(v["map"] for v in per.values()) / n, sum(v["bpref"] for v in per.values()) / n, sorted(qrels))
