"""Running a ``golden`` command inside the process that serves the store (issue 38, item 1).

A DuckDB store belongs to one process at a time. While ``golden serve`` (or ``golden api``)
holds it, a second ``golden`` process cannot open it, so the CLI hands its command line to the
serving process instead (:mod:`annotator.cli.through_studio` finds it), and the serving process
runs the very same command function here, against the store it already has open. Output and
exit status are the command's own, captured and sent back: a person sees what they would have
seen with the app stopped.

Why the whole command and not a route per command: the output, the exit codes and the checks
stay those of one implementation, and a command added to the CLI has its remote form the day it
is written. The typed HTTP routes remain the API for programs.

What runs where is decided here, once, for both sides:
- :func:`needs_store` says whether a command touches the live store at all (``diff``,
  ``export``, ``verify NAME``, ``score`` without ``--record`` read version folders and never need
  the store's lock, so they always run in the caller's process);
- :data:`INPUT_DESTS` / :data:`OUTPUT_DESTS` name the arguments that are files to read or write,
  so a remote caller can send the first and receive the second;
- :data:`PERMISSION` is what a token must hold to run each command remotely (the annotator layer
  checks again inside; this refuses early, with the command's name).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from annotator.people.roles import Permission
from golden_store.core.errors import GoldenError, ValidationError, VerificationError

if TYPE_CHECKING:
    from golden_store.db.store import Store

# Commands that never go through a serving studio: they make or move whole stores, serve one,
# or need no store at all.
LOCAL_ONLY = frozenset({"init", "migrate", "copy", "keygen", "serve", "api", "export", "diff", "resolve",
                        "survival", "chunking", "llm-standin"})

# Arguments (argparse dests) that name files the command reads, and files it writes.
INPUT_DESTS = ("file", "paths", "run", "runs", "qrels", "quotes", "corpus", "parsed", "config", "sign", "key", "rubric")
OUTPUT_DESTS = ("out",)

_SUBCOMMAND_DESTS = ("runs_cmd", "transcripts_cmd", "answers_cmd", "queries_cmd", "pool_cmd", "results_cmd",
                     "rounds_cmd", "nuggets_cmd", "corpus_cmd", "strata_cmd", "users_cmd", "tokens_cmd",
                     "webhooks_cmd", "judgments_cmd", "calibration_cmd", "references_cmd")


def command_name(args: argparse.Namespace) -> str:
    """``runs import``, ``freeze``...: the words that name the command, as typed."""
    words = [args.command]
    words += [w for w in (getattr(args, k, None) for k in _SUBCOMMAND_DESTS) if isinstance(w, str)]
    return " ".join(words)


def needs_store(args: argparse.Namespace) -> bool:
    """Whether the command reads or writes the live store (and so, on DuckDB, needs its lock)."""
    name = args.command
    if name in LOCAL_ONLY:
        return False
    if name == "verify":  # verify NAME checks a version folder; verify alone checks the live labels
        return getattr(args, "name", None) is None
    if name == "score":  # scoring reads files and versions; only --record writes the store
        return bool(getattr(args, "record", False))
    if name == "versions":  # the list reads the folder; --sweep also asks the store what it still needs
        return bool(getattr(args, "sweep", False))
    return True


# What a token must hold to run a command through the API (the annotator layer checks again).
# Anything not named here needs MANAGE_USERS: an admin's.
PERMISSION: dict[str, Permission] = {
    "demo": Permission.LOAD_DEMO,
    "corpus import": Permission.IMPORT_CORPUS,
    "queries import": Permission.EDIT_QUERIES, "queries draft": Permission.EDIT_QUERIES,
    "strata add": Permission.MANAGE_STRATA, "strata list": Permission.VIEW_STORE,
    "freeze": Permission.FREEZE, "versions": Permission.VIEW_VERSIONS, "verify": Permission.VIEW_VERSIONS,
    "score": Permission.IMPORT_RUNS, "compare": Permission.VIEW_RESULTS, "evaluations": Permission.VIEW_RESULTS,
    "results export": Permission.VIEW_RESULTS, "results trials": Permission.VIEW_RESULTS,
    "runs import": Permission.IMPORT_RUNS, "runs list": Permission.VIEW_STORE,
    "runs retire": Permission.RETIRE_RUNS, "runs restore": Permission.RETIRE_RUNS,
    "pool build": Permission.IMPORT_RUNS, "pool status": Permission.VIEW_STORE,
    "pool judge": Permission.GRADE_POOL_BY_JUDGE, "pool judge-resume": Permission.GRADE_POOL_BY_JUDGE,
    "pool judge-pause": Permission.GRADE_POOL_BY_JUDGE, "pool judge-status": Permission.VIEW_STORE,
    "pool judge-sample": Permission.VIEW_STORE, "pool judge-corrected": Permission.VIEW_RESULTS,
    "judgments import": Permission.IMPORT_JUDGMENTS, "judgments list": Permission.VIEW_STORE,
    "judgments retract": Permission.IMPORT_JUDGMENTS,
    "rounds start": Permission.RUN_ROUNDS, "rounds split": Permission.RUN_ROUNDS,
    "rounds list": Permission.VIEW_STORE, "rounds bar": Permission.RUN_ROUNDS, "agreement": Permission.VIEW_STORE,
    "nuggets draft": Permission.LABEL, "nuggets export": Permission.VIEW_STORE, "nuggets scores": Permission.VIEW_STORE,
    "nuggets import": Permission.LABEL,
    "answers import": Permission.IMPORT_RUNS, "answers score": Permission.VIEW_RESULTS,
    "answers mark": Permission.MARK_OUTCOMES, "answers citations": Permission.VIEW_RESULTS,
    "answers checks": Permission.VIEW_RESULTS,
    "answers check-claims": Permission.GRADE_POOL_BY_JUDGE, "answers faithfulness": Permission.VIEW_RESULTS,
    # scoring answers is reading results; recording them (--record) is checked again by the service (IMPORT_RUNS)
    "answers evaluate": Permission.VIEW_RESULTS, "answers review-report": Permission.VIEW_RESULTS,
    "answers grade-sample": Permission.LABEL, "answers grade": Permission.LABEL,
    "answers judge-rubric": Permission.GRADE_POOL_BY_JUDGE, "answers rubric-report": Permission.VIEW_RESULTS,
    "answers rubric-corrected": Permission.VIEW_RESULTS,
    "references draft": Permission.LABEL, "references set": Permission.LABEL, "references approve": Permission.LABEL, "references retire": Permission.LABEL,
    "references import": Permission.LABEL, "references show": Permission.VIEW_STORE,
    "references list": Permission.VIEW_STORE, "references criteria": Permission.EDIT_RUBRIC,
    "references match": Permission.VIEW_RESULTS,
    "references round-open": Permission.RUN_ROUNDS, "references round-status": Permission.VIEW_STORE,
    "references round-draft": Permission.LABEL, "references round-submit": Permission.LABEL,
    "references round-adjudicate": Permission.ADJUDICATE,
    "transcripts import": Permission.IMPORT_RUNS, "transcripts sample": Permission.REVIEW,
    "transcripts draw": Permission.REVIEW, "transcripts summary": Permission.VIEW_STORE,
    "transcripts judge-check": Permission.REVIEW,
    "tokens create": Permission.MANAGE_API_TOKENS, "tokens list": Permission.MANAGE_API_TOKENS,
    "tokens revoke": Permission.MANAGE_API_TOKENS, "tokens uses": Permission.MANAGE_API_TOKENS,
    "webhooks add": Permission.MANAGE_WEBHOOKS, "webhooks list": Permission.MANAGE_WEBHOOKS,
    "webhooks disable": Permission.MANAGE_WEBHOOKS, "webhooks deliveries": Permission.MANAGE_WEBHOOKS,
    "webhooks test": Permission.MANAGE_WEBHOOKS, "webhooks deliver": Permission.MANAGE_WEBHOOKS,
    "calibration": Permission.CALIBRATE_JUDGE,
}


def permission_for(name: str) -> Permission:
    """The permission a remote caller needs for command ``name`` (an admin's when not listed)."""
    if name in PERMISSION:
        return PERMISSION[name]
    first = name.split(" ")[0]
    return PERMISSION.get(first, Permission.MANAGE_USERS)


def refuse_in_a_served_process(args: argparse.Namespace) -> None:
    """Commands that make no sense inside the serving process: say why in one sentence."""
    if args.command == "webhooks" and getattr(args, "webhooks_cmd", None) == "deliver" and getattr(args, "loop", False):
        raise ValidationError("webhooks deliver --loop: the running studio already delivers webhooks in "
                              "the background; drop --loop to send what is due once, or stop the studio first.")


# ---- capturing a command's output in a threaded server ------------------------------------------


class _ThreadRouted(io.TextIOBase):
    """A stand-in for ``sys.stdout`` / ``sys.stderr`` that sends each thread's writes to the
    buffer that thread is capturing into, and every other thread's to the real stream. A
    server runs many requests at once, so swapping ``sys.stdout`` for one command would steal
    the others' output (and the app's logs)."""

    def __init__(self, real: TextIO) -> None:
        self.real = real
        self.targets: dict[int, TextIO] = {}

    def _target(self) -> TextIO:
        return self.targets.get(threading.get_ident(), self.real)

    def write(self, s: str) -> int:
        return self._target().write(s)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:  # a captured command writes for another terminal: no bars, no colours
        t = self._target()
        return t is self.real and self.real.isatty()

    def fileno(self) -> int:
        return self._target().fileno()

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        """stdin: a captured command reads what its caller sent (a password), others the real one."""
        return self._target().readline(-1 if size is None else size)

    def read(self, size: int | None = -1) -> str:
        return self._target().read(-1 if size is None else size)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


_install_lock = threading.Lock()


def _routed(name: str) -> _ThreadRouted:
    with _install_lock:
        current = getattr(sys, name)
        if not isinstance(current, _ThreadRouted):
            current = _ThreadRouted(current)
            setattr(sys, name, current)
        return current


@contextlib.contextmanager
def _captured(stdin_text: str) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = _routed("stdout"), _routed("stderr")
    stdin = _routed("stdin")
    buf_out, buf_err, buf_in = io.StringIO(), io.StringIO(), io.StringIO(stdin_text)
    me = threading.get_ident()
    out.targets[me], err.targets[me], stdin.targets[me] = buf_out, buf_err, buf_in
    try:
        yield buf_out, buf_err
    finally:
        for s in (out, err, stdin):
            s.targets.pop(me, None)


@dataclass
class Outcome:
    """What a command run here printed and how it ended."""

    exit_code: int
    stdout: str
    stderr: str


def run_here(argv: list[str], *, store: Store, stdin: str = "", cwd: str | None = None,
             acting_as: object | None = None,
             authorize: Callable[[argparse.Namespace], None] | None = None) -> Outcome:
    """Parse ``argv`` as ``golden`` would and run it in this process on ``store`` (the serving
    process's own open handle), printing into buffers. ``acting_as`` (an
    :class:`annotator.people.identity.User`) is who the command acts as; None: this process's CLI
    user, the account the caller's own ``golden`` would have used on this machine.
    ``authorize(parsed arguments)`` may refuse the command (raise) before it runs. ``cwd``:
    the folder the person ran the command in, when it is on this machine."""
    from annotator.people import identity
    from annotator.cli import build_parser
    from annotator.cli.common import COULD_NOT_RUN, serving

    with _captured(stdin) as (out, err):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse printed the usage error into err
            return Outcome(int(exc.code or 0), out.getvalue(), err.getvalue())
        args.db, args.json, args.server = None, getattr(args, "json", False), None
        code = 0
        with identity.acting_as(acting_as), serving(store, Path(cwd) if cwd else None):
            try:
                if not needs_store(args):
                    raise ValidationError(f"golden {command_name(args)} does not use the live store: run it where "
                                          f"its files are.")
                if authorize is not None:
                    authorize(args)
                refuse_in_a_served_process(args)
                code = int(args.func(args) or 0)
            except GoldenError as exc:
                print(f"golden: {exc}", file=sys.stderr)
                code = 1 if isinstance(exc, VerificationError) else COULD_NOT_RUN
            except SystemExit as exc:
                code = int(exc.code or 0)
        sys.stdout.flush()
        return Outcome(code, out.getvalue(), err.getvalue())


def substitute_paths(argv: list[str], mapping: dict[str, str]) -> list[str]:
    """``argv`` with each token found in ``mapping`` replaced, alone or as an option's value
    (``--out=X``): a path made absolute, an upload's placeholder by its saved path..."""
    out: list[str] = []
    for token in argv:
        if token in mapping:
            token = mapping[token]
        elif token.startswith("--") and "=" in token:
            flag, _, value = token.partition("=")
            if value in mapping:
                token = f"{flag}={mapping[value]}"
        out.append(token)
    return out


def file_arguments(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The paths ``args`` reads and writes, as given on the command line."""
    def values(dests: tuple[str, ...]) -> list[str]:
        found: list[str] = []
        for d in dests:
            v = getattr(args, d, None)
            if isinstance(v, (str, Path)):
                found.append(str(v))
            elif isinstance(v, list):
                found += [str(x) for x in v if isinstance(x, (str, Path))]
        return found
    return values(INPUT_DESTS), values(OUTPUT_DESTS)
