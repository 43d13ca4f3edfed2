"""Issue 29, H2 on the Judge calibration page (AppTest): the walkthrough's file, whose judge_p
is P(pass), is refused with the column and its AUC named and nothing green; ticking 'flip'
gives the report of 1 − judge_p; a target missed on the report split is a red box with the
measured share against the target while rule 1 stays out of green; a met target earns the
green rule 1 box; the flipped calibration is saved as flipped into the manifest."""

from __future__ import annotations

from sklearn.metrics import roc_auc_score

from annotator import demo
from annotator.judge import calibration
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain
from tests.inverted_calibration import review_csv, review_frame

PASSWORD = "0123456789"


def test_an_inverted_column_is_refused_then_flipped_with_consent_and_judged_honestly():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lena", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin)
    raw = review_frame()
    auc = roc_auc_score(raw["human_label"] == "fail", raw["judge_p"])
    at = app_as("lena")
    at.switch_page("app_pages/calibration.py").run()
    assert any("probability that an item FAILS" in plain(c.value) for c in at.caption)  # said at the top
    at.file_uploader(key="cal_file").upload("review.csv", review_csv(), "text/csv").run()
    assert not at.exception, at.exception
    assert any("judge_p = probability the item FAILS" in plain(h.value) for h in at.subheader)
    errors = [plain(e.value) for e in at.error]
    assert f"judge_p decreases with FAIL (AUC {auc:.2f} < 0.5): is it P(pass)? Tick 'flip' to use 1 − judge_p." \
        in errors
    assert not at.success and not at.metric  # no report, nothing green
    assert not [b for b in at.button if b.key == "cal_save"]  # nothing to save

    at.checkbox(key="cal_flip").check().run()
    assert not at.exception, at.exception
    assert any("judge_p flipped with your consent" in plain(w.value) for w in at.warning)
    metrics = {m.label: m.value for m in at.metric}
    assert "ECE raw" in metrics and "ECE after isotonic map" in metrics

    at.slider(key="cal_missed").set_value(0.10).run()
    a = calibration.analyze(calibration.load_upload("review.csv", review_csv()), flip=True, max_missed_bad=0.10)
    share = a.band_report["missed_bad_share"]
    assert share > 0.10
    assert any(f"auto-passed on the report split: {share:.3f} against the target 0.10" in plain(e.value)
               for e in at.error)
    assert not any("Rule 1" in plain(s.value) for s in at.success)  # the box the walkthrough saw green
    assert any(plain(w.value).startswith("Rule 1 holds") and "not a success" in plain(w.value) for w in at.warning)

    at.slider(key="cal_missed").set_value(0.15).run()
    assert not any("against the target" in plain(e.value) for e in at.error)
    assert any(plain(s.value).startswith("Rule 1 holds") for s in at.success)  # earned
    assert store.read("SELECT calibration_id FROM calibrations") == []
    at.text_input(key="cal_model").input("decision-model-1")
    at.button(key="cal_save").click().run()
    assert any("Saved calibration c1 " in plain(m.value) and "judge_p flipped" in plain(m.value) for m in at.success)
    entry = {e["calibration_id"]: e for e in calibration.manifest_entries(store, admin)}["c1"]
    assert entry["judge_p"]["flipped"] is True and entry["checks_failed"] == []
    table = next(d.value for d in at.dataframe if "judge_p flipped" in d.value.columns)
    assert table[["calibration_id", "judge_p flipped", "failed checks"]].values.tolist() == [["c1", True, 0]]
