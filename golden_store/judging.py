"""Pooled judging, the SQL side: each annotator's queue over the pool (in an order of their
own, so position effects average out across annotators), grade events, recent judgments.
Nothing here reads pool_sources: which system retrieved an item never reaches a judge."""

from __future__ import annotations

import duckdb

from golden_store.errors import ValidationError
from golden_store.store import Store, utcnow

OPS = ("grade", "skip", "unsure")

# An item is done for an annotator once their latest event on it is a grade, skip or unsure.
_DONE = (
    "SELECT query_id, doc_id, start, \"end\" FROM ("
    " SELECT *, row_number() OVER (PARTITION BY query_id, doc_id, start, \"end\" ORDER BY event_id DESC) AS rn"
    " FROM grade_events WHERE actor = ? AND op IN ('grade', 'skip', 'unsure', 'retract')"
    ") WHERE rn = 1 AND op <> 'retract'"
)


def next_items(store: Store, actor: str, limit: int = 1) -> list[dict]:
    """The annotator's next pool items, in their own pseudo-random order (stable: a
    session resumes where it stopped)."""
    return store.read_dicts(
        "SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.text AS query_text "
        "FROM pool_items p JOIN queries q USING (query_id) "
        f"ANTI JOIN ({_DONE}) d USING (query_id, doc_id, start, \"end\") "
        "ORDER BY hash(? || '\x1f' || p.query_id || '\x1f' || p.doc_id || '\x1f' || p.start || '\x1f' || p.\"end\") "
        "LIMIT ?",
        [actor, actor, limit],
    )


def progress(store: Store, actor: str) -> tuple[int, int]:
    total = store.read_one("SELECT count(*) FROM pool_items SEMI JOIN queries USING (query_id)")[0]
    done = store.read_one(f"SELECT count(*) FROM ({_DONE}) SEMI JOIN pool_items USING (query_id, doc_id, start, \"end\")",
                          [actor])[0]
    return int(done), int(total)


def record(store: Store, actor: str, query_id: str, doc_id: str, start: int, end: int, *, op: str,
           grade: int | None = None, note: str | None = None, rubric_version: int | None = None) -> None:
    """Append one judging event (a correction is just a later event)."""
    if op not in OPS:
        raise ValidationError(f"Unknown judging action {op!r}.")
    if op == "grade" and grade not in (0, 1, 2, 3):
        raise ValidationError("A grade is 0, 1, 2 or 3.")

    def tx(cur: duckdb.DuckDBPyConnection) -> None:
        sha = cur.execute("SELECT canonical_sha256 FROM documents WHERE doc_id = ?", [doc_id]).fetchone()
        if sha is None:
            raise ValidationError(f"Document {doc_id!r} is not in the corpus.")
        cur.execute(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at,"
            " rubric_version, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [query_id, doc_id, start, end, sha[0], op, grade if op == "grade" else None, actor, utcnow(),
             rubric_version, note or None])

    store.write(tx)


def recent(store: Store, actor: str, n: int = 10) -> list[dict]:
    return store.read_dicts(
        "SELECT e.event_id, e.query_id, e.doc_id, e.start, e.\"end\", e.op, e.grade, e.note, e.created_at "
        "FROM grade_events e WHERE actor = ? AND op IN ('grade', 'skip', 'unsure') "
        "ORDER BY event_id DESC LIMIT ?", [actor, n])
