"""Reading JSON Lines input the way every importer here must: each bad line is reported
with its file and line number, and reading goes on so one error message lists them all."""

from __future__ import annotations

import json
from collections.abc import Iterator


def iter_objects(name: str, text: str, problems: list[str]) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line that is a JSON object;
    append a problem naming ``name`` and the line for every other line."""
    # split on "\n" only: str.splitlines() would also split on U+2028/U+0085, which JSON
    # allows raw inside strings, and would misnumber every later line
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{name} line {lineno}: not valid JSON ({exc.msg}, column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{name} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            continue
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            problems.append(f"{name} line {lineno}: contains an invalid \\u escape (a lone surrogate); fix the text")
            continue
        yield lineno, obj
