"""HTTP API tokens: created by an admin for a pipeline, shown once, stored as a hash,
scoped by role, revocable, optionally expiring (issue 28).

A token acts as the user ``token:NAME#ID`` (its name and its id, :func:`actor_of`) with the
token's roles, so everything it does goes through the same role checks and is attributed like
any other actor. The id is in it because a revoked token's name may be given to a new one
(probe A8): ``frozen_by``, an event's actor or a label then still says which of the two acted.
A token never holds a permission its creator lacks (:func:`grantable_roles`: an admin may
give any role, admin included). The secret is ``gst_`` + 32 random bytes (URL-safe base64):
long enough that only its SHA-256 needs storing (no salt or slow hash: it is not a password
a person chose), and its prefix makes a leaked one easy to find by secret scanners.

Per request the HTTP layer calls :func:`authenticate_request` (the sign-in throttle, then the
token; a refusal is audited at once) and, once it has answered, :func:`record_use` (the audit
of the answered request, buffered: see :class:`UseAudit`)."""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from annotator.people.identity import User, require
from annotator.people.roles import Permission, PermissionDenied, grantable_roles, parse_roles
from golden_store.core.errors import GoldenError, NotFoundError, ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import api_tokens as rows
from golden_store.live import users

PREFIX = "gst_"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DURATION_RE = re.compile(r"^(\d+)\s*([dhm])$")


class TokenRefused(GoldenError):
    """The request's token is missing, unknown, revoked or expired (HTTP 401), or the caller
    is throttled after refused attempts (429). ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, *, status: int = 401, outcome: str = "unknown",
                 retry_after_s: float | None = None, token_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome
        # with 429: whole seconds until this client may try again (the Retry-After header)
        self.retry_after_s = retry_after_s
        # the revoked or expired token that was sent (so the audit says which); None otherwise
        self.token_id = token_id


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
    roles = list(roles)
    if not roles:
        # said by the Users page and by the CLI (where --role is required, so never reached): no flag in it
        raise ValidationError(f"Token {name!r}: give it at least one role (engineer, for a CI job).")
    wanted = parse_roles(roles)
    allowed = set(grantable_roles(user.roles))
    beyond = sorted(r.value for r in wanted if r.value not in allowed)
    if beyond:
        raise PermissionDenied(f"{user.username} may not give a token the role(s) {', '.join(beyond)}: a token "
                               "never holds a permission its creator lacks.")
    secret = PREFIX + secrets.token_urlsafe(32)
    token_id = "tok_" + secrets.token_hex(6)
    expires_at = utcnow() + expires_in if expires_in is not None else None
    rows.insert_token(store, token_id=token_id, name=name, token_hash=hash_secret(secret),
                      roles=[r.value for r in wanted], created_by=user.username, expires_at=expires_at)
    info = next(t for t in list_tokens(store, user) if t.token_id == token_id)
    return info, secret


def list_tokens(store: Store, user: User) -> list[TokenInfo]:
    """Every token, revoked and expired ones too (never a hash), ``last_used_at`` current."""
    require(user, Permission.MANAGE_API_TOKENS)
    AUDIT.flush(store)
    return [_info(r) for r in rows.list_token_rows(store)]


def revoke_token(store: Store, user: User, token_id_or_name: str) -> TokenInfo:
    require(user, Permission.MANAGE_API_TOKENS)
    return _info(rows.revoke(store, token_id_or_name, actor=user.username))


ACTOR_PREFIX = "token:"


def actor_of(info: TokenInfo) -> str:
    """The actor a token's requests are attributed to: ``token:NAME#ID`` (``token:ci#tok_1a2b3c4d5e6f``).
    No account name can be one (``identity`` refuses ':' and '#' in a username)."""
    return f"{ACTOR_PREFIX}{info.name}#{info.token_id}"


def parse_actor(actor: str | None) -> tuple[str, str | None] | None:
    """``(name, token_id)`` of a token's actor string; ``token_id`` is None for ``token:NAME``,
    what a token was attributed as before the id was added (studio 0.6 and earlier). None for
    an actor that is not a token (a person, ``local``, ``cli:...``, an import source)."""
    if not actor or not actor.startswith(ACTOR_PREFIX):
        return None
    name, sep, token_id = actor.removeprefix(ACTOR_PREFIX).partition("#")
    return name, (token_id if sep and token_id else None)


def token_user(info: TokenInfo) -> User:
    """The user a token acts as: ``token:NAME#ID`` (:func:`actor_of`) with the token's roles."""
    return User(actor_of(info), f"API token {info.name} ({info.token_id})", parse_roles(list(info.roles)))


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
        raise TokenRefused(f"The API token {info.name!r} was revoked; ask an admin for a new one.", outcome="revoked",
                           token_id=info.token_id)
    if info.state == "expired":
        raise TokenRefused(f"The API token {info.name!r} expired; ask an admin for a new one.", outcome="expired",
                           token_id=info.token_id)
    info = _as_creator_now(store, info)
    return info, token_user(info)


