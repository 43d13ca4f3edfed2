"""Judge: grade pooled passages 0-3 for a question, with the keyboard (0-3, s skip, u unsure).
Blind: the page never shows which system retrieved a passage."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import judging
from annotator.roles import Permission
from app_pages._shared import flash, md_escape, require_page, show_flash, store, succeeded

user = require_page(Permission.LABEL)
s = store()
st.title("Judge")
show_flash()

done, total = judging.progress(s, user)
st.progress(done / total if total else 0.0, text=f"{done} / {total} pool items judged by you")
item = judging.next_item(s, user)
rub = judging.rubric(s, user)

left, right = st.columns([3, 2])
with right:
    st.write(f"**Rubric v{rub['version']}**" if rub else "**No rubric yet**")
    if rub:
        with st.container(height=420):
            st.text(rub["text"])
    if user.can(Permission.EDIT_RUBRIC):
        with st.expander("Edit the rubric (new version)"):
            new_text = st.text_area("Rubric", value=rub["text"] if rub else "", height=240, key="rub_text")
            change = st.text_input("What changed (changelog)", key="rub_change")
            if st.button("Save new version", key="rub_save") and succeeded(
                lambda: judging.edit_rubric(s, user, new_text, change)
            ):
                flash("Rubric saved as a new version; new grades record it.")
                st.rerun()

with left:
    if item is None:
        st.success("Nothing left in your queue." if total else "The pool is empty: an engineer builds it with "
                   "`golden pool build --depth K`.")
    else:
        st.subheader(md_escape(item.query_text), anchor=False)
        st.caption(f"{item.query_id} · passage from {md_escape(item.doc_id)} [{item.start}:{item.end}] · "
                   "query words highlighted, known evidence in green")
        styles = {"term": "orange-background", "evidence": "green-background"}
        with st.container(height=360):
            st.markdown("".join(
                md_escape(t) if kind == "plain" else f":{styles[kind]}[{md_escape(t)}]"
                for t, kind in item.segments).replace("\n", "  \n"))
        note = st.text_input("Note (optional)", key=f"judge_note_{item.query_id}_{item.doc_id}_{item.start}")
        st.caption(" · ".join(f"**{g}** {label}" for g, label in judging.GRADES.items()) + " · keys 0-3, s, u")
        cols = st.columns(6)
        for g in (0, 1, 2, 3):
            if cols[g].button(str(g), key=f"grade_{g}", shortcut=str(g), help=judging.GRADES[g],
                              width="stretch"):
                judging.judge(s, user, item, "grade", g, note)
                st.rerun()
        if cols[4].button("Skip", key="judge_skip", shortcut="s", width="stretch"):
            judging.judge(s, user, item, "skip", note=note)
            st.rerun()
        if cols[5].button("Unsure", key="judge_unsure", shortcut="u", width="stretch"):
            judging.judge(s, user, item, "unsure", note=note)
            st.rerun()

with st.expander("My last 10 judgments (correct a mistake)"):
    recent = judging.my_recent(s, user)
    if recent:
        st.dataframe(pd.DataFrame(recent)[["query_id", "doc_id", "start", "end", "op", "grade", "note", "created_at"]],
                     hide_index=True, width="stretch")
        pick = st.selectbox("Judgment", range(len(recent)), key="fix_pick",
                            format_func=lambda i: f"{recent[i]['query_id']} · {recent[i]['doc_id']} "
                                                  f"[{recent[i]['start']}:{recent[i]['end']}] · {recent[i]['op']} "
                                                  f"{recent[i]['grade'] if recent[i]['grade'] is not None else ''}")
        new_grade = st.radio("New grade", [0, 1, 2, 3], horizontal=True, key="fix_grade")
        if st.button("Save correction", key="fix_save") and succeeded(
            lambda: judging.correct(s, user, recent[pick], new_grade)
        ):
            flash("Correction saved (a new event; the old one stays in the history).")
            st.rerun()
    else:
        st.caption("No judgments yet.")
