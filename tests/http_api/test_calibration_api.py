"""Issue 38 item 6: judge calibration over the HTTP API (real HTTP on loopback, the Python
client and plain httpx): read a set, analyse it, save it pinned to its judge, list, compare;
a failed check is an answer (``passed: false``), a failing save without acknowledgement is
refused (422) and stores nothing, and the calibration permission is checked.

References: κ and FAIL recall from scikit-learn on the demo's set."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, recall_score

from annotator import demo
from golden_store.client import Studio, StudioError
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth, httpx

DEMO_SET = Path(demo.__file__).parent / "data" / "judge_calibration.csv"
ONE_CUT = Path(__file__).parents[1] / "golden_store" / "one_cut_calibration.csv"


def labels_snapshot(store) -> dict:
    """Every table but the API's own audit of token use (each request is recorded there)."""
    return {t: rows for t, rows in table_snapshot(store).items() if not t.startswith("api_token")}


def test_a_pipeline_revalidates_its_judge_over_the_api(store, api, tokens):
    lead = Studio(api, tokens["lead"])
    summary = lead.calibration_set(DEMO_SET)
    assert summary["n"] == 200 and summary["scale"] == "binary" and summary["enough_for_the_gate"] is True

    ref = pd.read_csv(DEMO_SET)
    y, j = (ref["human_label"] == "fail").astype(int), (ref["judge_label"] == "fail").astype(int)
    rep = lead.analyse_calibration(DEMO_SET)
    assert rep["passed"] is True and rep["checks_failed"] == []
    assert rep["judge_report"]["kappa"] == pytest.approx(cohen_kappa_score(y, j), abs=1e-6)
    assert rep["judge_report"]["fail_recall"] == pytest.approx(recall_score(y, j), abs=1e-6)
    failing = lead.analyse_calibration(ONE_CUT, seed=0)
    assert failing["passed"] is False and any("one cut" in m for m in failing["checks_failed"])

    saved = lead.save_calibration(DEMO_SET, "judge-a", note="nightly re-validation")
    assert saved["calibration_id"] == "c1" and saved["passed"] is True

    before = labels_snapshot(store)
    with pytest.raises(StudioError) as refused:
        lead.save_calibration(ONE_CUT, "judge-b")
    assert refused.value.status == 422 and "fails" in str(refused.value)
    assert labels_snapshot(store) == before  # nothing stored
    kept = lead.save_calibration(ONE_CUT, "judge-b", acknowledge_failed_checks=True)
    assert kept["calibration_id"] == "c2" and kept["passed"] is False

    rows = lead.calibrations()
    assert [(r["calibration_id"], r["judge_model"], bool(r["checks_failed"])) for r in rows] == [
        ("c1", "judge-a", False), ("c2", "judge-b", True)]
    cmp_ = lead.compare_calibrations("c1", "c2")
    assert cmp_["judge_changed"] == ["judge_model"] and cmp_["old"]["kappa"] == pytest.approx(rep["judge_report"]["kappa"])
    with pytest.raises(StudioError) as unknown:
        lead.compare_calibrations("c1", "c9")
    assert unknown.value.status == 404 and "c9" in str(unknown.value)


def test_bad_files_and_roles_are_refused_in_one_sentence(store, api, tokens, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,judge_label\ni1,pass\n")
    before = labels_snapshot(store)
    with bad.open("rb") as fh:
        r = httpx.post(f"{api}/calibrations", headers=auth(tokens["lead"]), files={"file": ("bad.csv", fh)},
                       data={"judge_model": "m"}, timeout=60)
    assert r.status_code == 422 and "lacks human_label" in r.json()["detail"]
    for role in ("annotator", "reviewer"):
        with DEMO_SET.open("rb") as fh:
            r = httpx.post(f"{api}/calibrations/analysis", headers=auth(tokens[role]),
                           files={"file": ("set.csv", fh)}, timeout=60)
        assert r.status_code == 403, (role, r.text)
    r = httpx.get(f"{api}/calibrations", headers=auth(None), timeout=60)
    assert r.status_code == 401
    assert labels_snapshot(store) == before


def test_golden_calibration_runs_on_a_studio_with_a_leads_token(store, api, tokens, capsys, monkeypatch):
    """``golden --server URL calibration ...`` (a CI job's form): the set is uploaded, the
    studio analyses and saves it as the token's account, and a lead's token suffices (the
    calibration permission, not an admin's)."""
    from annotator import cli

    monkeypatch.setenv("GOLDEN_TOKEN", tokens["lead"])
    server = api.removesuffix("/api/v1")
    code = cli.main(["--server", server, "--json", "calibration", "save", str(DEMO_SET), "--judge-model", "judge-ci"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out)["calibration_id"] == "c1"
    assert store.read("SELECT judge_model, source FROM calibrations") == [("judge-ci", "cli:judge_calibration.csv")]
    code = cli.main(["--server", server, "calibration", "analyse", str(ONE_CUT)])
    assert code == 1 and "check(s) failed" in capsys.readouterr().out  # the exit code comes back too
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["annotator"])
    assert cli.main(["--server", server, "calibration", "list"]) != 0
    assert "may not" in capsys.readouterr().err
