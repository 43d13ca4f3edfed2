"""The labeling rubric: versioned text; every label event records the version in force."""

from __future__ import annotations

from golden_store.db.cursor import Cursor
from golden_store.core.digests import sha256_text
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store, utcnow


def add_rubric_version_tx(cur: Cursor, text: str, changelog: str, actor: str) -> int:
    if not text.strip():
        raise ValidationError("The rubric text is empty.")
    if not changelog.strip():
        raise ValidationError("Say what changed in this rubric version (the changelog).")
    for what, value in (("rubric text", text), ("changelog", changelog)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(f"The {what} holds an invalid character (a lone surrogate, "
                                  f"U+{ord(value[exc.start]):04X}, at character {exc.start + 1}); delete it and "
                                  "save again.") from None
    latest = cur.execute("SELECT version, text FROM rubric_versions ORDER BY version DESC LIMIT 1").fetchone()
    if latest and _same(latest[1], text):
        raise ValidationError(f"The rubric text is unchanged (still v{latest[0]}): no new version was saved. Edit "
                              "the text to make a new version.")
    version = cur.execute("SELECT coalesce(max(version), 0) + 1 FROM rubric_versions").fetchone()[0]
    cur.execute(
        "INSERT INTO rubric_versions VALUES (?, ?, ?, ?, ?, ?)",
        [version, text, sha256_text(text), changelog.strip(), actor, utcnow()],
    )
    return int(version)


def _same(a: str, b: str) -> bool:
    """Equal texts once line endings and trailing spaces are set aside (a browser's text area
    sends CRLF or trims; that is no change)."""
    norm = lambda t: "\n".join(line.rstrip() for line in t.replace("\r\n", "\n").strip().split("\n"))  # noqa: E731
    return norm(a) == norm(b)


def add_rubric_version(store: Store, text: str, changelog: str, *, actor: str) -> int:
    return store.write(lambda cur: add_rubric_version_tx(cur, text, changelog, actor))


def current_version_tx(cur: Cursor) -> int | None:
    """The rubric version in force, read inside the caller's transaction (labels record it)."""
    return cur.execute("SELECT max(version) FROM rubric_versions").fetchone()[0]


def current_rubric(store: Store) -> dict | None:
    rows = store.read_dicts(
        "SELECT version, text, sha256, changelog, actor, created_at FROM rubric_versions "
        "ORDER BY version DESC LIMIT 1"
    )
    return rows[0] if rows else None


def unseen_versions(store: Store, username: str) -> list[dict]:
    """Rubric versions ``username`` has not been shown yet, oldest first, leaving out the ones
    they wrote themselves: every version after the last one they saw. Someone who never saw
    one gets the changes written since their account was made: neither the first rubric nor
    the one in force when they joined is a change to them (issue 29, L2: a brand-new user was
    told "The rubric changed: v1 is in force"); they read it on the Judge page. Without an
    account (single-user local mode) every version after the first is news."""
    last = store.read_row("SELECT max(version) FROM rubric_seen WHERE username = ?", [username])[0]
    if last is None:
        rows = store.read_dicts("SELECT r.version, r.changelog, r.actor, r.created_at FROM rubric_versions r "
                                "LEFT JOIN users u ON u.username = ? "
                                "WHERE r.version > (SELECT min(version) FROM rubric_versions) "
                                # no account (single-user local mode): every change after the first
                                "AND (u.created_at IS NULL OR r.created_at > u.created_at) "
                                "ORDER BY r.version", [username])
    else:
        rows = store.read_dicts("SELECT version, changelog, actor, created_at FROM rubric_versions "
                                "WHERE version > ? ORDER BY version", [last])
    return [r for r in rows if r["actor"] != username]


def mark_seen(store: Store, username: str, version: int) -> None:
    """Record that ``username`` has been shown the rubric up to ``version``."""
    store.write(lambda cur: cur.execute("INSERT INTO rubric_seen VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                        [username, version, utcnow()]), bookkeeping=True)
