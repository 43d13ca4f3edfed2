"""Runs & pool: import systems' runs, build or extend the judging pool, watch coverage."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from annotator import runs_import
from annotator.roles import Permission
from app_pages._shared import attempt, flash, md_escape, progress_callback, require_page, show_flash, store

user = require_page(Permission.VIEW_VERSIONS)
s = store()
st.title("Runs & pool")
show_flash()

if user.can(Permission.IMPORT_RUNS):
    with st.expander("Import a run"):
        up = st.file_uploader("Run file: TREC (qid Q0 docid rank score tag) or JSONL passages "
                              '({"query_id", "doc_id", "text", "score"|"rank"})', type=["txt", "trec", "run", "jsonl"],
                              key="run_file")
        c1, c2, c3 = st.columns(3)
        system = c1.text_input("System name (no spaces, no |)", key="run_system")
        fmt = c2.radio("Format", ["trec", "jsonl"], horizontal=True, key="run_fmt")
        replace = c3.checkbox("Replace a run of the same name", key="run_replace")
        if st.button("Import run", type="primary", key="run_import") and up is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / Path(up.name).name
                path.write_bytes(up.getvalue())
                n = attempt(lambda: runs_import.import_run(s, user, path, system.strip(), fmt, replace=replace,
                                                           progress=progress_callback("Placing passages")))
            if n is not None:
                flash(f"Imported {n} results as run {system.strip()}.")
                st.rerun()

runs = runs_import.run_table(s, user)
if runs.empty:
    st.info("No runs yet. Import one above or with `golden runs import FILE --system NAME`.")
    st.stop()
st.dataframe(runs, hide_index=True, width="stretch")

if user.can(Permission.IMPORT_RUNS):
    with st.form("pool_build"):
        st.subheader("Build or extend the pool", anchor=False)
        c1, c2 = st.columns([1, 3])
        depth = c1.number_input("Depth (top-k per run)", 1, 1000, 10)
        chosen = c2.multiselect("Runs", runs["system"].tolist(), default=runs["system"].tolist())
        if st.form_submit_button("Build pool", type="primary"):
            rep = attempt(lambda: runs_import.build_pool(s, user, int(depth), chosen))
            if rep:
                flash(f"Pool: {rep.pool_size} items over {rep.queries} queries; {rep.new_items} added, "
                      f"{rep.new_unjudged} of them unjudged.")
                st.rerun()

st.subheader("Coverage", anchor=False)
status = runs_import.pool_status(s, user)
rows = [{"run": name, "queries": e["queries"], "judged@10": round(e["judged_at_10"], 3),
         "queries < 0.8": e["queries_below_threshold"], "AP (grade>=2)": e.get("ap"), "Bpref (grade>=2)": e.get("bpref")}
        for name, e in status["runs"].items()]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
suspect = [r["run"] for r in rows if r["judged@10"] < status["threshold"]]
if suspect:
    st.warning(f"judged@10 below {status['threshold']} for {', '.join(map(md_escape, suspect))}: their metrics are "
               "suspect until the pool is judged (unjudged passages count as non-relevant). AP far below Bpref is "
               "the sign of pooling bias.")
