"""An independent, deliberately plain canonicalization, used only to test the product's.

Written from the rules (DESIGN.md "Corpus and canonicalization" and the product module's
docstring), not from the product's code: it shares no table, regex or helper with
``golden_store.core.canonical``, so a mistake in one is not silently repeated in the other.
It is slow on purpose (a list of characters, one rule after another, quadratic cluster
checks): each step can be read against its rule.

The rules, in order:

1. drop the characters that carry no content (zero-width space and joiners, word joiner,
   BOM, soft hyphen, invisible operators, Mongolian vowel separator);
2. join a word hyphenated across a line break: a hyphen (``-`` or U+2010) right after a
   letter, then spaces or tabs, a line break (``\\n`` or ``\\r\\n``), spaces or tabs, then a
   letter: the hyphen and the line break go. Letters and hyphens are looked at in the raw
   text as it stands (a character dropped by rule 1 still stands between them);
3. Unicode NFKC, one normalisation cluster at a time (a cluster is a starter and what NFKC
   joins to it), so every output character comes from one cluster of raw characters;
4. fold curly quotes, primes and dashes to ASCII ``'``, ``"`` and ``-``;
5. every run of whitespace becomes one space; leading and trailing whitespace goes.

The offset map: each canonical character remembers the raw range ``[start, end)`` it came
from: the raw characters of its cluster (for a collapsed space: from the first to the last
raw character of the run).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Rule 1, by Unicode name so the list can be checked against the rule's words.
NO_CONTENT = frozenset(
    unicodedata.lookup(name)
    for name in (
        "ZERO WIDTH SPACE",
        "ZERO WIDTH NON-JOINER",
        "ZERO WIDTH JOINER",
        "WORD JOINER",
        "ZERO WIDTH NO-BREAK SPACE",  # the BOM
        "SOFT HYPHEN",
        "MONGOLIAN VOWEL SEPARATOR",
        "FUNCTION APPLICATION",
        "INVISIBLE TIMES",
        "INVISIBLE SEPARATOR",
        "INVISIBLE PLUS",
    )
)

# Rule 2: the hyphens a word can be split with.
LINE_HYPHENS = frozenset({"-", unicodedata.lookup("HYPHEN")})

# Rule 4, by Unicode name.
_FOLDED_TO = {
    "'": (
        "LEFT SINGLE QUOTATION MARK",
        "RIGHT SINGLE QUOTATION MARK",
        "SINGLE LOW-9 QUOTATION MARK",
        "SINGLE HIGH-REVERSED-9 QUOTATION MARK",
        "PRIME",
        "REVERSED PRIME",
        "MODIFIER LETTER APOSTROPHE",
    ),
    '"': (
        "LEFT DOUBLE QUOTATION MARK",
        "RIGHT DOUBLE QUOTATION MARK",
        "DOUBLE LOW-9 QUOTATION MARK",
        "DOUBLE HIGH-REVERSED-9 QUOTATION MARK",
        "DOUBLE PRIME",
        "REVERSED DOUBLE PRIME",
        "LEFT-POINTING DOUBLE ANGLE QUOTATION MARK",
        "RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK",
    ),
    "-": (
        "HYPHEN",
        "NON-BREAKING HYPHEN",
        "FIGURE DASH",
        "EN DASH",
        "EM DASH",
        "HORIZONTAL BAR",
        "MINUS SIGN",
        "SMALL EM DASH",
        "SMALL HYPHEN-MINUS",
        "FULLWIDTH HYPHEN-MINUS",
    ),
}
FOLD = {unicodedata.lookup(name): ascii_ for ascii_, names in _FOLDED_TO.items() for name in names}


@dataclass(frozen=True)
class Char:
    """One character on its way through the rules, with the raw range it came from."""

    ch: str
    start: int
    end: int


@dataclass(frozen=True)
class Reference:
    """The reference's answer: canonical text and one raw range per canonical character."""

    text: str
    raw_starts: list[int]
    raw_ends: list[int]

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        """The raw span covering the characters of a non-empty canonical span."""
        return min(self.raw_starts[start:end]), max(self.raw_ends[start:end])

    def overlapping(self, raw_start: int, raw_end: int) -> tuple[int, int] | None:
        """The canonical span of every character whose raw range overlaps the raw span."""
        hits = [
            i
            for i, (a, b) in enumerate(zip(self.raw_starts, self.raw_ends))
            if a < raw_end and b > raw_start
        ]
        return (min(hits), max(hits) + 1) if hits else None


