"""Evidence: pick a question, search the corpus, paste a quote or select it in a document,
see where it lands, save it."""

from __future__ import annotations

from functools import partial

import streamlit as st

from annotator.evidence import evidence_authoring as ea
from annotator.versions import versioning
from annotator.people.roles import Permission
from app_pages._shared import (
    attempt, broken_labels_notice, current_user, flash, marked, md_escape, picked, require_page, searchable_picker,
    show_flash, store, succeeded,
)
from app_pages.document_viewer import document_viewer
from app_pages.quote_diff import diff_markdown
from golden_store.core.errors import GoldenError

user = require_page(Permission.LABEL)
s = store()
st.title("Evidence")
show_flash()
broken_labels_notice(versioning.live_problems(s, user))

mine = ea.my_no_answers(s, user)
if mine:
    with st.expander(f"Your \"no answer in corpus\" marks ({len(mine)})"):
        for r in mine:
            c1, c2 = st.columns([6, 1])
            c1.markdown(f"**{md_escape(r.query_id)}** · {md_escape(r.text[:120])}")
            if c2.button("Undo", key=f"ev_undo_no_answer_{r.query_id}") and succeeded(
                    partial(ea.undo_no_answer, s, user, r.query_id)):
                flash(f"Undone: {r.query_id} is answerable again and back in the queue.")
                st.rerun()

todo = ea.queue(s, user)
if todo.empty:
    st.info("No answerable questions yet: add queries on the Queries page.")
    st.stop()
names = {r.query_id: f"{'✓' if r.quotes else '○'} {'[round] ' if r.in_round else ''}{r.query_id} · {r.stratum} · "
                     f"{r.text[:80]}" for r in todo.itertuples(index=False)}
# the question lives in the URL (?q=q003): Back, a refresh and a pasted link reopen it. The
# picker's own state is dropped while another page runs, so the URL is what comes back.
linked = st.query_params.get("q")
if linked is not None and linked not in names:
    st.warning(f"There is no answerable question {md_escape(linked)!s} (from the link): showing the first one in "
               "the queue instead.")
elif linked is not None and "ev_query" not in st.session_state:
    st.session_state["ev_query"] = linked
qid = searchable_picker("Question (those without quotes first)", names, key="ev_query",
                      help="○ no quote yet · ✓ has at least one quote")
if st.query_params.get("q") != qid:
    st.query_params["q"] = qid
rec = ea.question(s, user, qid)
st.subheader(md_escape(rec.text), anchor=False)
st.caption(f"{rec.query_id} · stratum {rec.stratum} · source {md_escape(rec.source)}"
           + (" · held out (never sent to a hosted model)" if rec.held_out else ""))

blind = ea.in_evidence_round(s, user, qid)
if blind:
    st.info("Evidence round: you see only your own quotes of this question until a lead settles it; "
            "\"No answer in corpus\" is your own verdict.")
current = ea.quotes(s, user, qid)
if blind and ea.said_no_answer(s, user, qid):
    st.warning("You said the corpus does not answer this question.")
    if st.button("Withdraw my \"no answer\"", key="ev_no_answer_undo") and succeeded(
            lambda: ea.withdraw_no_answer(s, user, qid)):
        flash(f"Withdrawn: {qid} is open again for your quotes.")
        st.rerun()
elif current:
    st.write(f"**Saved quotes ({len(current)})**")
    for q in current:
        c1, c2 = st.columns([6, 1])
        c1.markdown(f"**{md_escape(q['doc_id'])}** \\[{q['start']}:{q['end']}\\] · {q['match_kind']}"
                    f" {q['score']:.0f} · {md_escape(q['actor'])}")
        c1.text(q["quote"])
        if (typed := ea.typed_form(q["note"])) is not None:
            c1.caption(f"Typed as: {md_escape(typed)}")
        if c2.button("Retract", key=f"ev_retract_{q['evidence_id']}") and succeeded(
            partial(ea.retract_quote, s, user, qid, q["evidence_id"])
        ):
            flash("Quote retracted (the event history keeps it).")
            st.rerun()
elif st.session_state.get("ev_no_answer_ask") == qid:
    st.warning(f"Mark {md_escape(qid)} as not answered by the corpus?"
               + (" It is your own verdict in this evidence round." if blind else
                  " It moves to the negative stratum and leaves this queue (you can undo it above)."))
    c1, c2 = st.columns(2)
    if c1.button("Yes, no answer in corpus", key="ev_no_answer_confirm", type="primary"):
        st.session_state.pop("ev_no_answer_ask", None)
        if succeeded(lambda: ea.mark_no_answer(s, user, qid)):
            flash(f"{qid}: your \"no answer\" is recorded." if blind else
                  f"{qid} marked as unanswerable (negative stratum); undo it under \"Your 'no answer in corpus' "
                  "marks\".")
            st.rerun()
    if c2.button("Cancel", key="ev_no_answer_cancel"):
        st.session_state.pop("ev_no_answer_ask", None)
        st.rerun()
else:
    if st.button("No answer in corpus", key="ev_no_answer",
                 help="The corpus does not answer this question: it moves to the negative stratum "
                      "(you are asked to confirm)."):
        st.session_state["ev_no_answer_ask"] = qid
        st.rerun()

