"""Storage of local user accounts (the SQL side; hashing and role rules live in annotator)."""

from __future__ import annotations

import duckdb

from golden_store.errors import NotFoundError, ValidationError
from golden_store.store import Store, utcnow


def count_users(store: Store, *, enabled_only: bool = True) -> int:
    sql = "SELECT count(*) FROM users" + (" WHERE NOT disabled" if enabled_only else "")
    return int(store.read_one(sql)[0])


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
    def run(cur: duckdb.DuckDBPyConnection) -> None:
        if cur.execute("SELECT 1 FROM users WHERE username = ?", [username]).fetchone():
            raise ValidationError(f"User {username!r} already exists.")
        cur.execute(
            "INSERT INTO users VALUES (?, ?, ?, ?, ?, ?, FALSE)",
            [username, display_name, roles, password_hash, utcnow(), created_by],
        )

    store.write(run)


def update_user(store: Store, username: str, *, roles: list[str] | None = None,
                password_hash: str | None = None, disabled: bool | None = None,
                keep_admin: str | None = None) -> None:
    """Change one account. With ``keep_admin`` (the message to refuse with), the change is
    refused if afterwards no enabled account has the admin role: checked inside the same
    transaction, so two admins disabling each other at once cannot both succeed."""

    def run(cur: duckdb.DuckDBPyConnection) -> None:
        if not cur.execute("SELECT 1 FROM users WHERE username = ?", [username]).fetchone():
            raise NotFoundError(f"No user {username!r}.")
        if roles is not None:
            cur.execute("UPDATE users SET roles = ? WHERE username = ?", [roles, username])
        if password_hash is not None:
            cur.execute("UPDATE users SET password_hash = ? WHERE username = ?", [password_hash, username])
        if disabled is not None:
            cur.execute("UPDATE users SET disabled = ? WHERE username = ?", [disabled, username])
        if keep_admin and not any("admin" in r for (r,) in cur.execute(
                "SELECT roles FROM users WHERE NOT disabled").fetchall()):
            raise ValidationError(keep_admin)

    store.write(run)
