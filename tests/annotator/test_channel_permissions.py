"""Every answer and reference command run through a studio (``--server``) names the role it
needs: without an entry a command falls back to an admin's, so a reviewer's token could not run
``golden answers review-report`` remotely while it runs locally (seen when new commands landed
without their line)."""

from __future__ import annotations

import argparse

from annotator.cli import build_parser
from annotator.cli.channel import PERMISSION


def _subcommands(parser: argparse.ArgumentParser, group: str) -> list[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    inner = next(a for a in sub.choices[group]._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(inner.choices)


def test_every_answers_and_references_command_has_its_permission():
    parser = build_parser()
    missing = [f"{g} {c}" for g in ("answers", "references", "nuggets") for c in _subcommands(parser, g)
               if f"{g} {c}" not in PERMISSION]
    assert missing == [], f"add these to annotator/cli/channel.py PERMISSION: {missing}"
