"""Issue 38 item 6: the demo shows the cascade at work. Its judge calibration passes its own
checks on an honest analysis (it used to be "one cut", with 18% of bad items auto-passed, so
no pool grading could run from it), and the demo holds a finished pool-grading job: judge
labels on the pool, the band's items in people's queue, a standing sample people graded,
with its κ.

References: the figures are recomputed here from the demo's files with scikit-learn
(cohen_kappa_score, recall_score, IsotonicRegression) and by hand (the band's order
statistics, the routing of each pool answer), never read back from the studio's code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import cohen_kappa_score, recall_score

from annotator import demo
from annotator.judge import calibration, pool_grading
from annotator.people.identity import LOCAL_USER
from golden_store.live import judge_labels, judging
from tests.conftest import prepared_store

DATA = Path(demo.__file__).parent / "data"


@pytest.fixture
def full_demo(request, golden_db):
    """The demo with every workflow, as loaded by the local user (once, copied)."""
    store, res = prepared_store(request, "full-demo-local", lambda s, _: demo.load_demo(s, LOCAL_USER, workflows=True))
    return store, res["workflows"]


def test_the_demo_calibration_passes_every_check_by_an_independent_recount():
    df = pd.read_csv(DATA / "judge_calibration.csv")
    assert len(df) >= 100  # the size pool grading asks of a calibration
    a = calibration.analyze(calibration.load_upload("judge_calibration.csv",
                                                    (DATA / "judge_calibration.csv").read_bytes()), seed=0)
    assert [c.name for c in a.failed_checks] == []

    y = (df["human_label"] == "fail").to_numpy(int)
    j = (df["judge_label"] == "fail").to_numpy(int)
    p = df["judge_p"].to_numpy(float)
    kappa = cohen_kappa_score(y, j)
    assert a.report["kappa"] == pytest.approx(kappa) and kappa >= 0.7  # clears the κ gate
    assert a.report["fail_recall"] == pytest.approx(recall_score(y, j)) and a.report["fail_recall"] >= 0.8

    # the isotonic map and the band on the fit split, by hand: at most 2% of the fit split's
    # bad items under low and 2% of its good items over high (the k-th order statistics)
    fit, rep = a.fit_idx, a.report_idx
    assert len(fit) == len(rep) == 100 and not set(fit) & set(rep)
    iso = IsotonicRegression(out_of_bounds="clip").fit(p[fit], y[fit])
    used = iso.predict(p)
    bad, good = np.sort(used[fit][y[fit] == 1]), np.sort(used[fit][y[fit] == 0])[::-1]
    low = bad[int(0.02 * len(bad))] - 1e-9
    high = good[int(0.02 * len(good))] + 1e-9
    assert (a.band["low"], a.band["high"]) == (pytest.approx(low), pytest.approx(high))
    assert high - low > 0.5  # a band, not one cut

    # on the report split: the shares the targets bound, and what goes to people
    ur, yr = used[rep], y[rep]
    missed_bad = np.mean(ur[yr == 1] <= low)
    false_fail = np.mean(ur[yr == 0] >= high)
    escalated = np.mean((ur > low) & (ur < high))
    assert missed_bad <= 0.02 and false_fail <= 0.02 and 0 < escalated < 1
    assert a.band_report["missed_bad_share"] == pytest.approx(missed_bad)
    assert a.band_report["false_fail_share"] == pytest.approx(false_fail)
    assert a.band_report["escalation_rate"] == pytest.approx(escalated)

    # rule 1 on the report split: the cascade (band, the judge's label between) beats the
    # decision model (FAIL at p ≥ 0.5) and is no worse than the judge alone
    jr = j[rep]
    cascade = np.where(ur <= low, 0, np.where(ur >= high, 1, jr))
    k_cascade = cohen_kappa_score(yr, cascade)
    assert k_cascade > cohen_kappa_score(yr, (ur >= 0.5).astype(int))
    assert k_cascade >= cohen_kappa_score(yr, jr)
    assert a.cascade["cascade"]["kappa"] == pytest.approx(k_cascade)


def test_the_demo_holds_a_finished_pool_grading_job(full_demo, monkeypatch):
    store, wf = full_demo
    answers = {(r["query_id"], r["doc_id"], r["start"], r["end"]): r
               for r in map(json.loads, (DATA / "pool_judge.jsonl").open())}
    cal_row = pool_grading.calibration(store, wf["calibration"])
    assert cal_row["judge_model"] == demo.DEMO_JUDGE and not cal_row["report"]["checks_failed"]

    (job,) = judge_labels.jobs(store)
    assert job["status"] == "done" and job["calibration_id"] == wf["calibration"]
    assert job["answered"] == demo.DEMO_JUDGE_ITEMS

    # every answer routed by hand: the calibration's isotonic map, then its band
    iso = cal_row["isotonic"]
    low, high = cal_row["band_low"], cal_row["band_high"]
    expect = {"judge": 0, "human": 0}
    for key, route in _routes(store).items():
        a = answers[key]
        used = float(np.interp(np.clip(a["p_fail"], iso["x"][0], iso["x"][-1]), iso["x"], iso["y"]))
        sure = used <= low and a["grade"] >= 2 or used >= high and a["grade"] < 2
        assert (route != "human") == sure, (key, used, a)
        expect["judge" if sure else "human"] += 1
    st = judge_labels.counts(store)
    assert st["judge"] + st["sample"] == wf["pool_job"]["labeled"] == expect["judge"]
    assert st["escalated"] == wf["pool_job"]["escalated"] == expect["human"] > 0

    # the standing sample: about 10% of what the judge labeled, graded by people blind
    sampled = judge_labels.routed(store, "sample")
    assert len(sampled) == wf["pool_job"]["sampled"] == round(0.1 * expect["judge"])
    monkeypatch.setenv("GOLDEN_LLM_MODEL", demo.DEMO_JUDGE)
    rep = pool_grading.sample_report(store, LOCAL_USER)
    assert rep["graded_by_people"] == len(sampled) and rep["flags"] == []
    human = [answers[k]["human_grade"] >= 2 for k in sampled]
    judge = [answers[k]["grade"] >= 2 for k in sampled]
    k = cohen_kappa_score(human, judge)
    assert rep["overall"]["kappa"] == pytest.approx(k) and not math.isnan(k)

    # the band's items wait in people's Judge queue; the judge's labels do not
    queue = {(i["query_id"], i["doc_id"], int(i["start"]), int(i["end"]))
             for i in judging.next_items(store, "someone-new", 1000)}
    escalated = set(judge_labels.routed(store, "human"))
    assert escalated <= queue and not set(judge_labels.routed(store, "judge")) & queue


def test_pool_grading_can_run_from_the_demo_calibration(full_demo, monkeypatch):
    """With the demo's judge as the studio's judge (GOLDEN_LLM_MODEL=demo-judge-1, e.g. on the
    local stand-in), the demo calibration drives a new job over the pool items left."""
    store, wf = full_demo
    monkeypatch.setenv("GOLDEN_LLM_MODEL", demo.DEMO_JUDGE)
    plan = pool_grading.plan(store, LOCAL_USER, wf["calibration"], mode="direct")
    assert plan.problems == [] and plan.clears_gate
    assert plan.n_items == judge_labels.plan_counts(store)["to_grade"] > 0


def _routes(store) -> dict[tuple[str, str, int, int], str]:
    return {k: r for r in ("judge", "human", "sample") for k in judge_labels.routed(store, r)}
