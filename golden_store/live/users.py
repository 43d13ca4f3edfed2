"""Storage of local user accounts (the SQL side; hashing and role rules live in annotator).

``users`` holds each account as it is now; every role granted or revoked is also appended to
``user_role_events`` (who, when) in the same transaction, so who could do what, and since
when, is an audit trail rather than a column that was overwritten."""

from __future__ import annotations

from datetime import datetime

from golden_store.db.cursor import Cursor
from golden_store.live import api_tokens
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store, utcnow


def count_users(store: Store, *, enabled_only: bool = True) -> int:
    sql = "SELECT count(*) FROM users" + (" WHERE NOT disabled" if enabled_only else "")
    return int(store.read_row(sql)[0])


def get_user_row(store: Store, username: str) -> dict | None:
    rows = store.read_dicts(
        "SELECT username, display_name, roles, password_hash, disabled FROM users WHERE username = ?",
        [username],
    )
    return rows[0] if rows else None


def list_user_rows(store: Store) -> list[dict]:
    return store.read_dicts(
        "SELECT username, display_name, roles, disabled, created_at, created_by, "
        "password_hash IS NOT NULL AS has_password FROM users ORDER BY username"
    )


def insert_user(store: Store, username: str, display_name: str, roles: list[str],
                password_hash: str | None, created_by: str) -> None:
    def run(cur: Cursor) -> None:
        if cur.execute("SELECT 1 FROM users WHERE username = ?", [username]).fetchone():
            raise ValidationError(f"User {username!r} already exists.")
        now = utcnow()
        cur.execute(
            "INSERT INTO users VALUES (?, ?, ?, ?, ?, ?, FALSE)",
            [username, display_name, roles, password_hash, now, created_by],
        )
        _role_events_tx(cur, username, [], roles, actor=created_by, now=now)

    store.write(run)


def _role_events_tx(cur: Cursor, username: str, old: list[str], new: list[str], *,
                    actor: str, now: datetime) -> None:
    """Append one grant per role in ``new`` not in ``old`` and one revoke per role dropped."""
    rows = [(username, "grant", r, actor, now) for r in sorted(set(new) - set(old))]
    rows += [(username, "revoke", r, actor, now) for r in sorted(set(old) - set(new))]
    if rows:
        cur.executemany("INSERT INTO user_role_events (username, op, role, actor, created_at) VALUES (?, ?, ?, ?, ?)",
                        rows)


def role_events(store: Store, username: str | None = None) -> list[dict]:
    """Every role grant and revocation (of ``username`` if given), oldest first."""
    return store.read_dicts(
        "SELECT event_id, username, op, role, note, actor, created_at FROM user_role_events "
        "WHERE ? IS NULL OR username = ? ORDER BY event_id", [username, username])


def update_user(store: Store, username: str, *, actor: str, roles: list[str] | None = None,
                password_hash: str | None = None, disabled: bool | None = None,
                keep_admin: str | None = None, token_roles: list[str] | None = None) -> tuple[int, int]:
    """Change one account (``actor`` is who changes it: a role change is recorded as their
    event). With ``keep_admin`` (the message to refuse with), the change is refused if
    afterwards no enabled account has the admin role: checked inside the same transaction,
    so two admins disabling each other at once cannot both succeed.

    Disabling the account revokes the live API tokens it created, and taking roles from it
    takes them from those tokens (a token left with no role is revoked), in this same
    transaction: a token never holds more than its creator does now (issue 37, A4).
    ``token_roles``: the roles the account may still give a token after a role change (the
    annotator layer's rule: an admin may give any role); by default ``roles`` themselves.
    Returns the tokens (revoked, narrowed)."""

    def run(cur: Cursor) -> tuple[int, int]:
        row = cur.execute("SELECT roles FROM users WHERE username = ?", [username]).fetchone()
        if row is None:
            raise NotFoundError(f"No user {username!r}.")
        now = utcnow()
        if roles is not None:
            cur.execute("UPDATE users SET roles = ? WHERE username = ?", [roles, username])
            _role_events_tx(cur, username, list(row[0]), roles, actor=actor, now=now)
        if password_hash is not None:
            cur.execute("UPDATE users SET password_hash = ? WHERE username = ?", [password_hash, username])
        if disabled is not None:
            cur.execute("UPDATE users SET disabled = ? WHERE username = ?", [disabled, username])
        if keep_admin and not any("admin" in r for (r,) in cur.execute(
                "SELECT roles FROM users WHERE NOT disabled").fetchall()):
            raise ValidationError(keep_admin)
        if disabled:
            return api_tokens.follow_creator_tx(cur, username, None, actor=actor, now=now)
        if roles is not None:
            kept = list(roles) if token_roles is None else list(token_roles)
            return api_tokens.follow_creator_tx(cur, username, kept, actor=actor, now=now)
        return 0, 0

    return store.write(run)
