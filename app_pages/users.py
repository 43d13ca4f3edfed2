"""Users (admin): add accounts, change roles, reset passwords, disable accounts; API tokens for
pipelines (created here or with `golden tokens`, shown once, revocable) and their audit."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st

from annotator.people import api_tokens, identity
from annotator.people.roles import Permission, Role, grantable_roles
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
    st.caption("For pipelines and CI calling the HTTP API. A token acts as token:NAME#ID with the roles given "
               "here, and never holds a permission you lack (an admin may give any role; engineer suits a CI job). "
               "Only its hash is stored.")
    created = st.session_state.pop("tok_created", None)  # shown on this run only: a rerun forgets it
    if created:
        st.warning(f"Copy the secret of {md_escape(created[0])} now: it will not be shown again (only its hash "
                   "is stored). A pipeline uses it as below; requests send it as Authorization: Bearer.")
        st.code(f"export GOLDEN_TOKEN={created[1]}", language="bash")
    tokens = api_tokens.list_tokens(s, user)
    if tokens:
        st.dataframe(pd.DataFrame([{
            "name": t.name, "id": t.token_id, "roles": ", ".join(t.roles), "state": t.state, "created by": t.created_by,
            "created": t.created_at, "expires": t.expires_at, "last used": t.last_used_at,
            "acts as": api_tokens.actor_of(t)} for t in tokens]),
            hide_index=True, width="stretch")
    # the roles this account may give: each role whose every permission it holds, so an admin-only
    # account is offered all five (issue 37, item 10: it was offered its own role names only)
    grantable = grantable_roles(user.roles)
    if not grantable:
        st.info("Your account holds no role a token could be given, so you cannot create one. Ask an admin to "
                "give your account the role the token needs (Change an account, above), then come back here.")
    else:
        with st.form(form_key("tok_create")):
            c1, c2, c3 = st.columns([2, 2, 1])
            tok_name = c1.text_input("Token name (what it is for, e.g. ci-nightly)")
            tok_roles = c2.multiselect("Token roles (what it may do; engineer for a CI job)", grantable,
                                       default=["engineer"] if "engineer" in grantable else [])
            expiry = c3.selectbox("Expires after", list(EXPIRY), index=1)
            if st.form_submit_button("Create token"):
                if not tok_roles:
                    st.error("Choose at least one role under Token roles: engineer, for a CI job that "
                             "imports runs and freezes versions.")
                elif made := attempt(lambda: api_tokens.create_token(s, user, tok_name, tok_roles,
                                                                     expires_in=EXPIRY[str(expiry)])):
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
        # the id beside the name: a revoked token's name may be given to a new one (probe A8)
        st.dataframe(pd.DataFrame([{
            "created_at": u["created_at"], "name": u["name"] or "(no token matched)", "id": u["token_id"] or "",
            "client": u["client"], "method": u["method"], "path": u["path"], "status": u["status"],
            "outcome": u["outcome"]} for u in uses]), hide_index=True, width="stretch")
    else:
        st.caption("No use recorded yet.")
