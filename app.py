"""Streamlit entry: decides who is signed in, then routes with st.navigation to the pages
that person's roles allow. Run with `make run` or `golden serve`."""

from __future__ import annotations

import streamlit as st

from annotator import context, identity
from annotator.roles import Permission
from golden_store.errors import GoldenError
from pages._shared import md_escape

st.set_page_config(page_title="Golden-set studio", page_icon=":material/verified:", layout="wide")


def _oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


try:
    store = context.get_store()
except GoldenError as exc:
    st.error(str(exc))
    st.stop()

mode = identity.auth_mode(store, oidc_configured=_oidc_configured())
user: identity.User | None = None
if mode == "local":
    user = identity.LOCAL_USER
elif mode == "oidc":
    if st.user.is_logged_in:
        user = identity.user_for_oidc(store, st.user.get("email"))
        if user is None:
            st.error(
                f"You are signed in as {st.user.get('email')}, but this studio has no account for that "
                f"address. Ask an admin to add it on the Users page."
            )
            st.button("Sign out", on_click=st.logout)
            st.stop()
else:
    name = st.session_state.get("username")
    user = identity.get_user(store, name) if name else None
    if name and user is None:  # account disabled or removed since sign-in
        st.session_state.pop("username", None)
st.session_state["_user"] = user
st.session_state["_auth_mode"] = mode

P = "pages/"
if user is None:
    pages = [st.Page(P + "sign_in.py", title="Sign in", icon=":material/login:", default=True)]
else:
    pages = [st.Page(P + "home.py", title="Home", icon=":material/home:", default=True)]
    if user.can(Permission.VIEW_STORE):
        pages += [
            st.Page(P + "corpus.py", title="Corpus", icon=":material/description:"),
            st.Page(P + "queries.py", title="Queries", icon=":material/help:"),
        ]
    if user.can(Permission.VIEW_VERSIONS):
        pages.append(st.Page(P + "versions.py", title="Versions", icon=":material/inventory_2:"))
    if user.can(Permission.MANAGE_USERS):
        pages.append(st.Page(P + "users.py", title="Users", icon=":material/group:"))

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
        else:
            if st.button("Sign out"):
                st.session_state.pop("username", None)
                st.rerun()
    st.caption(f"Store: {md_escape(store.path)}")

st.navigation(pages).run()
