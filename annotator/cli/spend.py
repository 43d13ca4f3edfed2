"""Cost you can see (METHODOLOGY §11.7), the CLI side: a job that calls Claude prints its
estimate first and runs only once confirmed (y/N on a terminal, ``--yes`` otherwise); after
it, the real usage."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from golden_store.core.errors import GoldenError

if TYPE_CHECKING:
    from annotator.judge.llm_cost import JobPlan, JobUsage

REFUSED = ("Not run: this job spends money on Claude and needs a confirmation, and there is no terminal to ask "
           "on; read the estimate above and pass --yes to run it.")


def _out(args: argparse.Namespace):
    return sys.stderr if getattr(args, "json", False) else sys.stdout  # --json keeps stdout for the data


def confirm(args: argparse.Namespace, plan: "JobPlan") -> bool:
    """Print the plan; True when the job may run. Nothing to send: True without asking.
    ``--yes``: True. On a terminal: ask y/N. Otherwise: refuse (GoldenError, exit 1)."""
    return confirm_lines(args, plan.lines(), plan.confirm_label, nothing_to_send=not plan.items)


def confirm_lines(args: argparse.Namespace, lines: list[str], label: str, *, nothing_to_send: bool = False) -> bool:
    """:func:`confirm` for a job that words its own estimate (pool grading's plan)."""
    out = _out(args)
    for line in lines:
        print(line, file=out)
    if nothing_to_send or args.yes:
        return True
    if not sys.stdin.isatty():
        raise GoldenError(REFUSED)
    try:
        answer = input(f"{label}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("Cancelled: nothing was sent.", file=out)
    return False


def report(args: argparse.Namespace, usage: "JobUsage") -> None:
    """The job's real usage (tokens, cache writes and reads, hit rate, $)."""
    for line in usage.lines():
        print(line, file=_out(args))


def add_yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true",
                        help="run without asking after the cost estimate is printed (needed without a terminal)")
