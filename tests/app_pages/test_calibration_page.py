"""The Judge calibration page in the real app (AppTest), with an uploaded calibration file:
the judge report against the gate, reliability before and after isotonic recalibration,
the band and the cascade, bias diagnostics, saving, and the offset between two judges."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from annotator import context, demo, identity
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
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c1" in plain(m.value) for m in at.success)
    # a second judge on the same items: the offset between them is shown
    data2, df2 = _file(1, 0.3)
    at.file_uploader(key="cal_file").upload("calibration2.csv", data2, "text/csv").run()
    at.text_area(key="cal_rubric_upload:calibration2.csv").input("a changed rubric")
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c2" in plain(m.value) for m in at.success)
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
