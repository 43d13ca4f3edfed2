"""`golden compare` that survives a sweep (issue 25, item 9): held-out-only pairing, cohorts
by source and by date (METHODOLOGY §15.4), the correction named in the output, and the worked
example of METHODOLOGY "Start here" step 10 / §13 reproduced through the CLI. The questions'
attributes come from the frozen version the evaluations name. Runs on both engines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from annotator import cli
from golden_store.freezing import freeze
from golden_store.live.results import record_evaluation
from golden_store.versions import load_version


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _record(store, name: str, values: dict[str, float], version: str, strata: dict[str, str]) -> None:
    record_evaluation(store, name, pd.DataFrame({"R@10": values}).rename_axis("query_id"),
                      dataset_version=version, strata=strata)


@pytest.fixture
def demo_v1(demo_store):
    freeze(demo_store, "v1", actor="eng")
    return load_version("v1").queries


def test_held_out_only_pairs_only_the_held_out_questions(demo_store, demo_v1, capsys):
    q = demo_v1
    held = set(q.loc[q["held_out"], "query_id"])
    assert len(held) == 4
    strata = dict(zip(q["query_id"], q["stratum"]))
    # the candidate was tuned on the rest (a sweep): it wins everywhere but on the held-out slice
    base = {qid: 0.0 for qid in q["query_id"]}
    tuned = {qid: (0.0 if qid in held else 1.0) for qid in q["query_id"]}
    _record(demo_store, "base", base, "v1", strata)
    _record(demo_store, "tuned", tuned, "v1", strata)
    rc, out, _ = golden(capsys, "compare", "base", "tuned", "--json")
    e = json.loads(out)["metrics"]["R@10"]
    assert rc == 0 and e["n"] == 40 and e["delta"] == pytest.approx(36 / 40) and e["significant"]
    rc, _, err = golden(capsys, "compare", "base", "tuned", "--held-out-only")
    assert rc == 2 and "share only 4 question(s) for R@10, fewer than the 6 a verdict needs" in err
    rc, out, _ = golden(capsys, "compare", "base", "tuned", "--held-out-only", "--min-n", "1", "--json")
    c = json.loads(out)
    e = c["metrics"]["R@10"]
    assert rc == 0 and e["n"] == 4 and e["delta"] == 0.0 and e["ties"] == 4 and not e["significant"]
    assert e["only_in_a"] == 0 and e["only_in_b"] == 0  # the others are left out of both, not unpaired
    assert c["scope"] == ["held-out questions only: 4 of the evaluations' 40 questions are held out in v1; "
                          "the other 36 are left out"]
    # overall + the held-out questions' strata, all corrected together
    assert c["correction"]["method"] == "bh" and c["correction"]["comparisons"] == 1 + len(e["strata"])
    rc, out, _ = golden(capsys, "compare", "base", "tuned", "--held-out-only", "--min-n", "1")
    assert "scope: held-out questions only: 4 of" in out and "correction: Benjamini-Hochberg over" in out
    assert "R@10: PASS  delta +0.0000" in out


def test_a_version_the_evaluation_names_must_exist(demo_store, demo_v1, capsys):
    strata = dict(zip(demo_v1["query_id"], demo_v1["stratum"]))
    _record(demo_store, "a", {"q001": 0.0}, "v9", strata)
    _record(demo_store, "b", {"q001": 1.0}, "v9", strata)
    rc, _, err = golden(capsys, "compare", "a", "b", "--by", "source")
    assert rc == 2 and "frozen version the evaluation was scored on ('v9')" in err  # 2: could not compare
    rc, _, err = golden(capsys, "compare", "a", "b", "--by", "source", "--since", "2026-02-01")
    assert rc == 2 and "--since splits by creation date" in err


def test_cohorts_by_source_and_by_date_measure_flywheel_items_apart(demo_store, demo_v1, capsys):
    q = demo_v1
    strata = dict(zip(q["query_id"], q["stratum"]))
    src = dict(zip(q["query_id"], q["source"]))
    base = {qid: 1.0 for qid in q["query_id"]}
    # the candidate breaks on the production_log (flywheel) questions only
    cand = {qid: (0.0 if src[qid] == "production_log" else 1.0) for qid in q["query_id"]}
    _record(demo_store, "base", base, "v1", strata)
    _record(demo_store, "cand", cand, "v1", strata)
    n_prod = sum(s == "production_log" for s in src.values())
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--by", "source", "--json")
    c = json.loads(out)
    e = c["metrics"]["R@10"]
    assert rc == 1 and c["cohort_by"] == "source"
    assert set(e["cohorts"]) == {"expert", "production_log", "synthetic"}
    pl = e["cohorts"]["production_log"]
    assert pl["n"] == n_prod and pl["losses"] == n_prod and pl["verdict"] == "FAIL"
    assert e["cohorts"]["expert"]["verdict"] == "PASS" and e["cohorts"]["expert"]["delta"] == 0.0
    # every cell with a verdict is one corrected comparison; cells under 6 questions are "too few"
    cells = [e, *e["strata"].values()]
    for ce in e["cohorts"].values():
        cells += [ce, *ce["strata"].values()]
    tested = [x for x in cells if x["verdict"] != "too few"]
    assert all(x["n"] >= 6 for x in tested) and all(x["n"] < 6 and x["p"] is None for x in cells if x not in tested)
    assert c["correction"]["comparisons"] == len(tested)
    assert c["correction"]["too_few"] == len(cells) - len(tested) > 0
    assert c["scope"][-1].startswith("cohorts by source (the question's source in v1)")
    # by creation month: the demo's questions are from January to March 2026
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--by", "date", "--json")
    months = json.loads(out)["metrics"]["R@10"]["cohorts"]
    dates = pd.to_datetime(q["created_date"])
    assert {k: v["n"] for k, v in months.items()} == dates.dt.strftime("%Y-%m").value_counts().to_dict()
    # before / since a date (implies --by date)
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--since", "2026-02-15")
    assert "R@10: FAIL" in out and "  date since 2026-02-15: " in out and "  date before 2026-02-15: " in out
    assert "scope: cohorts by creation date: created before 2026-02-15 vs since 2026-02-15" in out
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--since", "2026-02-15", "--json")
    halves = json.loads(out)["metrics"]["R@10"]["cohorts"]
    cut = pd.Timestamp("2026-02-15")
    assert halves["since 2026-02-15"]["n"] == int((dates >= cut).sum())
    assert halves["before 2026-02-15"]["n"] == int((dates < cut).sum())


@pytest.mark.parametrize("wins, losses, delta, ci", [(34, 14, 0.10, (0.04, 0.17)), (30, 18, 0.06, (-0.01, 0.13))])
def test_the_worked_example_of_section_13_through_the_cli(store, capsys, wins, losses, delta, ci):
    """200 questions, per-question deltas of +1 (a win: the new system finds it, the old does
    not), -1 (a loss) or 0 (a tie): 34/14/152 give +0.10 with an interval of about [+0.04,
    +0.17] (real); 30/18 give +0.06, about [-0.01, +0.13] (not a win)."""
    qids = [f"w{i:03d}" for i in range(200)]
    old = dict.fromkeys(qids, 0.0)
    new = dict.fromkeys(qids, 0.0)
    for qid in qids[:wins]:
        new[qid] = 1.0
    for qid in qids[wins:wins + losses]:
        old[qid] = 1.0
    strata = dict.fromkeys(qids, "paraphrase")
    _record(store, "old", old, "v1", strata)
    _record(store, "new", new, "v1", strata)
    rc, out, _ = golden(capsys, "compare", "old", "new", "--json")
    e = json.loads(out)["metrics"]["R@10"]
    assert (e["wins"], e["losses"], e["ties"], e["n"]) == (wins, losses, 200 - wins - losses, 200)
    assert e["delta"] == pytest.approx(delta)
    # the normal-theory interval of a mean of 200 such deltas, computed independently: bootstrap
    # noise with 10,000 resamples is ~0.002 on each end; the methodology rounds to 0.01
    d = np.array([1.0] * wins + [-1.0] * losses + [0.0] * (200 - wins - losses))
    half = 1.96 * d.std(ddof=1) / np.sqrt(200)
    assert e["ci95"][0] == pytest.approx(delta - half, abs=0.006) and e["ci95"][1] == pytest.approx(delta + half, abs=0.006)
    assert round(e["ci95"][0], 2) == pytest.approx(ci[0], abs=0.011) and round(e["ci95"][1], 2) == pytest.approx(ci[1], abs=0.011)
    assert e["significant"] is (ci[0] > 0)
    # the seed fixes the resamples: the same numbers again
    assert json.loads(golden(capsys, "compare", "old", "new", "--json")[1])["metrics"]["R@10"]["ci95"] == e["ci95"]
    rc, out, _ = golden(capsys, "compare", "old", "new")
    assert f"W/L/T {wins}/{losses}/{200 - wins - losses}" in out and f"delta {delta:+.4f}" in out


def test_a_gate_that_compares_nothing_cannot_pass_exit_codes_0_1_2(demo_store, demo_v1, capsys):
    """Issue 36, item 1: a typo in a measure passed the gate (exit 0, 'over 0 comparisons').
    Exit 0 pass or warn, 1 FAIL, 2 could not compare; --json carries the API's gate field."""
    q = demo_v1
    strata = dict(zip(q["query_id"], q["stratum"]))
    _record(demo_store, "base", {qid: 1.0 for qid in q["query_id"]}, "v1", strata)
    _record(demo_store, "same", {qid: 1.0 for qid in q["query_id"]}, "v1", strata)
    _record(demo_store, "worse", {qid: 0.0 for qid in q["query_id"]}, "v1", strata)
    for argv, why in (
        (["-m", "bogus"], "Cannot compare bogus: not recorded by both evaluations (base recorded R@10; same recorded"),
        (["-m", "R@10", "-m", "nDCG@10"], "Cannot compare nDCG@10"),
        (["--min-n", "100"], "fewer than the 100 a verdict needs"),
    ):
        rc, out, err = golden(capsys, "compare", "base", "same", *argv)
        assert rc == 2 and why in err and out == "", argv
    rc, _, err = golden(capsys, "compare", "base", "nope")
    assert rc == 2 and "nope" in err
    rc, out, _ = golden(capsys, "compare", "base", "same", "--json")
    assert rc == 0 and json.loads(out)["gate"] == "PASS"
    rc, out, _ = golden(capsys, "compare", "base", "worse", "--json")
    assert rc == 1 and json.loads(out)["gate"] == "FAIL"
    rc, out, _ = golden(capsys, "compare", "base", "worse")
    assert rc == 1 and out.rstrip().endswith("gate: FAIL")


