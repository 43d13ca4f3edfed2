"""Where the studio's files live: the store file and the frozen versions beside it.

No database import: the frozen-version format (``golden_store.versions``) resolves its
folder from here without loading the live store. ``golden_store.db.store`` re-exports these.
"""

from __future__ import annotations

import os
import re
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


# ``scheme://`` (s3://, gs://, file://, memory://, ...): a filesystem URL, never a folder path. A
# URL stays a ``str`` end to end: ``Path()`` would collapse its ``//`` into a relative folder.
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

VersionsDir = Path | str
"""Where versions live: a folder (``Path`` or ``str``), or a filesystem URL (``str``, see
:func:`is_versions_url`; read and written by :mod:`golden_store.versions.storage`)."""


def is_versions_url(value: object) -> bool:
    """Whether a versions location is a filesystem URL (``s3://bucket/prefix``, ``file://...``,
    ``memory://...``) rather than a folder. Only a ``str`` can be one: a ``Path`` is a folder."""
    return isinstance(value, str) and bool(_URL_RE.match(value))


def local_versions_dir(value: Path | str) -> Path | None:
    """The folder a versions location names, or None for object storage: a ``Path``, a plain
    ``str`` path, or a ``file://`` URL (a folder on this machine keeps the folder code path,
    whose rename publishes atomically; pyarrow's local writer would not)."""
    if not is_versions_url(value):
        return Path(value)
    text = str(value)
    if text.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(text).path))
    return None


def versions_dir_for(db_path: Path | str) -> VersionsDir:
    """Where frozen versions live: ``GOLDEN_VERSIONS`` if set, else ``versions/`` next to the DB.
    A URL in ``GOLDEN_VERSIONS`` (``s3://bucket/prefix``) comes back as that ``str``; a folder
    comes back as a ``Path``.

    For a PostgreSQL store (``db_path`` a ``postgresql://`` URL, also after ``Path()``
    collapsed its ``//``) that is ``versions/`` in the working directory, where the store
    keeps its local files (``Store._open_postgres``); resolving the URL as a path named a
    folder inside a ``postgresql:`` directory that nothing else looked in."""
    env = os.environ.get("GOLDEN_VERSIONS")
    if env:
        return local_versions_dir(env) or env
    if is_postgres_url(db_path):
        return Path.cwd() / "versions"
    return Path(db_path).resolve().parent / "versions"
