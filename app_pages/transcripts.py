"""Transcripts: draw a stratified sample of failures, read each transcript, say whose failure
it was (keys 1-6 system failure classes, g grader, a ambiguous), feed failures back into the
golden set (METHODOLOGY §12.5, §15.4)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from annotator import transcripts
from annotator.roles import Permission
from app_pages._shared import (
    attempt,
    flash,
    marked,
    md_escape,
    progress_callback,
    require_page,
    show_flash,
    store,
    succeeded,
)
from golden_store.transcripts import FAILURE_CLASSES

user = require_page(Permission.VIEW_STORE)
if not (user.can(Permission.REVIEW) or user.can(Permission.IMPORT_RUNS)):
    st.error("You do not have access to this page (it needs permission to review failure transcripts or "
             "to import system runs).")
    st.stop()
s = store()
st.title("Transcripts")
show_flash()

if user.can(Permission.IMPORT_RUNS):
    with st.expander("Import transcripts (JSONL)"):
        up = st.file_uploader('One line per trial: {"run_id", "query_id", "trial", "passed", "metrics", '
                              '"transcript": {"question", "retrieved", "answer", "judge"}, "trace_id"?, '
                              '"source"?: eval_run | production_log}', type=["jsonl"], key="tr_file")
        if st.button("Import", key="tr_import") and up is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / Path(up.name).name
                path.write_bytes(up.getvalue())
                n = attempt(lambda: transcripts.import_file(s, user, path, progress_callback("Reading transcripts")))
            if n is not None:
                flash(f"Imported {n} transcript(s).")
                st.rerun()

summary = pd.DataFrame(transcripts.summary(s, user))
if summary.empty:
    st.info("No transcripts yet: an engineer imports them here or with `golden transcripts import FILE`.")
    st.stop()
if not user.can(Permission.REVIEW):
    st.dataframe(summary, hide_index=True, width="stretch")
    st.caption("Reviewing needs the reviewer role.")
    st.stop()
st.subheader("Per stratum", anchor=False)
st.dataframe(summary, hide_index=True, width="stretch")
sat = summary[summary["saturated"]]
if len(sat):
    st.warning("Saturated (no headroom left): " + ", ".join(md_escape(x) for x in sat["stratum"])
               + ". Retire them to a smoke tier and build harder items (§13.6).")

c1, c2, c3 = st.columns([1, 1, 2])
n = c1.number_input("Sample size", 1, 100, 10, key="tr_n")
seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="tr_seed")
if c3.button("Draw failures to review", type="primary", key="tr_draw"):
    did = attempt(lambda: transcripts.draw(s, user, int(n), int(seed)))
    if did is not None:
        flash(f"Drew {len(did[1])} failure(s) ({did[0]})." if did[1] else "No unreviewed failure left to draw.")
        st.rerun()

sample = transcripts.latest_draw(s, user)
if not sample:
    st.caption("Draw a sample: failures across strata and failure types, none you reviewed already.")
    st.stop()
todo = [t for t in sample if not t["verdict"]]
st.progress(1 - len(todo) / len(sample), text=f"{len(sample) - len(todo)} / {len(sample)} reviewed in this sample")
ids = [t["item_id"] for t in sample]
default = ids.index(todo[0]["item_id"]) if todo else 0
pick = st.selectbox("Transcript", range(len(ids)), index=default, key=f"tr_pick_{ids[0]}",
                    format_func=lambda i: f"{sample[i]['stratum']} · {ids[i]}"
                                          + (f" · {sample[i]['verdict']}" if sample[i]["verdict"] else ""))
t = sample[pick]

st.subheader(md_escape(t["question"]), anchor=False)
st.caption(f"{md_escape(t['item_id'])} · {md_escape(t['stratum'])} · {t['source']}"
           + (f" · trace {md_escape(t['trace_id'])}" if t["trace_id"] else "")
           + ("" if t["in_golden_set"] else " · not in the golden set")
           + " · metrics " + md_escape(", ".join(f"{k} {v:g}" for k, v in t["metrics"].items())))
left, right = st.columns(2)
with left:
    st.write("**Retrieved passages** (known evidence highlighted)")
    for i, p in enumerate(t["retrieved"], 1):
        with st.container(border=True):
            st.caption(f"[{i}] {md_escape(p.get('doc_id') or '?')}" + (" · contains evidence" if p["has_evidence"] else ""))
            st.markdown(marked(p["segments"], "green-background"))
    if not t["retrieved"]:
        st.caption("Nothing was retrieved.")
with right:
    st.write("**Answer**")
    st.text(t["answer"] or "(no answer)")
    st.write("**Judge**")
    st.write(f"verdict: `{md_escape(t['judge_verdict'] or '-')}`")
    st.text(t["judge_justification"] or "")

note = st.text_input("Note", key=f"tr_note_{t['item_id']}")
st.caption("System failure: " + " · ".join(f"**{i}** {c.replace('_', ' ')}" for i, c in enumerate(FAILURE_CLASSES, 1))
           + " · **g** grader failure (the judge or the label was wrong) · **a** ambiguous")
cols = st.columns(len(FAILURE_CLASSES) + 2)
for i, cls in enumerate(FAILURE_CLASSES, 1):
    if cols[i - 1].button(cls.replace("_", " "), key=f"tr_sys_{cls}", shortcut=str(i), width="stretch") and succeeded(
            lambda cls=cls: transcripts.review(s, user, t["item_id"], "system_failure", cls, note)):
        flash(f"{t['item_id']}: system failure ({cls}).")
        st.rerun()
if cols[-2].button("grader failure", key="tr_grader", shortcut="g", width="stretch") and succeeded(
        lambda: transcripts.review(s, user, t["item_id"], "grader_failure", None, note)):
    flash(f"{t['item_id']}: grader failure; it is in the lead's adjudication queue.")
    st.rerun()
if cols[-1].button("ambiguous", key="tr_ambiguous", shortcut="a", width="stretch") and succeeded(
        lambda: transcripts.review(s, user, t["item_id"], "ambiguous", None, note)):
    flash(f"{t['item_id']}: ambiguous.")
    st.rerun()

if t["verdict"] == "system_failure" and not t["in_golden_set"]:
    with st.container(border=True):
        st.write("This question is not in the golden set yet.")
        strata = transcripts.strata(s, user)
        cur = t["stratum"] if t["stratum"] in strata else None
        stratum = st.selectbox("Stratum", sorted(strata), index=sorted(strata).index(cur) if cur else 0,
                               key=f"tr_stratum_{t['item_id']}")
        if st.button("Add to the golden set", key="tr_add"):
            qid = attempt(lambda: transcripts.add_to_golden_set(s, user, t["item_id"], stratum))
            if qid:
                flash(f"Added {qid} ({t['source']}, dated today): it waits in the evidence queue.")
                st.rerun()
