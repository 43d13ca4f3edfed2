"""HTTP API tokens: created by an admin for a pipeline, shown once, stored as a hash,
scoped by role, revocable, optionally expiring (issue 28).

A token acts as the user ``token:NAME`` with the token's roles, so everything it does goes
through the same role checks and is attributed like any other actor. A token's roles are
never more than its creator's. The secret is ``gst_`` + 32 random bytes (URL-safe base64):
long enough that only its SHA-256 needs storing (no salt or slow hash: it is not a password
a person chose), and its prefix makes a leaked one easy to find by secret scanners."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from annotator.identity import User, require
from annotator.roles import Permission, PermissionDenied, parse_roles
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import api_tokens as rows

PREFIX = "gst_"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DURATION_RE = re.compile(r"^(\d+)\s*([dhm])$")


class TokenRefused(GoldenError):
    """The request's token is missing, unknown, revoked or expired (HTTP 401), or the caller
    is throttled after refused attempts (429). ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, *, status: int = 401, outcome: str = "unknown") -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    name: str
    roles: tuple[str, ...]
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= utcnow():
            return "expired"
        return "live"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h`` or ``90m`` as a timedelta (``--expires``)."""
    m = _DURATION_RE.match(text.strip().lower())
    if not m or int(m.group(1)) <= 0:
        raise ValidationError(f"--expires {text!r}: give a positive number of days, hours or minutes, e.g. 30d, 12h, 90m.")
    n, unit = int(m.group(1)), m.group(2)
    return {"d": timedelta(days=n), "h": timedelta(hours=n), "m": timedelta(minutes=n)}[unit]


def _info(row: dict) -> TokenInfo:
    return TokenInfo(row["token_id"], row["name"], tuple(r for r in row["roles"].split(",") if r), row["created_by"],
                     row["created_at"], row["expires_at"], row["revoked_at"], row["last_used_at"])


def create_token(store: Store, user: User, name: str, roles: Iterable[str], *,
                 expires_in: timedelta | None = None) -> tuple[TokenInfo, str]:
    """A new token and its secret (the only time the secret exists outside the caller)."""
    require(user, Permission.MANAGE_API_TOKENS)
    if not _NAME_RE.match(name or ""):
        raise ValidationError(f"Token name {name!r}: use letters, digits, '.', '_' or '-' (up to 64), "
                              "starting with a letter or digit.")
    wanted = parse_roles(list(roles))
    beyond = sorted(r.value for r in wanted - user.roles)
    if beyond:
        raise PermissionDenied(f"{user.username} may not give a token the role(s) {', '.join(beyond)} they do not hold.")
    secret = PREFIX + secrets.token_urlsafe(32)
    token_id = "tok_" + secrets.token_hex(6)
    expires_at = utcnow() + expires_in if expires_in is not None else None
    rows.insert_token(store, token_id=token_id, name=name, token_hash=hash_secret(secret),
                      roles=[r.value for r in wanted], created_by=user.username, expires_at=expires_at)
    info = next(t for t in list_tokens(store, user) if t.token_id == token_id)
    return info, secret


def list_tokens(store: Store, user: User) -> list[TokenInfo]:
    require(user, Permission.MANAGE_API_TOKENS)
    return [_info(r) for r in rows.list_token_rows(store)]


def revoke_token(store: Store, user: User, token_id_or_name: str) -> TokenInfo:
    require(user, Permission.MANAGE_API_TOKENS)
    return _info(rows.revoke(store, token_id_or_name, actor=user.username))


def token_user(info: TokenInfo) -> User:
    """The user a token acts as: ``token:NAME`` with the token's roles."""
    return User(f"token:{info.name}", f"API token {info.name}", parse_roles(list(info.roles)))


def authenticate(store: Store, secret: str | None) -> tuple[TokenInfo, User]:
    """The token behind ``secret`` and the user it acts as, or :class:`TokenRefused` saying
    why (one sentence, no detail that helps a guesser beyond what the holder needs)."""
    if not secret:
        raise TokenRefused("This endpoint needs an API token: send Authorization: Bearer <token> "
                           "(an admin creates one with golden tokens create).", outcome="unknown")
    row = rows.token_by_hash(store, hash_secret(secret.strip()))
    if row is None:
        raise TokenRefused("The API token is not known; check it, or ask an admin for a new one.", outcome="unknown")
    info = _info(row)
    if info.state == "revoked":
        raise TokenRefused(f"The API token {info.name!r} was revoked; ask an admin for a new one.", outcome="revoked")
    if info.state == "expired":
        raise TokenRefused(f"The API token {info.name!r} expired; ask an admin for a new one.", outcome="expired")
    return info, token_user(info)


def authenticate_request(store: Store, secret: str | None, *, client: str, method: str,
                         path: str) -> tuple[TokenInfo, User]:
    """:func:`authenticate` for one HTTP request: a refusal is audited (with the caller's
    address) before it is raised. The HTTP layer calls this, then :func:`record_use` with the
    status it answered."""
    try:
        return authenticate(store, secret)
    except TokenRefused as exc:
        rows.record_uses(store, [(None, client, method, path, exc.status, exc.outcome, utcnow())])
        raise


def record_use(store: Store, info: TokenInfo, *, client: str, method: str, path: str, status: int) -> None:
    """Audit one answered request made with ``info`` (moves its ``last_used_at``)."""
    outcome = "denied" if status == 403 else "ok"
    rows.record_uses(store, [(info.token_id, client, method, path, status, outcome, utcnow())])
