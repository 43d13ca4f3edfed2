"""Freezing, verifying, diffing and exporting versions, role-checked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import export, versions
from golden_store.corpus import store_corpus_digest
from golden_store.store import Store, versions_dir_for


def versions_dir(store: Store) -> Path:
    return versions_dir_for(store.path)


def freeze(store: Store, user: User, name: str, *, note: str = "",
           progress: Callable[[int, int, str], None] | None = None) -> versions.FreezeResult:
    require(user, Permission.FREEZE)
    return versions.freeze(store, name, actor=user.username, note=note, progress=progress)


def list_versions(store: Store, user: User) -> list[dict[str, Any]]:
    require(user, Permission.VIEW_VERSIONS)
    return versions.list_versions(versions_dir(store))


def verify(store: Store, user: User, name: str) -> versions.VerifyReport:
    require(user, Permission.VIEW_VERSIONS)
    return versions.verify(name, versions_dir(store), live_corpus_digest=store_corpus_digest(store))


def diff(store: Store, user: User, a: str, b: str) -> dict[str, Any]:
    require(user, Permission.VIEW_VERSIONS)
    return versions.diff_versions(a, b, versions_dir(store))


def export_version(store: Store, user: User, name: str, fmt: str, out_dir: str | Path) -> list[Path]:
    require(user, Permission.EXPORT)
    v = versions.load_version(name, versions_dir(store))
    return export.export_version(v, fmt, out_dir)


def manifest(store: Store, user: User, name: str) -> dict[str, Any]:
    require(user, Permission.VIEW_VERSIONS)
    return dict(versions.load_version(name, versions_dir(store), check=False).manifest)
