"""`golden api` commands (issue 28)."""

from __future__ import annotations

from typing import Any


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
