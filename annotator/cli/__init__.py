"""The ``golden`` command line. Errors go to stderr, one clear message. Every command exits
the same way (issue 38): 0 it did its work (a gate passed or warned), 1 a check or gate it ran
failed (``verify``, ``compare``, ``calibration analyse``...), 2 it could not run (bad input,
an unknown name, a refusal, a usage error); ``--json`` prints data for scripts.

A package by command group: each module holds its commands' handlers and, beside them, a
``register(sub, add)`` that adds their parsers; :mod:`annotator.cli.common` holds what they
share (the lazily imported modules, the store, output helpers). ``golden --help`` imports
the groups but none of the modules their commands use.
"""

from __future__ import annotations

import argparse
import os
import subprocess  # noqa: F401  (tests stub annotator.cli.subprocess.call)
import sys

from annotator.cli import (
    api, corpus, judgments, nuggets_answers, references, rounds, runs_pool, scoring, serve, spans, store_admin,
    tokens, transcripts, users, versions, webhooks)
from annotator.cli import answer_evaluations, answer_grading, calibration, claim_review, corrected, standin
from annotator.cli import channel, remote, through_studio
from annotator.cli.common import COULD_NOT_RUN, context
from annotator.cli.scoring import _numpy_for_scoring
from annotator.cli.serve import DEFAULT_PORT, SERVER_OPTIONS, _serve_location, server_flags
from golden_store.core.errors import GoldenError, VerificationError

__all__ = ["DEFAULT_PORT", "SERVER_OPTIONS", "_numpy_for_scoring", "_serve_location", "build_parser", "main",
           "server_flags"]

# the order of `golden --help`'s commands
GROUPS = (store_admin, corpus, versions, spans, scoring, runs_pool, judgments, rounds, nuggets_answers, references,
          transcripts, users, tokens, webhooks, serve, api, calibration, standin, answer_evaluations, claim_review,
          answer_grading, corrected)


def _studio_version() -> str:
    """The installed studio's version (pyproject's, through golden_store.__version__)."""
    import golden_store

    return golden_store.__version__


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS,
                        help="store file (default: $GOLDEN_DB or ./golden.duckdb)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print data as JSON")
    common.add_argument("--server", metavar="URL", default=argparse.SUPPRESS,
                        help="run the command on a studio's HTTP API (default: $GOLDEN_SERVER); the token comes "
                             "from $GOLDEN_TOKEN or --token-file")
    common.add_argument("--token-file", metavar="PATH", default=argparse.SUPPRESS,
                        help="read the API token from this file's first line (instead of $GOLDEN_TOKEN)")

    p = argparse.ArgumentParser(
        prog="golden", parents=[common],
        description="Golden-set curation studio: corpus, queries, frozen versions, exports.",
    )
    p.add_argument("--version", action="version", version=f"golden-studio {_studio_version()}",
                   help="print the studio's version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn, help_: str, parser=sub) -> argparse.ArgumentParser:
        sp = parser.add_parser(name, help=help_, parents=[common], description=help_)
        sp.set_defaults(func=fn)
        return sp

    for group in GROUPS:
        group.register(sub, add)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command. Output into a pipe whose reader has gone (`golden … | head`) ends
    quietly with status 141, as a Unix tool stopped by SIGPIPE, not with a traceback."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that flush is quiet too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.db = getattr(args, "db", None)
    args.json = getattr(args, "json", False)
    server = remote.server_of(args)
    try:
        if server:  # --server / GOLDEN_SERVER: the command runs on the studio's API (annotator/cli/remote.py)
            return remote.run(args, server, argv)
        serving = through_studio.find(args.db) if channel.needs_store(args) else None
        if serving is not None:  # a running studio holds this DuckDB store: the command runs there
            return through_studio.run(argv, args, serving)
        return int(args.func(args) or 0)
    except GoldenError as exc:
        print(f"golden: {exc}", file=sys.stderr)
        if isinstance(exc, VerificationError):  # the check ran and the version failed it: 1, not "could not run"
            return 1
        return COULD_NOT_RUN
    except KeyboardInterrupt:
        print("golden: interrupted", file=sys.stderr)
        return 130
    finally:
        if "annotator.process.context" in sys.modules and not server:  # only a local command opens a store
            context.close_all()
