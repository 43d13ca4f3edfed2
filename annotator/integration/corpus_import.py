"""Corpus import as a person does it: from paths (CLI) or uploaded files (app), role-checked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.corpus import sources
from golden_store.live import documents
from golden_store.live.documents import ImportReport
from golden_store.corpus.sources import Progress
from golden_store.db.store import Store


def import_paths(store: Store, user: User, paths: Sequence[str | Path], *, replace: bool = False,
                 progress: Progress | None = None) -> ImportReport:
    require(user, Permission.IMPORT_CORPUS)
    return documents.import_paths(store, paths, actor=user.username, replace=replace, progress=progress)


def import_uploads(store: Store, user: User, files: Sequence[tuple[str, bytes]], *, replace: bool = False,
                   progress: Progress | None = None) -> ImportReport:
    """``files``: (file name, bytes) pairs, as a browser upload gives them."""
    require(user, Permission.IMPORT_CORPUS)
    docs = sources.load_sources(files, progress)
    return documents.import_documents(store, docs, actor=user.username, replace=replace)


def read_document(store: Store, user: User, doc_id: str) -> dict | None:
    require(user, Permission.VIEW_STORE)
    return documents.get_document(store, doc_id)


def documents_table(store: Store, user: User):
    """Every document's id, title, format, sizes and provenance; cached per store generation
    (the sizes read every document's text, on each rerun of the Corpus page). Do not mutate."""
    require(user, Permission.VIEW_STORE)
    return cache.cached(store, "documents_table", (), lambda: documents.list_documents(store))
