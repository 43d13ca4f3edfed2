"""Retrieval on the relevance judge's labels corrected by the pool's standing human sample
(issue 40 item 7) on a real store: a system whose top k we control, its items judge-labeled by
a job of our own, people's grades of the sampled ones; the figures checked by hand and against
``ppi_py`` (the reference implementation, test-only)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import ppi_py
import pytest

from annotator.evaluation.judge_corrected_retrieval import NO_SAMPLE, corrected_retrieval
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import ValidationError
from golden_store.live import judge_labels, judging, runs
from golden_store.live.judge_labels import JudgeLabel

Z95 = 1.959963984540054
# (judge grade, route, people's grade of a sampled item or None): relevant = grade >= 2
SAMPLED = [(3, 3), (2, 1), (2, 2), (0, 0)]           # judge 1 1 1 0, people 1 0 1 0
STANDS = [2, 0, 3, 1, 2, 2]                           # judge 1 0 1 0 1 1
WAITING = [2]                                         # sampled, people have not graded it yet: judge 1


def _items(store, n: int, skip: int = 0) -> list[tuple[str, str, int, int]]:
    """n (question, whole document) pairs of the demo, none graded by anyone yet."""
    qs = [str(r[0]) for r in store.read("SELECT query_id FROM queries WHERE NOT held_out ORDER BY query_id")]
    docs = [(str(d), len(t)) for d, t in store.read("SELECT doc_id, raw_text FROM documents ORDER BY doc_id")]
    pairs = [(q, d, 0, length) for q in qs for d, length in docs][skip:skip + n]
    assert len(pairs) == n
    return pairs


def _job(cur, share: float) -> str:
    return judge_labels.create_job_tx(cur, calibration_id="c1", judge_model="judge-x", rubric_sha="r", mode="direct",
                                      sample_share=share, sample_seed=0, gate_kappa=0.8, gate_override=None,
                                      estimate=None, actor="lead")


def _toy(store, *, share: float = 0.1, people: bool = True) -> list[tuple[str, str, int, int]]:
    """System "toy": 11 results (ranks 1..11), each labeled by the judge in one job."""
    keys = _items(store, len(SAMPLED) + len(STANDS) + len(WAITING))
    rows = pd.DataFrame([{"query_id": q, "rank": i + 1, "score": 100.0 - i, "doc_id": d, "start": s, "end": e,
                          "match_kind": "exact"} for i, (q, d, s, e) in enumerate(keys)])
    runs.store_run(store, runs.ParsedRun("toy", "jsonl", "toy.jsonl", "0" * 64, rows), actor="eng")
    labels = ([JudgeLabel(*k, outcome="labeled", route="sample", grade=g) for k, (g, _) in zip(keys, SAMPLED)]
              + [JudgeLabel(*k, outcome="labeled", route="judge", grade=g)
                 for k, g in zip(keys[len(SAMPLED):], STANDS)]
              + [JudgeLabel(*k, outcome="labeled", route="sample", grade=g)
                 for k, g in zip(keys[len(SAMPLED) + len(STANDS):], WAITING)])

    def tx(cur):
        judge_labels.insert_tx(cur, _job(cur, share), labels)
        if people:
            for k, (_, human) in zip(keys, SAMPLED):
                judging.insert_tx(cur, "rita", *k, op="grade", grade=human, rubric_version=1)
    store.write(tx)
    return keys


def test_the_corrected_share_equals_the_hand_worked_one_and_ppi_py(demo_store):
    _toy(demo_store)
    got = corrected_retrieval(demo_store, LOCAL_USER, system="toy", k=20)["toy"]
    assert (got.items, got.sampled, got.sampled_waiting, got.stratified_by_job) == (11, 4, 1, False)
    e = got.estimate
    # judge: 8 of 11 relevant (the 4 sampled 1 1 1 0, the 7 others 1 0 1 0 1 1 1); person minus
    # judge on the 4 sampled: 0, -1, 0, 0 -> -1/4. Corrected: the judge's share of all 11 items
    # plus that difference, 8/11 - 1/4 = 21/44 (= people's 2 of 4 plus the 7 others' judge labels
    # each corrected by -1/4, over 11: the finite-population difference estimate)
    assert e.judge_only.mean == pytest.approx(8 / 11)
    assert e.ppi.mean == pytest.approx(21 / 44)
    assert e.ppi.mean == pytest.approx((2 + 7 * (5 / 7 - 1 / 4)) / 11)
    assert e.bias == pytest.approx(0.25)
    se = math.sqrt((8 / 11 * 3 / 11) / 11 + (1 / 4 - 1 / 16) / 4)  # variances with denominators N and n
    assert (e.ppi.low, e.ppi.high) == (pytest.approx(21 / 44 - Z95 * se), pytest.approx(21 / 44 + Z95 * se))
    y, yhat = np.array([1, 0, 1, 0.]), np.array([1, 1, 1, 0.])
    every = np.array([1, 1, 1, 0, 1, 0, 1, 0, 1, 1, 1.])  # the judge's label on every item, sampled ones too
    low, high = ppi_py.ppi_mean_ci(y, yhat, every, alpha=0.05, lam=1)
    assert e.ppi.mean == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, every, lam=1))[0]))
    assert (e.ppi.low, e.ppi.high) == (pytest.approx(float(np.ravel(low)[0])), pytest.approx(float(np.ravel(high)[0])))
    # top 5 holds four sampled items and one whose label stands: judge 1 1 1 0 | 1
    top5 = corrected_retrieval(demo_store, LOCAL_USER, system="toy", k=5)["toy"]
    assert (top5.items, top5.sampled, top5.top_k["results"]) == (5, 4, 5)
    assert top5.estimate.judge_only.mean == pytest.approx(4 / 5)


def test_a_cut_of_3_counts_only_grade_3(demo_store):
    _toy(demo_store)
    got = corrected_retrieval(demo_store, LOCAL_USER, system="toy", k=20, cut=3)["toy"]
    # judge >= 3: sampled 1 0 0 0, unsampled 0 0 1 0 0 0 0; people >= 3: 1 0 0 0 (no difference)
    assert got.estimate.judge_only.mean == pytest.approx(2 / 11)
    assert got.estimate.ppi.mean == pytest.approx(2 / 11 + 0)


def test_without_people_grades_the_plain_figure_stands_alone(demo_store, golden_db, capsys):
    from annotator import cli

    _toy(demo_store, people=False)
    got = corrected_retrieval(demo_store, LOCAL_USER, system="toy", k=20)["toy"]
    assert got.sampled == 0 and got.as_dict()["corrected"] is None and got.as_dict()["note"] == NO_SAMPLE
    capsys.readouterr()
    assert cli.main(["--db", golden_db, "pool", "judge-corrected", "--system", "toy", "-k", "20"]) == 0
    out = capsys.readouterr().out
    assert "judge alone 0.7273 [" in out and f"; {NO_SAMPLE}" in out


def test_jobs_that_sampled_at_different_shares_are_corrected_each_on_its_own(demo_store):
    _toy(demo_store, share=0.5)
    # one more result of toy, labeled by a second job that samples 10%: its label stands
    extra = _items(demo_store, 1, skip=11)[0]
    demo_store.write(lambda cur: judge_labels.insert_tx(cur, _job(cur, 0.1), [
        JudgeLabel(*extra, outcome="labeled", route="judge", grade=3)]))
    demo_store.write(lambda cur: cur.execute("INSERT INTO run_results VALUES ('toy', ?, 99, 0.0, ?, ?, ?, 'exact')",
                                             list(extra)))
    got = corrected_retrieval(demo_store, LOCAL_USER, system="toy", k=100)["toy"]
    assert got.stratified_by_job and got.items == 12
    # the second job's stratum holds one item and no sampled one: its correction cannot be made
    assert got.estimate.ppi.mean is None and "each stratum's correction needs 2 or more" in got.estimate.ppi.reason
    assert got.estimate.judge_only.mean == pytest.approx(9 / 12)


def test_bad_options_and_roles_are_refused(demo_store):
    with pytest.raises(ValidationError, match="k .* is a rank from 1 to 1000, not 0"):
        corrected_retrieval(demo_store, LOCAL_USER, k=0)
    with pytest.raises(ValidationError, match="cut"):
        corrected_retrieval(demo_store, LOCAL_USER, cut=4)
    with pytest.raises(PermissionDenied):
        corrected_retrieval(demo_store, User("gina", "Gina", frozenset({Role.ANNOTATOR})))


def test_the_cli_shows_both_readings_and_says_why_ndcg_is_not_corrected(demo_store, golden_db, capsys):
    from annotator import cli

    _toy(demo_store)
    capsys.readouterr()
    assert cli.main(["--db", golden_db, "pool", "judge-corrected", "--system", "toy", "-k", "20", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    toy = got["systems"]["toy"]
    assert toy["corrected"]["mean"] == pytest.approx(21 / 44) and toy["judge_only"]["mean"] == pytest.approx(8 / 11)
    assert (toy["items"], toy["sampled"]) == (11, 4) and "nDCG@10 is not corrected" in got["not_offered"]
    assert cli.main(["--db", golden_db, "pool", "judge-corrected", "--system", "toy", "-k", "20"]) == 0
    cap = capsys.readouterr()
    assert "corrected by people's grades of 4 sampled item(s) (prediction-powered): 0.4773 [" in cap.out
    assert "judge minus people on the sample +0.2500" in cap.out
    assert "nDCG@10 is not corrected" in cap.err
