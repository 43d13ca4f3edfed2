"""What a system's answer rested on (its contexts) and what it cited (its citations), the SQL
side. Written with the answers, in their transaction (:func:`golden_store.live.nuggets.store_answers`).

A citation is valid when it resolves to a real span of the corpus, decided here once, at
import, against the documents as they are then:

* with offsets: the document exists and ``0 <= start < end <= len(text)``; with a quote too,
  the quote is the text at those offsets (compared as canonical text, so spacing and Unicode
  forms do not matter);
* with a quote only: the quote is found in the document (canonical text);
* with neither: the document exists (a document-level citation, counted as such).

Why at import and kept: validity is a deterministic fact about the answer and the corpus,
the CI gate for made-up citations; re-deciding it on every read would let a later corpus
change silently turn yesterday's failure into a pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from golden_store.core.canonical import canonical_text
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store


@dataclass(frozen=True)
class Context:
    """A passage the answer was generated from: a corpus span, or text."""

    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    text: str | None = None


@dataclass(frozen=True)
class Cited:
    """One citation as the system gave it."""

    doc_id: str
    start: int | None = None
    end: int | None = None
    quote: str | None = None
    claim: str | None = None


def check(c: Cited, raw: str | None) -> str | None:
    """Why the citation does not resolve to a real span of ``raw`` (its document's text as
    imported; None when the document is not in the corpus), or None when it does."""
    if raw is None:
        return f"no document {c.doc_id!r} in the corpus"
    if (c.start is None) != (c.end is None):
        return "a span needs both start and end"
    if c.start is not None and c.end is not None:
        if not 0 <= c.start < c.end <= len(raw):
            return f"span {c.start}-{c.end} is outside the document (0-{len(raw)})"
        if c.quote is not None and canonical_text(raw[c.start:c.end]) != canonical_text(c.quote):
            return "the quote is not the text at that span"
        return None
    if c.quote is not None and canonical_text(c.quote) not in canonical_text(raw):
        return "the quote is not in the document"
    return None


def write_tx(cur: Cursor, system: str, contexts: Mapping[str, Sequence[Context]],
             citations: Mapping[str, Sequence[Cited]]) -> None:
    """Replace the system's contexts and citations with these (per query id), each citation
    checked against the corpus now."""
    cur.execute("DELETE FROM answer_contexts WHERE system = ?", [system])
    cur.execute("DELETE FROM answer_citations WHERE system = ?", [system])
    context_rows = [(system, q, i, c.doc_id, c.start, c.end, c.text) for q, cs in sorted(contexts.items())
                    for i, c in enumerate(cs)]
    if context_rows:  # DuckDB's executemany refuses an empty list
        cur.executemany("INSERT INTO answer_contexts (system, query_id, ordinal, doc_id, start, \"end\", text) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", context_rows)
    docs = sorted({c.doc_id for cs in citations.values() for c in cs})
    raw = dict(cur.execute("SELECT doc_id, raw_text FROM documents WHERE doc_id IN (SELECT unnest(?))",
                           [docs]).fetchall()) if docs else {}
    rows = []
    for q, cs in sorted(citations.items()):
        for i, c in enumerate(cs):
            problem = check(c, raw.get(c.doc_id))
            rows.append((system, q, i, c.doc_id, c.start, c.end, c.quote, c.claim, problem is None, problem))
    if rows:
        cur.executemany(
            "INSERT INTO answer_citations (system, query_id, ordinal, doc_id, start, \"end\", quote, claim, valid, "
            "problem) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def citations(store: Store, system: str | None = None) -> list[dict]:
    """Every citation of live questions' answers, with its validity and problem."""
    return store.read_dicts(
        "SELECT c.system, c.query_id, c.ordinal, c.doc_id, c.start, c.\"end\", c.quote, c.claim, c.valid, c.problem "
        "FROM answer_citations c SEMI JOIN queries q USING (query_id) WHERE ? IS NULL OR c.system = ? "
        "ORDER BY c.system, c.query_id, c.ordinal", [system, system])


def contexts(store: Store, system: str, query_id: str) -> list[str]:
    """The passages one answer was generated from, as text (a span read from its document; a
    context naming only a document is the whole document)."""
    rows = store.read(
        "SELECT x.text, CASE WHEN x.start IS NULL THEN d.raw_text ELSE substr(d.raw_text, x.start + 1, "
        "x.\"end\" - x.start) END FROM answer_contexts x "
        "LEFT JOIN documents d ON d.doc_id = x.doc_id WHERE x.system = ? AND x.query_id = ? ORDER BY x.ordinal",
        [system, query_id])
    return [t if t is not None else (span or "") for t, span in rows]
