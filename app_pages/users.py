"""Users (admin): add accounts, change roles, reset passwords, disable accounts; API tokens for
pipelines (created here or with `golden tokens`, shown once, revocable) and their audit."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st

from annotator import api_tokens, identity
from annotator.roles import Permission, Role
from app_pages._shared import (attempt, clear_form, flash, form_key, md_escape, oidc_configured, require_page,
                               show_flash, store, succeeded)

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
            # the first account ends single-user mode: the next page is the sign-in form (L3)
            flash(f"Account {username} created: sign in now." if not rows else f"Added {username}.")
            clear_form("user_add")
            st.rerun()

if rows:
    st.subheader("Change an account", anchor=False)
    pick = st.selectbox("Account", [r["username"] for r in rows], key="u_pick")
    row = next(r for r in rows if r["username"] == pick)
    new_roles = st.multiselect("Roles", ROLES, default=list(row["roles"]), key=f"u_roles_{pick}")
    c1, c2, c3 = st.columns(3)
    if c1.button("Save roles", key="u_save_roles") and (
            followed := attempt(lambda: identity.set_roles(s, user, pick, new_roles))):
        flash(f"Roles of {pick} saved: {', '.join(sorted(new_roles))}. {followed.sentence()}")
        st.rerun()
    pw = c2.text_input("New password", type="password", key=f"u_pw_{pick}")
    if c2.button("Set password", key="u_set_pw") and succeeded(lambda: identity.set_password(s, user, pick, pw)):
        st.success("Password changed.")
    label = "Enable" if row["disabled"] else "Disable"
    if c3.button(label, key="u_toggle") and (
            followed := attempt(lambda: identity.set_disabled(s, user, pick, not row["disabled"]))):
        flash(f"{pick} disabled. {followed.sentence()}" if not row["disabled"] else f"{pick} enabled.")
        st.rerun()


# ---- API tokens (issue 28): an admin's; the annotator layer checks MANAGE_API_TOKENS again --------
EXPIRY = {"30 days": timedelta(days=30), "90 days": timedelta(days=90), "1 year": timedelta(days=365), "never": None}
if user.can(Permission.MANAGE_API_TOKENS):
    st.divider()
    st.subheader("API tokens", anchor=False)
    st.caption("For pipelines and CI calling the HTTP API. A token acts as token:NAME with the roles given here "
               "(never more than your own); only its hash is stored.")
    created = st.session_state.pop("tok_created", None)  # shown on this run only: a rerun forgets it
    if created:
        st.warning(f"Copy the secret of {md_escape(created[0])} now: it will not be shown again (only its hash "
                   "is stored). A pipeline uses it as below; requests send it as Authorization: Bearer.")
        st.code(f"export GOLDEN_TOKEN={created[1]}", language="bash")
    tokens = api_tokens.list_tokens(s, user)
    if tokens:
        st.dataframe(pd.DataFrame([{
            "name": t.name, "id": t.token_id, "roles": ", ".join(t.roles), "state": t.state, "created by": t.created_by,
            "created": t.created_at, "expires": t.expires_at, "last used": t.last_used_at} for t in tokens]),
            hide_index=True, width="stretch")
    with st.form(form_key("tok_create")):
        c1, c2, c3 = st.columns([2, 2, 1])
        tok_name = c1.text_input("Token name (what it is for, e.g. ci-nightly)")
        mine = [r.value for r in Role if r in user.roles]
        tok_roles = c2.multiselect("Roles (at most your own)", mine, default=["engineer"] if "engineer" in mine else [])
        expiry = c3.selectbox("Expires after", list(EXPIRY), index=1)
        if st.form_submit_button("Create token"):
            made = attempt(lambda: api_tokens.create_token(s, user, tok_name, tok_roles,
                                                           expires_in=EXPIRY[str(expiry)]))
            if made:
                st.session_state["tok_created"] = (made[0].name, made[1])
                clear_form("tok_create")
                st.rerun()
    live = [t.name for t in tokens if t.state == "live"]
    if live:
        c1, c2 = st.columns([2, 3])
        revoking = c1.selectbox("Token to revoke", live, key="tok_revoke_pick")
        sure = c2.checkbox(f"Revoke {revoking}: requests with it are refused from now on", key=f"tok_sure_{revoking}")
        if c2.button("Revoke token", key="tok_revoke", disabled=not sure) and succeeded(
                lambda: api_tokens.revoke_token(s, user, str(revoking))):
            flash(f"Token {revoking} revoked.")
            st.rerun()
    st.markdown("**Recent uses** (newest first; refused tokens too)")
    uses = api_tokens.token_uses(s, user, limit=50)
    if uses:
        st.dataframe(pd.DataFrame([{**u, "name": u["name"] or "(no token matched)"} for u in uses]).drop(
            columns=["event_id", "token_id"]), hide_index=True, width="stretch")
    else:
        st.caption("No use recorded yet.")
