"""The Judge calibration page in the real app (AppTest), with an uploaded calibration file:
the judge report against the gate, reliability before and after isotonic recalibration,
the band and the cascade, bias diagnostics, saving, and the offset between two judges."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from annotator import demo
from annotator.judge import calibration
from annotator.people import identity
from annotator.process import context
from tests.conftest import plain
from tests.app_pages.test_app_roles import app_as

PASSWORD = "0123456789"


def _file(seed: int, noise: float) -> tuple[bytes, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 160
    bad = rng.random(n) < 0.3
    p = np.clip(np.where(bad, 0.75, 0.3) + rng.normal(0, 0.2, n), 0, 1) ** 2  # miscalibrated on purpose
    judge = np.where(rng.random(n) < noise, ~bad, bad)
    df = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "human_label": np.where(bad, "fail", "pass"),
                       "judge_label": np.where(judge, "fail", "pass"), "judge_p": p.round(4),
                       "length": rng.integers(40, 900, n), "winner_ab": rng.choice(["A", "B"], n),
                       "winner_ba": rng.choice(["A", "B"], n)})
    return df.to_csv(index=False).encode(), df


def test_upload_report_band_save_and_offset():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin)
    data, df = _file(1, 0.08)
    at = app_as("lead")
    at.switch_page("app_pages/calibration.py").run()
    assert not at.exception
    at.file_uploader(key="cal_file").upload("calibration.csv", data, "text/csv").run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    expected = cohen_kappa_score(df["human_label"], df["judge_label"])
    assert float(metrics["Cohen's κ"]) == round(expected, 3)
    assert "FAIL recall" in metrics and "ECE raw" in metrics and "ECE after isotonic map" in metrics
    assert float(metrics["ECE after isotonic map"]) < float(metrics["ECE raw"])
    assert any("Band fitted on the fit split" in m.value for m in at.markdown)
    assert any("Rule 1" in x.value for x in [*at.success, *at.warning])
    assert any("Position swap" in m.value for m in at.markdown)
    at.text_input(key="cal_model").input("judge-x")
    # this band misses its 2% target on the report split: red, and saving needs an acknowledgement
    assert any("auto-passed on the report split" in plain(e.value) and "against the target 0.02" in plain(e.value)
               for e in at.error)
    at.button(key="cal_save").click().run()
    assert any("fails 1 check(s)" in plain(e.value) for e in at.error)
    assert store.read("SELECT calibration_id FROM calibrations") == []
    at.checkbox(key="cal_ack").check().run()
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c1 MARKED AS FAILING" in plain(m.value) for m in at.warning)
    assert not any("Saved calibration" in plain(m.value) for m in at.success)
    # a second judge on the same items: the offset between them is shown
    data2, df2 = _file(1, 0.3)
    at.file_uploader(key="cal_file").upload("calibration2.csv", data2, "text/csv").run()
    at.text_area(key="cal_rubric_upload:calibration2.csv").input("a changed rubric")
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c2 MARKED AS FAILING" in plain(m.value) for m in at.warning)
    caption = next(c.value for c in at.caption if "archived item(s) both saw" in c.value)
    agree = np.mean(df["judge_label"].to_numpy() == df2["judge_label"].to_numpy())
    assert "160 archived" in caption and f"label agreement {agree:.3f}" in caption
    rows = store.read("SELECT calibration_id, judge_model, split_seed FROM calibrations ORDER BY 1")
    assert rows == [("c1", "judge-x", 0), ("c2", "judge-x", 0)]


def test_a_bad_upload_is_refused_with_its_lines():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    demo.load_demo(store, admin)
    at = app_as("admin")
    at.switch_page("app_pages/calibration.py").run()
    at.file_uploader(key="cal_file").upload("bad.csv", b"item_id,human_label,judge_p\na,nope,0.1\n", "text/csv").run()
    assert not at.exception
    assert any("1 problem" in e.value for e in at.error)
    assert any("bad.csv line 2 human_label" in c.value for c in at.code)


def _graded_file(seed: int = 4, n: int = 160) -> tuple[bytes, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, n)
    judge = np.clip(human + rng.choice([0, 0, 0, 1, -1], n), 0, 3)
    p = np.clip(np.where(human >= 2, 0.25, 0.75) + rng.normal(0, 0.15, n), 0, 1).round(4)
    df = pd.DataFrame({"item_id": [f"g{i}" for i in range(n)], "human_label": human, "judge_label": judge,
                       "judge_p": p})
    return df.to_csv(index=False).encode(), df


def test_graded_upload_per_grade_report_and_the_cut():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin)
    data, df = _graded_file()
    at = app_as("lead")
    at.switch_page("app_pages/calibration.py").run()
    at.file_uploader(key="cal_file").upload("graded.csv", data, "text/csv").run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    h, j = df["human_label"], df["judge_label"]
    assert float(metrics["κ quadratic weighted"]) == round(cohen_kappa_score(h, j, weights="quadratic"), 3)
    assert float(metrics["κ linear weighted"]) == round(cohen_kappa_score(h, j, weights="linear"), 3)
    assert float(metrics["κ per grade (unweighted)"]) == round(cohen_kappa_score(h, j), 3)
    assert float(metrics["Cohen's κ"]) == round(cohen_kappa_score(h >= 2, j >= 2), 3)  # the gate: binary at cut 2
    cm = next(d.value for d in at.dataframe if "judge 3" in d.value.columns)
    assert cm.to_numpy().tolist() == pd.crosstab(h, j).to_numpy().tolist()
    # which way p points, next to the charts
    assert any("probability of FAIL: high = bad" in c.value for c in at.caption)
    # the lead moves the cut: the binary figures follow, the per-grade ones do not
    at.radio(key="cal_cut_graded").set_value(3).run()
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Cohen's κ"]) == round(cohen_kappa_score(h >= 3, j >= 3), 3)
    assert float(metrics["κ quadratic weighted"]) == round(cohen_kappa_score(h, j, weights="quadratic"), 3)
    at.text_input(key="cal_model").input("judge-g")
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c1 (graded, pass/fail cut 3" in plain(m.value) for m in at.success)
    row = store.read_one("SELECT scale, pass_cut, rubric_text FROM calibrations WHERE calibration_id = 'c1'")
    # the rubric box's text: the judge's rules around the studio's own rubric (with its worked examples)
    assert row[:2] == ("graded", 3) and row[2] == calibration.default_rubric("upload", store)
    assert "<rubric version=\"1\">" in row[2] and "# Relevance rubric (graded 0-3)" in row[2]


def test_claude_run_estimate_confirm_usage_and_save(llm_server, tmp_path):
    import json

    from annotator.evaluation import runs_import
    from golden_store.live import judging
    from tests.annotator.test_leaks import assert_nothing_held_out_sent
    from tests.llm_server import message

    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin)
    run = tmp_path / "r.txt"
    run.write_text("q001 Q0 vpn-troubleshooting 1 3 x\nq001 Q0 pension 2 2 x\nq009 Q0 parental-leave 1 1 x\n")
    runs_import.import_run(store, admin, run, "sys")
    runs_import.build_pool(store, admin, 5)
    for q, d, g in (("q001", "vpn-troubleshooting", 3), ("q001", "pension", 0), ("q009", "parental-leave", 3)):
        st_, en = store.read_one("SELECT start, \"end\" FROM pool_items WHERE query_id = ? AND doc_id = ?", [q, d])
        judging.record(store, "expert", q, d, st_, en, op="grade", grade=g)

    def respond(body):
        passage = body["messages"][0]["content"].split("<passage>")[1]
        if "VPN-ERR-0417 means" in passage:
            return 200, message(json.dumps({"justification": "j", "grade": 3, "p_fail": 0.05,
                                            "supporting_quote": "VPN-ERR-0417 means the device certificate"}))
        return 200, message(json.dumps({"justification": "j", "grade": 0, "supporting_quote": None, "p_fail": 0.9}))

    llm_server.default = respond
    at = app_as("lead")
    at.switch_page("app_pages/calibration.py").run()
    at.radio(key="cal_source").set_value("Graded relevance (0-3) in the store").run()
    assert not at.exception, at.exception
    at.button(key="cal_run").click().run()
    assert llm_server.requests == []  # nothing is sent before the confirm click
    est = plain(next(i.value for i in at.info if "Before anything is sent" in i.value))
    assert "2 call(s)" in est and "Batch API" in est and "Caching applies" in est and "1 item(s) will be skipped" in est
    assert plain(at.button(key="cal_plan_confirm").label).startswith("Confirm: spend")
    at.button(key="cal_plan_confirm").click().run()
    assert not at.exception, at.exception
    assert len(llm_server.requests) == 2
    assert_nothing_held_out_sent(llm_server, store)  # q009 is held out: never in any request
    assert any("Judged 2 item(s)" in plain(m.value) and "Cache" in plain(m.value) for m in at.success)
    assert any("Last Claude run" in plain(c.value) and "Used: 2 call(s)" in plain(c.value) for c in at.caption)
    at.text_area(key="cal_rubric_store:relevance_graded").input("an edited rubric").run()
    assert any("differs from the one the Claude judge ran with" in w.value for w in at.warning)
    # three items cannot show a band: saved only as failing, with the acknowledgement
    assert any("Rule 1 cannot be judged on the report split" in plain(e.value) for e in at.warning)
    at.checkbox(key="cal_ack").check().run()
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c1 MARKED AS FAILING" in plain(m.value) for m in at.warning)
    scale, cut, text = store.read_one("SELECT scale, pass_cut, rubric_text FROM calibrations")
    # the rubric the judge ran with (not the edited box)
    assert (scale, cut, text) == ("graded", 2, calibration.default_rubric("store:relevance_graded", store))
    assert text in [r["body"]["system"][0]["text"] for r in llm_server.requests]
    p = dict(store.read("SELECT item_id, judge_p FROM calibration_items"))
    assert sorted(v for v in p.values() if v is not None) == [0.05, 0.9]
