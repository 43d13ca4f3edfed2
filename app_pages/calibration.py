"""Judge calibration (methodology §11: docs/methodology.md, judge calibration): a calibration set and a judge's outputs → the judge
report against humans, reliability and isotonic recalibration, the cascade band fitted on
one split and reported on the other, bias diagnostics; saved pinned to the judge."""

from __future__ import annotations

import math
from functools import partial

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from annotator.judge import pool_grading, calibration, llm
from annotator.people.roles import Permission
from app_pages import _cost
from app_pages._shared import (attempt, flash, md_escape, picked, progress_callback, require_page, show_flash,
                                store, upload_bytes, upload_limit)
from golden_store.scoring.calibration import FAIL, KAPPA_GATE

user = require_page(Permission.CALIBRATE_JUDGE)
s = store()
st.title("Judge calibration")
st.caption("judge_p is read as the judge's probability that an item FAILS (is bad): high = bad. A P(pass) column is "
           "detected and refused unless you flip it.")
show_flash()
if saved_failing := st.session_state.pop("_cal_saved_failing", None):  # a save that is not a success
    st.warning(md_escape(saved_failing))


def fmt(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def saved_table(rows: list[dict]) -> pd.DataFrame:
    """Saved calibrations as a table, with whether judge_p was flipped and how many checks the
    fit failed (saved anyway, acknowledged): a failing calibration never looks like the others."""
    return pd.DataFrame([{**{k: v for k, v in r.items() if k not in ("report", "isotonic", "rubric_text")},
                          "judge_p flipped": bool(((r.get("report") or {}).get("judge_p") or {}).get("flipped")),
                          "failed checks": len((r.get("report") or {}).get("checks_failed") or [])}
                         for r in rows])


# ---- 1. the calibration set ------------------------------------------------------------------
CALIBRATION_UPLOAD_MB = 50  # a calibration set is 100-200 items; this leaves ample room
P_MEANS = ("judge_p is the judge's probability that the item FAILS (is bad): 1.0 = surely bad, 0.0 = surely good. "
           "A column that is P(pass) is detected (it falls as items get worse) and refused unless you tick 'flip'.")

st.subheader("1. Calibration set", anchor=False)
source = st.radio("Items and human labels", ["Upload a file", "Relevance grades in the store",
                                             "Graded relevance (0-3) in the store",
                                             "Nugget support labels in the store"], horizontal=True, key="cal_source")
df: pd.DataFrame | None = None
source_name = ""
if source == "Upload a file":
    up = st.file_uploader("CSV or JSONL: item_id, human_label (pass/fail, or a grade 0-3: a file is binary or "
                          "graded, not both), judge_label (pass/fail/insufficient, or 0-3/insufficient) and/or "
                          "judge_p = P(item FAILS), high = bad, NOT P(pass); optional stratum, length, question, text, "
                          "winner_ab, winner_ba", type=["csv", "jsonl"], key="cal_file",
                          max_upload_size=upload_limit(CALIBRATION_UPLOAD_MB), help=P_MEANS)
    if up is not None and (data := upload_bytes(up, CALIBRATION_UPLOAD_MB)) is not None:
        df = attempt(partial(calibration.load_upload, up.name, data))
        source_name = f"upload:{up.name}"
elif source == "Relevance grades in the store":
    df = attempt(lambda: calibration.store_set(s, user, "relevance"))
    source_name = "store:relevance_grades"
elif source == "Graded relevance (0-3) in the store":
    df = attempt(lambda: calibration.store_set(s, user, "graded"))
    source_name = "store:relevance_graded"
else:
    df = attempt(lambda: calibration.store_set(s, user, "nuggets"))
    source_name = "store:nugget_support"
if df is None:
    st.info("Choose a calibration set: 100-200 human-labelled items, hard and ambiguous ones included (§11.1).")
    if saved_before := calibration.saved(s, user):  # the saved calibrations stay in view
        st.subheader(f"Saved calibrations ({len(saved_before)})", anchor=False)
        st.dataframe(saved_table(saved_before), hide_index=True, width="stretch")
    st.stop()
scale = calibration.scale_of(df)
if scale == "binary":
    cut = 2
    st.caption(f"Binary set: {len(df)} items labelled pass/fail by people (pass = grade ≥ 2).")
else:
    cuts = {"graded": {1: "1: related or better passes", 2: "2: partly answers or better passes (default)",
                       3: "3: only a full answer passes"},
            "nugget": {1: "partial or support passes", 2: "support only passes (default)"}}[scale]
    cut = int(picked(st.radio("Pass/fail cut (pass = grade ≥ cut): the binary figures, the gate κ and the band are "
                              "at this cut", list(cuts), index=list(cuts).index(2), format_func=cuts.__getitem__,
                              horizontal=True, key=f"cal_cut_{scale}")))
    st.caption(f"{'Graded 0-3' if scale == 'graded' else 'Nugget support (none 0 / partial 1 / support 2)'} set: "
               f"{len(df)} items.")
if len(df) < pool_grading.MIN_CALIBRATION_ITEMS:
    st.warning(f"{len(df)} items: the methodology (§11.1) asks for 100-200, hard and ambiguous ones included. The figures "
               f"below are shown, but a calibration on fewer than {pool_grading.MIN_CALIBRATION_ITEMS} items does not "
               "clear the gate for grading the pool (Judge the pool asks for a reason to go ahead).")

# ---- 2. the judge's outputs ------------------------------------------------------------------
st.subheader("2. Judge outputs (judge_p = probability the item FAILS: high = bad)", anchor=False)
judge_key = f"cal_judge_{source_name}"
ran = st.session_state.get(judge_key)
if ran:  # outputs of a Claude run on this set, kept for this session
    df = calibration.with_run(df, ran)
can_run = df["question"].notna().any() and df["text"].notna().any() if "question" in df else False
c1, c2 = st.columns([2, 1])
judge_model = c1.text_input("Judge model id (pinned with the calibration)",
                            value=ran["model"] if ran else llm.model_id(), key="cal_model")
rubric = c1.text_area("Judge rubric (its sha and its text are saved with the calibration; edit it and you have a "
                      "new judge). A Claude run here sends it as the cached system prompt, as pool grading will.",
                      value=calibration.default_rubric(source_name, s), height=220, key=f"cal_rubric_{source_name}")
judged_n = int((df["judge_grade"].notna() if scale != "binary" else df["judge_label"].notna()).sum())
c2.caption(f"{judged_n} of {len(df)} items have a judge {'grade' if scale != 'binary' else 'label'}; "
           f"{int(df['judge_p'].notna().sum())} have a probability of FAIL (judge_p: high = bad).")
if ran:
    c2.caption(md_escape("Last Claude run: " + " ".join(ran.get("usage", []))))
    if ran.get("rubric", rubric) != rubric:
        c2.warning("The rubric above differs from the one the Claude judge ran with; the calibration is saved with "
                   "the rubric the judge ran with. Run the judge again to calibrate the edited rubric.")
if can_run:
    if not llm.api_key_present():
        c2.info(llm.how_to_enable())
    else:
        mode: str = picked(c2.radio("Send", ["Synchronous", "Batch API (half price, results within 24 h)"],
                                    key="cal_mode"))
        batch = mode.startswith("Batch")
        # the button shows the estimate first (§11.7); only its confirmation sends anything, and
        # only for what it was made for (this set, rubric, cut and mode)
        params = (source_name, rubric, cut, batch, len(df))
        if c2.button("Run the Claude judge on this set", key="cal_run"):
            plan = attempt(lambda: calibration.plan_run(s, user, df, rubric, batch=batch))
            if plan is not None:
                _cost.propose("cal_plan", plan, params)
        if _cost.confirmed("cal_plan", params) is not None:
            run = attempt(lambda: calibration.run_claude_judge(s, user, df, rubric, cut=cut, batch=batch,
                                                               progress=progress_callback("Judging")))
            if run is not None:
                st.session_state[judge_key] = {"labels": run.labels, "grades": run.grades, "p_fail": run.p_fail,
                                               "model": run.model, "rubric": run.rubric, "usage": run.usage.lines()}
                flash(f"Judged {len(run.labels)} item(s){' through the Batch API' if run.batch else ''}: "
                      f"{run.refusals} refusal(s), {run.quote_backstops} grade(s) without a verbatim quote turned "
                      f"insufficient, {run.skipped_held_out} held-out item(s) not sent, {len(run.errors)} error(s). "
                      + " ".join(run.usage.lines()))
                st.rerun()

c3, c4, c5 = st.columns(3)
seed = int(c3.number_input("Split seed", 0, 2**31 - 1, 0, key="cal_seed"))
fit_share = c4.slider("Fit split share", 0.2, 0.8, 0.5, 0.05, key="cal_fit")
recal = c5.checkbox("Isotonic recalibration (fitted on the fit split)", value=True, key="cal_iso")
c6, c7 = st.columns(2)
max_missed = c6.slider("Max share of bad items auto-passed", 0.0, 0.2, 0.02, 0.01, key="cal_missed")
max_false = c7.slider("Max share of good items auto-failed", 0.0, 0.2, 0.02, 0.01, key="cal_false")
# which way judge_p points: a column that falls with FAIL (most likely P(pass)) is refused
# unless the lead consents to flipping it; the flip is saved with the calibration
flip = False
if (refusal := calibration.inverted_judge_p(df, cut)) is not None:
    flip = st.checkbox("flip: use 1 − judge_p (the column is P(pass)); the calibration is saved as flipped",
                       key="cal_flip")
    if not flip:
        st.error(md_escape(refusal))
        st.stop()
    st.warning(md_escape(f"judge_p flipped with your consent: the figures below use 1 − judge_p as P(FAIL) "
                         f"({refusal.split(': is it')[0]} as uploaded). The calibration is saved as flipped."))
a = attempt(lambda: calibration.analyze(df, seed=seed, fit_share=fit_share, recalibrate=recal,
                                        max_missed_bad=max_missed, max_false_fail=max_false, cut=cut, flip=flip))
if a is None:
    st.stop()
df = calibration.with_cut(df, cut)
checks = {c.name: c for c in a.checks}


def show_check(name: str) -> None:
    """A failed check in its colour (red error, yellow warning); a passed one adds nothing (the
    captions above already give the measured shares against their targets). Nothing on this
    page is green unless the check behind it holds on the report split."""
    c = checks.get(name)
    if c is not None and not c.ok:
        (st.error if c.severity == "error" else st.warning)(md_escape(c.message))

# ---- 3. the judge report ---------------------------------------------------------------------
st.subheader("3. Judge report" + ("" if scale == "binary" else f" at the cut (pass = grade ≥ {cut})"), anchor=False)
r = a.report
if r is None:
    st.info("No judge labels yet: upload them or run the Claude judge.")
else:
    m = st.columns(4)
    m[0].metric("Cohen's κ", fmt(r["kappa"]), help=f"binary, at the pass/fail cut; gate {KAPPA_GATE}")
    m[1].metric("FAIL recall", fmt(r["fail_recall"]), help="the number that decides whether the judge can gate")
    m[2].metric("FAIL precision", fmt(r["fail_precision"]))
    m[3].metric("accuracy", fmt(r["accuracy"]), help="never read alone")
    (st.success if r["passes_gate"] else st.error)(
        f"κ {fmt(r['kappa'])} against the {KAPPA_GATE} gate: "
        + ("the judge may gate." if r["passes_gate"] else "the judge may NOT gate anything yet; iterate the rubric.")
        + f" It catches {fmt(r['fail_recall'])} of the FAIL items.")
    per = pd.DataFrame(r["per_class"]).T.rename_axis("class").reset_index()
    st.dataframe(per, hide_index=True, width="stretch")
    dist = pd.DataFrame({"human": pd.Series(r["human_dist"]), "judge": pd.Series(r["judge_dist"])}).fillna(0)
    st.caption("Label distributions, side by side")
    st.bar_chart(dist, stack=False)

if scale != "binary":
    st.subheader("Per grade (§11.4)", anchor=False)
    g = a.graded
    if g is None:
        st.info("No judge grades yet: upload them (judge_label 0-3) or run the Claude judge.")
    else:
        names = ({0: "0 none", 1: "1 partial", 2: "2 support"} if scale == "nugget"
                 else {k: str(k) for k in g["grades"]})
        gm = st.columns(4)
        gm[0].metric("κ per grade (unweighted)", fmt(g["kappa"]))
        gm[1].metric("κ linear weighted", fmt(g["kappa_linear"]))
        gm[2].metric("κ quadratic weighted", fmt(g["kappa_quadratic"]))
        gm[3].metric("within one grade", fmt(g["within_one"]), help=f"exact agreement {fmt(g['exact_agreement'])}")
        st.caption(f"On the {g['n']} item(s) both graded; {a.judge_insufficient} item(s) the judge gave no grade "
                   "(insufficient) are left out here and count as not-FAIL at the cut. The gate is the binary κ "
                   "at the cut above.")
        cm = pd.DataFrame(g["confusion"], index=[f"human {names[k]}" for k in g["grades"]],
                          columns=[f"judge {names[k]}" for k in g["grades"]])
        st.dataframe(cm, width="stretch")
        pg = pd.DataFrame(g["per_grade"]).T
        pg.index = [names[k] for k in pg.index]
        st.dataframe(pg.rename_axis("grade").reset_index(), hide_index=True, width="stretch")
        gd = pd.DataFrame({"human": pd.Series(g["human_dist"]), "judge": pd.Series(g["judge_dist"])}).fillna(0)
        gd.index = [names[k] for k in gd.index]
        st.caption("Grade distributions, side by side")
        st.bar_chart(gd, stack=False)

# ---- 4. reliability and recalibration ---------------------------------------------------------
if a.reliability_raw and a.band and a.band_report:  # fitted together (calibration.analyze)
    st.subheader("4. Reliability of p = P(FAIL) (report split)", anchor=False)
    st.caption(("p is 1 − judge_p as uploaded (flipped with your consent): " if a.flipped else "")
               + "p is the judge's probability of FAIL: high = bad. Calibrated: among items given p ≈ 0.8, about 80% "
               "fail by the people's labels" + ("" if scale == "binary" else f" (fail = grade below {cut})") + ".")
    rows = [{"mean p": b[0], "share FAIL": b[1], "items": b[2], "judge": "raw"} for b in a.reliability_raw["bins"]]
    if a.reliability_cal:
        rows += [{"mean p": b[0], "share FAIL": b[1], "items": b[2], "judge": "recalibrated"}
                 for b in a.reliability_cal["bins"]]
    rel = pd.DataFrame(rows)
    diag = alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0, 1]})).mark_line(strokeDash=[4, 4], color="gray").encode(
        x="x:Q", y="y:Q")
    curve = alt.Chart(rel).mark_line(point=True).encode(
        x=alt.X("mean p:Q", scale=alt.Scale(domain=[0, 1])), y=alt.Y("share FAIL:Q", scale=alt.Scale(domain=[0, 1])),
        color="judge:N", tooltip=["judge", "mean p", "share FAIL", "items"])
    left, right = st.columns(2)
    left.altair_chart(diag + curve, width="stretch")
    right.metric("ECE raw", fmt(a.reliability_raw["ece"]))
    if a.reliability_cal:
        right.metric("ECE after isotonic map", fmt(a.reliability_cal["ece"]))
    right.dataframe(rel, hide_index=True, width="stretch")
    show_check("isotonic_not_constant")

    st.subheader("5. Cascade band", anchor=False)
    st.caption("p is the judge's probability of FAIL (high = bad): low p is auto-PASS, high p is auto-FAIL.")
    hist = pd.DataFrame({"p": a.p_used, "class": np.where(df["human_label"].to_numpy() == FAIL, "FAIL", "PASS")})
    hist = hist[hist["p"].notna()]
    bars = alt.Chart(hist).mark_bar(opacity=0.6).encode(
        x=alt.X("p:Q", bin=alt.Bin(maxbins=30), title="p (probability of FAIL" + (", recalibrated)" if recal else ")")),
        y=alt.Y("count():Q", stack=None), color="class:N")
    rules = alt.Chart(pd.DataFrame({"cut": [a.band["low"], a.band["high"]], "edge": ["low", "high"]})).mark_rule(
        color="black").encode(x="cut:Q", tooltip=["edge", "cut"])
    st.altair_chart(bars + rules, width="stretch")
    st.write(f"Band fitted on the fit split: auto-PASS at p ≤ **{a.band['low']:.3f}**, auto-FAIL at p ≥ "
             f"**{a.band['high']:.3f}**, escalate in between.")
    br = a.band_report
    st.caption(f"On the report split: escalation rate {fmt(br['escalation_rate'])}, bad items auto-passed "
               f"{fmt(br['missed_bad_share'])} (target ≤ {max_missed:.2f}), good items auto-failed "
               f"{fmt(br['false_fail_share'])} (target ≤ {max_false:.2f}).")
    for name in ("band_two_thresholds", "escalates_less_than_all", "missed_bad_within_target",
                 "false_fail_within_target"):
        show_check(name)
    if a.cascade:
        c = a.cascade
        st.dataframe(pd.DataFrame([{"tier": name, **figures} for name, figures in
                                   (("decision model alone", c["decision_model"]), ("LLM judge alone", c["llm_judge"]),
                                    ("cascade", c["cascade"]))]), hide_index=True, width="stretch")
        rule1 = checks["rule1"]
        others_ok = all(x.ok for x in a.checks if x.name != "rule1")
        if rule1.ok and others_ok:  # green only when earned: rule 1 and every other check hold
            st.success(md_escape(f"{rule1.message} Escalation rate {fmt(c['escalation_rate'])}."))
        elif rule1.ok:
            st.warning(md_escape(f"{rule1.message} But the band fails a check above, so this calibration is not a "
                                 "success."))
        else:
            (st.error if rule1.severity == "error" else st.warning)(md_escape(rule1.message))
    else:
        st.caption("The cascade report needs an LLM judge label on every report-split item.")

