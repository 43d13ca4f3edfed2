"""Judge the pool: a calibrated judge grades the pool's ungraded items, its band goes to the
experts' Judge queue, and a standing human sample watches it (methodology §11.1, §11.8: docs/methodology.md, the cascade)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import streamlit as st

from annotator.judge import llm, pool_grading
from annotator.process import jobs
from annotator.people.roles import Permission
from app_pages._shared import attempt, flash, md_escape, require_page, show_flash, store, succeeded

user = require_page(Permission.GRADE_POOL_BY_JUDGE)
s = store()
st.title("Judge the pool")
st.caption("A calibrated judge grades the pool's ungraded passages. Where it is sure (outside the calibration's "
           "band) its grade stands; the band, its refusals and failures go to the experts' Judge queue; a share of "
           "what it labeled goes to people too, blind, so the judge is watched. Held-out questions are never sent.")
show_flash()

status = pool_grading.status(s, user)
items, counts = status["items"], status["plan"]
c = st.columns(5)
c[0].metric("Pool items", counts["pool_items"])
c[1].metric("Judge's label stands", items["judge"], help="Out of every person's Judge queue.")
c[2].metric("Standing sample", items["sample"], help="Judge-labeled, and graded by people blind to the judge.")
c[3].metric("To people", items["escalated"] + items["refused"] + items["error"],
            help=f"{items['escalated']} in the band or in doubt, {items['refused']} refused, {items['error']} failed "
                 "(a failed item is tried again by the next job).")
c[4].metric("Not yet judged", counts["to_grade"],
            help=f"Graded by people: {counts['graded_by_people']}; in rounds (people's): {counts['in_rounds']}; "
                 f"held out (never sent): {counts['held_out']}.")


def _runner(job_id: str) -> Callable[[Callable[[int, int], None]], pool_grading.RunSummary]:
    """The background work of one job (annotator.process.jobs runs it in a thread of this process)."""
    return lambda progress: pool_grading.run(s, user, job_id, progress=progress)


def _label(cal_row: dict) -> str:
    k = pool_grading.gate_kappa(cal_row)
    band = (f"band ({cal_row['band_low']:.2f}, {cal_row['band_high']:.2f})" if cal_row.get("band_low") is not None
            else "no band")
    return (f"{cal_row['calibration_id']} · {cal_row['judge_model']} · κ {k:.2f} · {band} · "
            f"{cal_row.get('scale') or 'binary'} · {str(cal_row['created_at'])[:16]}"
            + (" · cannot grade the pool" if cal_row["problems"] else ""))


with st.expander("Start a job", expanded=not status["jobs"], key="pg_start_box"):
    cals = pool_grading.saved_calibrations(s, user)
    if not cals:
        st.info("No saved calibration yet: calibrate the judge on the Judge calibration page first.")
    elif not llm.api_key_present():
        st.info(llm.how_to_enable())
    else:
        by_id = {r["calibration_id"]: r for r in cals}
        cid = st.selectbox("Calibration (the judge, its rubric and its band)", list(by_id),
                           format_func=lambda i: _label(by_id[i]), key="pg_cal")
        a, b, d = st.columns(3)
        mode = a.radio("Mode", ["auto", "batch", "direct"], horizontal=True, key="pg_mode",
                       help="auto: direct calls up to 20 items, the Batch API (half price, up to 24 h) above.")
        limit = b.number_input("At most this many items (0: all)", min_value=0, value=0, step=50, key="pg_limit")
        share = d.slider("Standing human sample", 0.0, 0.5, 0.10, 0.01, format="%.2f", key="pg_share",
                         help="Share of the judge-labeled items also sent to people, blind (the methodology's §11.1 step 6: "
                              "5-10% forever).")
        if st.button("Estimate", key="pg_estimate"):
            st.session_state["pg_plan"] = attempt(lambda: pool_grading.plan(
                s, user, cid, mode=None if mode == "auto" else mode, limit=int(limit) or None,
                sample_share=float(share)))
        plan: pool_grading.Plan | None = st.session_state.get("pg_plan")
        if plan is not None and plan.calibration_id == cid:
            st.code("\n".join(plan.lines()), language=None, wrap_lines=True)
            for problem in plan.problems:
                st.error(md_escape(problem))
            override = ""
            if not plan.clears_gate and not plan.problems:
                st.warning(md_escape(f"This calibration is under the gate: {plan.shortfall}. Improve the rubric or the "
                                     "calibration set and calibrate again, or say why to go ahead; the reason is kept "
                                     "with the job."))
                override = st.text_input("Why go ahead below the gate", key="pg_override")
            ok = not plan.problems and plan.n_items > 0 and (plan.clears_gate or override.strip())
            if st.button(plan.confirm_label, type="primary", disabled=not ok, key="pg_confirm"):
                confirmed: pool_grading.Plan = plan
                job_id = attempt(lambda: pool_grading.start(s, user, confirmed, override=override or None,
                                                            limit=int(limit) or None))
                if job_id is not None:
                    th = jobs.start(f"Pool grading {job_id}", user.username, _runner(job_id))
                    st.session_state["pg_thread"] = th.job_id
                    st.session_state.pop("pg_plan", None)
                    flash(f"Job {job_id} started.")
                    st.rerun()


@st.fragment(run_every=1.0)
def job_panel() -> None:
    mine = jobs.get(st.session_state.get("pg_thread"))
    # a job started in another tab, or in this one before a refresh, keeps showing its progress
    for other in jobs.running("Pool grading "):
        if other is not mine:
            st.progress(other.done / other.total if other.total else 0.0,
                        text=f"{other.label} (started by {md_escape(other.owner)}): {other.done}/{other.total or '?'}")
    th = mine
    if th is None:
        return
    if th.status == "running":
        st.progress(th.done / th.total if th.total else 0.0, text=f"{th.label}: {th.done}/{th.total or '?'}")
    elif th.status == "failed":
        st.error(md_escape(th.error))
    else:
        st.success(md_escape(th.result.lines()[0]))
        st.code("\n".join(th.result.lines()[1:]), language=None, wrap_lines=True)


job_panel()

if status["jobs"]:
    st.subheader("Jobs")
    df = pd.DataFrame(status["jobs"])
    st.dataframe(df[["job_id", "status", "calibration_id", "judge_model", "mode", "answered", "judge_labeled",
                     "sampled", "escalated", "refused", "errors", "gate_kappa", "gate_override", "actor",
                     "created_at"]], hide_index=True, width="stretch")
    running = [j["job_id"] for j in status["jobs"] if j["status"] in ("started", "resumed")]
    paused = [j["job_id"] for j in status["jobs"] if j["status"] in ("paused", "failed")]
    a, b = st.columns(2)
    if running:
        which = a.selectbox("Running job", running, key="pg_pause_pick")
        if a.button("Pause after the current chunk", key="pg_pause") and succeeded(
                lambda: pool_grading.pause(s, user, which)):
            flash(f"Job {which} pauses after its current chunk.")
            st.rerun()
    if paused:
        which_p = b.selectbox("Paused or failed job", paused, key="pg_resume_pick")
        if b.button("Resume", key="pg_resume"):
            th = jobs.start(f"Pool grading {which_p}", user.username, _runner(which_p))
            st.session_state["pg_thread"] = th.job_id
            st.rerun()

st.subheader("The standing human sample")
rep = pool_grading.sample_report(s, user)
st.caption(f"{rep['sampled_items']} judge-labeled passage(s) went to people blind to the judge; "
           f"{rep['graded_by_people']} graded by them so far. Judge against people at the pass/fail cut "
           "(the methodology's §11.1): κ and FAIL-class recall, per job (the judge over time).")
for flag in rep["flags"]:
    st.warning(md_escape(f"Re-validate the judge: {flag}"))
o = rep["overall"]


def _f(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


m = st.columns(4)
m[0].metric("Sampled items graded by people", o["n"])
m[1].metric("κ judge vs people", _f(o["kappa"]))
m[2].metric("FAIL recall", _f(o["fail_recall"]))
m[3].metric("Exact grade agreement", _f(o["grade_agreement"]))
if rep["windows"]:
    w = pd.DataFrame(rep["windows"])[["window", "started", "model", "calibration_id", "n", "kappa", "fail_recall",
                                      "grade_agreement", "clears_gate"]]
    st.dataframe(w, hide_index=True, width="stretch")
    if len(w) > 1:
        st.line_chart(w.set_index("window")[["kappa", "fail_recall"]])
elif rep["sampled_items"]:
    st.info("People have not graded any sampled passage yet: they come up in the Judge queue like any other.")
