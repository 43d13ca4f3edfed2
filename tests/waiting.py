"""Waiting in tests without sleeping as synchronisation: poll a condition until it holds or a
deadline passes. The deadline is generous (a busy machine may be ten times slower than a quiet
one) and never part of what a test asserts: a test waits exactly as long as the condition
takes, and fails naming what it waited for only when the condition never held.

This is the one place in tests/ that calls ``time.sleep`` (tests/test_test_hygiene.py keeps it
so): the pause between two looks at the condition, not a guess at how long something takes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEADLINE_S = 60.0  # for a thread, a server or a subprocess to get somewhere on a loaded machine


def wait_until(condition: Callable[[], T], what: str, *, timeout_s: float = DEADLINE_S,
               interval_s: float = 0.05, ignore: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``condition`` until it returns something true, and return that; fail with
    ``what`` after ``timeout_s``. Exceptions of the types in ``ignore`` (a connection refused
    while a server starts) count as "not yet"."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while True:
        try:
            got = condition()
        except ignore as exc:
            got, last = None, exc  # type: ignore[assignment]
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s:g} s for {what}" + (f" (last: {last!r})" if last else ""))
        time.sleep(interval_s)