if a.length or a.position:
    st.subheader("Bias diagnostics", anchor=False)
    if a.length:
        st.write(f"Score vs length: slope {fmt(a.length['slope_per_100_chars'])} per 100 characters, r "
                 f"{fmt(a.length['r'])} (n {a.length['n']}). A clear positive slope is verbosity bias.")
    if a.position:
        st.write(f"Position swap: the two orders disagree on {fmt(a.position['disagreement_rate'])} of pairs; the "
                 f"first slot wins {fmt(a.position['first_slot_win_share'])} of decided comparisons.")

# ---- save and compare -------------------------------------------------------------------------
st.subheader("Save", anchor=False)
qsha = st.text_input("Question sha (the judge question's text hash, if it is not part of the rubric)",
                     key="cal_qsha")
note = st.text_input("Note", key="cal_note")
ack = False
if a.failed_checks:
    st.error(md_escape(f"This calibration fails {len(a.failed_checks)} check(s): "
                       + " ".join(x.message for x in a.failed_checks)))
    ack = st.checkbox("Save it anyway, marked as failing: the failed checks are saved with it and shown in the next "
                      "frozen version's manifest", key="cal_ack")
if a.flipped:
    st.caption("Saved as flipped: the manifest's judge_p.flipped says the uploaded column was P(pass).")
