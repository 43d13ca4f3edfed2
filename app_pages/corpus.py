"""Corpus: browse documents (raw text shown as plain text, never as HTML) and import more."""

from __future__ import annotations

from functools import partial

import streamlit as st

from annotator.evidence import question_drafts
from annotator.integration import corpus_import
from annotator.judge import llm
from annotator.versions import versioning
from app_pages import _cost
from annotator.people.roles import Permission
from golden_store.live.documents import corpus_stats
from app_pages._shared import (
    attempt, broken_labels_notice, flash, md_escape, progress_callback, require_page, searchable_picker, show_flash,
    store,
)

user = require_page(Permission.VIEW_STORE)
s = store()
st.title("Corpus")
show_flash()
stats = corpus_stats(s)
st.caption(
    f"{stats['documents']} documents · {stats['canonical_chars']:,} canonical characters · "
    f"corpus_digest `{stats['corpus_digest'] or '-'}`"
)

if user.can(Permission.IMPORT_CORPUS):
    with st.expander("Import documents", expanded=stats["documents"] == 0):
        st.write(
            "`.txt`, `.md`, `.html` (visible text is kept) or `.jsonl` with `doc_id`, `text` and "
            "optional `title`. The doc id is the file name without extension. An import is all or "
            "nothing: one bad file and nothing is stored."
        )
        files = st.file_uploader(
            "Files", accept_multiple_files=True, type=["txt", "md", "html", "htm", "jsonl"], key="corpus_files"
        )
        replace = st.checkbox("Replace documents that already exist with different text", key="corpus_replace")
        if st.button("Import", type="primary", disabled=not files, key="corpus_import"):
            sources = [(f.name, f.getvalue()) for f in files]
            rep = attempt(lambda: corpus_import.import_uploads(
                s, user, sources, replace=replace, progress=progress_callback("Canonicalizing")))
            if rep:
                flash(f"Imported: {rep.summary()}")
                st.rerun()
broken_labels_notice(versioning.live_problems(s, user))

docs = corpus_import.documents_table(s, user)
if docs.empty:
    st.info("No documents yet.")
    st.stop()
st.dataframe(docs, hide_index=True, width="stretch")
doc_id = searchable_picker("Read a document", {d: f"{d} · {t[:80]}" if isinstance(t, str) and t else d
                                               for d, t in zip(docs["doc_id"], docs["title"])},
                           key="corpus_doc", noun="document")
doc = corpus_import.read_document(s, user, doc_id) if doc_id else None
if doc:
    st.subheader(md_escape(doc["title"] or doc["doc_id"]), anchor=False)
    st.caption(
        f"{doc['source_format']} · raw sha256 {doc['raw_sha256'][:16]}… · from {md_escape(doc['source_path'])}"
    )
    view = st.radio("Text", ["raw", "canonical"], horizontal=True, key="corpus_view")
    # st.text renders plain text: corpus text is untrusted and must never become HTML/Markdown.
    st.text(doc["raw_text"] if view == "raw" else doc["canonical_text"])

if doc and user.can(Permission.EDIT_QUERIES):
    with st.expander("Propose questions about this document with Claude"):
        if not llm.api_key_present():
            st.info(llm.how_to_enable())
        else:
            st.caption("Each proposed excerpt is checked against the document; only verbatim excerpts are kept. "
                       f"Model: {md_escape(llm.model_id())}.")
            n = st.number_input("How many questions", 1, 20, 5, key="boot_n")
            # the button shows the estimate first (§11.7); only its confirmation sends anything
            if st.button("Propose", key="boot_go"):
                plan = attempt(lambda: question_drafts.plan(s, user, doc_id, n=int(n)))
                if plan is not None:
                    _cost.propose("boot_plan", plan, (doc_id, int(n)))
            if _cost.confirmed("boot_plan", (doc_id, int(n))) is not None:
                res = attempt(lambda: question_drafts.propose(s, user, doc_id, n=int(n)))
                st.session_state["boot_result"] = res
            res = st.session_state.get("boot_result")
            if res is not None and res.doc_id == doc_id:
                _cost.show_usage("The proposal used:", res.job_usage().lines())
                if res.outcome == "refusal":
                    st.warning("The model declined this document (counted as a refusal).")
                picks = []
                for i, p in enumerate(res.proposals):
                    label = p.question + ("  [compound: asks two things]" if p.compound else "")
                    if st.checkbox(label, key=f"boot_pick_{i}", disabled=not p.usable, value=p.usable and not p.compound):
                        picks.append(i)
                    for ex, _ in p.accepted:
                        st.caption(f"verbatim: {md_escape(ex)}")
                    for ex, why in p.rejected:
                        st.caption(f"rejected ({md_escape(why)}): {md_escape(ex)}")
                if res.proposals and st.button("Add selected as synthetic queries", key="boot_accept"):
                    ids = attempt(partial(question_drafts.accept, s, user, res, picks))
                    if ids is not None:
                        st.session_state["boot_result"] = None
                        flash(f"Added {len(ids)} synthetic queries with their excerpts as evidence.")
                        st.rerun()
