"""Evidence events: a question's quotes placed on the corpus (append-only)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow


def new_evidence_id() -> str:
    """Studio-made ids, so two annotators' quotes for one question never collide."""
    return "e-" + uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class EvidenceSpan:
    query_id: str
    evidence_id: str
    quote: str
    doc_id: str
    start: int
    end: int
    canonical_start: int
    canonical_end: int
    match_kind: str  # exact | fuzzy | manual
    score: float
    doc_sha256: str | None = None


def append_evidence_tx(
    cur: Cursor, spans: Sequence[EvidenceSpan], *, actor: str,
    rubric_version: int | None = None, note: str | None = None,
) -> None:
    now = utcnow()
    cur.executemany(
        "INSERT INTO evidence_events (query_id, evidence_id, op, quote, doc_id, start, \"end\","
        " canonical_start, canonical_end, doc_sha256, match_kind, score, actor, created_at,"
        " rubric_version, note)"
        " VALUES (?, ?, 'set', ?, ?, ?, ?, ?, ?, coalesce(?, (SELECT canonical_sha256 FROM documents"
        " WHERE doc_id = ?)), ?, ?, ?, ?, ?, ?)",
        [
            [s.query_id, s.evidence_id, s.quote, s.doc_id, s.start, s.end, s.canonical_start,
             s.canonical_end, s.doc_sha256, s.doc_id, s.match_kind, s.score, actor, now,
             rubric_version, note]
            for s in spans
        ],
    )


def append_evidence(store: Store, spans: Sequence[EvidenceSpan], *, actor: str,
                    rubric_version: int | None = None, note: str | None = None) -> None:
    store.write(lambda cur: append_evidence_tx(cur, spans, actor=actor, rubric_version=rubric_version, note=note))


def retract_evidence(store: Store, query_id: str, evidence_id: str, *, actor: str, note: str | None = None) -> bool:
    """Append a retraction; False if there was no such current quote (nothing written)."""

    def run(cur: Cursor) -> bool:
        if not cur.execute(
            "SELECT 1 FROM current_evidence WHERE query_id = ? AND evidence_id = ?", [query_id, evidence_id]
        ).fetchone():
            return False
        cur.execute(
            "INSERT INTO evidence_events (query_id, evidence_id, op, actor, created_at, note)"
            " VALUES (?, ?, 'retract', ?, ?, ?)",
            [query_id, evidence_id, actor, utcnow(), note],
        )
        return True

    return store.write(run)


def evidence_queue(store: Store):
    """Answerable questions with their number of current quotes, those without first."""
    return store.df(
        "SELECT q.query_id, q.text, q.stratum, q.held_out, count(e.evidence_id) AS quotes "
        "FROM queries q LEFT JOIN current_evidence e USING (query_id) "
        "WHERE q.answerable GROUP BY ALL ORDER BY quotes > 0, q.query_id"
    )


def evidence_counts(store: Store, *, settled_only: bool = False) -> dict[str, int]:
    """Quotes, and answerable questions with a quote (Home's "n / answerable" bar: a quote on
    a question marked unanswerable, which the freeze refuses, counted there took the bar past 1
    and Home failed to render; issue 37 item 9); ``settled_only`` leaves out unsettled
    evidence-round questions (what an annotator may count without learning what a colleague
    quoted)."""
    view = "frozen_evidence" if settled_only else "current_evidence"
    n_spans, n_queries = store.read_row(
        f"SELECT count(*), count(DISTINCT e.query_id) FILTER (WHERE q.answerable) FROM {view} e "
        "JOIN queries q USING (query_id)"
    )
    return {"spans": int(n_spans), "queries_with_evidence": int(n_queries)}


_EVIDENCE_COLUMNS = ("evidence_id, quote, doc_id, start, \"end\", canonical_start, canonical_end, match_kind, score, "
                     "actor, author, created_at, note")


def list_evidence(store: Store, query_id: str) -> list[dict]:
    return store.read_dicts(
        f"SELECT {_EVIDENCE_COLUMNS} FROM current_evidence WHERE query_id = ? ORDER BY event_id", [query_id])


def list_evidence_for(store: Store, query_ids: Sequence[str]) -> dict[str, list[dict]]:
    """:func:`list_evidence` of several questions in one read (a queue of cards asks for a
    dozen: one statement instead of one per card, which on PostgreSQL is a round trip each)."""
    ids = sorted(set(query_ids))
    out: dict[str, list[dict]] = {q: [] for q in ids}
    if ids:
        for row in store.read_dicts(f"SELECT query_id, {_EVIDENCE_COLUMNS} FROM current_evidence "
                                    "WHERE query_id IN (SELECT unnest(?)) ORDER BY query_id, event_id", [ids]):
            out[row.pop("query_id")].append(row)
    return out


def evidence_history(store: Store, query_id: str):
    return store.df(
        "SELECT event_id, evidence_id, op, quote, doc_id, start, \"end\", match_kind, score, actor,"
        " created_at, note FROM evidence_events WHERE query_id = ? ORDER BY event_id",
        [query_id],
    )
