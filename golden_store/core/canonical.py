"""One canonicalization for the whole studio, with an offset map back to the raw text.

Why one function: a quote is resolved against canonical text, a span is stored with raw
offsets, and a scorer compares spans from both. If import, resolution and scoring each
normalised text their own way, an offset computed by one would point at the wrong
characters in another. Everything goes through :func:`canonicalize`.

What it does, in order (order matters for idempotence, see the tests):

1. drops zero-width characters, the BOM, soft hyphens and word joiners;
2. joins words hyphenated across a line break (``"reim-\\nbursement"`` -> ``"reimbursement"``):
   a ``-`` or U+2010 right after a letter, then spaces or tabs, ``\\n`` or ``\\r\\n``, spaces
   or tabs and a letter. The hyphen, the break and the letters are looked for in the raw text
   (a character step 1 drops still stands between them and keeps the hyphen), and a "letter"
   is a word character other than a decimal digit (``²`` and ``½`` count; ``7`` does not);
3. applies Unicode NFKC per normalisation cluster (ligatures, full-width forms, ``…``);
4. folds curly quotes, primes and dash variants to ASCII ``'``, ``"`` and ``-``;
5. collapses every whitespace run to one space and trims both ends.

Every canonical character remembers the raw range ``[start, end)`` it came from, so a
canonical span maps back to the raw span that produced it.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

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
    raw_starts: Sequence[int]  # compact int arrays: 8 bytes per canonical character in all
    raw_ends: Sequence[int]
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


@dataclass(frozen=True)
class SpanMap:
    """Compact canonical -> raw offset map: one entry per run of characters, not per
    character. A run is either an identity run (canonical char i of the run comes from raw
    ``a + i``) or a block (every char of the run comes from raw ``[a, b)``). Same answers
    as :meth:`CanonicalText.to_raw`, at a fraction of the memory, so the resolver can keep
    one for every document."""

    seg_c: Sequence[int]
    seg_a: Sequence[int]
    seg_b: Sequence[int]  # -1 for an identity run
    length: int
    raw_length: int

    def _start(self, c: int) -> int:
        i = bisect.bisect_right(self.seg_c, c) - 1
        b = self.seg_b[i]
        return self.seg_a[i] + (c - self.seg_c[i]) if b < 0 else self.seg_a[i]

    def _end(self, c: int) -> int:
        i = bisect.bisect_right(self.seg_c, c) - 1
        b = self.seg_b[i]
        return self.seg_a[i] + (c - self.seg_c[i]) + 1 if b < 0 else b

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        if not 0 <= start <= end <= self.length:
            raise ValueError(f"canonical span [{start}, {end}) is outside the text (length {self.length})")
        if start == end:
            pos = self._start(start) if start < self.length else self.raw_length
            return pos, pos
        return self._start(start), self._end(end - 1)


def _acts_as_mark(ch: str) -> bool:
    """A combining mark, or a character of combining class 0 whose decomposition begins with
    one (Tibetan U+0F73, U+0F75, U+0F81, half-width kana voicing marks): NFKC reorders and
    composes marks across such a character as if it were a mark itself."""
    if unicodedata.combining(ch):
        return True
    return bool(unicodedata.decomposition(ch)) and bool(
        unicodedata.combining(unicodedata.normalize("NFKD", ch)[0])
    )


def _marks_end(text: str, i: int) -> int:
    """End of the run of mark-like characters starting at ``i`` (none is below U+0300)."""
    while i < len(text) and text[i] >= "\u0300" and _acts_as_mark(text[i]):
        i += 1
    return i


def _clusters(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into ranges that NFKC can normalise independently.

    A new cluster starts at a character with canonical combining class 0 unless it, with
    the marks after it, composes with what precedes it (Hangul jamo, some Indic vowel
    signs; in ``a\u0f73\u0323`` the dot below reaches back across U+0F73 to the ``a``).
    Checking composition directly keeps per-cluster NFKC equal to whole-string NFKC.
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
        nxt = text[i:_marks_end(text, i + 1)]  # ch and the marks NFKC may move across it
        if unicodedata.normalize("NFKC", prev + nxt) != unicodedata.normalize(
            "NFKC", prev
        ) + unicodedata.normalize("NFKC", nxt):
            continue
        bounds.append((start, i))
        start = i
    return bounds


# Tokens of the reduced text. "plain": printable ASCII words joined by single spaces, which
# canonicalization leaves unchanged (the fast path: most text is this); it never ends right
# before a non-ASCII character, which might combine with its last letter. "space": a
# whitespace run, never ending right before a non-ASCII character either (a combining mark
# after a space belongs to the space's cluster, as in the oracle). "other": one character plus the non-ASCII, non-space characters after it,
# normalised cluster by cluster.
_TOKEN = re.compile(
    r"(?P<plain>[!-~]+(?: [!-~]+)*(?![^\x00-\x7f]))|(?P<space>\s+(?![^\x00-\x7f]))"
    r"|(?P<other>.(?:(?!\s)[^\x00-\x7f])*)",
    re.DOTALL,
)
_REMOVE = re.compile("[" + "".join(sorted(_IGNORABLE)) + "]|" + _LINEBREAK_HYPHEN.pattern)


def _removals(raw: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_REMOVE` in ``raw``. Without an ignorable character they are
    :data:`_HYPHEN_FIRST`'s (the same spans: a hyphen after a letter, then the line break
    and a letter), which the regex engine finds by skipping from hyphen to hyphen instead
    of trying a lookbehind at every character."""
    return _REMOVE.finditer(raw) if _IGNORABLE_ANY.search(raw) else _HYPHEN_FIRST.finditer(raw)


