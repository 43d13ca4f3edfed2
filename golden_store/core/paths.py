"""Where the studio's files live: the store file and the frozen versions beside it, and the
data directory (``GOLDEN_DATA_DIR``) for what a PostgreSQL store keeps on this machine.

No database import: the frozen-version format (``golden_store.versions``) resolves its
folder from here without loading the live store. ``golden_store.db.store`` re-exports these.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from golden_store.core.errors import GoldenError

DEFAULT_DB = "golden.duckdb"
DATA_DIR_ENV = "GOLDEN_DATA_DIR"


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


# ---- the data directory -----------------------------------------------------------------------


class DataDirError(GoldenError):
    """The data directory cannot be created or written; the sentence names it and the setting."""


def data_dir() -> Path:
    """Where this user's studio keeps local files a PostgreSQL store needs on this machine (its
    corpus search index): ``GOLDEN_DATA_DIR``, else ``$XDG_DATA_HOME/golden-studio``, else
    ``~/.local/share/golden-studio`` (the XDG base-directory default; a relative
    ``XDG_DATA_HOME`` is ignored, as the specification says).

    Why not the working directory, as before: a CLI run from a repository left a
    ``HOST_PORT_DB.postgresql.index/`` folder among its files, and every server and CI runner
    started elsewhere built its own copy (issue 38, item 4). A DuckDB store keeps its index
    beside its file, so it needs none of this."""
    given = os.environ.get(DATA_DIR_ENV, "").strip()
    if given:
        return Path(given).expanduser().absolute()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "golden-studio"


_writable: set[Path] = set()  # data directories this process has checked (once each: searches ask often)


def writable_data_dir() -> Path:
    """:func:`data_dir`, created if missing and checked by writing a file in it, so that a
    folder this user cannot write is said in one sentence (naming the folder and the setting
    to change) before anything is built there, not as a traceback from the index. Checked
    once per process and folder: every search opens the index through here."""
    where = data_dir()
    if where in _writable:
        return where
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=where):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise DataDirError(
            f"The data directory {where} cannot be written ({why.lower()}): set {DATA_DIR_ENV} to a folder "
            f"this user can write (it holds a PostgreSQL store's corpus search index)."
        ) from None
    _writable.add(where)
    return where


def describe_data_dir(db: str | os.PathLike[str] | None = None) -> str:
    """The start-up line of ``golden serve`` / ``golden api``: where the store ``db`` (default
    ``GOLDEN_DB``) keeps its corpus search index on this machine. For a PostgreSQL store that
    is the data directory, checked writable here (:class:`DataDirError` otherwise), so a
    server refuses to start rather than fail at its first search."""
    location = db if db is not None else default_db_path()
    if is_postgres_url(location):
        return (f"golden: data directory {writable_data_dir()} (the corpus search index; "
                f"set {DATA_DIR_ENV} to move it)")
    store = Path(location).absolute()
    return f"golden: corpus search index beside the store, in {store.with_name(store.name + '.index')}"
