"""Corpus: browse documents (raw text shown as plain text, never as HTML) and import more."""

from __future__ import annotations

import streamlit as st

from annotator import corpus_import
from annotator.roles import Permission
from golden_store.corpus import corpus_stats
from app_pages._shared import attempt, flash, md_escape, progress_callback, require_page, show_flash, store

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
                flash(f"Imported: {md_escape(rep.summary())}")
                st.rerun()

docs = corpus_import.documents_table(s, user)
if docs.empty:
    st.info("No documents yet.")
    st.stop()
st.dataframe(docs, hide_index=True, width="stretch")
doc_id = st.selectbox("Read a document", docs["doc_id"].tolist(), key="corpus_doc")
doc = corpus_import.read_document(s, user, doc_id) if doc_id else None
if doc:
    st.subheader(md_escape(doc["title"] or doc["doc_id"]), anchor=False)
    st.caption(
        f"{doc['source_format']} · raw sha256 {doc['raw_sha256'][:16]}… · from {md_escape(doc['source_path'])}"
    )
    view = st.radio("Text", ["raw", "canonical"], horizontal=True, key="corpus_view")
    # st.text renders plain text: corpus text is untrusted and must never become HTML/Markdown.
    st.text(doc["raw_text"] if view == "raw" else doc["canonical_text"])