def drop_no_content(raw: str) -> list[Char]:
    """Rule 1."""
    return [Char(ch, i, i + 1) for i, ch in enumerate(raw) if ch not in NO_CONTENT]


def is_letter(ch: str) -> bool:
    """A letter for rule 2, as the product defines it: a word character that is not a
    decimal digit (so a hyphen after a page number stays). Numeric characters that are not
    decimal digits, such as ``²`` or ``½``, count as letters here."""
    return ch.isalnum() and not ch.isdecimal()


def _line_break_then_letter(raw: str, i: int) -> int | None:
    """If ``raw[i:]`` is spaces/tabs, a line break, spaces/tabs and then a letter, the index
    of that letter; else None."""
    while i < len(raw) and raw[i] in " \t":
        i += 1
    if raw.startswith("\r\n", i):
        i += 2
    elif raw.startswith("\n", i):
        i += 1
    else:
        return None
    while i < len(raw) and raw[i] in " \t":
        i += 1
    return i if i < len(raw) and is_letter(raw[i]) else None


def join_line_break_hyphens(raw: str, chars: list[Char]) -> list[Char]:
    """Rule 2: drop every hyphen that splits a word across a line break, and the break."""
    dropped: set[int] = set()
    i = 1
    while i < len(raw):
        letter_at = _line_break_then_letter(raw, i + 1) if raw[i] in LINE_HYPHENS else None
        if letter_at is not None and is_letter(raw[i - 1]):
            dropped.update(range(i, letter_at))
            i = letter_at
        i += 1
    return [c for c in chars if c.start not in dropped]


def nfkc(chars: list[Char]) -> str:
    return unicodedata.normalize("NFKC", "".join(c.ch for c in chars))


def clusters(chars: list[Char]) -> list[list[Char]]:
    """Rule 3's clusters. A cluster starts at a character of combining class 0 where cutting
    the text changes nothing NFKC makes of it: NFKC(before) + NFKC(after) == NFKC(all).
    Checked against the whole text at every position: slow and plainly right."""
    whole = nfkc(chars)
    out: list[list[Char]] = []
    for k, c in enumerate(chars):
        is_cut = unicodedata.combining(c.ch) == 0 and nfkc(chars[:k]) + nfkc(chars[k:]) == whole
        if out and not is_cut:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def normalise(chars: list[Char]) -> list[Char]:
    """Rules 3 and 4: every output character of a cluster comes from the whole cluster."""
    out: list[Char] = []
    for cluster in clusters(chars):
        start, end = cluster[0].start, cluster[-1].end
        out.extend(Char(FOLD.get(ch, ch), start, end) for ch in nfkc(cluster) if ch not in NO_CONTENT)
    return out


def collapse_whitespace(chars: list[Char]) -> list[Char]:
    """Rule 5: a run of whitespace becomes one space spanning the run's raw range."""
    out: list[Char] = []
    run: list[Char] = []
    for c in chars:
        if c.ch.isspace():
            run.append(c)
            continue
        if run and out:
            out.append(Char(" ", run[0].start, run[-1].end))
        run = []
        out.append(c)
    return out


def canonicalize(raw: str) -> Reference:
    """The five rules, one after the other."""
    chars = collapse_whitespace(normalise(join_line_break_hyphens(raw, drop_no_content(raw))))
    return Reference(
        "".join(c.ch for c in chars), [c.start for c in chars], [c.end for c in chars]
    )
