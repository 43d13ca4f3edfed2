"""The labeling rubric: versioned text; every label event records the version in force."""

from __future__ import annotations

import duckdb

from golden_store.corpus import sha256_text
from golden_store.errors import ValidationError
from golden_store.store import Store, utcnow


def add_rubric_version_tx(cur: duckdb.DuckDBPyConnection, text: str, changelog: str, actor: str) -> int:
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
    version = cur.execute("SELECT coalesce(max(version), 0) + 1 FROM rubric_versions").fetchone()[0]
    cur.execute(
        "INSERT INTO rubric_versions VALUES (?, ?, ?, ?, ?, ?)",
        [version, text, sha256_text(text), changelog.strip(), actor, utcnow()],
    )
    return int(version)


def add_rubric_version(store: Store, text: str, changelog: str, *, actor: str) -> int:
    return store.write(lambda cur: add_rubric_version_tx(cur, text, changelog, actor))


def current_version_tx(cur: duckdb.DuckDBPyConnection) -> int | None:
    """The rubric version in force, read inside the caller's transaction (labels record it)."""
    return cur.execute("SELECT max(version) FROM rubric_versions").fetchone()[0]


def current_rubric(store: Store) -> dict | None:
    rows = store.read_dicts(
        "SELECT version, text, sha256, changelog, actor, created_at FROM rubric_versions "
        "ORDER BY version DESC LIMIT 1"
    )
    return rows[0] if rows else None
