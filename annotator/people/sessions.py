"""Sign-in sessions that survive a refresh, for local accounts.

Signing in makes a random token (256 bits) that the browser keeps in a cookie; the store
keeps only its sha256 with the owner and an expiry, so a session can be revoked on the
server (sign out, password change, account disabled) and nothing secret travels in a URL.
A refresh or a deep link reads the cookie and finds the person again. OIDC sign-in keeps
using Streamlit's own ``st.login`` session.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import timedelta

from annotator.people.identity import User, get_user
from golden_store.live import sign_in_sessions
from golden_store.db.store import Store, utcnow

COOKIE = "golden_session"
DEFAULT_HOURS = 12.0


def lifetime() -> timedelta:
    """How long a session lasts: ``GOLDEN_SESSION_HOURS`` (default 12; at most 30 days)."""
    try:
        hours = float(os.environ.get("GOLDEN_SESSION_HOURS", DEFAULT_HOURS))
    except ValueError:
        hours = DEFAULT_HOURS
    return timedelta(hours=min(max(hours, 0.01), 24 * 30))


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def digest(token: str) -> str:
    """What names a session without being its token (what the store keeps, and what a label
    pass carries: a leaked pass must not be a way to sign in)."""
    return _sha(token)


def start(store: Store, user: User) -> str:
    """A new session for ``user`` (already authenticated); returns the token for the cookie."""
    token = secrets.token_urlsafe(32)
    sign_in_sessions.add(store, _sha(token), user.username, utcnow() + lifetime())
    return token


def user_for(store: Store, token: str | None) -> User | None:
    """The enabled user a live session token belongs to, else None."""
    if not token or len(token) > 200:
        return None
    name = sign_in_sessions.owner(store, _sha(token))
    return get_user(store, name) if name else None


def user_for_digest(store: Store, token_digest: str | None) -> User | None:
    """:func:`user_for` by the session's :func:`digest` instead of its token."""
    if not token_digest or len(token_digest) != 64:
        return None
    name = sign_in_sessions.owner(store, token_digest)
    return get_user(store, name) if name else None


def end(store: Store, token: str | None) -> None:
    if token:
        sign_in_sessions.revoke(store, _sha(token))


def end_all(store: Store, username: str) -> int:
    return sign_in_sessions.revoke_all(store, username)