if st.button("Save this calibration", type="primary", key="cal_save"):
    cid = attempt(partial(calibration.save, s, user, df, a, judge_model=judge_model,
                          rubric=ran.get("rubric", rubric) if ran else rubric,
                          question_sha=qsha or None, source=source_name, seed=seed,
                          fit_share=fit_share, max_missed_bad=max_missed,
                          max_false_fail=max_false, note=note,
                          acknowledge_failed_checks=ack))
    if cid and a.failed_checks:
        st.session_state["_cal_saved_failing"] = (
            f"Saved calibration {cid} MARKED AS FAILING ({len(a.failed_checks)} failed check(s), saved with it): it "
            "goes into the next frozen version's manifest with checks_failed.")
        st.rerun()
    elif cid:
        flash(f"Saved calibration {cid} ({scale}, pass/fail cut {cut}, with the judge's rubric text"
              + (", judge_p flipped" if a.flipped else "") + "): it goes into the next frozen version's manifest.")
        st.rerun()

saved = calibration.saved(s, user)
if saved:
    st.dataframe(saved_table(saved), hide_index=True, width="stretch")
    if len(saved) >= 2:
        ids = [r["calibration_id"] for r in saved]
        o1, o2 = st.columns(2)
        old = o1.selectbox("Old judge", ids, index=len(ids) - 2, key="cal_old")
        new = o2.selectbox("New judge", ids, index=len(ids) - 1, key="cal_new")
        off = calibration.offset(s, user, old, new)
        st.caption(f"On the {off['shared_items']} archived item(s) both saw: " + ", ".join(
            f"{k.replace('_', ' ')} {fmt(v) if isinstance(v, float) else v}" for k, v in off.items()
            if k != "shared_items") + ". Publish this offset before switching dashboards (§11.6).")
    with st.expander("What the next frozen version's manifest carries"):
        st.json(calibration.manifest_entries(s, user))
st.caption(md_escape("Held-out items are never sent to a hosted model; refusals are counted, not hidden."))
