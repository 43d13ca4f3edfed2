"""Importing system runs and building the judging pool (engineers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from annotator.evidence_authoring import corpus_index
from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import runs
from golden_store.store import Store


def import_run(store: Store, user: User, path: str | Path, system: str, fmt: str = "trec", *,
               replace: bool = False, progress: Callable[[int, int], None] | None = None) -> int:
    require(user, Permission.IMPORT_RUNS)
    index = corpus_index(store) if fmt == "jsonl" else None
    parsed = runs.parse_run(store, path, system, fmt, index, progress)
    return runs.store_run(store, parsed, actor=user.username, replace=replace)


def build_pool(store: Store, user: User, depth: int, systems: Sequence[str] | None = None) -> runs.PoolReport:
    require(user, Permission.IMPORT_RUNS)
    return runs.build_pool(store, depth, systems=systems, actor=user.username)


def run_table(store: Store, user: User):
    require(user, Permission.VIEW_STORE)
    return runs.list_runs(store)


def pool_status(store: Store, user: User, k: int = 10) -> dict:
    require(user, Permission.VIEW_STORE)
    return runs.pool_status(store, k=k)
