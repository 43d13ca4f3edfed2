"""Adjudication: every disagreement, oldest first within its stratum, with each annotator's
grade, note and time and the rubric in force; the lead decides with a rationale (keys 0-3 on
the labeling surface, each decision bound to the disagreement shown) and can turn it into a
rubric clarification in the same step."""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from annotator.evaluation import transcripts
from annotator.labeling import adjudication, evidence_rounds
from annotator.people.roles import Permission
from app_pages._shared import (attempt, current_user, flash, md_escape, picked, require_page, rubric_panel,
                                show_flash, store, succeeded)
from app_pages.labeling_surface import labeling_surface

user = require_page(Permission.ADJUDICATE)
s = store()
st.title("Adjudication")
show_flash()

waiting_by_stratum = adjudication.pending_by_stratum(s, user)  # counts only: the queue is paged in SQL
waiting = sum(waiting_by_stratum.values())
strata = sorted(waiting_by_stratum)
decided = adjudication.decided_count(s, user)
c1, c2 = st.columns([1, 3])
stratum = c1.selectbox("Stratum", ["all", *strata], key="adj_stratum")
total = decided + waiting
c2.progress(decided / total if total else 1.0,
            text=f"{waiting} disagreement(s) waiting · {decided} decided")

left, right = st.columns([3, 2])
rub = adjudication.rubric(s, user)
with right:
    rubric_panel(rub)

with left:
    st.caption("Write the rationale, press **Esc**, then the final grade **0-3**. Each decision is bound to the "
               "disagreement on screen: if a grade changes meanwhile it is refused and shown again.")
    labeling_surface(
        key="adjudication_surface", surface=adjudication.SURFACE, actor=user.username,
        cards=adjudication.cards(s, user, None if stratum == "all" else stratum), keys=adjudication.KEYS,
        submit=lambda labels: adjudication.submit(store(), current_user(), labels),
        exhausted=True, empty="No disagreement waiting." if not waiting else "None in this stratum.",
        note="Rationale (required)", note_required=True,
        fields=[("clarification", "Also add to the rubric as a clarification (optional: a new rubric version)")]
        if user.can(Permission.EDIT_RUBRIC) else ())

st.subheader("Evidence rounds", anchor=False)
ev_disputes = evidence_rounds.disputes(s, user)
quoted = [d for d in ev_disputes if d.agree is not None]
st.caption(f"{len(ev_disputes)} unsettled question(s) in evidence rounds; {len(quoted)} quoted by two or more "
           f"annotators, {sum(1 for d in quoted if not d.agree)} of them in disagreement. Their quotes stay out of "
           "a freeze until settled; a question someone never finished can be settled here too.")
if any(d.agree and d.complete for d in quoted) and st.button("Accept every agreeing question (all finished)",
                                                               key="ev_accept_all"):
    n = attempt(lambda: evidence_rounds.accept_agreeing(s, user))
    if n is not None:
        flash(f"Settled {n} agreeing question(s).")
        st.rerun()
for d in ev_disputes:
    state = "not finished" if d.agree is None else "agree" if d.agree else "DISAGREE"
    with st.expander(f"{state} · {md_escape(d.stratum)} · {md_escape(d.query_id)} · "
                     f"{md_escape(d.query_text[:70])}"):
        for who, got in d.annotators.items():
            st.write(f"**{md_escape(who)}**: " + ("no answer in corpus" if got["no_answer"] else
                                                 f"{len(got['spans'])} quote(s)" if got["spans"] else "not done yet"))
            for sp in got["spans"]:
                st.caption(f"{md_escape(sp['doc_id'])} [{sp['start']}:{sp['end']}]")
                st.text(sp["quote"])
        options = [f"keep:{a}" for a, got in d.annotators.items() if got["spans"]] + ["keep_all", "no_answer"]
        choice: str = picked(st.radio("Decision", options, horizontal=True, key=f"ev_dec_{d.query_id}"))
        why = st.text_input("Rationale", key=f"ev_why_{d.query_id}")
        if st.button("Settle", key=f"ev_settle_{d.query_id}") and succeeded(
                partial(evidence_rounds.settle, s, user, d.query_id, choice, why)):
            flash(f"Settled {d.query_id} ({choice}).")
            st.rerun()

st.subheader("Questioned by reviewers", anchor=False)
st.caption("Transcripts where a reviewer's verdict contradicts the judge's: a grader failure, a failure on an answer "
           "the judge passed, or \u201cno failure\u201d on one it failed. Settle each one.")
qs = transcripts.questioned(s, user)
if not qs:
    st.caption("None waiting.")
for q in qs:
    with st.expander(f"{md_escape(q['stratum'])} · {md_escape(q['item_id'])} · judge said "
                     f"{md_escape(q['judge_verdict'] or '-')} · reviewer said {md_escape(q.get('verdict') or '-')}"):
        st.write(f"**{md_escape(q['question'])}**")
        st.caption(f"reviewer {md_escape(q['reviewer'])}: {md_escape(q['review_note'] or '(no note)')}")
        st.text(q["answer"] or "")
        st.text(q["judge_justification"] or "")
        res: str = picked(st.radio("Resolution", ["label_fixed", "judge_fixed", "reviewer_wrong"], horizontal=True,
                              key=f"q_res_{q['item_id']}"))
        why = st.text_input("Rationale", key=f"q_why_{q['item_id']}")
        if st.button("Resolve", key=f"q_go_{q['item_id']}") and succeeded(
                partial(transcripts.resolve, s, user, q["item_id"], res, why)):
            flash(f"Resolved {q['item_id']} ({res}).")
            st.rerun()

HISTORY_PAGE = 200
with st.expander("Decided items"):
    pages = max(1, -(-decided // HISTORY_PAGE))
    page = st.number_input(f"Page (of {pages}, {HISTORY_PAGE} a page, newest first)", 1, pages, 1,
                           key="adj_hist_page") if pages > 1 else 1
    hist = adjudication.history(s, user, HISTORY_PAGE, (int(page) - 1) * HISTORY_PAGE)
    if hist:
        st.dataframe(pd.DataFrame(hist), hide_index=True, width="stretch")
    else:
        st.caption("Nothing decided yet.")
