"""The one rule every importer follows for the text it reads (issue 18).

* **Encoding.** Input is UTF-8, with or without a byte-order mark (the mark is dropped). A
  UTF-16/UTF-32 file (its byte-order mark) is refused as such; any other byte that is not
  UTF-8, and a NUL byte (a binary or UTF-16 file without a mark), is refused with the file,
  the line and the column.
* **Numbers.** ``NaN``, ``Infinity``, a float that overflows (``1e400``) and an integer out
  of the 64-bit range are refused where they are read, naming the line: nothing downstream
  ever sees a non-finite number or stores one as invalid JSON.
* **Echoed values.** A value quoted back in a message is cut to :data:`SHOWN_CHARS`
  characters plus ``…``: a 50 MB id gives a one-line message, not a 50 MB one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from golden_store.core.errors import ValidationError

SHOWN_CHARS = 80
INT_LIMIT = 2**63  # integers must fit a 64-bit column
_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
         (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters of it plus ``…``."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + "…"
    if isinstance(value, (bytes, bytearray)) and len(value) > limit:
        return repr(bytes(value[:limit])) + "…"
    r = repr(value) if not isinstance(value, (list, dict, tuple)) else _short_repr(value, limit)
    return r if len(r) <= limit + 2 else r[:limit] + "…"


def _short_repr(value: Any, limit: int) -> str:
    # a huge list or object is never rendered whole just to be cut
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)[: limit + 3]
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text


def decode(name: str | Path, data: bytes) -> str:
    """``data`` as text by the rule above; a ValidationError names the file, line and column."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            raise ValidationError(f"{name}: not valid UTF-8: the file is {enc} (it starts with a {enc} "
                                  "byte-order mark); re-save it as UTF-8.")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data, exc.start)
        raise ValidationError(f"{name} line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {col}); "
                              "re-save the file as UTF-8.") from None
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _line_col(text, nul)
        raise ValidationError(f"{name} line {line}: a NUL byte at column {col} (a binary file, or UTF-16 without a "
                              "byte-order mark?); re-save the file as UTF-8 text.")
    return text


def decode_part(name: str | Path, data: bytes, first_line: int, first: bool, problems: list[str]) -> str | None:
    """:func:`decode` of one chunk of a file (whole lines) that starts at line ``first_line``
    (``first``: the file's first chunk, where a byte-order mark may be); the problem names the
    line in the whole file."""
    try:
        return decode(name, data)
    except ValidationError as exc:
        msg = str(exc)
        prefix = f"{name} line "
        if not first or first_line != 1:
            if msg.startswith(prefix):
                n, _, rest = msg[len(prefix):].partition(":")
                if n.isdigit():
                    msg = f"{prefix}{int(n) + first_line - 1}:{rest}"
        problems.append(msg)
        return None


def decode_into(name: str | Path, data: bytes, problems: list[str]) -> str | None:
    """:func:`decode`, appending the problem instead of raising (importers that list every file's problems)."""
    try:
        return decode(name, data)
    except ValidationError as exc:
        problems.append(str(exc))
        return None


def read_file(path: str | Path, label: str | Path | None = None) -> bytes:
    """A file's bytes, every importer's one way to open its input: a missing file, a folder or
    an unreadable file is a ValidationError naming ``label`` (the path when not given: an
    upload passes its own name, not its temporary copy's path)."""
    p = Path(path)
    name = p if label is None else label
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{name}: no such file.") from None
    except IsADirectoryError:
        raise ValidationError(f"{name}: is a folder, not a file.") from None
    except OSError as exc:
        raise ValidationError(f"{name}: cannot be read ({exc.strerror or exc.__class__.__name__}).") from None


def read_text(path: str | Path, label: str | Path | None = None) -> str:
    """A file's text by the rule above (:func:`read_file`, then :func:`decode`)."""
    p = Path(path)
    name = p if label is None else label
    return decode(name, read_file(p, name))


def _line_col(data: bytes | str, pos: int) -> tuple[int, int]:
    if isinstance(data, bytes):  # a column in characters, as an editor shows it
        line = data.count(b"\n", 0, pos) + 1
        start = data.rfind(b"\n", 0, pos) + 1
        col = len(data[start:pos].decode("utf-8", errors="replace")) + 1
    else:
        line = data.count("\n", 0, pos) + 1
        start = data.rfind("\n", 0, pos) + 1
        col = pos - start + 1
    return line, col


# ---- numbers --------------------------------------------------------------------------------


class InputRuleError(ValueError):
    """JSON the importers' rule refuses though a JSON parser would take it (raised while
    parsing): the sentence says what, the caller adds the file and line."""


class NumberError(InputRuleError):
    """A number the rule refuses (raised while parsing one JSON line)."""


class DuplicateKeyError(InputRuleError):
    """An object naming one key twice. JSON parsers keep the last value in silence, so
    ``{"query_id": "q002", "query_id": "q003"}`` would be stored as q003 while a reader of the
    file (or another tool keeping the first) sees q002: refused instead (probe U5)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: the object, refusing a key named twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"the key {shown(key)} appears twice in one object; keep one")
        out[key] = value
    return out


def _refuse_constant(token: str) -> Any:
    raise NumberError(f"{token} is not a number this tool accepts (only finite numbers)")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise NumberError(f"the number {shown(token)} is out of range (it overflows to infinity)")
    return value


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > 19 or not -INT_LIMIT <= (value := int(token)) < INT_LIMIT:
        raise NumberError(f"the integer {shown(token)} is out of range (at most 19 digits, a 64-bit integer)")
    return value


def loads(line: str) -> Any:
    """``json.loads`` by the rule: NaN/Infinity, overflowing floats and huge integers raise
    :class:`NumberError`, a key named twice in one object :class:`DuplicateKeyError`; too deep
    nesting raises ``RecursionError``; bad syntax ``json.JSONDecodeError``."""
    return json.loads(line, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int,
                      object_pairs_hook=unique_keys)


def finite(value: Any) -> bool:
    """True for an int or float (not a bool) that is a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def parse_finite(raw: Any) -> float:
    """A number from text (a CSV cell): ValueError unless it is finite."""
    value = float(str(raw).strip())
    if not math.isfinite(value):
        raise ValueError(f"{shown(raw)} is not a finite number")
    return value
