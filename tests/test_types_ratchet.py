"""The mypy ignore list in pyproject.toml (the ``[[tool.mypy.overrides]]`` block with
``ignore_errors = true``) is a ratchet: a module comes off it when its type errors are fixed,
and nothing goes on. Without this test the list only grows: an ignored module is the easy way
out of any new error, and a stale name (a module moved or deleted) hides nothing while it
looks like debt. So: the list is no longer than :data:`MAX_IGNORED`, every name on it is a
module that exists, and every name was already on it when :data:`KNOWN` was recorded.

When you take a module off the list, lower :data:`MAX_IGNORED` to the new length and drop the
name from :data:`KNOWN` (then putting it back fails both ways). Never raise the number, never
add a name: fix the new errors.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib; the regex reader below is then the reader
    tomllib = None

# The length of the ignore list when it was last shortened (2026-12-07: empty). It may only go down.
MAX_IGNORED = 0

# Every name the list may hold: those on it on 2026-12-07. A name not here is a module put on
# the list; a module moved later takes its new name here in the commit that moves it (a move
# is not a new entry), and its old name leaves.
KNOWN: frozenset[str] = frozenset()


def _ignore_block_regex(text: str) -> list[str]:
    """The module names of the ``ignore_errors = true`` overrides block, read without a TOML
    parser (Python 3.10): each ``[[tool.mypy.overrides]]`` block up to the next table."""
    names: list[str] = []
    for block in re.split(r"^\[\[?", text, flags=re.MULTILINE):
        if not block.startswith("tool.mypy.overrides]]"):
            continue
        body = re.sub(r"#[^\n]*", "", block)
        if not re.search(r"^ignore_errors\s*=\s*true\b", body, re.MULTILINE):
            continue
        listed = re.search(r"^module\s*=\s*\[(.*?)\]", body, re.MULTILINE | re.DOTALL)
        assert listed, "the ignore_errors block has no module = [...] list"
        names += re.findall(r'"([^"]+)"', listed.group(1))
    return names


def ignored_modules(text: str) -> list[str]:
    """The names on pyproject.toml's mypy ignore list, in file order (with any repeats)."""
    if tomllib is None:
        return _ignore_block_regex(text)
    names: list[str] = []
    for block in tomllib.loads(text).get("tool", {}).get("mypy", {}).get("overrides", []):
        if block.get("ignore_errors"):
            module = block["module"]
            names += [module] if isinstance(module, str) else list(module)
    return names


def _exists(name: str) -> bool:
    """A module name (``a.b``: ``a/b.py`` or the package ``a/b/``) or a pattern (``a.b.*``:
    the package ``a/b/``) that names code in the repository."""
    path = ROOT.joinpath(*name.removesuffix(".*").split("."))
    if name.endswith(".*"):
        return (path / "__init__.py").is_file()
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def ratchet_problems(text: str) -> list[str]:
    """What is wrong with the ignore list of this pyproject.toml text (empty: it holds)."""
    names = ignored_modules(text)
    problems = []
    if len(names) > MAX_IGNORED:
        problems.append(f"the mypy ignore list has {len(names)} modules, more than {MAX_IGNORED}: it is a "
                        "ratchet, take a module off, never add one (fix the module's type errors instead)")
    if len(set(names)) != len(names):
        problems.append(f"names listed twice: {sorted({n for n in names if names.count(n) > 1})}")
    new = sorted(set(names) - KNOWN)
    if new:
        problems.append(f"{new} are new on the mypy ignore list: take a module off, never add one")
    stale = sorted(n for n in names if not _exists(n))
    if stale:
        problems.append(f"{stale} are on the mypy ignore list but no such module exists: delete the stale "
                        "names (a moved module is checked under its new name)")
    return problems


def _pyproject() -> str:
    return (ROOT / "pyproject.toml").read_text("utf-8")


def test_the_ignore_list_only_shrinks():
    assert ratchet_problems(_pyproject()) == []


def test_the_list_is_where_the_test_reads_it():
    """A reader that found nothing would pass everything: the list is non-empty until the
    day it is gone, and then MAX_IGNORED says 0."""
    assert ignored_modules(_pyproject()) or MAX_IGNORED == 0


@pytest.mark.skipif(tomllib is None, reason="compares the regex reader with tomllib (3.11+)")
def test_both_readers_read_the_same_list():
    assert _ignore_block_regex(_pyproject()) == ignored_modules(_pyproject())


def _with_entry(text: str, name: str) -> str:
    """The pyproject text with ``name`` appended to the ignore list."""
    head, sep, tail = text.partition("ignore_errors = true")
    assert sep, "no ignore_errors block"
    at = head.rindex("]")
    return head[:at] + f'    "{name}",\n' + head[at:] + sep + tail


def test_the_test_fails_when_an_entry_is_appended():
    text = _pyproject()
    problems = ratchet_problems(_with_entry(text, "golden_store.core.errors"))  # a real module, checked today
    assert any("new on the mypy ignore list" in p for p in problems)
    if len(ignored_modules(text)) == MAX_IGNORED:
        assert any("take a module off, never add one" in p for p in problems)


def test_the_test_fails_on_a_stale_or_repeated_name():
    text = _pyproject()
    assert any("no such module" in p for p in ratchet_problems(_with_entry(text, "golden_store.no_such_module")))
    first = ignored_modules(text)[0] if ignored_modules(text) else None
    if first:
        assert any("twice" in p for p in ratchet_problems(_with_entry(text, first)))
