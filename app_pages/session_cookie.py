"""The sign-in cookie: set after a local sign-in, cleared on sign-out. Set from JavaScript
(a tiny Components v2 element, nothing painted) because Streamlit reads cookies but has no
call to write one. The token is random and revocable on the server (annotator/people/sessions.py);
SameSite=Strict keeps other sites from sending it, Secure is added under https."""

from __future__ import annotations

import streamlit as st

from annotator.people import sessions

_JS = """
export default function (component) {
  const data = component.data || {};
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  if (data.token) {
    document.cookie = `${data.name}=${data.token}; Path=/; Max-Age=${data.max_age}; SameSite=Strict${secure}`;
  } else if (data.clear) {
    document.cookie = `${data.name}=; Path=/; Max-Age=0; SameSite=Strict${secure}`;
  }
}
"""
_COMPONENT = st.components.v2.component("golden_session_cookie", js=_JS)


def browser_token() -> str | None:
    """The session token the browser sent when it connected (None if it sent none)."""
    try:
        token = st.context.cookies.get(sessions.COOKIE)
    except Exception:  # no browser behind this run (AppTest, bare mode)
        return None
    return token if isinstance(token, str) else None


def sync_cookie(token: str | None) -> None:
    """Keep the browser's cookie equal to the session's token (or cleared when signed out)."""
    data = {"name": sessions.COOKIE, "token": token, "max_age": int(sessions.lifetime().total_seconds()),
            "clear": token is None and browser_token() is not None}
    _COMPONENT(key="session_cookie", data=data, height=0)
