"""Sign in with a local account (shown only when accounts exist and nobody is signed in)."""

from __future__ import annotations

import streamlit as st

from annotator.people import identity, sessions
from app_pages._shared import auth_mode, client_address, show_flash, store

st.title("Golden-set studio")
show_flash()  # "Account ... created: sign in now" after the first admin is added (Users page)
if auth_mode() == "oidc":
    st.write("Sign in with your organisation's identity provider.")
    st.button("Sign in", on_click=st.login, type="primary")
    st.stop()

st.subheader("Sign in")
with st.form("sign_in"):
    username = st.text_input("Username", autocomplete="username")
    password = st.text_input("Password", type="password", autocomplete="current-password")
    submitted = st.form_submit_button("Sign in", type="primary")
if submitted:
    try:
        user = identity.authenticate(store(), username, password, client=client_address())
    except identity.SignInThrottled as exc:
        st.error(str(exc))
        st.stop()
    if user is None:
        st.error("Unknown username or wrong password (or the account is disabled).")
    else:
        st.session_state["username"] = user.username
        st.session_state["session_token"] = sessions.start(store(), user)
        st.rerun()
