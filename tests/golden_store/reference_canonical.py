"""The first, character-by-character canonicalize(): kept as a test oracle for the fast one.

Why one function: a quote is resolved against canonical text, a span is stored with raw
offsets, and a scorer compares spans from both. If import, resolution and scoring each
normalised text their own way, an offset computed by one would point at the wrong
characters in another. Everything goes through :func:`canonicalize`.

What it does, in order (order matters for idempotence, see the tests):

1. drops zero-width characters, the BOM, soft hyphens and word joiners;
2. joins words hyphenated across a line break (``"reim-\\nbursement"`` -> ``"reimbursement"``);
3. applies Unicode NFKC per normalisation cluster (ligatures, full-width forms, ``…``);
4. folds curly quotes, primes and dash variants to ASCII ``'``, ``"`` and ``-``;
5. collapses every whitespace run to one space and trims both ends.

Every canonical character remembers the raw range ``[start, end)`` it came from, so a
canonical span maps back to the raw span that produced it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["CanonicalText", "canonicalize", "canonical_text"]

# Characters that carry no content: zero-width space/joiners, word joiner, BOM, soft hyphen,
# invisible operators and the Mongolian vowel separator.
_IGNORABLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064")

_FOLD = {
    # single quotes, primes and look-alikes
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u2035": "'",
    "\u02bc": "'",
    # double quotes
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u2036": '"',
    "\u00ab": '"', "\u00bb": '"',
    # hyphens and dashes, minus sign
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
}

# A hyphen at the end of a line between two letters: "reim-\n   bursement".
_LINEBREAK_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010]([ \t]*\r?\n[ \t]*)(?=[^\W\d_])")


@dataclass(frozen=True)
class CanonicalText:
    """Canonical text plus, for each canonical character, its raw source range."""

    text: str
    raw_starts: tuple[int, ...]
    raw_ends: tuple[int, ...]
    raw_length: int

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        """Map a canonical span ``[start, end)`` to the raw span that produced it.

        An empty span maps to an empty raw span at the matching position.
        """
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(
                f"canonical span [{start}, {end}) is outside the text (length {len(self.text)})"
            )
        if start == end:
            pos = self.raw_starts[start] if start < len(self.text) else self.raw_length
            return pos, pos
        return self.raw_starts[start], self.raw_ends[end - 1]

    def to_canonical(self, raw_start: int, raw_end: int) -> tuple[int, int]:
        """Smallest canonical span whose characters come from inside ``[raw_start, raw_end)``
        or overlap it. Used to place a raw-offset span (e.g. from a run file) on the
        canonical text."""
        import bisect

        if not 0 <= raw_start <= raw_end <= self.raw_length:
            raise ValueError(
                f"raw span [{raw_start}, {raw_end}) is outside the document (length {self.raw_length})"
            )
        # first canonical char whose raw range ends after raw_start
        lo = bisect.bisect_right(self.raw_ends, raw_start)
        # first canonical char whose raw range starts at or after raw_end
        hi = bisect.bisect_left(self.raw_starts, raw_end)
        return lo, max(lo, hi)


def _clusters(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into ranges that NFKC can normalise independently.

    A new cluster starts at a character with canonical combining class 0 unless it
    composes with what precedes it (Hangul jamo, some Indic vowel signs). Checking
    composition directly keeps per-cluster NFKC equal to whole-string NFKC.
    """
    bounds: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    for i in range(1, n + 1):
        if i == n:
            bounds.append((start, n))
            break
        ch = text[i]
        if ch < "\u0300":  # Latin-1 and below: never combining, never composes with what precedes
            bounds.append((start, i))
            start = i
            continue
        if unicodedata.combining(ch):
            continue
        prev = text[start:i]
        if unicodedata.normalize("NFKC", prev + ch) != unicodedata.normalize(
            "NFKC", prev
        ) + unicodedata.normalize("NFKC", ch):
            continue
        bounds.append((start, i))
        start = i
    return bounds


def canonicalize(raw: str) -> CanonicalText:
    """Canonicalize ``raw`` and keep the offset map. See the module docstring for the rules."""
    # Step 1 + 2 produce a reduced string with, for every kept character, its raw index.
    # Line-break hyphens and the line break after them are dropped here.
    drop: set[int] = set()
    for m in _LINEBREAK_HYPHEN.finditer(raw):
        drop.update(range(m.start(), m.end()))
    kept_chars: list[str] = []
    kept_pos: list[int] = []
    for i, ch in enumerate(raw):
        if ch in _IGNORABLE or i in drop:
            continue
        kept_chars.append(ch)
        kept_pos.append(i)
    reduced = "".join(kept_chars)

    starts: list[int] = []
    ends: list[int] = []
    out: list[str] = []
    pending_space: tuple[int, int] | None = None  # raw range of a whitespace run not yet emitted

    def emit(ch: str, a: int, b: int) -> None:
        nonlocal pending_space
        if ch.isspace():
            if pending_space is None:
                pending_space = (a, b)
            else:
                pending_space = (pending_space[0], b)
            return
        if pending_space is not None:
            if out:  # leading whitespace is trimmed
                out.append(" ")
                starts.append(pending_space[0])
                ends.append(pending_space[1])
            pending_space = None
        out.append(ch)
        starts.append(a)
        ends.append(b)

    for c_start, c_end in _clusters(reduced):
        piece = reduced[c_start:c_end]
        raw_a = kept_pos[c_start]
        raw_b = kept_pos[c_end - 1] + 1
        if piece.isascii():
            normalised = piece
        else:
            normalised = unicodedata.normalize("NFKC", piece)
        for ch in normalised:
            if ch in _IGNORABLE:
                continue
            emit(_FOLD.get(ch, ch), raw_a, raw_b)
    # trailing whitespace is trimmed: pending_space is simply not emitted
    return CanonicalText("".join(out), tuple(starts), tuple(ends), len(raw))


def canonical_text(raw: str) -> str:
    """Just the canonical string (same rules as :func:`canonicalize`)."""
    return canonicalize(raw).text