_MATCH = {"phrase": "exact phrase", "near": "words close together", "words": "some words"}
left, right = st.columns(2)
wide = st.container()  # below both columns: the document viewer gets the page's width
with left:
    st.write("**Find the passage**")
    # a form for the reason the quote box has one (M3): leaving a box with unsent text must
    # not rerun this page under a click on another page; Enter searches
    with st.form("ev_search_form", border=False):
        kw = st.text_input("Search the corpus", key="ev_search", placeholder="keywords, an error code, a name…")
        st.form_submit_button("Search", key="ev_search_go")
    hits = attempt(lambda: ea.search_corpus(s, user, kw)) if kw.strip() else []
    if kw.strip() and not hits:
        st.caption("No document contains these words.")
    for h in hits or []:
        st.markdown(f"**{md_escape(h.doc_id)}** · {_MATCH[h.match]} · {h.n_hits} hits · score {h.score:.1f}")
        st.markdown(marked(h.snippet))
    hint_options = ["(whole corpus)"] + [h.doc_id for h in hits or []]

with right:
    st.write("**Quote**")
    if st.session_state.pop("ev_clear", False):
        st.session_state["ev_quote"] = ""
    hint: str = picked(st.selectbox("Look for the quote in", hint_options, key="ev_hint",
                                    help="the whole corpus, or one of the documents the search found"))
    how = st.radio("Quote by", ["pasting", "selecting"], horizontal=True, key="ev_how",
                   format_func=lambda h: {"pasting": "Pasting the text", "selecting": "Selecting it in the document"}[h])
    if how == "pasting":
        # in a form: typing and leaving the box sends nothing until "Find quote". Outside one,
        # leaving it (e.g. by clicking a page in the sidebar) reran this page, and that rerun
        # raced the navigation and won: the first click stayed on Evidence (review M3).
        with st.form("ev_quote_form", border=False, enter_to_submit=False):
            quote = st.text_area("Paste or type the exact passage that answers the question", key="ev_quote",
                                 height=140)
            find = st.form_submit_button("Find quote", type="primary", key="ev_resolve")
        if find:
            doc = None if hint == "(whole corpus)" else hint
            found = attempt(lambda: ea.resolve(s, user, quote, doc_id=doc))
            st.session_state["ev_result"] = (qid, quote, found) if found else None
    elif hint == "(whole corpus)":
        st.caption("Search the corpus, then choose one of the documents it found above to read it here.")
    else:
        shown = attempt(lambda: ea.document(s, user, hint))

        def selected(selection: dict) -> None:
            """The selection, resolved as a pasted quote would be (before the page reruns)."""
            try:
                quote_, res_, place = ea.resolve_selection(store(), current_user(), selection)
            except GoldenError as exc:
                st.session_state["ev_selection_error"] = str(exc).splitlines()[0]
                return
            st.session_state["ev_result"] = (qid, quote_, res_)
            if place is not None and res_.status == "ambiguous":
                st.session_state["ev_pick"] = place

        if shown is not None:
            st.caption(f"Select the passage in {md_escape(shown.doc_id)} (below) that answers the question: it "
                       "is placed as soon as you let go of the mouse.")
            with wide:
                document_viewer(key="ev_viewer", doc_id=shown.doc_id, text=shown.text, digest=shown.digest,
                                on_select=selected)
        if msg := st.session_state.pop("ev_selection_error", None):
            st.error(md_escape(msg))

    result = st.session_state.get("ev_result")
    if result and result[0] == qid and result[2] is not None:
        _, rquote, res = result
        chosen = None
        if res.status == "exact":
            st.success(f"Exact match in {md_escape(res.best.doc_id)} [{res.best.start}:{res.best.end}]")
            chosen = res.best
        elif res.status == "fuzzy":
            st.warning(f"Fuzzy match (score {res.best.score:.1f}) in {md_escape(res.best.doc_id)} "
                       f"[{res.best.start}:{res.best.end}]: check the differences below")
            chosen = res.best
        elif res.status == "ambiguous":
            st.warning(f"The quote occurs in {len(res.candidates)} places: choose the one that answers the question.")
            labels = [f"{md_escape(c.doc_id)} \\[{c.start}:{c.end}\\] score {c.score:.0f}" for c in res.candidates]
            pick = st.radio("Place", range(len(labels)), format_func=lambda i: labels[i], key="ev_pick")
            chosen = res.candidates[pick]
        else:
            st.error("Not found: nothing in the corpus is close enough. Edit the quote (or search again).")
            for c in res.candidates:
                st.caption(f"closest: {md_escape(c.doc_id)} [{c.start}:{c.end}] score {c.score:.1f}")
        if chosen is not None:
            pl = ea.placement(s, user, rquote, chosen)
            st.markdown(marked([(pl.before, False), (pl.passage, True), (pl.after, False)]))
            if res.status == "fuzzy" or chosen.score < 100:
                st.caption("Saved as the document's own text (what exports carry); what you typed is kept beside it.")
                st.text(pl.passage)
                st.caption(f"You typed: {md_escape(rquote)}")
                st.caption("Differences: red is only in what you typed, green only in the document.")
                st.markdown(diff_markdown(pl.diff))
            warnings = ea.quote_warnings(s, user, rquote, res)
            for w in warnings:
                st.warning(md_escape(w))
            if warnings:
                save = st.button("Save anyway", key="ev_save_anyway",
                                 help="Save this quote although it is short or occurs more than once")
            else:
                save = st.button("Save quote", key="ev_save")
            if save:
                eid = attempt(lambda: ea.save_quote(s, user, qid, rquote, res, chosen, confirmed=bool(warnings)))
                if eid:
                    st.session_state["ev_result"] = None
                    st.session_state["ev_clear"] = True
                    flash(f"Saved quote {eid} for {qid}.")
                    st.rerun()
