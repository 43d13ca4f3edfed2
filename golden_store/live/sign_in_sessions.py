"""Sign-in sessions of local accounts, the SQL side: only a token's sha256 is stored, with
its owner, expiry and revocation, so a leaked store file holds no usable token."""

from __future__ import annotations

from datetime import datetime

from golden_store.db.store import Store, utcnow


def add(store: Store, token_sha256: str, username: str, expires_at: datetime) -> None:
    store.write(lambda cur: cur.execute("INSERT INTO sign_in_sessions VALUES (?, ?, ?, ?, NULL)",
                                        [token_sha256, username, utcnow(), expires_at]), bookkeeping=True)


def owner(store: Store, token_sha256: str) -> str | None:
    """The username of a live (unexpired, unrevoked) session, else None."""
    row = store.read_one("SELECT username FROM sign_in_sessions WHERE token_sha256 = ? AND revoked_at IS NULL "
                         "AND expires_at > ?", [token_sha256, utcnow()])
    return row[0] if row else None


def revoke(store: Store, token_sha256: str) -> None:
    store.write(lambda cur: cur.execute("UPDATE sign_in_sessions SET revoked_at = ? WHERE token_sha256 = ? "
                                        "AND revoked_at IS NULL", [utcnow(), token_sha256]), bookkeeping=True)


def revoke_all(store: Store, username: str) -> int:
    """End every session of ``username`` (password changed, account disabled); returns how many."""
    def tx(cur) -> int:
        n = cur.execute("SELECT count(*) FROM sign_in_sessions WHERE username = ? AND revoked_at IS NULL",
                        [username]).fetchone()[0]
        cur.execute("UPDATE sign_in_sessions SET revoked_at = ? WHERE username = ? AND revoked_at IS NULL",
                    [utcnow(), username])
        return int(n)

    return store.write(tx)