def _as_creator_now(store: Store, info: TokenInfo) -> TokenInfo:
    """``info`` with only the roles its creator's account may still give (issue 37, A4;
    :func:`grantable_roles`: an admin creator keeps every role of its tokens). Disabling an
    account or taking its roles revokes or narrows its tokens in the same transaction
    (``golden_store.live.users.update_user``); this check, on every request, also covers
    tokens made before that rule, and an account changed outside the studio's own calls. A
    creator with no account row (``local``, ``cli:...``) is left as it is: it has every role."""
    creator = users.get_user_row(store, info.created_by)
    if creator is None:
        return info
    if creator["disabled"]:
        raise TokenRefused(f"The API token {info.name!r} was revoked: the account that made it is disabled; ask an "
                           "admin for a new one.", outcome="revoked", token_id=info.token_id)
    allowed = set(grantable_roles(creator["roles"]))
    kept = tuple(r for r in info.roles if r in allowed)
    if not kept:
        raise TokenRefused(f"The API token {info.name!r} was revoked: the account that made it no longer holds any "
                           "of its roles; ask an admin for a new one.", outcome="revoked", token_id=info.token_id)
    return info if kept == info.roles else replace(info, roles=kept)


# ---- the sign-in throttle -------------------------------------------------------------------

REFUSALS_BEFORE_THROTTLE = 10  # refused tokens from one client address ...
THROTTLE_WINDOW_S = 15 * 60    # ... within this window, then refused for this long after the last


