"""Importing system runs and building the judging pool (engineers)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from annotator.evidence_authoring import corpus_index
from annotator.identity import User, require
from annotator.roles import Permission, PermissionDenied
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
    """Judged coverage per run, for leads (RUN_ROUNDS) and engineers (IMPORT_RUNS) only: an
    annotator who grades a passage and sees one run's judged@10 move learns which system
    retrieved it, and judging is blind to systems (issue 18)."""
    _require_coverage(user)
    return runs.pool_status(store, k=k)


def _require_coverage(user: User | None) -> User:
    """PermissionDenied unless ``user`` may see per-run coverage (leads and engineers)."""
    if user is not None and (user.can(Permission.RUN_ROUNDS) or user.can(Permission.IMPORT_RUNS)):
        return user
    raise PermissionDenied(f"{user.username if user else 'Nobody signed in'} may not see judged coverage per run: "
                           "it would tell which system retrieved a passage (judging is blind). Leads and engineers "
                           "may.")