def _reduce(raw: str) -> tuple[str, array | None]:
    """Drop ignorable characters and line-break hyphenation. Returns the reduced text and,
    if anything was dropped, the raw index of each reduced character (else None: identity)."""
    cuts = [(m.start(), m.end()) for m in _removals(raw)]
    if not cuts:
        return raw, None
    parts: list[str] = []
    keep = bytearray(b"\x01") * len(raw)  # 1: the raw character stays
    prev = 0
    for a, b in cuts:
        parts.append(raw[prev:a])
        keep[a:b] = bytes(b - a)
        prev = b
    parts.append(raw[prev:])
    # the kept raw indices, made in C (numpy) rather than one Python int at a time
    pos = array("i")
    pos.frombytes(np.flatnonzero(np.frombuffer(keep, np.uint8)).astype(np.intc).tobytes())
    return "".join(parts), pos


def _breaks(raw: str) -> list[int]:
    """Positions in the reduced text (see :func:`_reduce`) of the first character after each cut."""
    out, removed = [], 0
    for m in _removals(raw):
        removed += m.end() - m.start()
        out.append(m.end() - removed)
    return out


class _Segments:
    """Builder of a :class:`SpanMap` (consecutive identical blocks merge)."""

    def __init__(self) -> None:
        self.c, self.a, self.b = array("i"), array("i"), array("i")

    def identity(self, c: int, a: int, n: int) -> None:
        if self.c and self.b[-1] < 0 and self.a[-1] + (c - self.c[-1]) == a:
            return  # continues the previous identity run
        self.c.append(c)
        self.a.append(a)
        self.b.append(-1)

    def block(self, c: int, a: int, b: int) -> None:
        if self.c and self.b[-1] == b and self.a[-1] == a:
            return
        self.c.append(c)
        self.a.append(a)
        self.b.append(b)


