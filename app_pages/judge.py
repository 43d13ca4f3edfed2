"""Judge: grade pooled passages 0-3 for a question, with the keyboard (0-3, s skip, u unsure,
Backspace/z undo, arrows to look back, ? for the keys). The labeling surface holds the next
items in the browser, so a key paints the next passage at once; each grade is bound to the
passage that was on screen. Blind: the page never shows which system retrieved a passage.

The queue's order is in the URL (``?order=by_query``), so a refresh or a shared link keeps
"Grouped by question". The surface keeps the queue ahead itself (``fetch``/``count``): a
batch of grades costs its write, not a re-query of the queue (issue 29)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.labeling import judging
from annotator.people.roles import Permission
from app_pages._shared import current_user, flash, picked, require_page, rubric_panel, show_flash, store, succeeded
from app_pages.labeling_surface import labeling_surface

user = require_page(Permission.LABEL)
s = store()
st.title("Judge")
show_flash()

_ORDERS = ["random", "by_query"]
if "judge_order" not in st.session_state and st.query_params.get("order") in _ORDERS:
    st.session_state["judge_order"] = st.query_params["order"]  # a refresh or a link keeps the mode
_ORDER_NAMES = {"random": "Randomized", "by_query": "Grouped by question (TREC)"}
order: str = picked(st.radio("Queue", _ORDERS, horizontal=True, key="judge_order", format_func=_ORDER_NAMES.__getitem__,
                             help="Grouped: all pooled passages of one question in a row, so you read the question "
                                  "once."))
if order == "random":
    st.query_params.pop("order", None)
else:
    st.query_params["order"] = order
rub = judging.rubric(s, user)


@st.fragment
def queue() -> None:
    """The surface and its queue: a fragment, so the labels the browser sends rerun only
    this, not the rubric and the rest of the page; and the surface re-queries the queue and
    recounts progress only when due, so a batch of labels costs its write."""
    labeling_surface(
        key="judge_surface", surface=judging.SURFACE, actor=user.username, keys=judging.KEYS,
        # the signed-in user is re-read when labels arrive (an account disabled meanwhile writes nothing)
        submit=lambda labels: judging.submit(store(), current_user(), labels),
        fetch=lambda n: [it.card() for it in judging.next_items(s, user, n, order)],
        count=lambda: judging.progress(s, user), ahead=judging.QUEUE_AHEAD, scope=order, noun="passages",
        empty="Nothing left in your queue.",
        empty_pool="The pool is empty: an engineer builds it with `golden pool build --depth K`.")


left, right = st.columns([3, 2])
with left:
    queue()
with right:
    rubric_panel(rub)
    if user.can(Permission.EDIT_RUBRIC):
        with st.expander("Edit the rubric (new version)"):
            new_text = st.text_area("Rubric", value=rub["text"] if rub else "", height=240, key="rub_text")
            change = st.text_input("What changed (changelog)", key="rub_change")
            if st.button("Save new version", key="rub_save") and succeeded(
                lambda: judging.edit_rubric(s, user, new_text, change)
            ):
                flash("Rubric saved as a new version; new grades record it.")
                st.rerun()

with st.expander("My last 10 judgments (correct a mistake)"):
    recent = {r["event_id"]: r for r in judging.my_recent(s, user)}
    if recent:
        st.dataframe(pd.DataFrame(recent.values())[["query_id", "doc_id", "start", "end", "op", "grade", "note",
                                                    "created_at"]], hide_index=True, width="stretch")
        # chosen by event id, not by position: a label made meanwhile (another tab) shifts the list
        pick = st.selectbox("Judgment", list(recent), key="fix_pick",
                            format_func=lambda e: f"{recent[e]['query_id']} · {recent[e]['doc_id']} "
                                                  f"[{recent[e]['start']}:{recent[e]['end']}] · {recent[e]['op']} "
                                                  f"{recent[e]['grade'] if recent[e]['grade'] is not None else ''}")
        new_grade: int = picked(st.radio("New grade", [0, 1, 2, 3], horizontal=True, key="fix_grade"))
        if st.button("Save correction", key="fix_save") and succeeded(
            lambda: judging.correct(s, user, recent[pick], new_grade)
        ):
            flash("Correction saved (a new event; the old one stays in the history).")
            st.rerun()
    else:
        st.caption("No judgments yet.")
