"""Corpus drift (METHODOLOGY §3.8): when documents change, every quote placed on an older
text is re-resolved; quotes that moved get a new event, quotes that cannot be placed any
more are reported as broken, and freezing refuses while any is.

Labels remember the canonical sha256 of the text they were placed on, so "placed on an
older text" is a comparison, not a guess."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from golden_store.db.cursor import Cursor
from golden_store.live.evidence import EvidenceSpan, append_evidence_tx
from golden_store.corpus.resolver import DEFAULT_THRESHOLD, CorpusIndex, IndexedResolver, SpanResolver

if TYPE_CHECKING:
    from golden_store.corpus.index import CorpusSearchIndex

SYSTEM_ACTOR = "system:re-resolve"
_OVERLAY_MAX = 2000  # documents changed by an import that re-resolution reads from the transaction


@dataclass
class DriftReport:
    moved: list[dict] = field(default_factory=list)      # re-placed at a new position
    confirmed: list[dict] = field(default_factory=list)  # same position, new text around it
    broken: list[dict] = field(default_factory=list)     # cannot be placed: a person must act

    @property
    def checked(self) -> int:
        return len(self.moved) + len(self.confirmed) + len(self.broken)


_STALE_EVIDENCE = (
    "SELECT e.query_id, e.evidence_id, e.quote, e.doc_id, e.start, e.\"end\", e.rubric_version "
    "FROM current_evidence e SEMI JOIN queries q USING (query_id) "
    "LEFT JOIN documents d USING (doc_id) "
    "WHERE d.doc_id IS NULL OR (e.doc_sha256 IS NOT NULL AND e.doc_sha256 <> d.canonical_sha256) "
    "ORDER BY e.query_id, e.evidence_id"
)


def reresolve_tx(cur: Cursor, *, threshold: float = DEFAULT_THRESHOLD,
                 index: CorpusSearchIndex | None = None, changed: Sequence[str] = ()) -> DriftReport:
    """Re-place every current quote whose document text changed (inside the caller's
    transaction, so an import and its re-resolution land together or not at all).

    With ``index`` (the persisted index as it was before this transaction) the quotes are
    searched there, with the documents changed in this transaction (``changed``, up to
    ``_OVERLAY_MAX``, and those the stale quotes are on) read from the transaction instead;
    without it, an in-memory index of the whole corpus is built (small stores)."""
    report = DriftReport()
    stale = cur.execute(_STALE_EVIDENCE).fetchall()
    if not stale:
        return report

    def raw_of(doc_id: str) -> str:
        return cur.execute("SELECT raw_text FROM documents WHERE doc_id = ?", [doc_id]).fetchone()[0]

    resolver: SpanResolver | IndexedResolver
    if index is None:
        canon = dict(cur.execute("SELECT doc_id, canonical_text FROM documents").fetchall())
        resolver = SpanResolver(CorpusIndex(canon, raw_of), threshold)
        present = canon.__contains__
    else:
        ids = sorted({r[3] for r in stale if r[3] is not None} | set(list(changed)[:_OVERLAY_MAX]))
        overlay = dict(cur.execute("SELECT doc_id, canonical_text FROM documents WHERE doc_id IN (SELECT unnest(?))",
                                   [ids]).fetchall())
        resolver = IndexedResolver(index, raw_of, threshold, overlay=overlay)
        present = overlay.__contains__
    new_events: list[tuple[EvidenceSpan, int | None, str]] = []
    for qid, eid, quote, doc, start, end, rubric in stale:
        item = {"query_id": qid, "evidence_id": eid, "quote": quote, "doc_id": doc, "start": start, "end": end}
        res = resolver.resolve(quote, doc_id=doc) if present(doc) else None
        if res is None or not res.located:
            res_any = resolver.resolve(quote)  # the passage may have moved to another document
            res = res_any if res_any.located else (res or res_any)
        if not res.located:
            report.broken.append({**item, "status": res.status,
                                  "candidates": [c.as_dict() for c in res.candidates[:3]]})
            continue
        b = res.span
        where = {"new_doc_id": b.doc_id, "new_start": b.start, "new_end": b.end, "status": res.status}
        (report.confirmed if (b.doc_id, b.start, b.end) == (doc, start, end) else report.moved).append(
            {**item, **where})
        span = EvidenceSpan(qid, eid, quote, b.doc_id, b.start, b.end, b.canonical_start, b.canonical_end,
                            res.status, b.score)
        new_events.append((span, rubric, f"re-resolved after a corpus change (was {doc}[{start}:{end}])"))
    for span, rubric, note in new_events:
        append_evidence_tx(cur, [span], actor=SYSTEM_ACTOR, rubric_version=rubric, note=note)
    return report


def stale_grades_tx(cur: Cursor) -> list[tuple]:
    """Grades and lead decisions made on an earlier text of their document that still count:
    (query_id, doc_id, start, end, actor, question text, is a lead's decision).

    What counts is what decides the item's final grade: its latest lead decision
    (``adjudication_state``; an earlier decision a later one replaced decides nothing, so it
    no longer refuses a freeze once the lead decided again on the current text), and each
    annotator's current grade unless a lead's decision made on the current text settles the
    item (the final grade is then the lead's; issue 37 item 9: re-grading on the Freeze
    conflicts page is how a lead clears a grade someone else made on an earlier text, which
    only its author could otherwise retract)."""
    settled = ("EXISTS (SELECT 1 FROM adjudication_state a JOIN documents ad USING (doc_id) WHERE "
               "a.query_id = c.query_id AND a.doc_id = c.doc_id AND a.start = c.start AND a.\"end\" = c.\"end\" "
               "AND (a.doc_sha256 IS NULL OR a.doc_sha256 = ad.canonical_sha256))")
    return cur.execute(
        "SELECT g.query_id, g.doc_id, g.start, g.\"end\", g.actor, q.text, g.decision FROM ("
        " SELECT query_id, doc_id, start, \"end\", doc_sha256, actor, FALSE AS decision FROM current_grades c"
        f" WHERE NOT {settled}"
        " UNION ALL"
        " SELECT query_id, doc_id, start, \"end\", doc_sha256, actor, TRUE AS decision FROM adjudication_state"
        ") g JOIN queries q USING (query_id) JOIN documents d USING (doc_id)"
        " WHERE g.doc_sha256 IS NOT NULL AND g.doc_sha256 <> d.canonical_sha256"
        " ORDER BY 1, 2, 3, 4, 7, 5"
    ).fetchall()
