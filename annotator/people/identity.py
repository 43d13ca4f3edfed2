"""Who is acting: local accounts (scrypt), single-user local mode, OIDC identities.

Modes, decided per request by :func:`auth_mode`:

* ``local``    - no enabled user exists: one person on their own machine; they act as
                 ``local`` with every role, and the sidebar says so.
* ``oidc``     - Streamlit's ``st.login`` is configured: the identity provider says who
                 the person is; the users table says what they may do (username = email).
* ``accounts`` - local accounts with scrypt password hashes.

The CLI acts as ``cli:<os user>`` with every role: whoever can open the DuckDB file can
change it anyway, so a role check there would be theatre. A command sent to a running studio
through its API (``golden --server``) acts as the token's account instead (:func:`acting_as`),
and every role check applies.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import getpass
import hashlib
import hmac
import ipaddress
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from annotator.people.roles import Permission, PermissionDenied, Role, grantable_roles, parse_roles, permissions_of
from golden_store.live import sign_in_sessions
from golden_store.live import users
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import Store

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


_acting: contextvars.ContextVar[User | None] = contextvars.ContextVar("golden_acting_user", default=None)


@contextlib.contextmanager
def acting_as(user: object | None) -> Iterator[None]:
    """While the block runs, :func:`cli_user` is ``user`` (a CLI command run for an API token,
    in the serving process: it must act as the token's account, with its roles). None changes
    nothing. A context variable, so the server's other requests are not affected."""
    if user is None:
        yield
        return
    if not isinstance(user, User):
        raise TypeError("acting_as takes a User")
    token = _acting.set(user)
    try:
        yield
    finally:
        _acting.reset(token)


def cli_user() -> User:
    """Who a ``golden`` command acts as: the OS user with every role, or, for a command run on
    an API caller's behalf (:func:`acting_as`), that caller."""
    acting = _acting.get()
    if acting is not None:
        return acting
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
    return "accounts" if users.count_users(store) else "local"


# Headers a reverse proxy adds: behind one, the peer address is the proxy's, not the person's.
_PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip", "x-forwarded-host")


def is_loopback_client(ip: object, headers: Mapping[str, str] | None = None) -> bool:
    """True when a request comes from this machine itself. Single-user mode makes whoever
    reaches the app an admin, so it may serve only such requests, whatever address the
    server listens on (``streamlit run app.py`` listens on all of them).

    ``ip`` is Streamlit's ``st.context.ip_address``: None for 127.0.0.1 / ::1 (and when no
    browser is behind the run), else the peer address. A request relayed by a proxy (any
    forwarding header) is not local: the proxy may relay anyone."""
    if headers and any(h.lower() in _PROXY_HEADERS for h in headers):
        return False
    if ip is None or not isinstance(ip, str):
        return True
    try:
        addr = ipaddress.ip_address(ip.split("%", 1)[0])
    except ValueError:
        return False
    # a server listening on all IPv6 addresses sees 127.0.0.1 as ::ffff:127.0.0.1
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


LOOPBACK_ONLY = ("This studio has no accounts yet (single-user mode: whoever uses it acts as admin), so it "
                 "answers only on the machine it runs on. Open it there (http://localhost:PORT), or add an "
                 "account first (`golden users add NAME --role admin`) to let others sign in from elsewhere.")


def _to_user(row: dict | None) -> User | None:
    if row is None or row["disabled"]:
        return None
    return User(row["username"], row["display_name"], parse_roles(row["roles"]))


def get_user(store: Store, username: str) -> User | None:
    """The enabled user ``username`` with their current roles, re-read from the store so a
    role change or a disabled account takes effect on the next request."""
    return _to_user(users.get_user_row(store, username))


def _normal_username(username: str) -> str:
    username = username.strip()
    return username.lower() if "@" in username else username


_dummy: list[str] = []


def _dummy_hash() -> str:
    """A fixed hash to check unknown names and password-less accounts against: one scrypt,
    as for a real account, so timing does not reveal which names exist."""
    if not _dummy:
        _dummy.append(hash_password(os.urandom(16).hex()))
    return _dummy[0]


class SignInThrottled(GoldenError):
    """Too many failed sign-ins for this name or from this address: wait, then retry."""

    def __init__(self, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"Too many failed sign-ins for this account or from this address; try again in "
                         f"{max(1, round(retry_after_s))} s.")


@dataclass
class SignInThrottle:
    """Failed sign-ins per key (a username, a client address), kept in this process.

    After ``limit`` failures of a name (``client_limit`` of an address, which several
    people may share) within ``window_s``, the key is refused until
    ``base_delay_s * 2**(failures - limit)`` (at most ``max_delay_s``) after its last failure:
    an online guesser gets about ten tries per 15 minutes per name, a person who mistypes
    waits seconds. Refused attempts are not checked at all, so a right password during a
    lockout is refused too. Unknown names are throttled exactly like real ones (no hint of
    which exist). ``clock`` is injectable so tests do not sleep."""

    limit: int = 5
    client_limit: int = 20
    window_s: float = 15 * 60
    base_delay_s: float = 30.0
    max_delay_s: float = 15 * 60
    clock: Callable[[], float] = time.monotonic
    max_keys: int = 10_000
    _fails: dict[str, list[float]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _recent(self, key: str, now: float) -> list[float]:
        times = [t for t in self._fails.get(key, ()) if now - t < self.window_s]
        if times:
            self._fails[key] = times
        else:
            self._fails.pop(key, None)
        return times

    def retry_after(self, keys: Iterable[str]) -> float:
        """Seconds until any of ``keys`` (``...user:NAME``, ``...client:ADDRESS``) may try again (0: now)."""
        now = self.clock()
        wait = 0.0
        with self._lock:
            for key in keys:
                times = self._recent(key, now)
                limit = self.client_limit if "|client:" in key else self.limit
                if len(times) >= limit:
                    delay = min(self.max_delay_s, self.base_delay_s * 2 ** (len(times) - limit))
                    wait = max(wait, times[-1] + delay - now)
        return max(0.0, wait)

    def failed(self, keys: Iterable[str]) -> None:
        now = self.clock()
        with self._lock:
            if len(self._fails) >= self.max_keys:  # bounded memory under a spray of names
                for key in list(self._fails):
                    self._recent(key, now)
                while len(self._fails) >= self.max_keys:
                    self._fails.pop(next(iter(self._fails)))
            for key in keys:
                self._fails.setdefault(key, []).append(now)

    def forget(self, key: str) -> None:
        with self._lock:
            self._fails.pop(key, None)


THROTTLE = SignInThrottle()


def authenticate(store: Store, username: str, password: str, *, client: str | None = None,
                 throttle: SignInThrottle | None = None) -> User | None:
    """The enabled user whose password this is, else None. Raises SignInThrottled, without
    checking the password, while the name or the client address (``client``, when known)
    has failed too often. Every attempt costs one scrypt, known name or not."""
    throttle = throttle or THROTTLE
    name = _normal_username(username)
    where = str(store.path)  # counted per store: two studios in one process do not share counts
    keys = [f"{where}|user:{name}"] + ([f"{where}|client:{client}"] if client else [])
    wait = throttle.retry_after(keys)
    if wait > 0:
        raise SignInThrottled(wait)
    row = users.get_user_row(store, name)
    stored = row["password_hash"] if row is not None else None
    ok = verify_password(password, stored or _dummy_hash()) and stored is not None
    user = _to_user(row) if ok else None
    if user is None:
        throttle.failed(keys)
        return None
    throttle.forget(keys[0])
    return user


def user_for_oidc(store: Store, email: str | None, *, email_verified: object = None) -> User | None:
    """Map an identity-provider email to a studio user (username = email, case-insensitive).

    An address the provider itself says it has not verified (``email_verified`` false) maps
    to nobody: with providers that let people type any address, trusting it would let a
    stranger claim an expert's account (and their labels)."""
    if not email or email_verified in (False, "false", "False"):
        return None
    row = users.get_user_row(store, email.strip().lower())
    return _to_user(row)


def _check_new_password(password: str) -> None:
    """At least MIN_PASSWORD characters that are not spaces: ten spaces are no password."""
    if len(password) < MIN_PASSWORD or sum(not c.isspace() for c in password) < MIN_PASSWORD:
        raise ValidationError(f"The password needs at least {MIN_PASSWORD} characters, not counting spaces.")


MAX_DISPLAY_NAME = 100  # characters (README "Limits")


def _display_name(display_name: str | None, username: str) -> str:
    name = (display_name or username).strip()
    if len(name) > MAX_DISPLAY_NAME:
        raise ValidationError(f"Display name is {len(name):,} characters; at most {MAX_DISPLAY_NAME}.")
    return name


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
    first = users.count_users(store, enabled_only=False) == 0
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
    name = _display_name(display_name, username)
    if password is not None:
        _check_new_password(password)
    users.insert_user(
        store, username, name, sorted(r.value for r in role_set),
        hash_password(password) if password else None,
        actor.username if actor else "setup",  # the first admin, made before anyone can sign in
    )
    return User(username, name, role_set)


@dataclass(frozen=True)
class TokensFollowed:
    """What an account change did to the live API tokens the account created (issue 37, A4):
    a token never holds more than its creator does now, so disabling revokes them all and
    taking a role takes it from them too (a token left with no role is revoked). Reported so
    the admin knows which pipelines just lost access."""

    username: str
    revoked: int
    narrowed: int

    def sentence(self) -> str:
        def n(k: int) -> str:
            return f"{k} API token{'' if k == 1 else 's'}"

        if not self.revoked and not self.narrowed:
            return f"No live API token created by {self.username} needed changing."
        parts = []
        if self.revoked:
            parts.append(f"{n(self.revoked)} created by {self.username} revoked")
        if self.narrowed:
            parts.append(f"{n(self.narrowed)} created by {self.username} narrowed to the roles "
                         f"{self.username} still has")
        return "; ".join(parts) + " (create new ones for pipelines that still need them)."


def set_roles(store: Store, actor: User, username: str, roles: list[str]) -> TokensFollowed:
    """Give ``username`` exactly ``roles``. Tokens it created lose, in the same transaction,
    every role it may no longer give (:func:`annotator.people.roles.grantable_roles`: an admin keeps
    all; see :class:`TokensFollowed`)."""
    require(actor, Permission.MANAGE_USERS)
    role_set = parse_roles(roles)
    if username == actor.username and Role.ADMIN not in role_set:
        raise ValidationError("You cannot remove your own admin role; ask another admin.")
    revoked, narrowed = users.update_user(store, username, actor=actor.username,
                                          roles=sorted(r.value for r in role_set), keep_admin=_KEEP_ADMIN,
                                          token_roles=grantable_roles(role_set))
    return TokensFollowed(username, revoked, narrowed)


def set_password(store: Store, actor: User, username: str, password: str) -> None:
    if actor.username != username:
        require(actor, Permission.MANAGE_USERS)
    _check_new_password(password)
    users.update_user(store, username, actor=actor.username, password_hash=hash_password(password))
    sign_in_sessions.revoke_all(store, username)  # a new password signs out every browser


_KEEP_ADMIN = ("That would leave no enabled admin account. With no enabled account the studio falls back to "
               "single-user mode (anyone who reaches it acts as admin), and with no admin nobody can manage "
               "accounts: add or enable another admin first.")


def set_disabled(store: Store, actor: User, username: str, disabled: bool) -> TokensFollowed:
    """Disable or enable an account. The last enabled admin (so also the last enabled
    account) cannot be disabled: disabling every account must not silently switch the
    studio back to single-user mode. Disabling revokes, in the same transaction, the live
    API tokens the account created (a person who leaves takes their tokens' access with
    them); enabling it again does not bring them back."""
    require(actor, Permission.MANAGE_USERS)
    if username == actor.username and disabled:
        raise ValidationError("You cannot disable your own account.")
    revoked, narrowed = users.update_user(store, username, actor=actor.username, disabled=disabled,
                                          keep_admin=_KEEP_ADMIN if disabled else None)
    if disabled:
        sign_in_sessions.revoke_all(store, username)
    return TokensFollowed(username, revoked, narrowed)


def list_users(store: Store, actor: User) -> list[dict]:
    require(actor, Permission.MANAGE_USERS)
    return users.list_user_rows(store)


def role_history(store: Store, actor: User, username: str | None = None) -> list[dict]:
    """Every role grant and revocation (of ``username`` if given), oldest first: who gave or
    took which role, when. Only those who manage users read it."""
    require(actor, Permission.MANAGE_USERS)
    return users.role_events(store, username)


__all__ = [
    "LOCAL_USER",
    "GoldenError",
    "PermissionDenied",
    "SignInThrottle",
    "SignInThrottled",
    "TokensFollowed",
    "User",
    "auth_mode",
    "authenticate",
    "cli_user",
    "create_user",
    "get_user",
    "is_loopback_client",
    "require",
    "user_for_oidc",
]
