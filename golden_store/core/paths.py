"""Where the studio's files live: the store file and the frozen versions beside it.

No database import: the frozen-version format (``golden_store.versions``) resolves its
folder from here without loading the live store. ``golden_store.db.store`` re-exports these.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB = "golden.duckdb"


def is_postgres_url(value: object) -> bool:
    """``postgresql://…`` / ``postgres://…``, also after ``Path()`` collapsed the ``//``. A
    string test, here rather than in ``pg_store``: telling the engine apart must not import
    the PostgreSQL driver (a DuckDB command's start paid ~0.2 s for psycopg and the SQL
    translator)."""
    return str(value).startswith(("postgresql:/", "postgres:/"))


def default_db_path() -> Path:
    """``GOLDEN_DB`` if set, else ``./golden.duckdb``."""
    return Path(os.environ.get("GOLDEN_DB") or DEFAULT_DB)


def versions_dir_for(db_path: Path | str) -> Path:
    """Where frozen versions live: ``GOLDEN_VERSIONS`` if set, else ``versions/`` next to the DB.

    For a PostgreSQL store (``db_path`` a ``postgresql://`` URL, also after ``Path()``
    collapsed its ``//``) that is ``versions/`` in the working directory, where the store
    keeps its local files (``Store._open_postgres``); resolving the URL as a path named a
    folder inside a ``postgresql:`` directory that nothing else looked in."""
    env = os.environ.get("GOLDEN_VERSIONS")
    if env:
        return Path(env)
    if is_postgres_url(db_path):
        return Path.cwd() / "versions"
    return Path(db_path).resolve().parent / "versions"
