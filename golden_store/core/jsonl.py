"""Reading JSON Lines input the way every importer here must: each bad line is reported
with its file and line number, and reading goes on so one error message lists them all.
The rule of :mod:`golden_store.core.textin` applies (no NaN, Infinity or overflowing numbers, no
key named twice in one object), and a leading byte-order mark is dropped."""

from __future__ import annotations

import json
from collections.abc import Iterator

from golden_store.core import textin


def iter_objects(name: str, text: str, problems: list[str], *, first_line: int = 1) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line that is a JSON object;
    append a problem naming ``name`` and the line for every other line. ``first_line``:
    the number of the text's first line (a chunk of a longer file)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    # split on "\n" only: str.splitlines() would also split on U+2028/U+0085, which JSON
    # allows raw inside strings, and would misnumber every later line
    for lineno, line in enumerate(text.split("\n"), start=first_line):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        where = f"{name} line {lineno}"
        try:
            obj = textin.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not valid JSON ({exc.msg}, column {exc.colno})")
            continue
        except textin.InputRuleError as exc:  # a number out of the rule, a key named twice
            problems.append(f"{where}: {exc}")
            continue
        except RecursionError:
            problems.append(f"{where}: nested too deeply to read")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected a JSON object, got {type(obj).__name__}")
            continue
        if "\\u" in line and _has_lone_surrogate(obj):
            problems.append(f"{where}: contains an invalid \\u escape (a lone surrogate); fix the text")
            continue
        yield lineno, obj


def _has_lone_surrogate(obj: dict) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
