"""Users (admin): add accounts, change roles, reset passwords, disable accounts."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import identity
from annotator.roles import Permission, Role
from app_pages._shared import clear_form, flash, form_key, oidc_configured, require_page, show_flash, store, succeeded

user = require_page(Permission.MANAGE_USERS)
s = store()
st.title("Users")
show_flash()
ROLES = [r.value for r in Role]
rows = identity.list_users(s, user)
if not rows:
    st.info(
        "No accounts yet, so the studio runs in single-user local mode. The first account must "
        "be an admin; once it exists everyone signs in."
    )
else:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

with st.form(form_key("user_add")):
    st.subheader("Add an account", anchor=False)
    c1, c2 = st.columns(2)
    username = c1.text_input("Username (use the email address for OIDC sign-in)")
    display = c2.text_input("Display name")
    roles = st.multiselect("Roles", ROLES, default=["admin"] if not rows else ["annotator"])
    oidc = oidc_configured()
    hint = "; empty for OIDC-only sign-in" if oidc else ""
    password = st.text_input(f"Password (at least {identity.MIN_PASSWORD} characters{hint})", type="password")
    if st.form_submit_button("Add account", type="primary"):
        if succeeded(lambda: identity.create_user(s, user, username, roles, password=password or None,
                                                  display_name=display or None, passwordless=oidc)):
            flash(f"Added {username}.")
            clear_form("user_add")
            st.rerun()

if rows:
    st.subheader("Change an account", anchor=False)
    pick = st.selectbox("Account", [r["username"] for r in rows], key="u_pick")
    row = next(r for r in rows if r["username"] == pick)
    new_roles = st.multiselect("Roles", ROLES, default=list(row["roles"]), key=f"u_roles_{pick}")
    c1, c2, c3 = st.columns(3)
    if c1.button("Save roles", key="u_save_roles") and succeeded(
        lambda: identity.set_roles(s, user, pick, new_roles)
    ):
        st.rerun()
    pw = c2.text_input("New password", type="password", key=f"u_pw_{pick}")
    if c2.button("Set password", key="u_set_pw") and succeeded(lambda: identity.set_password(s, user, pick, pw)):
        st.success("Password changed.")
    label = "Enable" if row["disabled"] else "Disable"
    if c3.button(label, key="u_toggle") and succeeded(
        lambda: identity.set_disabled(s, user, pick, not row["disabled"])
    ):
        st.rerun()
