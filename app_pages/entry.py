"""The app: decides who is signed in, then routes with st.navigation to the pages that
person's roles allow. Started by `golden serve` / `make run` (app_pages/streamlit_app.py)
or `streamlit run app.py`.

Every page re-checks the user's permission itself (app_pages/_shared.require_page), and the
annotator layer checks again on every write: the navigation list is a convenience."""


from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import streamlit as st

from annotator import context
from annotator.roles import Permission
from golden_store.errors import GoldenError
from annotator.identity import LOOPBACK_ONLY
from app_pages._shared import (auth_mode, client_is_local, current_user, md_escape, oidc_signed_in, rubric_banner,
                               sign_out)
from app_pages.session_cookie import sync_cookie

PAGES = Path(__file__).resolve().parent


def main() -> None:
    st.set_page_config(page_title="Golden-set studio", page_icon=":material/verified:", layout="wide")

    try:
        store = context.get_store()
    except GoldenError as exc:
        message = str(exc)
        # Still route through st.navigation, so no page can be reached without a store.
        st.navigation([st.Page(lambda: st.error(message), title="Store unavailable")]).run()
        st.stop()

    mode = auth_mode()
    if mode == "local" and not client_is_local():
        # single-user mode grants admin to whoever asks: never to another machine
        st.navigation([st.Page(lambda: st.error(LOOPBACK_ONLY), title="Local only")]).run()
        st.stop()
    user = current_user()
    if mode == "oidc" and oidc_signed_in() and user is None:
        st.error(
            f"You are signed in as {md_escape(st.user.get('email'))}, but this studio has no account for "
            f"that address. Ask an admin to add it on the Users page."
        )
        st.button("Sign out", on_click=st.logout)
        st.stop()

    if user is None:
        # The sign-in page answers at the address asked for: after signing in, the same
        # address opens that page (or Home).
        pages = [st.Page(PAGES / "sign_in.py", title="Sign in", icon=":material/login:",
                         url_path="home", default=True)]
        asked = _asked_page()
        if asked:
            pages.append(st.Page(PAGES / "sign_in.py", title="Sign in", icon=":material/login:", url_path=asked))
    else:
        pages = [st.Page(PAGES / "home.py", title="Home", icon=":material/home:", url_path="home", default=True)]
        if user.can(Permission.VIEW_STORE):
            pages += [
                st.Page(PAGES / "corpus.py", title="Corpus", icon=":material/description:"),
                st.Page(PAGES / "queries.py", title="Queries", icon=":material/help:"),
            ]
        if user.can(Permission.LABEL):
            pages.append(st.Page(PAGES / "evidence.py", title="Evidence", icon=":material/format_quote:"))
            pages.append(st.Page(PAGES / "judge.py", title="Judge", icon=":material/gavel:"))
            pages.append(st.Page(PAGES / "nuggets.py", title="Nuggets", icon=":material/checklist:"))
        if user.can(Permission.REVIEW) or user.can(Permission.IMPORT_RUNS):
            pages.append(st.Page(PAGES / "transcripts.py", title="Transcripts", icon=":material/forum:"))
        if user.can(Permission.ADJUDICATE):
            pages.append(st.Page(PAGES / "adjudication.py", title="Adjudication", icon=":material/balance:"))
        if user.can(Permission.RUN_ROUNDS):
            pages.append(st.Page(PAGES / "agreement.py", title="Agreement", icon=":material/handshake:"))
            pages.append(st.Page(PAGES / "calibration.py", title="Judge calibration", icon=":material/tune:"))
        if user.can(Permission.VIEW_VERSIONS):
            pages.append(st.Page(PAGES / "versions.py", title="Versions", icon=":material/inventory_2:"))
            pages.append(st.Page(PAGES / "pool.py", title="Runs & pool", icon=":material/stacks:"))
            pages.append(st.Page(PAGES / "power.py", title="Power", icon=":material/query_stats:"))
        if user.can(Permission.MANAGE_USERS):
            pages.append(st.Page(PAGES / "users.py", title="Users", icon=":material/group:"))

    with st.sidebar:
        if user is not None:
            st.markdown(f"**{md_escape(user.display_name)}**")
            st.caption("Roles: " + ", ".join(sorted(r.value for r in user.roles)))
            if mode == "local":
                st.info(
                    "Single-user local mode: no accounts exist, so you act as admin. "
                    "Add an account on the Users page to require sign-in."
                )
            elif mode == "oidc":
                st.button("Sign out", on_click=st.logout)
            elif st.button("Sign out"):
                sign_out()
                st.rerun()
        # A real button on every page: besides re-reading the store, it makes the browser load
        # the button component at start-up, so on the Judge page the grade keys are bound as
        # soon as the item shows (without it the first key pressed there could be lost).
        st.button("Refresh", key="sidebar_refresh", help="Re-read the store (other people's changes)")
        if user is not None and user.can(Permission.IMPORT_CORPUS):  # where the data lives: engineers, admins
            st.caption(f"Store: {md_escape(store.path)}")
        if mode == "accounts":
            sync_cookie(st.session_state.get("session_token"))

    if user is not None and user.can(Permission.LABEL):
        rubric_banner(user)  # once per rubric change, above whichever page opens
    # Signed out there is nothing to navigate to: no menu of (two) sign-in entries.
    st.navigation(pages, position="hidden" if user is None else "sidebar").run()


# The pages a deep link may name (the file stems under app_pages/, which are their url paths).
_LINKABLE = frozenset(p.stem for p in PAGES.glob("*.py")) - {"entry", "sign_in", "streamlit_app", "home"}


def _asked_page() -> str | None:
    """The page a deep link asks for (``/judge`` -> ``judge``) while nobody is signed in: the
    sign-in page answers there too, so the address stays and opens that page once signed in."""
    try:
        path = urlparse(st.context.url or "").path
    except Exception:  # no browser behind this run
        return None
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last if last in _LINKABLE else None
