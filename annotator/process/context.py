"""The process's store handles: one connection per store file per process.

The app and the CLI both get their store here, so a Streamlit server with many sessions
still holds exactly one DuckDB connection per file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from golden_store.db.store import Store, default_db_path

_stores: dict[Path, Store] = {}
_lock = threading.Lock()


def get_store(path: str | Path | None = None, *, create: bool = True) -> Store:
    """The open store for ``path`` (default: ``GOLDEN_DB`` or ``./golden.duckdb``).
    ``create=False`` refuses a path with no store (a mistyped --db should not silently
    start an empty one)."""
    p = Path(path) if path is not None else default_db_path()
    key = p.resolve()
    with _lock:
        store = _stores.get(key)
        if store is None or store._closed:
            store = Store.open(p, create=create)
            _stores[key] = store
        return store


def close_all() -> None:
    """Close every store this process opened (tests, shutdown)."""
    with _lock:
        for s in _stores.values():
            s.close()
        _stores.clear()
