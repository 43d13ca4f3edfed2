"""Storage of HTTP API tokens and the audit of their use (schema 23; the rules live in
``annotator/api_tokens.py``). Only the SHA-256 of a token's secret is ever stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow

_COLUMNS = ("token_id, name, roles, created_by, created_at, expires_at, revoked_at, revoked_by, last_used_at")


def insert_token(store: Store, *, token_id: str, name: str, token_hash: str, roles: list[str], created_by: str,
                 expires_at: datetime | None) -> None:
    """Add a token; a name already used by a live (unrevoked) token is refused."""

    def run(cur: Cursor) -> None:
        if cur.execute("SELECT 1 FROM api_tokens WHERE name = ? AND revoked_at IS NULL", [name]).fetchone():
            raise ValidationError(f"A token named {name!r} already exists; revoke it first or pick another name.")
        cur.execute(
            "INSERT INTO api_tokens (token_id, name, token_hash, roles, created_by, created_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [token_id, name, token_hash, ",".join(sorted(roles)), created_by, utcnow(), expires_at])

    store.write(run)


def token_by_hash(store: Store, token_hash: str) -> dict | None:
    rows = store.read_dicts(f"SELECT {_COLUMNS} FROM api_tokens WHERE token_hash = ?", [token_hash])
    return rows[0] if rows else None


def list_token_rows(store: Store) -> list[dict]:
    return store.read_dicts(f"SELECT {_COLUMNS} FROM api_tokens ORDER BY created_at, token_id")


def revoke(store: Store, token_id_or_name: str, *, actor: str) -> dict:
    """Revoke the live token with this id or name (a revoked token stays listed)."""

    def run(cur: Cursor) -> dict:
        row = cur.execute(
            "SELECT token_id FROM api_tokens WHERE (token_id = ? OR name = ?) AND revoked_at IS NULL "
            "ORDER BY created_at DESC LIMIT 1", [token_id_or_name, token_id_or_name]).fetchone()
        if row is None:
            raise NotFoundError(f"No live API token {token_id_or_name!r}; `golden tokens list` shows them.")
        cur.execute("UPDATE api_tokens SET revoked_at = ?, revoked_by = ? WHERE token_id = ?",
                    [utcnow(), actor, row[0]])
        return {"token_id": row[0]}

    out = store.write(run)
    rows = store.read_dicts(f"SELECT {_COLUMNS} FROM api_tokens WHERE token_id = ?", [out["token_id"]])
    return rows[0]


def follow_creator_tx(cur: Cursor, creator: str, roles_left: list[str] | None, *, actor: str,
                      now: datetime) -> tuple[int, int]:
    """Inside the transaction that changes account ``creator``: make the live tokens it created
    hold no role it may no longer give (issue 37, A4). ``roles_left`` None (the account is
    disabled) revokes every one; otherwise each keeps only the roles in ``roles_left`` (the
    roles the account may still give a token: the annotator layer's rule), and one left with
    none is revoked. Called by the account change itself, so no request can pass between the
    change and the tokens following it. Returns (revoked, narrowed)."""
    live = cur.execute("SELECT token_id, roles FROM api_tokens WHERE created_by = ? AND revoked_at IS NULL "
                       "ORDER BY token_id", [creator]).fetchall()
    keep = set(roles_left or ())
    revoked = narrowed = 0
    for token_id, roles in live:
        held = [r for r in str(roles).split(",") if r]
        kept = [r for r in held if r in keep]
        if not kept:
            cur.execute("UPDATE api_tokens SET revoked_at = ?, revoked_by = ? WHERE token_id = ?",
                        [now, actor, token_id])
            revoked += 1
        elif len(kept) < len(held):
            cur.execute("UPDATE api_tokens SET roles = ? WHERE token_id = ?", [",".join(sorted(kept)), token_id])
            narrowed += 1
    return revoked, narrowed


# the outcomes of a live token's answered request, and of a refusal (the table's CHECK lists
# these six): named, not negated, so PostgreSQL finds each kind through the index on
# (outcome, created_at) (schema 26)
ANSWERED = ("ok", "denied")
REFUSALS = ("unknown", "revoked", "expired", "throttled")
_IS_ANSWERED = "outcome IN ('ok', 'denied')"
_IS_REFUSAL = "outcome IN ('unknown', 'revoked', 'expired', 'throttled')"


@dataclass(frozen=True)
class Prune:
    """What an audit write removes in its own transaction (the rule and its reasons are
    ``annotator.api_tokens.AuditRetention``'s): refusals written before ``refused_before``,
    answered requests written before ``answered_before`` (None: not pruned by age in this
    write), and, with ``refused_keep``, every refusal but the newest ``refused_keep``."""

    refused_before: datetime | None = None
    answered_before: datetime | None = None
    refused_keep: int | None = None


@dataclass(frozen=True)
class Pruned:
    """The rows a write removed: by age (refused, answered) and by the cap on refusals, with
    the time span the capped ones covered (for the log: the flood that pushed them out)."""

    refused_aged: int = 0
    answered_aged: int = 0
    capped: int = 0
    capped_from: datetime | None = None
    capped_to: datetime | None = None


def _prune_tx(cur: Cursor, prune: Prune) -> Pruned:
    """The deletes of :class:`Prune`, each through the index on (outcome, created_at)."""
    refused_aged = answered_aged = capped = 0
    span: list[datetime] = []
    if prune.refused_before is not None:
        refused_aged = len(cur.execute(f"DELETE FROM api_token_uses WHERE {_IS_REFUSAL} AND created_at < ? "
                                       "RETURNING event_id", [prune.refused_before]).fetchall())
    if prune.answered_before is not None:
        answered_aged = len(cur.execute(f"DELETE FROM api_token_uses WHERE {_IS_ANSWERED} AND created_at < ? "
                                        "RETURNING event_id", [prune.answered_before]).fetchall())
    if prune.refused_keep is not None:
        (n,) = cur.execute(f"SELECT count(*) FROM api_token_uses WHERE {_IS_REFUSAL}").fetchone()
        over = int(n) - max(0, prune.refused_keep)
        if over > 0:  # the newest of the oldest `over` refusals: it and every older one go
            at, event_id = cur.execute(f"SELECT created_at, event_id FROM api_token_uses WHERE {_IS_REFUSAL} "
                                       "ORDER BY created_at, event_id LIMIT 1 OFFSET ?", [over - 1]).fetchone()
            gone = cur.execute(f"DELETE FROM api_token_uses WHERE {_IS_REFUSAL} AND (created_at < ? OR "
                               "(created_at = ? AND event_id <= ?)) RETURNING created_at",
                               [at, at, event_id]).fetchall()
            capped, span = len(gone), [g[0] for g in gone]
    return Pruned(refused_aged, answered_aged, capped, min(span) if span else None, max(span) if span else None)


def record_uses(store: Store, uses: list[tuple], *, prune: Prune | None = None) -> Pruned:
    """Append audit rows ``(token_id, client, method, path, status, outcome, created_at)`` and
    move each used token's ``last_used_at`` forward, in one transaction; with ``prune``, the
    rows past their retention or over the cap go in that same transaction (so keeping the
    table bounded costs no transaction of its own). Returns what was pruned."""
    if not uses and prune is None:
        return Pruned()

    def run(cur: Cursor) -> Pruned:
        if uses:
            cur.executemany(
                "INSERT INTO api_token_uses (token_id, client, method, path, status, outcome, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", uses)
        last: dict[str, datetime] = {}
        for u in uses:
            if u[0] is not None and u[5] == "ok":
                last[u[0]] = max(last.get(u[0], u[6]), u[6])
        for token_id, at in last.items():
            cur.execute("UPDATE api_tokens SET last_used_at = ? WHERE token_id = ? "
                        "AND (last_used_at IS NULL OR last_used_at < ?)", [at, token_id, at])
        return _prune_tx(cur, prune) if prune is not None else Pruned()

    return store.write(run, bookkeeping=True)


def recent_uses(store: Store, *, token: str | None = None, limit: int = 200) -> list[dict]:
    """The newest audit rows, newest first, with the token's name (None for a refused secret
    that matched no token); ``token``: only the uses of the token(s) with this id or name."""
    where, params = "", []
    if token is not None:
        where, params = "WHERE u.token_id = ? OR t.name = ? ", [token, token]
    return store.read_dicts(
        "SELECT u.event_id, u.created_at, u.token_id, t.name, u.client, u.method, u.path, u.status, u.outcome "
        "FROM api_token_uses u LEFT JOIN api_tokens t ON t.token_id = u.token_id "
        f"{where}ORDER BY u.created_at DESC, u.event_id DESC LIMIT ?", [*params, limit])
