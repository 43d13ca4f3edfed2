"""Home: the store at a glance, the demo button on an empty store, workflow progress."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import demo
from annotator.evaluation import overview
from annotator.versions import versioning
from annotator.people.roles import Permission
from app_pages._shared import attempt, broken_labels_notice, md_escape, progress_callback, require_page, store

user = require_page(Permission.VIEW_STORE)
st.title("Golden-set studio")
s = store()

if demo.store_is_empty(s):
    st.subheader("This store is empty")
    st.write(
        "Import a corpus and queries (Corpus and Queries pages, or `golden corpus import` / "
        "`golden queries import`), or load the demo project: a fictional company's HR and IT "
        "handbook with 40 questions across every stratum, 6 of them unanswerable, expert "
        "evidence quotes already resolved to spans, and every workflow under way: three system runs "
        "and their pool, a calibration round by two demo annotators with disagreements to adjudicate, "
        "approved nuggets with graded answers, reviewed transcripts, a judge calibration and a frozen "
        "version."
    )
    if user.can(Permission.LOAD_DEMO):
        if st.button("Load the demo project", type="primary", key="load_demo"):
            res = attempt(lambda: demo.load_demo(s, user, progress_callback("Reading the demo corpus"),
                                                 workflows=True))
            if res:
                st.success(
                    f"Demo loaded: {res['documents']} documents, {res['queries']} queries, "
                    f"{res['evidence_spans']} evidence spans, {res['workflows']['pool_items']} pool items, "
                    f"version {md_escape(res['workflows']['version'])}."
                )
                st.rerun()
    else:
        st.info("Ask an engineer or admin to import a corpus or load the demo.")
    st.stop()

ov = overview.store_overview(s, user)
broken_labels_notice(versioning.live_problems(s, user))
c1, c2, c3, c4 = st.columns(4)
c1.metric("Documents", ov["corpus"]["documents"])
c2.metric("Queries", ov["queries"], help="live queries (retired ones excluded)")
c3.metric("Answerable", ov["answerable"])
c4.metric("Held out", ov["held_out"], help="never sent to a hosted model")
st.caption(f"corpus_digest `{ov['corpus']['corpus_digest']}` · rubric v{ov['rubric_version'] or '-'}")

left, right = st.columns(2)
with left:
    st.subheader("Queries per stratum")
    if ov["strata"]:
        # one bar per stratum, relative to the largest (Streamlit's own bars: a chart here made
        # the browser load and compile its charting library before Home could show, ~0.5 s of
        # the first render after signing in on a laptop-class CPU, issue 19)
        top = max(ov["strata"].values())
        for name, n in sorted(ov["strata"].items(), key=lambda kv: (-kv[1], kv[0])):
            st.progress(n / top if top else 0.0, text=f"{md_escape(name)}: {n}")
    missing = [k for k in ("negative",) if k not in ov["strata"]]
    if missing:
        st.warning("No negative (unanswerable) queries: abstention cannot be measured.")
with right:
    st.subheader("Workflows")
    ev = ov["evidence"]
    prog = ov["evidence_progress"]
    st.write("**Evidence quotes** (answerable queries with at least one resolved span)")
    st.progress(prog or 0.0, text=f"{ev['queries_with_evidence']} / {ov['answerable']} queries, {ev['spans']} spans")
    jc = ov["judging"]
    st.write("**Pooled relevance judging** (pool items with at least one grade)")
    if jc["pool_items"]:
        st.progress(jc["pool_graded"] / jc["pool_items"], text=f"{jc['pool_graded']} / {jc['pool_items']} pool items")
    else:
        st.caption("No pool yet: import system runs and build one (Runs & pool).")
    st.write("**Double annotation & adjudication**")
    if jc["rounds"] or jc["double_graded"]:
        # the disagreement count is for leads: an annotator could learn from it whether a
        # grade they just gave differs from a colleague's (blind double annotation)
        st.caption(f"{jc['rounds']} round(s) · {jc['double_graded']} item(s) graded twice or more"
                   + (f" · {jc['pending']} disagreement(s) waiting for a lead"
                      if user.can(Permission.ADJUDICATE) else ""))
    else:
        st.caption("No round yet: a lead starts a calibration round on the Agreement page.")
    nc = ov["nuggets"]
    st.write("**Nuggets** (answerable questions with an approved nugget list)")
    st.progress(min(1.0, nc["questions_approved"] / ov["answerable"]) if ov["answerable"] else 0.0,
                text=f"{nc['questions_approved']} / {ov['answerable']} questions · {nc['approved']} approved, "
                     f"{nc['unapproved']} awaiting approval · {nc['assigned']} support label(s) on "
                     f"{nc['answers']} answer(s)")
    tc = ov["transcripts"]
    st.write("**Transcript review** (reviewed share of failed transcripts)")
    if tc["failures"]:
        st.progress(tc["reviewed"] / tc["failures"], text=f"{tc['reviewed']} / {tc['failures']} failures reviewed · "
                                                          f"{tc['grader_failures']} verdict(s) against the judge")
    else:
        st.caption("No failed transcript imported yet.")
    st.write("**Judge calibration**")
    st.caption(f"{ov['calibrations']} saved calibration(s)" if ov["calibrations"] else
               "None saved yet: a lead calibrates a judge on the Judge calibration page.")

if user.can(Permission.VIEW_VERSIONS):
    st.subheader("Frozen versions")
    if ov["versions"]:
        st.dataframe(
            pd.DataFrame(ov["versions"])[["name", "built_at", "frozen_by", "n_queries", "n_spans", "n_judgments", "note"]],
            hide_index=True, width="stretch",
        )
    else:
        st.write("None yet. Freeze one on the Versions page (or `golden freeze NAME`).")
if user.can(Permission.IMPORT_CORPUS):  # where the data lives: engineers and admins only (as the sidebar)
    st.caption(f"Store file: {md_escape(ov['db_path'])}")
