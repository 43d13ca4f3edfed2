"""Versions: freeze the live store, list, verify, diff and export frozen versions."""

from __future__ import annotations

import io
import tempfile
import zipfile
from functools import partial
from pathlib import Path

import pandas as pd
import streamlit as st

from annotator.versions import freeze_conflicts, versioning
from annotator.people.roles import Permission
from golden_store.live.documents import store_corpus_digest
from golden_store.versions import format_diff
from golden_store.versions.diff import nugget_diff_rows
from app_pages._shared import attempt, md_escape, picked, progress_callback, require_page, store

user = require_page(Permission.VIEW_VERSIONS)
s = store()
st.title("Versions")
vdir = versioning.versions_dir(s)
st.caption(f"Frozen versions live in {md_escape(vdir)}. A frozen version never changes.")

CONFLICTS_PAGE = str(Path(__file__).with_name("freeze_conflicts.py"))


def conflicts_link(n: int) -> None:
    """What refuses a freeze now, and the page that lists each conflict with its fixes."""
    st.warning(f"{n} conflict(s) refuse a freeze now. See Review → Freeze conflicts: each is listed there with "
               "its fixes.")
    st.page_link(CONFLICTS_PAGE, label="Open Freeze conflicts", icon=":material/rule:")


if freeze_conflicts.may_see(user):
    blocking = attempt(lambda: freeze_conflicts.count(s, user))
    if blocking:
        conflicts_link(blocking)

if user.can(Permission.FREEZE):
    with st.form("freeze"):
        st.subheader("Freeze the live store", anchor=False)
        c1, c2 = st.columns([1, 2])
        name = c1.text_input("Version name", placeholder="golden.v1")
        note = c2.text_input("Note", placeholder="what changed since the last version")
        if st.form_submit_button("Freeze", type="primary"):
            res = attempt(lambda: versioning.freeze(s, user, name.strip(), note=note,
                                                    progress=progress_callback("Freezing")))
            if res is None and (refused := attempt(lambda: freeze_conflicts.count(s, user))):
                # the refusal's way out, at the refusal (the line above may predate this freeze)
                st.page_link(CONFLICTS_PAGE, label=f"Open Freeze conflicts ({refused} to fix)",
                             icon=":material/rule:")
            if res:
                st.success(f"Frozen {md_escape(res.name)}: data_digest `{res.manifest['data_digest']}`")
                st.caption("data_digest identifies the content (labels and corpus): two freezes of the same "
                           "content have the same one. content_digest (in the manifest) also covers the name, "
                           "note and time, so it differs on every freeze.")
                for line in versioning.judge_label_lines(res.manifest):
                    st.info(md_escape(line))
                reasons = versioning.left_out(res.manifest)
                for reason in reasons:
                    st.warning(md_escape(reason))
                if reasons and user.can(Permission.ADJUDICATE):
                    st.page_link(str(Path(__file__).with_name("adjudication.py")),
                                 label="Open the adjudication queue", icon=":material/balance:")

VERSIONS_PAGE = 20
# a page of versions, newest first: only the shown page's manifests are read (issue 19)
want = max(1, int(st.session_state.get("v_list_page", 1)))
listed = attempt(lambda: versioning.version_page(user, vdir, offset=(want - 1) * VERSIONS_PAGE, limit=VERSIONS_PAGE))
total, rows = listed or (0, [])
pages = max(1, -(-total // VERSIONS_PAGE))
if want > pages:  # versions were removed on disk since: show the last page
    st.session_state["v_list_page"] = want = pages
    total, rows = versioning.version_page(user, vdir, offset=(want - 1) * VERSIONS_PAGE, limit=VERSIONS_PAGE)
if not total:
    st.info("No frozen versions yet.")
    st.stop()
if pages > 1:
    st.number_input(f"Page (of {pages}, {VERSIONS_PAGE} a page, newest first; {total} versions)", 1, pages,
                    key="v_list_page")
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
# every version can be picked below (its manifest is read when it is shown, verified or diffed)
damaged = {r["name"] for r in rows if r.get("error")}
names = [n for n in versioning.version_names(user, vdir) if n not in damaged]
# the pickers below give None when there is no name to pick: every version listed is damaged
NO_INTACT = "No version to pick: every frozen version here is damaged (see the error column above)."

tab_m, tab_v, tab_d, tab_e = st.tabs(["Manifest", "Verify", "Diff", "Export"])
with tab_m:
    pick = st.selectbox("Version", names, key="v_manifest")
    if pick:
        m = attempt(lambda: versioning.manifest(user, vdir, pick))
        if m:
            st.json(m)
with tab_v:
    pick_v = st.selectbox("Version", names, key="v_verify")
    if st.button("Verify", key="v_verify_btn"):
        if pick_v is None:
            st.error(NO_INTACT)
        else:
            to_verify = pick_v
            rep = attempt(lambda: versioning.verify(user, vdir, to_verify, live_corpus_digest=store_corpus_digest(s)))
            if rep:
                for w in rep.warnings:
                    st.warning(md_escape(w))
                if rep.ok:
                    st.success(f"{md_escape(rep.name)} verified: "
                               + ", ".join(f"{n} {k}" for k, n in rep.checked.items()))
                else:
                    st.error(f"{md_escape(rep.name)} FAILED verification")
                    st.code("\n".join(rep.problems), language=None, wrap_lines=True)
with tab_d:
    c1, c2 = st.columns(2)
    a = c1.selectbox("From", names, index=min(1, len(names) - 1), key="v_diff_a")
    b = c2.selectbox("To", names, index=0, key="v_diff_b")
    if st.button("Diff", key="v_diff_btn"):
        if a is None or b is None:
            st.error(NO_INTACT)
        elif d := attempt(partial(versioning.diff, user, vdir, a, b)):
            st.code(format_diff(d), language=None)
            # the approved nuggets apart, as a table: whole texts and quotes, one row per change (M12)
            rows = nugget_diff_rows(d)
            st.caption(f"Nuggets (approved): {len(rows)} change(s) from {md_escape(a)} to {md_escape(b)}.")
            if rows:
                st.dataframe(rows, hide_index=True, width="stretch", key="v_diff_nuggets")
with tab_e:
    if not user.can(Permission.EXPORT):
        st.caption("Exporting needs the engineer or admin role.")
    else:
        pick_e = st.selectbox("Version", names, key="v_export")
        fmt: str = picked(st.radio(
            "Format", ["trec", "beir", "jsonl"], horizontal=True, key="v_export_fmt",
            captions=["qrels.txt (qid 0 docid grade)", "corpus/queries.jsonl + qrels/test.tsv", "golden.jsonl"]))
        if st.button("Prepare download", key="v_export_btn"):
            if pick_e is None:
                st.error(NO_INTACT)
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    out = Path(tmp) / f"{pick_e}-{fmt}"
                    paths = attempt(partial(versioning.export_version, user, vdir, pick_e, fmt, out))
                    if paths:
                        buf = io.BytesIO()
                        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                            for p in paths:
                                zf.write(p, p.relative_to(out.parent))
                        st.session_state["v_export_zip"] = (f"{pick_e}-{fmt}.zip", buf.getvalue())
        if "v_export_zip" in st.session_state:
            fname, data = st.session_state["v_export_zip"]
            st.download_button(f"Download {fname}", data, file_name=fname, mime="application/zip")