@dataclass
class TokenThrottle:
    """Refused tokens per client address, kept in this process; the design of the password
    sign-in throttle (:class:`annotator.people.identity.SignInThrottle`: per-key failure times, an
    injectable clock, bounded memory), with a simpler rule, as a token is 256 random bits and
    the throttle is about noise and about not confirming a hit to a guesser, not about making
    each guess slower. That class does not fit as it is: its failures age out of the window
    one by one, so a lockout would end when the *first* of the last N refusals is a window
    old, and the retry time it tells would be wrong.

    The rule: once ``limit`` unknown secrets from one address fall within ``window_s`` of each
    other, that address is answered 429 for any secret that is not a live token until
    ``window_s`` after the last of them (:func:`authenticate_request`: a live token still
    passes). Attempts answered 429 do not extend the lockout.

    Kept in memory, per process, as the password throttle is: it costs no query on a path
    every API request takes, and the audit table (which has every refusal, so a shared count
    could be made from it) has no index by client. What that gives up: a studio served by
    several API processes (PostgreSQL) lets a client ``limit`` refusals per process per
    window, and a restart forgets the counts; against a 256-bit secret neither matters."""

    limit: int = REFUSALS_BEFORE_THROTTLE
    window_s: float = THROTTLE_WINDOW_S
    clock: Callable[[], float] = time.monotonic
    max_keys: int = 10_000
    _fails: dict[str, list[float]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        now = self.clock()
        with self._lock:
            times = self._fails.get(key)
            if not times:
                return 0.0
            last = times[-1]
            if now - last >= self.window_s:
                del self._fails[key]
                return 0.0
            close = [t for t in times if last - t < self.window_s][-self.limit:]
            self._fails[key] = close
            return last + self.window_s - now if len(close) >= self.limit else 0.0

    def failed(self, key: str) -> None:
        now = self.clock()
        with self._lock:
            if key not in self._fails and len(self._fails) >= self.max_keys:  # bounded under a spray of addresses
                for old in [k for k, v in self._fails.items() if now - v[-1] >= self.window_s]:
                    del self._fails[old]
                while len(self._fails) >= self.max_keys:
                    self._fails.pop(next(iter(self._fails)))
            self._fails.setdefault(key, []).append(now)


def token_throttle(*, limit: int = REFUSALS_BEFORE_THROTTLE, window_s: float = THROTTLE_WINDOW_S,
                   clock: Callable[[], float] = time.monotonic) -> TokenThrottle:
    """A throttle of its own (tests inject ``clock`` and a small ``limit``)."""
    return TokenThrottle(limit=limit, window_s=window_s, clock=clock)


THROTTLE = token_throttle()


def _client_key(store: Store, client: str) -> str:
    # counted per store (two studios in one process do not share counts), as identity does
    return f"{store.path}|token|client:{client or '?'}"


# ---- the audit of use ------------------------------------------------------------------------

_log = logging.getLogger(__name__)
Use = tuple  # (token_id, client, method, path, status, outcome, created_at): one api_token_uses row

REFUSED_DAYS_ENV = "GOLDEN_TOKEN_AUDIT_REFUSED_DAYS"
REFUSED_MAX_ROWS_ENV = "GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS"
ANSWERED_DAYS_ENV = "GOLDEN_TOKEN_AUDIT_ANSWERED_DAYS"
DEFAULT_REFUSED_DAYS = 30
DEFAULT_REFUSED_MAX_ROWS = 100_000
DEFAULT_ANSWERED_DAYS = 400


@dataclass(frozen=True)
class AuditRetention:
    """How long the audit (``api_token_uses``) keeps its rows, and how many refusals at most
    (probe A9: anonymous requests grew it without limit, 1,300 rows in 1.6 s).

    Two kinds of row, kept differently, because they answer different questions:

    - **Answered requests of a live token** (outcome ``ok``, or ``denied``: a 403): what each
      pipeline did, and with which credential. Kept ``answered_days`` (default 400: a yearly
      review reads the whole of the last year, with a month's margin; 0 keeps them for good)
      and never capped by number. This is what an incident review reads ("what did the
      leaked token do since March?"), so nothing a stranger does may push it out: a cap
      shared with refusals would let anyone erase it with anonymous requests, and a cap of
      its own would let a leaked token erase its earlier requests by making many new ones.
      Its growth is bounded by what an admin granted: every row is a request of a token an
      admin made and can revoke.
    - **Refusals** (no token, an unknown secret, a revoked or expired token, a throttled
      address: outcomes ``unknown``, ``revoked``, ``expired``, ``throttled``): anyone who
      reaches the port makes these, as fast as the network allows. Kept ``refused_days``
      (default 30: long enough to look into last month's guessing or a stale pipeline, and
      client addresses are not kept longer than that serves; 0: no limit by age) and at most
      ``refused_max_rows`` (default 100,000, some 20 MB), the newest kept. A flood therefore
      pushes out older refusals, never an answered request; whenever the cap removes rows a
      warning is logged saying how many and the time they span, so the server's log keeps
      that it happened, and the newest refusals (the flood itself) stay in the table. A
      revoked or expired token's refusals are refusals too, though they name the token:
      whoever holds an old secret can send it as often as a stranger sends none.

    Applied in the transaction that writes the audit (:class:`UseAudit`: a batch, or a refused
    secret written at once), never in one of its own, and only now and then, so it costs a
    request nothing and a write almost always nothing: the deletes by age run in the first
    write of each minute (``UseAudit.prune_every_s``; a row past its days goes within a minute
    of the next write, not on a timer of its own), and find only what aged out, through the
    index on (outcome, created_at) (schema 26). The cap counts the refusals, so it is checked
    once per ``slack`` refusals written (1% of the cap; a process's first write checks too)
    and then cuts to ``refused_max_rows - slack + 1``: one process never leaves more than the
    cap. Each serving process counts its own writes, so with P of them (PostgreSQL) the table
    may hold up to (P - 1) x slack more for a while. ``scripts/bench_token_audit.py`` times
    each step.

    Set by environment, read at each write and checked when the API starts
    (:func:`audit_retention`): ``GOLDEN_TOKEN_AUDIT_REFUSED_DAYS``,
    ``GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS``, ``GOLDEN_TOKEN_AUDIT_ANSWERED_DAYS``. ``now`` (the
    wall clock the ages are counted from) is injected by tests."""

    refused_days: int = DEFAULT_REFUSED_DAYS
    refused_max_rows: int = DEFAULT_REFUSED_MAX_ROWS
    answered_days: int = DEFAULT_ANSWERED_DAYS
    now: Callable[[], datetime] = utcnow

    @property
    def slack(self) -> int:
        """Refusals written between two checks of the cap."""
        return max(1, self.refused_max_rows // 100)

    def prune(self, *, age: bool, cap: bool) -> rows.Prune | None:
        """What one audit write removes: with ``age``, the rows past their days; with ``cap``,
        the refusals over the cap (each: that check is due). None: nothing to do."""
        if not age and not cap:
            return None
        now = self.now()
        return rows.Prune(
            refused_before=now - timedelta(days=self.refused_days) if age and self.refused_days else None,
            answered_before=now - timedelta(days=self.answered_days) if age and self.answered_days else None,
            refused_keep=self.refused_max_rows - self.slack + 1 if cap else None)


def _env_count(env: str, default: int, *, least: int, unit: str) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        n = int(raw)
    except ValueError:
        n = least - 1
    if n < least:
        raise GoldenError(f"{env}={raw!r}: give a whole number of {unit}, {least} or more (default {default}).")
    return n


def audit_retention(*, now: Callable[[], datetime] = utcnow) -> AuditRetention:
    """The retention the environment sets (:class:`AuditRetention`; a default where a variable
    is unset). A value that is not a whole number in range is an error naming the variable:
    the API checks it when it starts, so a typo is said then, not discovered after a month."""
    return AuditRetention(
        refused_days=_env_count(REFUSED_DAYS_ENV, DEFAULT_REFUSED_DAYS, least=0, unit="days (0: no limit by age)"),
        refused_max_rows=_env_count(REFUSED_MAX_ROWS_ENV, DEFAULT_REFUSED_MAX_ROWS, least=1, unit="rows"),
        answered_days=_env_count(ANSWERED_DAYS_ENV, DEFAULT_ANSWERED_DAYS, least=0,
                                 unit="days (0: kept for good)"),
        now=now)


class UseAudit:
    """Audit rows waiting to be written, flushed in one transaction per store when
    ``max_rows`` are waiting or the oldest has waited ``max_delay_s`` (by a background thread;
    with ``background=False``, by the :meth:`add` that finds them due), on :meth:`flush` and at
    process exit.

    Why buffered: one transaction per answered request costs ~2 ms on DuckDB and ~0.5 ms on a
    durable PostgreSQL (``scripts/bench_token_audit.py``, 1,000 uses), several times the
    token check itself (~0.6 / 0.2 ms), and on DuckDB every one of them takes the store's single
    write lock, which labelers' writes wait on: 200 clients reading a manifest at once would
    queue 200 commits. Batched, the same 1,000 rows cost ~0.18 s / ~0.013 s in one transaction.
    The trade-off: ``last_used_at`` and the uses list lag by up to ``max_delay_s``; a process
    killed hard (SIGKILL, power loss) loses at most that much of the audit of *answered*
    requests. A refused token is not buffered (:func:`authenticate_request` writes it at
    once): that is what an admin looks for after an incident. (A request with no token, and
    one answered 429, are: see there why.) Call :func:`flush_audit` on shutdown before the
    store is closed; the exit hook finds a closed store too late.

    Each write also removes what :class:`AuditRetention` no longer keeps (``retention``; None:
    the environment's, read at each write), in the same transaction."""

    def __init__(self, *, max_rows: int = 500, max_delay_s: float = 1.0, background: bool = True,
                 clock: Callable[[], float] = time.monotonic, retention: AuditRetention | None = None,
                 prune_every_s: float = 60.0) -> None:
        self.max_rows = max_rows
        self.max_delay_s = max_delay_s
        self.background = background
        self.clock = clock
        self.retention = retention
        self.prune_every_s = prune_every_s
        # per store: refusals written since its cap was last checked, and when (``clock``) its
        # rows were last pruned by age; a process's first write to a store does both
        self._since_cap: dict[int, int] = {}
        self._aged_at: dict[int, float] = {}
        self._bad_env = False
        self._pending: dict[int, tuple[Store, list[Use]]] = {}
        self._oldest: float | None = None
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one flush at a time keeps a store's rows in order
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def add(self, store: Store, use: Use) -> None:
        with self._lock:
            waiting = self._pending.setdefault(id(store), (store, []))[1]
            waiting.append(use)
            if self._oldest is None:
                self._oldest = self.clock()
            due = (sum(len(w) for _, w in self._pending.values()) >= self.max_rows
                   or self.clock() - self._oldest >= self.max_delay_s)
            if self.background and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="api-token-audit", daemon=True)
                self._thread.start()
        if due and self.background:
            self._wake.set()  # the writing is the thread's: a request does not wait for a batch
        elif due:
            self.flush()

    def waiting(self, store: Store | None = None) -> int:
        """Rows not yet written (for ``store``, or all)."""
        with self._lock:
            if store is not None:
                return len(self._pending.get(id(store), (store, []))[1])
            return sum(len(w) for _, w in self._pending.values())

    def flush(self, store: Store | None = None) -> int:
        """Write what is waiting (for ``store`` only, or for every store); returns the rows
        written. A store that cannot take them (closed) loses them, with a warning logged."""
        with self._flushing:
            with self._lock:
                keys = [id(store)] if store is not None else list(self._pending)
                batches = [self._pending.pop(k) for k in keys if k in self._pending]
                if not self._pending:
                    self._oldest = None
            written = 0
            for target, uses in batches:
                try:
                    self._write(target, uses)
                    written += len(uses)
                except Exception as exc:  # never let the audit break a request or the exit
                    _log.warning("API token audit: %d use(s) not written to %s: %s",
                                 len(uses), target.location(), type(exc).__name__)
            return written

    def write_now(self, store: Store, use: Use) -> None:
        """Write one row at once, not through the buffer (a refused secret: what an admin looks
        for after an incident), pruning as a batch does. Raises if the store cannot take it."""
        self._write(store, [use])

    def _retention(self) -> AuditRetention:
        if self.retention is not None:
            return self.retention
        try:
            return audit_retention()
        except GoldenError as exc:  # checked when the API starts; changed since: said once, defaults used
            if not self._bad_env:
                self._bad_env = True
                _log.warning("API token audit: %s The defaults are used.", exc)
            return AuditRetention()

    def _write(self, store: Store, uses: list[Use]) -> None:
        """Write ``uses`` and prune (:class:`AuditRetention`) in one transaction."""
        retention = self._retention()
        refusals = sum(1 for u in uses if u[5] not in rows.ANSWERED)
        key, now = id(store), self.clock()
        with self._lock:
            since = self._since_cap.get(key, retention.slack) + refusals
            cap = since >= retention.slack
            self._since_cap[key] = 0 if cap else since
            age = key not in self._aged_at or now - self._aged_at[key] >= self.prune_every_s
            if age:
                self._aged_at[key] = now
        pruned = rows.record_uses(store, uses, prune=retention.prune(age=age, cap=cap))
        if pruned.capped:
            _log.warning("API token audit: %d refused request(s) written from %s to %s UTC removed from %s to keep "
                         "at most %d refusals (%s): many refused requests pushed them out.", pruned.capped,
                         f"{pruned.capped_from:%Y-%m-%d %H:%M:%S}", f"{pruned.capped_to:%Y-%m-%d %H:%M:%S}",
                         store.location(), retention.refused_max_rows, REFUSED_MAX_ROWS_ENV)
        if pruned.refused_aged or pruned.answered_aged:
            _log.info("API token audit: %d refusal(s) older than %d days and %d answered request(s) older than %s "
                      "days removed from %s.", pruned.refused_aged, retention.refused_days, pruned.answered_aged,
                      retention.answered_days, store.location())

    def _run(self) -> None:
        while True:
            with self._lock:
                full = sum(len(w) for _, w in self._pending.values()) >= self.max_rows
                left = self.max_delay_s if self._oldest is None else self._oldest + self.max_delay_s - self.clock()
            if full or left <= 0:
                self.flush()
                continue
            self._wake.wait(left)
            self._wake.clear()  # the state is read again under the lock before any wait: no wake-up is lost


AUDIT = UseAudit()
atexit.register(AUDIT.flush)


def flush_audit(store: Store | None = None) -> int:
    """Write the buffered audit of answered requests now (for ``store``, or all): at shutdown
    (before the store closes) and in tests. Returns the rows written."""
    return AUDIT.flush(store)


# ---- per request: the two calls the HTTP layer makes ----------------------------------------


def authenticate_request(store: Store, secret: str | None, *, client: str, method: str, path: str,
                         throttle: TokenThrottle | None = None,
                         audit: UseAudit | None = None) -> tuple[TokenInfo, User]:
    """:func:`authenticate` for one HTTP request, behind the sign-in throttle. A refusal is
    audited (with the caller's address) before it is raised. The HTTP layer calls this, then
    :func:`record_use` with the status it answered.

    Only a secret that matches no token counts towards the throttle (a guess); a revoked or
    expired token was real (a stale pipeline, not a guesser) and a missing one is no guess.
    While an address is throttled, a secret that is not a live token is answered 429
    (``outcome`` 'throttled', ``retry_after_s`` set); a live token still passes. Refusing it
    too would let anyone behind the same address (a CI runner pool, an office NAT) lock a
    team's pipelines out with a few bad requests, and it protects nothing: a guesser cannot
    hit a 256-bit secret, which is what the throttle's 429 to every other secret slows and
    makes noisy. A request with no token at all is answered 401 even then: it guesses nothing,
    and "no token" tells a misconfigured pipeline what is wrong where "too many refused
    tokens" would send it looking for a lockout. Refusals are written at once, except a
    missing token and a 429 (through the buffer: neither should let an anonymous flood make
    every request a write transaction)."""
    throttle = throttle or THROTTLE
    audit = audit or AUDIT
    key = _client_key(store, client)
    wait = throttle.retry_after(key)
    try:
        found = authenticate(store, secret)
    except TokenRefused as exc:
        if wait > 0 and secret:
            seconds = max(1, int(wait + 0.999))
            audit.add(store, (exc.token_id, client, method, path, 429, "throttled", utcnow()))
            raise TokenRefused(f"Too many refused API tokens from this address; try again in {seconds} s.",
                               status=429, outcome="throttled", retry_after_s=seconds) from None
        use = (exc.token_id, client, method, path, exc.status, exc.outcome, utcnow())
        if not secret:
            audit.add(store, use)
        else:
            if exc.outcome == "unknown":
                throttle.failed(key)
            audit.write_now(store, use)
        raise
    return found


def record_use(store: Store, info: TokenInfo, *, client: str, method: str, path: str, status: int,
               audit: UseAudit | None = None) -> None:
    """Audit one answered request made with ``info`` (moves its ``last_used_at``), through the
    buffer (:class:`UseAudit`): written within about a second, or by :func:`flush_audit`."""
    outcome = "denied" if status == 403 else "ok"
    (audit or AUDIT).add(store, (info.token_id, client, method, path, status, outcome, utcnow()))


def token_uses(store: Store, user: User, token: str | None = None, *, limit: int = 50) -> list[dict]:
    """The newest audit rows (of the token with this id or name, or of every token and refusal),
    after writing what the buffer holds for this store so the list is current."""
    require(user, Permission.MANAGE_API_TOKENS)
    if limit <= 0:
        raise ValidationError(f"--limit {limit}: give a positive number of rows.")
    AUDIT.flush(store)
    if token is not None and not any(token in (t["token_id"], t["name"]) for t in rows.list_token_rows(store)):
        raise NotFoundError(f"No API token {token!r}; `golden tokens list` shows them.")
    return rows.recent_uses(store, token=token, limit=limit)
