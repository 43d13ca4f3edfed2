"""Reference answers: a question's short and full answer, anchored to its evidence and approved
by a person (what answer correctness is scored against); the criteria answers are marked by,
which a lead sets. Claude may draft a reference from the evidence (estimate first); a draft is an
unapproved revision like any other. The Rounds section (app_pages/_reference_rounds.py): double
authoring, agreement and adjudication."""

from __future__ import annotations

import streamlit as st

from annotator.evidence import reference_answers as refs
from annotator.evidence import reference_drafting, reference_rounds
from annotator.judge import llm
from annotator.people.roles import Permission
from app_pages import _cost
from app_pages._shared import attempt, flash, md_escape, require_page, searchable_picker, show_flash, store
from golden_store.live.reference_answers import Anchor, CriterionDraft

user = require_page(Permission.LABEL)
s = store()
st.title("Reference answers")
SECTIONS = ("Write and approve", "Double-authoring rounds")
if "ref_section" not in st.session_state and st.query_params.get("section") == "rounds":
    st.session_state["ref_section"] = SECTIONS[1]  # a refresh or the Back button keeps the section
section = st.radio("Section", SECTIONS, horizontal=True, key="ref_section", label_visibility="collapsed")
if section == SECTIONS[1]:
    st.query_params["section"] = "rounds"
else:
    st.query_params.pop("section", None)
    for k in ("round", "q"):
        st.query_params.pop(k, None)
if section == SECTIONS[1]:
    from app_pages import _reference_rounds

    show_flash()
    _reference_rounds.show(s, user)
    st.stop()
st.write("Write the answer a good system gives: a **short** form (a date, an amount, a clause) that exact match "
         "and token F1 compare answers against, and/or the **full** answer, anchored to the question's evidence. "
         "A revision counts once a person approved it; an edit needs a new approval. Every revision is kept.")
show_flash()
mine = reference_rounds.my_questions(s, user)
if mine:  # the default section says where the round's questions are written
    st.info(md_escape(f"{len(mine)} question(s) of a reference round wait for your answer "
                      f"({', '.join(m['query_id'] for m in mine[:12])}): write them under "
                      f"Double-authoring rounds above."))

options = refs.questions(s, user)
if not options:
    st.info("No questions yet: add them on the Queries page (or `golden queries import`).")
    st.stop()
ref_state = refs.states(s, user)
waiting = [q for q in options if ref_state.get(q) != "approved"]
if waiting:
    st.caption(f"{len(waiting)} of {len(options)} question(s) have no approved reference answer: "
               f"{md_escape(', '.join(waiting[:12]))}{' …' if len(waiting) > 12 else ''}")
qid = searchable_picker("Question", options, key="ref_q")
now = refs.current(s, user, qid)
cur = now[0] if now else None
spans = refs.evidence_spans(s, user, qid)

in_round = refs.round_of(s, user, qid)
if in_round:
    st.info(f"{md_escape(qid)} is in reference round {md_escape(in_round)}: its authors write in the round "
            "(Double-authoring rounds above) and a lead's adjudication makes its next revision.")
if cur is None:
    st.caption("No reference answer yet.")
else:
    state = "approved" if cur["approved"] else "**not approved yet**"
    st.caption(f"Revision {cur['revision']} by {md_escape(cur['actor'])}, {state}.")


if cur is None or not cur["approved"]:
    # Claude drafts from the evidence; the estimate first, only its confirmation sends anything
    key_ok = llm.api_key_present()
    c1, c2 = st.columns([1, 3])
    if c1.button("Draft with Claude", key="ref_draft", disabled=not key_ok or not spans):
        plan = attempt(lambda: reference_drafting.plan(s, user, [qid]))
        if plan is not None and plan.skipped:
            st.error(md_escape(plan.skipped[0][1]))
        elif plan is not None:
            _cost.propose("ref_plan", plan, qid)
    if not key_ok:
        c2.info(llm.how_to_enable() + " You can write the reference answer by hand below.")
    elif not spans:
        c2.caption("A draft is made from the question's evidence: place quotes on the Evidence page first.")
    if _cost.confirmed("ref_plan", qid) is not None:
        done = attempt(lambda: reference_drafting.draft_many(s, user, [qid]))
        if done:
            flash(f"{done[0].outcome}: {done[0].message}")
            st.session_state["ref_used"] = (qid, reference_drafting.job_usage(done).lines())
            st.rerun()
    used = st.session_state.get("ref_used")
    if used and used[0] == qid:
        _cost.show_usage("The last draft used:", used[1])


