"""What every command group shares: the lazily imported modules, the store, output helpers."""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotator.cli.progress import TerminalProgress
from golden_store.core.errors import GoldenError
from golden_store.core.paths import default_db_path, versions_dir_for

if TYPE_CHECKING:
    from golden_store.db.store import Store


# Exit codes, the same for every command, as diff and grep have them: 0 it did its work (a
# gate passed; a WARN passes), 1 a check or gate it ran failed, 2 it could not run at all (bad
# input, an unknown evaluation or version, a measure neither recorded, a refusal). A CI step
# can then tell a regression from a broken job, whichever command it runs.
PASSED, FAILED, COULD_NOT_RUN = 0, 1, 2
GATE_EXIT = {"PASS": PASSED, "WARN": PASSED, "FAIL": FAILED}


# What the OK line of `golden verify` adds when no signature was checked (probe V4): the
# manifest's own figures cannot be re-derived from the version's files, so an edit of them
# that recomputes the digest passes every hash; only a signature protects them.
UNSIGNED_NOTE = ("; no signature checked, so the manifest's own figures (agreement, pool coverage, label counts) "
                 "are not verified: sign versions with golden freeze --sign and verify with --key")


class _OnFirstUse:
    """A module imported when one of its names is first used. Each command loads only what
    it needs: ``golden score`` runs on numpy and Arrow without DuckDB, pandas or the store,
    and ``golden --help`` lists every command without importing any of them."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


context = _OnFirstUse("annotator.process.context")


corpus_import = _OnFirstUse("annotator.integration.corpus_import")


demo = _OnFirstUse("annotator.demo")


identity = _OnFirstUse("annotator.people.identity")


query_editing = _OnFirstUse("annotator.evidence.query_editing")


versioning = _OnFirstUse("annotator.versions.versioning")


def answers_group(sub: Any) -> Any:
    """The ``golden answers`` group's subcommands, for the modules that add commands to it
    (answer evaluations, claim review, answer grading): :mod:`annotator.cli.nuggets_answers`
    makes the group and registers before them (``GROUPS`` in :mod:`annotator.cli`)."""
    parser = sub.choices["answers"]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


# The CLI's progress callback for long jobs (``progress(done, total[, phase])``): a line per
# phase with units, rate and time left on a terminal's stderr, nothing otherwise
# (annotator/cli/progress.py; rich is imported only once a bar is drawn).
_Progress = TerminalProgress


_served: contextvars.ContextVar[Store | None] = contextvars.ContextVar("golden_served_store", default=None)
_caller_cwd: contextvars.ContextVar[Path | None] = contextvars.ContextVar("golden_caller_cwd", default=None)


@contextlib.contextmanager
def serving(store: Store, caller_cwd: Path | None = None) -> Iterator[None]:
    """While the block runs, commands use ``store``: a command run inside the process that
    serves it (:mod:`annotator.cli.channel`) uses that process's open handle, whatever the
    caller's ``--db`` said, and that store's versions folder. ``caller_cwd``: the folder the
    person ran the command in (the git checkout ``score --record`` pins), not the studio's."""
    token, cwd_token = _served.set(store), _caller_cwd.set(caller_cwd)
    try:
        yield
    finally:
        _served.reset(token)
        _caller_cwd.reset(cwd_token)


def caller_cwd() -> Path | None:
    """The folder the command was run in: the caller's, also when the studio runs it for them;
    None when the caller is on another machine (``golden --server``): the studio's own folder
    would be the wrong one."""
    if _served.get() is not None:
        return _caller_cwd.get()
    return Path.cwd()


def _store(args: argparse.Namespace, *, create: bool = False) -> Store:
    """The live store. Only commands that bring data in may create it."""
    served = _served.get()
    if served is not None:
        return served
    return context.get_store(args.db, create=create)


def _vdir(args: argparse.Namespace) -> Path | str:
    """Versions folder (or the object-storage URL in GOLDEN_VERSIONS): frozen versions are plain
    files, readable while the app holds the store."""
    served = _served.get()
    if served is not None:
        return versioning.versions_dir(served)
    return versions_dir_for(Path(args.db) if args.db else default_db_path())


def _live_corpus_digest(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The live store's corpus digest for drift warnings, or why it could not be read."""
    from golden_store.live.documents import store_corpus_digest

    try:
        return store_corpus_digest(_store(args)), None
    except GoldenError as exc:
        return None, str(exc).split(":")[0]
