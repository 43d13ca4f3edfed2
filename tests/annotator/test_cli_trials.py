"""Recorded evaluations keep their provenance, and repeats of one evaluation are reported as
METHODOLOGY §10.8 asks (issue 25, item 8), through the installed `golden` command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from golden_store.live.results import record_evaluation
from golden_store.db.store import Store
from golden_store.versions import load_version
from tests.conftest import table_snapshot

GOLDEN = Path(sys.executable).parent / "golden"


def golden(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    env.pop("GOLDEN_VERSIONS", None)
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=180)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def scored(tmp_path):
    """A git checkout (tmp_path) holding a pipeline config, with the demo frozen as v1 and two
    runs: one retrieving every labeled document first, one retrieving nothing relevant for
    the first three queries."""
    git(tmp_path, "init", "-q")
    (tmp_path / "pipeline.yaml").write_bytes(b"chunker: fixed\nsize: 512\n")
    git(tmp_path, "add", "pipeline.yaml")
    git(tmp_path, "commit", "-q", "-m", "config")
    assert golden(tmp_path, "demo", "--small").returncode == 0
    assert golden(tmp_path, "freeze", "v1").returncode == 0
    qrels = load_version("v1", tmp_path / "versions").qrels()
    good = "".join(f"{q} Q0 {d} {i + 1} {9.0 - i} good\n" for q, docs in qrels.items() for i, d in enumerate(docs))
    worse_for = sorted(qrels)[:3]
    bad = "".join(f"{q} Q0 {d} {i + 1} {9.0 - i} good\n" for q, docs in qrels.items() if q not in worse_for
                  for i, d in enumerate(docs)) + "".join(f"{q} Q0 nowhere 1 1.0 x\n" for q in worse_for)
    (tmp_path / "good.txt").write_text(good)
    (tmp_path / "bad.txt").write_text(bad)
    return tmp_path, sorted(qrels), worse_for


def _rows(evaluation_id: str) -> list[dict]:
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        return s.read_dicts("SELECT * FROM eval_results WHERE evaluation_id = ? ORDER BY trial, metric, query_id",
                            [evaluation_id])


def test_score_record_keeps_git_sha_config_sha_judged_fraction_and_trial(scored):
    cwd, _, _ = scored
    head = git(cwd, "rev-parse", "HEAD")
    r = golden(cwd, "score", "--version", "v1", "--run", "good.txt", "-m", "R@10", "-m", "Success@1",
               "--record", "good", "--config", "pipeline.yaml", "--system", "bm25")
    assert r.returncode == 0, r.stderr
    assert "trial 0" in r.stderr and f"git {head[:12]}" in r.stderr
    rows = _rows("good")
    assert rows and {r_["metric"] for r_ in rows} == {"R(rel=2)@10", "Success(rel=2)@1"}
    # the default git sha is `git rev-parse HEAD` of the checkout the command ran in
    assert {r_["git_sha"] for r_ in rows} == {head}
    assert {r_["config_sha"] for r_ in rows} == {hashlib.sha256(b"chunker: fixed\nsize: 512\n").hexdigest()}
    assert {r_["trial"] for r_ in rows} == {0} and {r_["system"] for r_ in rows} == {"bm25"}
    assert {(r_["judge_model"], r_["rubric_sha"]) for r_ in rows} == {(None, None)}  # no measure judged by a model
    # judged_fraction on every row: the run's Judged@10 of that query, as golden score -m Judged@10 gives it
    j = golden(cwd, "score", "--version", "v1", "--run", "good.txt", "-m", "Judged@10", "--per-query", "--json")
    per_query = {q: v["Judged@10"] for q, v in json.loads(j.stdout)["per_query"].items()}
    assert all(r_["judged_fraction"] is not None for r_ in rows)
    assert {r_["query_id"]: r_["judged_fraction"] for r_ in rows} == pytest.approx(per_query)

    # --git-sha and --config-sha as given; another trial of the same evaluation
    r = golden(cwd, "score", "--version", "v1", "--run", "bad.txt", "-m", "R@10", "-m", "Success@1",
               "--record", "good", "--trial", "1", "--git-sha", "0123abc", "--config-sha", "cfg-1", "--system", "bm25")
    assert r.returncode == 0, r.stderr
    t1 = [r_ for r_ in _rows("good") if r_["trial"] == 1]
    assert t1 and {(r_["git_sha"], r_["config_sha"]) for r_ in t1} == {("0123abc", "cfg-1")}


def test_outside_a_git_checkout_no_sha_is_recorded_and_stderr_says_so(scored, tmp_path_factory):
    cwd, _, _ = scored
    elsewhere = tmp_path_factory.mktemp("not-a-checkout")
    (elsewhere / "good.txt").write_text((cwd / "good.txt").read_text())
    env_versions = str(cwd / "versions")
    env = dict(os.environ, GOLDEN_VERSIONS=env_versions)
    r = subprocess.run([str(GOLDEN), "score", "--version", "v1", "--run", "good.txt", "-m", "R@10", "--record", "nogit"],
                       capture_output=True, text=True, env=env, cwd=elsewhere, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "no git sha recorded" in r.stderr and "--git-sha" in r.stderr
    assert {r_["git_sha"] for r_ in _rows("nogit")} == {None}


def test_a_recorded_trial_is_refused_with_the_store_unchanged_unless_replace(scored):
    cwd, _, worse_for = scored
    base = ["score", "--version", "v1", "-m", "Success@1", "--record", "e"]
    assert golden(cwd, *base, "--run", "good.txt").returncode == 0
    assert golden(cwd, *base, "--run", "good.txt", "--trial", "1").returncode == 0
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        before = table_snapshot(s)
    for extra in (["--trial", "1"], [], ["--trial", "0", "--judged", "Success@1"], ["--trial", "2", "--judged", "AP"],
                  ["--trial", "2", "--judge-model", "m"], ["--trial", "2", "--config", "missing.yaml"],
                  ["--trial", "2", "--config", "pipeline.yaml", "--config-sha", "x"]):
        r = golden(cwd, *base, "--run", "bad.txt", *extra)
        assert r.returncode == 2, (extra, r.stderr)
    r = golden(cwd, *base, "--run", "bad.txt", "--trial", "1")
    assert "(trial 1) is already recorded; results are never overwritten" in r.stderr and "--replace" in r.stderr
    r = golden(cwd, *base, "--run", "bad.txt", "--trial", "2", "--judged", "Success@1")
    assert "judged by a model" in r.stderr and "Nothing was recorded" in r.stderr
    r = golden(cwd, "score", "--version", "v1", "-m", "Success@1", "--run", "bad.txt", "--trial", "3")
    assert r.returncode == 2 and "add --record" in r.stderr
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        assert table_snapshot(s) == before
    # --replace swaps trial 1's rows for the bad run's
    r = golden(cwd, *base, "--run", "bad.txt", "--trial", "1", "--replace")
    assert r.returncode == 0 and "replacing" in r.stderr
    t1 = {r_["query_id"]: r_["value"] for r_ in _rows("e") if r_["trial"] == 1}
    assert {q for q, v in t1.items() if v == 0.0} == set(worse_for)

    # the judge of a measure a model judged: given, on that measure's rows only
    r = golden(cwd, "score", "--version", "v1", "--run", "good.txt", "-m", "Success@1", "-m", "R@10", "--record", "j",
               "--judged", "Success@1", "--judge-model", "claude-judge-1", "--rubric-sha", "r" * 64)
    assert r.returncode == 0, r.stderr
    judges = {(r_["metric"], r_["judge_model"], r_["rubric_sha"]) for r_ in _rows("j")}
    assert judges == {("Success(rel=2)@1", "claude-judge-1", "r" * 64), ("R(rel=2)@10", None, None)}

    # golden results trials: k = 2, the three worse queries fail trial 1 -> pass^2 = 1 - 3/n
    r = golden(cwd, "results", "trials", "e", "--json")
    assert r.returncode == 0, r.stderr
    e = json.loads(r.stdout)["metrics"]["Success(rel=2)@1"]
    n = e["items"]
    assert e["k"] == 2 and e["pass_hat_k"] == pytest.approx((n - 3) / n)
    assert e["pass_at_1"] == pytest.approx((2 * n - 3) / (2 * n))
    assert [it["query_id"] for it in e["highest_variance"]] == worse_for
    assert e["highest_variance"][0]["variance"] == pytest.approx(0.5)  # values 1, 0: sample variance 0.5


def test_judge_taken_from_the_versions_judge_calibration(tmp_path):
    """A version frozen with one saved judge calibration names its judge: --judged alone records it."""
    assert golden(tmp_path, "demo", "--full").returncode == 0
    assert golden(tmp_path, "freeze", "v2").returncode == 0
    entries = load_version("v2", tmp_path / "versions").manifest["judge_calibrations"]
    assert len(entries) == 1, entries
    qrels = load_version("v2", tmp_path / "versions").qrels()
    (tmp_path / "run.txt").write_text("".join(f"{q} Q0 {d} 1 9.0 r\n" for q, docs in qrels.items() for d in docs))
    r = golden(tmp_path, "score", "--version", "v2", "--run", "run.txt", "-m", "Success@1", "--record", "cal",
               "--judged", "Success@1", "--git-sha", "x")
    assert r.returncode == 0, r.stderr
    assert "taken from the version's judge calibration" in r.stderr
    assert {(r_["judge_model"], r_["rubric_sha"]) for r_ in _rows("cal")} == {(entries[0]["judge_model"],
                                                                              entries[0]["rubric_sha"])}


def test_pass_hat_10_worked_example_through_the_cli(tmp_path):
    """§10.8's number: an item passing each trial with p = 0.95 independently passes all 10
    with 0.95^10 = 0.599, so 1 - 0.95^10 = 0.40 of users see at least one failure.

    The recorded data, checkable by hand: 1000 items x 10 trials of a binary metric. 599
    items pass every trial, 302 fail once, 99 fail twice: 302 + 2 * 99 = 500 failures of
    10,000, so pass@1 = 0.95 exactly; pass^10 = 599 / 1000 = 0.599 exactly, and 1 - pass^10
    = 0.401; pass@1^10 = 0.95^10 = 0.5987. Per-item sample variance: 0.9 / 9 = 0.1 with one
    failure, 1.6 / 9 with two, so the mean over items is (302 * 0.1 + 99 * 1.6 / 9) / 1000
    = (30.2 + 17.6) / 1000 = 0.0478, and the highest-variance items are the twice-failing."""
    items = [f"q{i:04d}" for i in range(1000)]
    fails: dict[str, set[int]] = {}
    for i, q in enumerate(items):
        if i < 302:
            fails[q] = {i % 10}
        elif i < 401:
            fails[q] = {i % 10, (i + 5) % 10}
        else:
            fails[q] = set()
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        for t in range(10):  # as golden score --record bench --trial t writes each trial
            per_query = pd.DataFrame({"Success@1": {q: 0.0 if t in fails[q] else 1.0 for q in items}})
            record_evaluation(s, "bench", per_query.rename_axis("query_id"), dataset_version="v1", trial=t,
                              git_sha="g", judged_fraction={q: 1.0 for q in items})
    r = golden(tmp_path, "results", "trials", "bench", "--json", "--top", "3")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    e = rep["metrics"]["Success@1"]
    assert e["k"] == 10 and e["items"] == 1000 and e["items_incomplete"] == 0
    assert e["pass_at_1"] == pytest.approx(0.95, abs=1e-12)
    assert e["pass_hat_k"] == pytest.approx(0.599, abs=1e-12)
    assert e["at_least_one_failure"] == pytest.approx(0.401, abs=1e-12)
    assert e["pass_hat_k_if_independent"] == pytest.approx(0.95 ** 10) and round(0.95 ** 10, 3) == 0.599
    assert e["pass_hat_j"]["1"] == pytest.approx(0.95) and e["pass_hat_j"]["10"] == pytest.approx(0.599)
    # pass^2 by hand: once-failing items C(9,2)/C(10,2) = 36/45 = 0.8, twice-failing C(8,2)/C(10,2) = 28/45
    assert e["pass_hat_j"]["2"] == pytest.approx((599 + 302 * 0.8 + 99 * 28 / 45) / 1000)
    assert e["variance_mean"] == pytest.approx(0.0478) and e["items_varying"] == 401
    assert [it["query_id"] for it in e["highest_variance"]] == ["q0302", "q0303", "q0304"]
    assert e["highest_variance"][0]["variance"] == pytest.approx(1.6 / 9) and e["highest_variance"][0]["passes"] == 8
    assert rep["threshold"] == 1.0 and len(rep["provenance"]) == 10 and rep["notes"] == []
    text = golden(tmp_path, "results", "trials", "bench")
    assert "pass@1 0.9500" in text.stdout and "pass^10 0.5990" in text.stdout
    assert "at least one failure in 10: 0.4010" in text.stdout and "pass@1^10 0.5987" in text.stdout
    # a lower threshold: every value passes
    e = json.loads(golden(tmp_path, "results", "trials", "bench", "--json", "--pass-threshold", "0").stdout)
    assert e["metrics"]["Success@1"]["pass_hat_k"] == 1.0
    r = golden(tmp_path, "results", "trials", "bench", "-m", "nDCG@10")
    assert r.returncode == 2 and "no recorded metric nDCG@10" in r.stderr
    r = golden(tmp_path, "results", "trials", "nope")
    assert r.returncode == 2 and "No recorded evaluation" in r.stderr