def test_the_same_run_under_two_hit_rules_is_refused_not_a_pass(demo_store, capsys):
    """Issue 36, item 6: the demo's dense passage run recorded under any_overlap and under
    contains_span compared as a system improvement ("PASS", +0.107 R@10 before the fix).
    The hit rule travels with the rows, and compare refuses across it unless told to."""
    dense = str(Path(__file__).resolve().parents[2] / "annotator" / "demo" / "data" / "runs" / "dense.jsonl")
    freeze(demo_store, "demo.v0", actor="eng")
    for rule, name in (("any_overlap", "d-any"), ("contains_span", "d-cs")):
        rc, _, err = golden(capsys, "score", "--version", "demo.v0", "--run", dense, "-m", "R@10", "--hit-rule", rule,
                            "--record", name, "--system", "dense")
        assert rc == 0, err
    rc, out, err = golden(capsys, "compare", "d-any", "d-cs")
    assert rc == 2 and out == ""
    assert "hit rule differs: d-any any_overlap, d-cs contains_span" in err and "--allow-different-definitions" in err
    rc, out, err = golden(capsys, "compare", "d-any", "d-cs", "--allow-different-definitions", "--json")
    c = json.loads(out)
    assert rc in (0, 1) and c["gate"] in ("PASS", "WARN", "FAIL")
    assert any(n.startswith("hit rule differs: d-any any_overlap, d-cs contains_span") for n in c["notes"])
    rc, out, _ = golden(capsys, "compare", "d-any", "d-any")  # one rule: compared as before
    assert rc == 0 and "gate: PASS" in out
