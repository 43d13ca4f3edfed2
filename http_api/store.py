"""The store an API app serves: one handle per store per process (``annotator.process.context``), so
the app and the API in one ``golden serve`` process share the one DuckDB connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request

from annotator.process import context
from annotator.versions import versioning
from golden_store.db.store import Store


def store_of(app: Any) -> Store:
    """The app's own handle when it was given one (``create_app(store=...)``), else the
    process's handle for its location."""
    own = getattr(app.state, "store", None)
    if own is not None:
        return own  # type: ignore[no-any-return]
    return context.get_store(app.state.store_location, create=True)


def store(request: Request) -> Store:
    """Dependency: the served store."""
    return store_of(request.app)


def versions_dir(request: Request) -> Path | str:
    """Dependency: the served store's versions folder, or its object-storage URL."""
    return versioning.versions_dir(store_of(request.app))
