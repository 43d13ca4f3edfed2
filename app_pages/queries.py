"""Queries: list by stratum, add, edit (each save is a new revision), retire, import."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from functools import partial

import streamlit as st

from annotator.evidence import query_editing
from annotator.people.roles import Permission
from golden_store.live.queries import QueryRecord, get_query, list_strata
from app_pages._shared import (attempt, clear_form, flash, form_key, picked, require_page, searchable_picker,
                                show_flash, store, succeeded, upload_bytes, upload_limit)

user = require_page(Permission.VIEW_STORE)
s = store()
st.title("Queries")
show_flash()
strata = [r["name"] for r in list_strata(s)]
df = query_editing.queries_table(s, user)

QUERIES_PAGE = 500  # rows of the table sent to the browser at once (issue 19: 20,000 queries were ~0.5 s a render)
f1, f2 = st.columns([2, 3])
pick = f1.multiselect("Strata", strata, key="q_filter")
find = f2.text_input("Find (part of an id or of the question, then Enter)", key="q_find").strip().casefold()
shown = df[df["stratum"].isin(pick)] if pick else df
if find:
    shown = shown[shown["query_id"].str.casefold().str.contains(find, regex=False)
                  | shown["text"].str.casefold().str.contains(find, regex=False)]
pages = max(1, -(-len(shown) // QUERIES_PAGE))
if pages > 1:
    page_no = st.number_input(f"Page (of {pages}, {QUERIES_PAGE} a page)", 1, pages, key="q_page")
    start = (min(int(page_no), pages) - 1) * QUERIES_PAGE
    st.caption(f"{len(shown)} of {len(df)} queries · rows {start + 1}-{min(start + QUERIES_PAGE, len(shown))}")
    shown = shown.iloc[start:start + QUERIES_PAGE]
else:
    st.caption(f"{len(shown)} of {len(df)} queries")
st.dataframe(shown, hide_index=True, width="stretch")

can_edit = user.can(Permission.EDIT_QUERIES)
QUERIES_UPLOAD_MB = 20  # 2,000 characters a query: tens of thousands of queries
SOURCES = ["expert", "production_log", "synthetic", "eval_run"]


def query_form(key: str, rec: QueryRecord | None) -> QueryRecord | None:
    with st.form(key):
        qid = st.text_input("Id", value=rec.query_id if rec else "", disabled=rec is not None)
        text = st.text_area("Question", value=rec.text if rec else "")
        c1, c2, c3 = st.columns(3)
        stratum = c1.selectbox("Stratum", strata, index=strata.index(rec.stratum) if rec else 0)
        sources = SOURCES + ([rec.source] if rec and rec.source not in SOURCES else [])
        source: str = picked(c2.selectbox("Source", sources, index=sources.index(rec.source) if rec else 0))
        created = c3.date_input("Date", value=rec.created_date if rec else date.today())
        c4, c5 = st.columns(2)
        answerable = c4.checkbox("Answerable from the corpus", value=rec.answerable if rec else True,
                                 help="Untick for 'no answer in corpus' (the negative stratum).")
        held_out = c5.checkbox("Held out (never sent to a hosted model)", value=rec.held_out if rec else False)
        notes = st.text_input("Notes", value=rec.notes if rec else "")
        if rec is not None and rec.held_out:
            st.text_input("Reason to take it out of the held-out set", key=f"{key}_unhold",
                          help="Unticking 'Held out' is a lead's decision; the reason is recorded with the revision.")
        if st.form_submit_button("Save", type="primary"):
            # as ticked: an answerable question in the negative stratum is refused with a sentence
            # by the annotator layer (issue 37 item 8), never stored unanswerable under a "Saved"
            return QueryRecord(qid.strip(), text.strip(), stratum, answerable, source, created, held_out, notes)
    return None


if can_edit:
    tab_add, tab_edit, tab_import, tab_strata = st.tabs(["Add", "Edit", "Import", "Strata"])
    with tab_add:
        rec = query_form(form_key("q_add"), None)
        if rec and succeeded(partial(query_editing.add_query, s, user, rec)):
            flash(f"Added {rec.query_id}.")
            clear_form("q_add")
            st.rerun()
    with tab_edit:
        if df.empty:
            st.write("No queries yet.")
        else:
            qid = searchable_picker("Query", {q: f"{q} · {t[:80]}" for q, t in zip(df["query_id"], df["text"])},
                                  key="q_edit_pick")
            current = get_query(s, qid)
            new = query_form(f"q_edit_{qid}", current)
            if new:
                new = replace(new, query_id=qid)
                reason = st.session_state.get(f"q_edit_{qid}_unhold") or None
                saved = attempt(partial(query_editing.edit_query, s, user, new, unhold_reason=reason))
                if saved is not None:
                    flash(f"Saved a new revision of {qid}." if saved
                          else f"Nothing changed in {qid}: no new revision was written.")
                    st.rerun()
            if st.button("Retire this query", key="q_retire") and succeeded(
                lambda: query_editing.retire_query(s, user, qid)
            ):
                st.rerun()
            st.caption("History (every save is a revision; nothing is overwritten)")
            st.dataframe(query_editing.history(s, user, qid), hide_index=True, width="stretch")
    with tab_import:
        st.write("CSV with a header row, or JSONL: `id, text, stratum, answerable, source, date, held_out, notes`.")
        up = st.file_uploader("Query file", type=["csv", "jsonl"], key="q_import_file",
                              max_upload_size=upload_limit(QUERIES_UPLOAD_MB))
        update = st.checkbox("Record new revisions for ids that already exist", key="q_import_update")
        if st.button("Import queries", disabled=up is None, key="q_import") and up is not None and (
                data := upload_bytes(up, QUERIES_UPLOAD_MB, "golden queries import FILE")) is not None:
            res = attempt(partial(query_editing.import_file, s, user, up.name, data, update=update))
            if res:
                flash(f"{res['added']} added, {res['updated']} updated, {res['unchanged']} unchanged.")
                st.rerun()
    with tab_strata:
        st.dataframe(list_strata(s), hide_index=True, width="stretch")
        if user.can(Permission.MANAGE_STRATA):
            with st.form(form_key("stratum_add")):
                name = st.text_input("New stratum name (lowercase, e.g. code_switching)")
                desc = st.text_input("Definition (one line, so annotators assign it consistently)")
                if st.form_submit_button("Add stratum"):
                    if succeeded(lambda: query_editing.add_stratum(s, user, name, desc)):
                        flash(f"Added stratum {name}.")
                        clear_form("stratum_add")
                        st.rerun()
else:
    st.caption("You can read queries; adding or editing them needs the lead, engineer or admin role.")
