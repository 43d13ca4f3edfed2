"""Runs & pool: import systems' runs, build or extend the judging pool, watch coverage."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from annotator.evaluation import runs_import
from annotator.integration import judgments_import
from annotator.people.roles import Permission
from app_pages._shared import (answers_import, as_file, attempt, flash, md_escape, picked, progress_callback,
                                require_page, show_flash, store, succeeded, upload_bytes, upload_limit)

user = require_page(Permission.VIEW_VERSIONS)
s = store()
st.title("Runs & pool")
show_flash()

RUN_UPLOAD_MB = 200
FORMATS = {"auto": "Detect from the file", "trec": "TREC", "jsonl": "JSONL passages"}
# What to tick here when an import is refused for want of a CLI switch.
IMPORT_OPTIONS = {"--replace": "Tick \u201cReplace a run of the same name\u201d to replace it.",
                  "--skip-unknown": "Tick \u201cSkip results for unknown query ids\u201d to import the rest "
                                    "and leave those results out.",
                  "--skip-unknown-docs": "Tick \u201cSkip results for unknown doc ids\u201d to import the rest "
                                         "and leave those results out.",
                  "--skip-unknown --skip-unknown-docs": "Tick \u201cSkip results for unknown query ids\u201d and "
                                                        "\u201cSkip results for unknown doc ids\u201d to import the "
                                                        "rest and leave those results out."}

if user.can(Permission.IMPORT_RUNS):
    with st.expander("Import a run", key="run_import_box"):  # keyed: stays open across reruns
        up = st.file_uploader("Run file: TREC (qid Q0 docid rank score tag) or JSONL passages "
                              '({"query_id", "doc_id", "text", "score"|"rank"})', type=["txt", "trec", "run", "jsonl"],
                              key="run_file", max_upload_size=upload_limit(RUN_UPLOAD_MB))
        c1, c2 = st.columns(2)
        system = c1.text_input("System name (no spaces)", key="run_system")
        fmt = c2.radio("Format", list(FORMATS), format_func=FORMATS.get, horizontal=True, key="run_fmt")
        c3, c4, c5 = st.columns(3)
        replace = c3.checkbox("Replace a run of the same name", key="run_replace")
        skip = c4.checkbox("Skip results for unknown query ids", key="run_skip",
                           help="Leave out the lines whose query id is not in the store (they are counted in the "
                                "report) instead of refusing the whole run.")
        skip_docs = c5.checkbox("Skip results for unknown doc ids", key="run_skip_docs",
                                help="Leave out the lines whose doc id is not in the corpus (they are counted in the "
                                     "report) instead of refusing the whole run.")
        if st.button("Import run", type="primary", key="run_import"):
            if up is None:
                st.error("Choose a run file first.")
            elif (data := upload_bytes(up, RUN_UPLOAD_MB, "golden runs import FILE --system NAME")) is not None:
                file_name = up.name
                with as_file(data) as path:
                    rep = attempt(lambda: runs_import.import_run_file(
                        s, user, path, system.strip(), None if fmt == "auto" else fmt, replace=replace,
                        skip_unknown=skip, skip_unknown_docs=skip_docs, name=file_name,
                        progress=progress_callback("Placing passages")),
                        IMPORT_OPTIONS)
                if rep is not None:
                    flash(rep.summary())
                    st.rerun()

    with st.expander("Import system answers (for nugget assignment)", key="pool_ans_box"):
        answers_import(user, "pool_ans")

runs = runs_import.run_table(s, user)
if runs.empty:
    st.info("No runs yet. Import one above or with `golden runs import FILE --system NAME`.")
    st.stop()
st.dataframe(runs, hide_index=True, width="stretch")
active = runs.loc[runs["status"] == "active", "system"].tolist()
retired = runs.loc[runs["status"] == "retired", "system"].tolist()

if user.can(Permission.RETIRE_RUNS):
    with st.expander("Retire or restore a run", key="run_retire_box"):
        st.caption("A retired run is left out of new pools and of the coverage list below; its results, the pool "
                   "items it contributed and their grades stay recorded, and it stays in the table above.")
        r1, r2 = st.columns([1, 2])
        target = r1.selectbox("Run to retire", active, key="run_retire_pick", index=None,
                              placeholder="Choose an active run")
        why = r2.text_input("Why (kept in the history)", key="run_retire_why")
        if st.button("Retire run", key="run_retire", disabled=not active):
            if target is None:
                st.error("Choose the run to retire.")
            elif succeeded(partial(runs_import.retire_run, s, user, target, why)):
                flash(f"Retired run {target}: left out of new pools; its pool contributions stay recorded.")
                st.rerun()
        if retired:
            back = st.selectbox("Retired run to restore", retired, key="run_restore_pick")
            if st.button("Restore run", key="run_restore") and succeeded(
                    lambda: runs_import.restore_run(s, user, back)):
                flash(f"Restored run {back}.")
                st.rerun()
        hist = runs_import.run_history(s, user)
        if len(hist):
            st.dataframe(hist, hide_index=True, width="stretch")

if user.can(Permission.IMPORT_RUNS):
    with st.form("pool_build"):
        st.subheader("Build or extend the pool", anchor=False)
        c1, c2 = st.columns([1, 3])
        depth = c1.number_input("Depth (top-k per run)", 1, 1000, 10)
        chosen = c2.multiselect("Runs (retired ones are not pooled)", active, default=active)
        if st.form_submit_button("Build pool", type="primary"):
            built = attempt(lambda: runs_import.build_pool(s, user, int(depth), chosen))
            if built:
                flash(f"Pool: {built.pool_size} items over {built.queries} queries; {built.new_items} added, "
                      f"{built.new_unjudged} of them unjudged.")
                st.rerun()

st.subheader("Coverage", anchor=False)
st.caption("graded@10: the share of each run's top 10 pooled passages that a person has graded (the pool's grading "
           "progress). A scoring's Judged@10 (golden score, Results) also counts evidence spans as labels.")
status = runs_import.pool_status(s, user)
rows = [{"run": name, "queries": e["queries"], "graded@10": round(e["graded_at_10"], 3),
         "queries < 0.8": e["queries_below_threshold"], "AP (grade>=2)": e.get("ap"), "Bpref (grade>=2)": e.get("bpref")}
        for name, e in status["runs"].items()]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
if ap_note := runs_import.pool_ap_note(status):
    st.caption(md_escape(ap_note + "."))
judged = judgments_import.pool_judged_counts(s, user)
if judged["by_import"]:  # judgments a team already had (golden judgments import): counted, not queued for people
    st.caption(f"Pool items judged by people: {judged['by_people']}; by imported judgments: {judged['by_import']} "
               f"({judged['import_only']} by an import only, not queued for people); unjudged: {judged['unjudged']}. "
               "`golden judgments list` shows the imports.")
suspect = [r["run"] for r in rows if r["graded@10"] < status["threshold"]]
if suspect:
    st.warning(f"graded@10 below {status['threshold']} for {', '.join(map(md_escape, suspect))}: their metrics are "
               "suspect until the pool is judged (unjudged passages count as non-relevant). AP far below Bpref is "
               "the sign of pooling bias.")

st.subheader("Pool items", anchor=False)
POOL_PAGE = 50
f1, f2, f3 = st.columns([2, 2, 2])
prefix = f1.text_input("Query id starts with", key="pool_q_prefix").strip()
by_run = f2.selectbox("Pooled by run", ["any run"] + runs["system"].tolist(), key="pool_run_pick")
status_pick: str = picked(f3.selectbox(
    "Status", runs_import.POOL_ITEM_STATUSES, key="pool_status_pick",
    format_func={"any": "any", "unjudged": "no grade yet", "graded": "graded", "disputed": "graders disagree",
                 "final": "final grade"}.__getitem__))
system_pick = None if by_run == "any run" else by_run
filters = {"query_prefix": prefix, "system": system_pick, "status": status_pick}
# the page number starts over when a filter changes (a page 40 of another filter may not exist)
if st.session_state.get("pool_page_filters") != filters:
    st.session_state["pool_page_filters"] = filters
    st.session_state["pool_items_page"] = 1
# one call: the matching count and the page (the page number is the widget's, kept in the session)
want = max(1, int(st.session_state.get("pool_items_page", 1)))
total, items = runs_import.pool_items_page(s, user, limit=POOL_PAGE, offset=(want - 1) * POOL_PAGE,
                                           query_prefix=prefix, system=system_pick, status=status_pick)
pages = max(1, -(-total // POOL_PAGE))
if want > pages:  # the pool shrank under this filter (or a grade moved items out of it): last page
    st.session_state["pool_items_page"] = want = pages
    total, items = runs_import.pool_items_page(s, user, limit=POOL_PAGE, offset=(want - 1) * POOL_PAGE,
                                               query_prefix=prefix, system=system_pick, status=status_pick)
if pages > 1:
    st.number_input(f"Page (of {pages}, {POOL_PAGE} a page; {total} item(s) match)", 1, pages, key="pool_items_page")
if total:
    st.dataframe(items, hide_index=True, width="stretch")
else:
    st.caption("No pool item matches these filters.")
