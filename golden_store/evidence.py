"""Evidence events: a question's quotes placed on the corpus (append-only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from golden_store.store import Store, utcnow


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


def append_evidence_tx(
    cur: duckdb.DuckDBPyConnection, spans: Sequence[EvidenceSpan], *, actor: str,
    rubric_version: int | None = None, note: str | None = None,
) -> None:
    now = utcnow()
    cur.executemany(
        "INSERT INTO evidence_events (query_id, evidence_id, op, quote, doc_id, start, \"end\","
        " canonical_start, canonical_end, match_kind, score, actor, created_at, rubric_version, note)"
        " VALUES (?, ?, 'set', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [s.query_id, s.evidence_id, s.quote, s.doc_id, s.start, s.end, s.canonical_start,
             s.canonical_end, s.match_kind, s.score, actor, now, rubric_version, note]
            for s in spans
        ],
    )


def evidence_counts(store: Store) -> dict[str, int]:
    n_spans, n_queries = store.read_one(
        "SELECT count(*), count(DISTINCT query_id) FROM current_evidence SEMI JOIN queries USING (query_id)"
    )
    return {"spans": int(n_spans), "queries_with_evidence": int(n_queries)}


def list_evidence(store: Store, query_id: str) -> list[dict]:
    return store.read_dicts(
        "SELECT evidence_id, quote, doc_id, start, \"end\", canonical_start, canonical_end, match_kind,"
        " score, actor, created_at FROM current_evidence WHERE query_id = ? ORDER BY evidence_id",
        [query_id],
    )
