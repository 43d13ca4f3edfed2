"""Placing quotes on the corpus: exact location in canonical text, mapped back to raw offsets.

This is the exact-match step of quote -> span resolution (DESIGN "Quote -> span"); the
fuzzy step and the corpus index build on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from golden_store.canonical import CanonicalText, canonical_text


@dataclass(frozen=True)
class SpanMatch:
    doc_id: str
    start: int  # raw offsets: raw_text[start:end] is the matched passage
    end: int
    canonical_start: int
    canonical_end: int


def find_exact(doc_id: str, doc: CanonicalText, quote: str) -> list[SpanMatch]:
    """Every occurrence of the canonicalized ``quote`` in ``doc`` (non-overlapping starts
    are not required: overlapping repeats are all reported, as each is a distinct place)."""
    needle = canonical_text(quote)
    if not needle:
        return []
    out: list[SpanMatch] = []
    i = doc.text.find(needle)
    while i != -1:
        rs, re_ = doc.to_raw(i, i + len(needle))
        out.append(SpanMatch(doc_id, rs, re_, i, i + len(needle)))
        i = doc.text.find(needle, i + 1)
    return out