def _canonical(raw: str, mode: str) -> tuple[str, array, array, _Segments | None]:
    """mode: "text" (no map), "chars" (a raw range per character) or "segments" (SpanMap)."""
    reduced, kept = _reduce(raw)
    # reduced positions right after a cut (where kept[i] stops being kept[i - 1] + 1)
    breaks = _breaks(raw) if kept is not None and mode == "segments" else []
    out: list[str] = []
    chars = mode == "chars"
    segs = _Segments() if mode == "segments" else None
    starts, ends = array("i"), array("i")
    pending: tuple[int, int] | None = None  # raw range of a whitespace run not yet emitted
    n_out = 0  # characters emitted so far (leading whitespace is trimmed)

    def raw_of(i: int) -> int:
        return kept[i] if kept is not None else i

    def block(a: int, b: int) -> None:
        if chars:
            starts.append(a)
            ends.append(b)
        elif segs is not None:
            segs.block(n_out, a, b)

    def flush_space() -> None:
        nonlocal pending, n_out
        if pending is not None:
            if n_out:
                block(pending[0], pending[1])
                out.append(" ")
                n_out += 1
            pending = None

    for m in _TOKEN.finditer(reduced):
        a, b = m.span()
        kind = m.lastgroup
        if kind == "space":
            ra, rb = raw_of(a), raw_of(b - 1) + 1
            pending = (ra, rb) if pending is None else (pending[0], rb)
            continue
        if kind == "plain":
            flush_space()
            if chars:
                if kept is None:
                    starts.extend(range(a, b))
                    ends.extend(range(a + 1, b + 1))
                else:
                    seg = kept[a:b]
                    starts.extend(seg)
                    ends.extend(p + 1 for p in seg)
            elif segs is not None:
                if kept is None:
                    segs.identity(n_out, a, b - a)
                else:  # one identity run per stretch between two cuts, not per character
                    i = a
                    for j in breaks[bisect.bisect_right(breaks, a):bisect.bisect_left(breaks, b)] + [b]:
                        segs.identity(n_out + i - a, kept[i], j - i)
                        i = j
            out.append(m.group())
            n_out += b - a
            continue
        token = m.group()
        for c_start, c_end in _clusters(token):
            piece = token[c_start:c_end]
            ra, rb = raw_of(a + c_start), raw_of(a + c_end - 1) + 1
            normalised = piece if piece.isascii() else unicodedata.normalize("NFKC", piece)
            for ch in normalised:
                if ch in _IGNORABLE:
                    continue
                if ch.isspace():
                    pending = (ra, rb) if pending is None else (pending[0], rb)
                    continue
                flush_space()
                block(ra, rb)
                out.append(_FOLD.get(ch, ch))
                n_out += 1
    # trailing whitespace is trimmed: a pending run is simply not emitted
    return "".join(out), starts, ends, segs


def canonicalize(raw: str) -> CanonicalText:
    """Canonicalize ``raw`` and keep the offset map. See the module docstring for the rules."""
    text, starts, ends, _ = _canonical(raw, "chars")
    return CanonicalText(text, starts, ends, len(raw))


def canonicalize_compact(raw: str) -> tuple[str, SpanMap]:
    """Canonical text and a compact :class:`SpanMap` (for indexing whole corpora)."""
    text, _, _, segs = _canonical(raw, "segments")
    assert segs is not None  # "segments" mode always returns them
    return text, SpanMap(segs.c, segs.a, segs.b, len(text), len(raw))


_IGNORABLE_ANY = re.compile("[" + "".join(sorted(_IGNORABLE)) + "]")
# _LINEBREAK_HYPHEN with the letter check moved after the hyphen, so the regex engine can
# skip ahead to the next hyphen instead of trying a lookbehind at every character.
_HYPHEN_FIRST = re.compile(r"[-\u2010](?<=[^\W\d_][-\u2010])([ \t]*\r?\n[ \t]*)(?=[^\W\d_])")
_FOLDABLE = re.compile("[" + "".join(sorted(_FOLD)) + "]")


def canonical_text(raw: str) -> str:
    """Just the canonical string (same rules as :func:`canonicalize`, no offset map).

    Whole-string passes that run in C (regex scans, ``unicodedata.normalize``,
    ``str.split``) instead of the token loop: several times faster, and this is what
    import, verify and every quote go through. It gives exactly the token loop's text
    because the clusters that loop normalises one by one are the ones NFKC treats
    independently anyway (tests/golden_store/test_canonical.py checks it against the
    per-character oracle)."""
    if _IGNORABLE_ANY.search(raw):
        text = _REMOVE.sub("", raw)  # one pass: an ignorable may sit between letter and hyphen
    else:
        text = _HYPHEN_FIRST.sub("", raw)
    if not text.isascii():  # ASCII is NFKC-invariant and nothing in it folds
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
            if _IGNORABLE_ANY.search(text):
                text = _IGNORABLE_ANY.sub("", text)
        text = _FOLDABLE.sub(lambda m: _FOLD[m.group()], text)
    return " ".join(text.split())
