"""Importing system runs and building the judging pool (engineers)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission, PermissionDenied
from golden_store.core import textin
from golden_store.core.progress import BYTES, Phase, Progress, in_phase
from golden_store.core.progress import report as tell
from golden_store.live import pool, runs
from golden_store.db.store import Store

POOL_ITEM_STATUSES = pool.POOL_ITEM_STATUSES

# The steps of a run import told to ``progress`` (a TREC run: reading, then writing; a JSONL
# run: placing its passages, then writing), so a run of millions of lines is never silent.
READING_RUN = Phase("reading and checking the run file", BYTES)
PLACING = Phase("placing passages on the corpus", "passages")
WRITING_RESULTS = Phase("writing results to the store", "results")


@dataclass(frozen=True)
class RunImport:
    """What an import did: results stored, the format used (told from the file when not
    given), and what was left out for unknown query ids (``skip_unknown``) and unknown doc
    ids (``skip_unknown_docs``)."""
    system: str
    n_results: int
    fmt: str
    skipped_lines: int = 0
    skipped_queries: tuple[str, ...] = ()
    skipped_doc_lines: int = 0
    skipped_docs: tuple[str, ...] = ()

    def summary(self) -> str:
        text = f"Imported {self.n_results} results as run {self.system} ({self.fmt})."
        if self.skipped_lines:
            text += (f" Skipped {self.skipped_lines} line(s) for {len(self.skipped_queries)} unknown query id(s): "
                     f"{_some(self.skipped_queries)}.")
        if self.skipped_doc_lines:
            text += (f" Skipped {self.skipped_doc_lines} line(s) for {len(self.skipped_docs)} unknown doc id(s): "
                     f"{_some(self.skipped_docs)}.")
        return text


def _some(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")


def import_run_file(store: Store, user: User, path: str | Path, system: str, fmt: str | None = None, *,
                    replace: bool = False, skip_unknown: bool = False, skip_unknown_docs: bool = False,
                    name: str | None = None, progress: Progress | None = None) -> RunImport:
    """Import a run (all or nothing). ``fmt`` None: told from the content. ``name``: what
    messages call the file (an upload's own name, not its temporary copy's path). A refusal
    lists every problem of the file at once: bad lines, and unknown query and doc ids named
    with their lines. ``skip_unknown`` / ``skip_unknown_docs``: leave out (and count) the
    results for unknown query / doc ids instead of refusing. ``progress``: told each step
    (:data:`READING_RUN` or :data:`PLACING`, then :data:`WRITING_RESULTS`)."""
    require(user, Permission.IMPORT_RUNS)
    if fmt is None:
        label = name or str(path)
        fmt = runs.detect_format(label, textin.read_file(path, label)[:65536])
    index = None
    if fmt != "trec":  # JSONL passages are placed on the corpus (the resolver's imports only then)
        from annotator.evidence.evidence_authoring import resolver as corpus_resolver

        index = corpus_resolver(store)
    size = _size(path) if fmt == "trec" else 0
    tell(progress, 0, size, READING_RUN)  # one vectorised pass: its end is told when it is done
    parsed = runs.parse_run(store, path, system, fmt, index, in_phase(progress, PLACING), name=name,
                            skip_unknown=skip_unknown, skip_unknown_docs=skip_unknown_docs)
    tell(progress, size, size, READING_RUN)
    tell(progress, 0, len(parsed.rows), WRITING_RESULTS)
    n = runs.store_run(store, parsed, actor=user.username, replace=replace)
    tell(progress, n, n, WRITING_RESULTS)
    return RunImport(system, n, parsed.fmt, parsed.skipped_lines, tuple(parsed.skipped_queries),
                     parsed.skipped_doc_lines, tuple(parsed.skipped_docs))


def _size(path: str | Path) -> int:
    """The file's size for the reading step's bar; 0 (no bar) when it cannot be read, which
    the reader then says in its own words."""
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def import_run(store: Store, user: User, path: str | Path, system: str, fmt: str | None = "trec", *,
               replace: bool = False, progress: Progress | None = None) -> int:
    """:func:`import_run_file`, returning the number of results stored."""
    return import_run_file(store, user, path, system, fmt, replace=replace, progress=progress).n_results


def retire_run(store: Store, user: User, system: str, reason: str) -> None:
    """Leads and engineers: the run leaves new pools and the coverage lists; its results and
    the pool items it contributed stay recorded (an event; :func:`restore_run` undoes it)."""
    require(user, Permission.RETIRE_RUNS)
    runs.set_retired(store, system, True, actor=user.username, reason=reason)


def restore_run(store: Store, user: User, system: str) -> None:
    require(user, Permission.RETIRE_RUNS)
    runs.set_retired(store, system, False, actor=user.username)


def run_history(store: Store, user: User):
    require(user, Permission.VIEW_VERSIONS)
    return runs.run_history(store)


def build_pool(store: Store, user: User, depth: int, systems: Sequence[str] | None = None) -> pool.PoolReport:
    require(user, Permission.IMPORT_RUNS)
    return pool.build_pool(store, depth, systems=systems, actor=user.username)


def run_table(store: Store, user: User):
    require(user, Permission.VIEW_STORE)
    return runs.list_runs(store)


def pool_status(store: Store, user: User, k: int = 10) -> dict:
    """Judged coverage per run, for leads (RUN_ROUNDS) and engineers (IMPORT_RUNS) only: an
    annotator who grades a passage and sees one run's judged@10 move learns which system
    retrieved it, and judging is blind to systems (issue 18)."""
    _require_coverage(user)
    # cached per store generation: the page reruns on every widget change (issue 19)
    return copy.deepcopy(cache.cached(store, "pool_status", (k,), lambda: pool.pool_status(store, k=k)))


def pool_ap_note(status: dict) -> str | None:
    """The sentence that goes with pool status' AP and Bpref (CLI, Runs & pool page): which
    grades count as relevant, over how many questions, and which unanswerable questions
    were left out (as ``golden score`` leaves them out). None before any run is imported."""
    if not status.get("runs"):
        return None
    lvl = status.get("relevance_level", 2)
    neg = status.get("left_out", {}).get("unanswerable", [])
    shown = ", ".join(neg[:10]) + (", ..." if len(neg) > 10 else "")
    return (f"AP and Bpref: relevant = final human grade >= {lvl} (as golden score --version), mean over "
            f"{status.get('ap_queries', 0)} answerable question(s) with a final grade; {len(neg)} unanswerable "
            f"question(s) left out (retrieval measures are undefined for them){': ' + shown if neg else ''}")


def may_see_coverage(user: User | None) -> bool:
    """Whether ``user`` may see per-run coverage and which runs pooled an item."""
    return user is not None and (user.can(Permission.RUN_ROUNDS) or user.can(Permission.IMPORT_RUNS))


def pool_items_page(store: Store, user: User, *, query_prefix: str = "", system: str | None = None,
                    status: str = "any", limit: int = 50, offset: int = 0):
    """One page of pool items, filtered in SQL (:func:`golden_store.live.pool.pool_items_page`):
    (matching count, rows). Leads and engineers only, as coverage: the rows name the runs
    that pooled each item and its grades, and judging is blind to both."""
    _require_coverage(user)
    # cached per store generation, as coverage: the page reruns on every widget change (a page
    # of 50 rows a key; a new grade or pool build moves the generation and recomputes)
    total, page = cache.cached(store, "pool_items_page", (query_prefix, system, status, int(limit), int(offset)),
                               lambda: pool.pool_items_page(store, query_prefix=query_prefix, system=system,
                                                            status=status, limit=limit, offset=offset))
    return total, page.copy()


def _require_coverage(user: User | None) -> User:
    """PermissionDenied unless ``user`` may see per-run coverage (leads and engineers)."""
    if user is not None and may_see_coverage(user):
        return user
    raise PermissionDenied(f"{user.username if user else 'Nobody signed in'} may not see judged coverage per run: "
                           "it would tell which system retrieved a passage (judging is blind). Leads and engineers "
                           "may.")
