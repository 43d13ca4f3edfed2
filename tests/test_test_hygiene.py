"""The tests never lie about time (issue 39, item 3): no test sleeps to let something happen,
and none reads the wall clock or today's date to decide what it asserts.

Checked on the source of every file under tests/ (its syntax tree, so a name in a string or a
comment does not count):

- a pause (``time.sleep``, ``sleep`` imported from time, a browser page's ``wait_for_timeout``)
  is allowed only as the pause of a ``while`` loop bounded by a deadline (a name holding
  ``deadline`` in the loop): polling a condition, as ``tests/waiting.py``'s ``wait_until`` does.
  A pause anywhere else is a guess at how long something takes, which a busy machine breaks;
- a read of the wall clock or the date (``time.time()``, ``date.today()``, ``datetime.now()``,
  ``datetime.utcnow()``, ``datetime.today()``) is allowed only where ALLOWED says why: a test
  injects a clock (``now=``, ``clock=``, ``today=``) into the code it checks instead.

A new use fails this test naming the file, the line and what to do; an ALLOWED entry that no
longer matches anything fails too, so the list does not outlive its reasons."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent

PAUSES = {"time.sleep", "sleep", "wait_for_timeout"}  # the last name of the call
CLOCKS = {"time.time", "date.today", "datetime.now", "datetime.utcnow", "datetime.today", "datetime.date.today",
          "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today"}

# (file name, enclosing function, call) -> why it is right there. Keyed by file name, not path,
# so a file moved between folders keeps its entry.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("oidc_provider.py", "_token", "time.time"):
        "the stand-in identity provider stamps an ID token's iat/exp from the clock as a real provider "
        "does; the studio checks them against its own clock, and exp is 300 s after iat, never a fixed date",
    ("test_version_integrity.py", "_tmp", "time.time"):
        "dates a half-written freeze folder's files age_s back (os.utime): the sweep compares file times "
        "with the file system's clock, the only clock a file has; the ages are relative, never a date",
    ("test_browser_labeling.py", "_press_burst", "time.sleep"):
        "paces key presses gap_s apart as a fast labeler types (the burst is the input under test); "
        "nothing waits for anything to happen",
    ("test_browser_md_escape.py", "test_escaped_markdown_renders_literally", "wait_for_timeout"):
        "the test asserts an absence (no markup rendered): it gives lazily loaded renderers (emoji, KaTeX) "
        "time to act, after waiting for the last case to be painted; an absence has no event to wait for",
    ("test_browser.py", "fill_committed", "wait_for_timeout"):
        "lets the rerun an Enter starts begin before idle() waits for reruns to end (the page shows no event "
        "for a rerun that has not started); the loop then checks the box holds the value and fills it "
        "again if not, so a wait too short costs an attempt, never a wrong result",
    ("test_browser_first_hour.py", "_number", "wait_for_timeout"):
        "as fill_committed in test_browser.py: the value is checked after idle() and filled again if a "
        "rerun lost it",
}


def _name(func: ast.expr) -> str:
    """``time.sleep`` for ``time.sleep(...)``, ``page.wait_for_timeout`` for a method call."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _polls_with_a_deadline(loop: ast.While) -> bool:
    return any(isinstance(n, ast.Name) and "deadline" in n.id.lower() for n in ast.walk(loop))


@functools.lru_cache(maxsize=None)
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


def findings(source: str, file_name: str) -> list[tuple[int, str, str, str]]:
    """(line, function, call, what is wrong) for every pause or clock read ``source`` may not make."""
    tree = _parse(source)
    sleep_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "time"
                   for a in n.names if a.name == "sleep"}
    out: list[tuple[int, str, str, str]] = []

    def visit(node: ast.AST, function: str, loops: tuple[ast.While, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name, ())
                continue
            if isinstance(child, ast.Call):
                name = _name(child.func)
                last = name.rsplit(".", 1)[-1]
                pause = name == "time.sleep" or (name in sleep_names) or last == "wait_for_timeout"
                call = "wait_for_timeout" if last == "wait_for_timeout" else ("time.sleep" if pause else name)
                allowed = (file_name, function, call) in ALLOWED
                if pause and not allowed and not any(_polls_with_a_deadline(w) for w in loops):
                    out.append((child.lineno, function, call, "a pause outside a poll bounded by a deadline: wait for "
                                "the condition instead (tests/waiting.py wait_until)"))
                elif name in CLOCKS and not allowed:
                    out.append((child.lineno, function, call, "a read of the wall clock or today's date: inject a "
                                "clock (now=, clock=, today=) into the code under test, or say why in ALLOWED"))
            visit(child, function, loops + (child,) if isinstance(child, ast.While) else loops)

    visit(tree, "<module>", ())
    return out


@functools.lru_cache(maxsize=1)
def _sources() -> dict[Path, str]:
    return {p: p.read_text("utf-8") for p in sorted(TESTS.rglob("*.py"))}


def test_no_test_sleeps_as_synchronisation_or_reads_the_clock():
    bad = [f"{p.relative_to(TESTS.parent)}:{line} in {fn}: {call}: {why}"
           for p, text in _sources().items() for line, fn, call, why in findings(text, p.name)]
    assert not bad, "\n".join(bad)


def test_every_allowed_use_is_still_there():
    """An entry whose use is gone is removed with it, so the list keeps only what it excuses."""
    seen = set()
    for p, text in _sources().items():
        tree = _parse(text)
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
                name = _name(call.func)
                last = name.rsplit(".", 1)[-1]
                seen.add((p.name, fn.name, "wait_for_timeout" if last == "wait_for_timeout" else name))
    assert set(ALLOWED) <= seen, sorted(set(ALLOWED) - seen)


def test_the_check_sees_a_sleep_a_clock_read_and_lets_a_deadline_poll_pass():
    """A test of the test, on synthetic sources."""
    src = '''
import time
from datetime import date, datetime
from time import sleep as nap

def test_guess(page):
    start_the_job()
    time.sleep(2)
    nap(1)
    page.wait_for_timeout(500)
    assert date.today().year > 2000 and datetime.now()

def test_poll():
    deadline = time.monotonic() + 60
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)
'''
    got = [(line, fn, call) for line, fn, call, _ in findings(src, "test_synthetic.py")]
    assert got == [(8, "test_guess", "time.sleep"), (9, "test_guess", "time.sleep"),
                   (10, "test_guess", "wait_for_timeout"), (11, "test_guess", "date.today"),
                   (11, "test_guess", "datetime.now")]