def _span_key(e: dict) -> str:
    return f"{e['doc_id']}:{e['start']}-{e['end']}"


shown_spans = {_span_key(e): e for e in spans}
for e in (cur or {}).get("evidence", []):  # an anchor no longer among the evidence stays offered
    shown_spans.setdefault(_span_key(e), {**e, "quote": None})
with st.form(f"ref_form_{qid}"):
    short = st.text_input("Short answer", value=(cur or {}).get("short_answer") or "", key=f"ref_short_{qid}",
                          help="What exact match and token F1 compare a system's answer against.")
    full = st.text_area("Full answer", value=(cur or {}).get("full_answer") or "", key=f"ref_full_{qid}")
    chosen = st.multiselect(
        "Evidence it rests on", list(shown_spans), key=f"ref_ev_{qid}",
        default=[_span_key(e) for e in (cur or {}).get("evidence", [])],
        format_func=lambda k: f"{k}  {(shown_spans[k].get('quote') or '')[:90]}")
    note = st.text_input("Why (kept in the history)", key=f"ref_note_{qid}")
    save = st.form_submit_button("Save revision")
if save:
    anchors = [Anchor(shown_spans[k]["doc_id"], int(shown_spans[k]["start"]), int(shown_spans[k]["end"]))
               for k in chosen]
    revision = attempt(lambda: refs.write(s, user, qid, short_answer=short, full_answer=full, evidence=anchors,
                                          note=note))
    if revision is not None:
        flash(f"Saved revision {revision} of {qid}; approve it to make it count.")
        st.rerun()

if cur is not None and not cur["approved"]:
    read_revision = int(cur["revision"])  # approve what this person read, not an edit made since
    if st.button(f"Approve revision {read_revision}", key="ref_approve"):
        if attempt(lambda: refs.approve(s, user, qid, revision=read_revision)) is not None:
            flash(f"Approved the reference answer of {qid}.")
            st.rerun()

history = refs.history(s, user, qid)
if history:
    with st.expander(f"History ({len(history)} event{'s' if len(history) != 1 else ''})"):
        st.dataframe([{k: h[k] for k in ("event_id", "op", "short_answer", "full_answer", "source", "actor",
                                         "created_at", "note")} for h in history], hide_index=True)

st.subheader("Criteria")
source, criteria = refs.criteria_for_query(s, user, qid)
if criteria:
    st.caption(f"From this question's {source}: each is marked on its own scale and combined with its fixed weight.")
    st.dataframe([{k: c[k] for k in ("criterion_id", "text", "example", "weight", "scale_max")} for c in criteria],
                 hide_index=True)
else:
    st.caption("No criteria for this question or its stratum yet.")
if user.can(Permission.EDIT_RUBRIC):
    with st.expander("Set this question's own criteria (they replace its stratum's)"):
        rows = [{"criterion_id": c["criterion_id"], "text": c["text"], "example": c["example"],
                 "weight": float(c["weight"]), "scale_max": int(c["scale_max"])} for c in criteria] or [
            {"criterion_id": "", "text": "", "example": "", "weight": 1.0, "scale_max": 1}]
        edited = st.data_editor(rows, num_rows="dynamic", key=f"ref_crit_{qid}", hide_index=True)
        if st.button("Save criteria", key="ref_crit_save"):
            drafts = [CriterionDraft(str(r.get("criterion_id") or ""), str(r.get("text") or ""),
                                     str(r.get("example") or ""), float(r.get("weight") or 0),
                                     int(r.get("scale_max") or 0)) for r in edited]
            if attempt(lambda: refs.set_criteria(s, user, scope="query", scope_id=qid, criteria=drafts)) is not None:
                flash(f"Saved {len(drafts)} criteria for {qid}.")
                st.rerun()
