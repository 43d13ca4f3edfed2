"""Who is acting: local accounts (scrypt), single-user local mode, OIDC identities.

Modes, decided per request by :func:`auth_mode`:

* ``local``    - no enabled user exists: one person on their own machine; they act as
                 ``local`` with every role, and the sidebar says so.
* ``oidc``     - Streamlit's ``st.login`` is configured: the identity provider says who
                 the person is; the users table says what they may do (username = email).
* ``accounts`` - local accounts with scrypt password hashes.

The CLI acts as ``cli:<os user>`` with every role: whoever can open the DuckDB file can
change it anyway, so a role check there would be theatre.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import hmac
import os
import re
from dataclasses import dataclass

from annotator.roles import Permission, PermissionDenied, Role, parse_roles, permissions_of
from golden_store import sign_in_sessions
from golden_store import users as user_rows
from golden_store.errors import GoldenError, ValidationError
from golden_store.store import Store

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MIN_PASSWORD = 10


@dataclass(frozen=True)
class User:
    username: str
    display_name: str
    roles: frozenset[Role]

    @property
    def permissions(self) -> frozenset[Permission]:
        return permissions_of(self.roles)

    def can(self, perm: Permission) -> bool:
        return perm in self.permissions


LOCAL_USER = User("local", "Local user", frozenset(Role))


def cli_user() -> User:
    try:
        who = getpass.getuser()
    except Exception:  # no login name in some containers
        who = "unknown"
    return User(f"cli:{who}", f"CLI ({who})", frozenset(Role))


def require(user: User | None, perm: Permission) -> User:
    """Raise PermissionDenied unless ``user`` may ``perm``. Returns the user for chaining."""
    if user is None:
        raise PermissionDenied(f"Sign in to {perm.value}.")
    if not user.can(perm):
        roles = ", ".join(sorted(r.value for r in user.roles)) or "none"
        raise PermissionDenied(
            f"{user.username} (roles: {roles}) may not {perm.value}; ask an admin for a role that allows it."
        )
    return user


# ---- passwords ------------------------------------------------------------------------------


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    dk = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${b64(salt)}${b64(dk)}"


def verify_password(password: str, stored: str | None) -> bool:
    if not stored:
        return False
    try:
        algo, n, r, p, salt, dk = stored.split("$")
        if algo != "scrypt":
            return False
        expected = base64.b64decode(dk)
        got = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


# ---- accounts --------------------------------------------------------------------------------


def auth_mode(store: Store, *, oidc_configured: bool) -> str:
    if oidc_configured:
        return "oidc"
    return "accounts" if user_rows.count_users(store) else "local"


def _to_user(row: dict | None) -> User | None:
    if row is None or row["disabled"]:
        return None
    return User(row["username"], row["display_name"], parse_roles(row["roles"]))


def get_user(store: Store, username: str) -> User | None:
    """The enabled user ``username`` with their current roles, re-read from the store so a
    role change or a disabled account takes effect on the next request."""
    return _to_user(user_rows.get_user_row(store, username))


def _normal_username(username: str) -> str:
    username = username.strip()
    return username.lower() if "@" in username else username


def authenticate(store: Store, username: str, password: str) -> User | None:
    row = user_rows.get_user_row(store, _normal_username(username))
    if row is None:
        # spend the same time as a real check, so timing does not reveal which names exist
        verify_password(password, hash_password("x" * MIN_PASSWORD))
        return None
    if not verify_password(password, row["password_hash"]):
        return None
    return _to_user(row)


def user_for_oidc(store: Store, email: str | None) -> User | None:
    """Map an identity-provider email to a studio user (username = email, case-insensitive)."""
    if not email:
        return None
    row = user_rows.get_user_row(store, email.strip().lower())
    return _to_user(row)


def _check_new_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise ValidationError(f"The password needs at least {MIN_PASSWORD} characters.")


def create_user(
    store: Store,
    actor: User | None,
    username: str,
    roles: list[str],
    *,
    password: str | None = None,
    display_name: str | None = None,
    passwordless: bool = False,
) -> User:
    """Add an account. Only an admin may, except that the very first account may be created
    by anyone who can reach the store (it must then be an admin, so nobody is locked out).
    An account without a password can only sign in through OIDC: ``passwordless`` must say
    so explicitly (the app passes it only when OIDC is configured)."""
    first = user_rows.count_users(store, enabled_only=False) == 0
    role_set = parse_roles(roles)
    if first:
        if Role.ADMIN not in role_set:
            raise ValidationError("The first account must have the admin role, or nobody could manage users.")
    else:
        require(actor, Permission.MANAGE_USERS)
    username = _normal_username(username)
    if not _USERNAME_RE.match(username):
        raise ValidationError(
            f"Username {username!r} must be 1-100 letters, digits or '_.@+-' (an email works for OIDC)."
        )
    if password is None and not passwordless:
        raise ValidationError(
            "Set a password: without one the account could only sign in through OIDC, which is not configured."
        )
    if password is not None:
        _check_new_password(password)
    user_rows.insert_user(
        store, username, (display_name or username).strip(), sorted(r.value for r in role_set),
        hash_password(password) if password else None,
        actor.username if actor else "bootstrap",
    )
    return User(username, (display_name or username).strip(), role_set)


def set_roles(store: Store, actor: User, username: str, roles: list[str]) -> None:
    require(actor, Permission.MANAGE_USERS)
    role_set = parse_roles(roles)
    if username == actor.username and Role.ADMIN not in role_set:
        raise ValidationError("You cannot remove your own admin role; ask another admin.")
    user_rows.update_user(store, username, roles=sorted(r.value for r in role_set))


def set_password(store: Store, actor: User, username: str, password: str) -> None:
    if actor.username != username:
        require(actor, Permission.MANAGE_USERS)
    _check_new_password(password)
    user_rows.update_user(store, username, password_hash=hash_password(password))
    sign_in_sessions.revoke_all(store, username)  # a new password signs out every browser


def set_disabled(store: Store, actor: User, username: str, disabled: bool) -> None:
    require(actor, Permission.MANAGE_USERS)
    if username == actor.username and disabled:
        raise ValidationError("You cannot disable your own account.")
    user_rows.update_user(store, username, disabled=disabled)
    if disabled:
        sign_in_sessions.revoke_all(store, username)


def list_users(store: Store, actor: User) -> list[dict]:
    require(actor, Permission.MANAGE_USERS)
    return user_rows.list_user_rows(store)


__all__ = [
    "LOCAL_USER",
    "GoldenError",
    "PermissionDenied",
    "User",
    "auth_mode",
    "authenticate",
    "cli_user",
    "create_user",
    "get_user",
    "require",
    "user_for_oidc",
]
