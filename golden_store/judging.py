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


# The items in an annotator's queue: those a round assigned to them, plus those no round
# assigned to anybody (the single-annotator case). `mine_first` orders assigned items first,
# by the round that gave them out. Parameters: actor, actor.
_SCOPE = (
    "SELECT p.query_id, p.doc_id, p.start, p.\"end\", a.first_round FROM pool_items p "
    "LEFT JOIN (SELECT query_id, doc_id, start, \"end\", bool_or(ra.annotator = ?) AS mine, "
    "  min(r.created_at) FILTER (WHERE ra.annotator = ?) AS first_round "
    "  FROM round_assignments ra JOIN rounds r USING (round_id) GROUP BY ALL) a "
    "USING (query_id, doc_id, start, \"end\") WHERE a.mine IS NULL OR a.mine"
)


def next_items(store: Store, actor: str, limit: int = 1) -> list[dict]:
    """The annotator's next items: first what rounds assigned to them (oldest round first),
    then unassigned pool items, each in the annotator's own pseudo-random order (stable, so
    a session resumes where it stopped). Another annotator's assigned items never appear."""
    return store.read_dicts(
        "SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.text AS query_text "
        f"FROM ({_SCOPE}) p JOIN queries q USING (query_id) "
        f"ANTI JOIN ({_DONE}) d USING (query_id, doc_id, start, \"end\") "
        "ORDER BY p.first_round NULLS LAST, "
        "hash(? || '\x1f' || p.query_id || '\x1f' || p.doc_id || '\x1f' || p.start || '\x1f' || p.\"end\") "
        "LIMIT ?",
        [actor, actor, actor, actor, limit],
    )


def progress(store: Store, actor: str) -> tuple[int, int]:
    """(done, total) over the annotator's own queue."""
    total = store.read_one(f"SELECT count(*) FROM ({_SCOPE}) SEMI JOIN queries USING (query_id)", [actor, actor])[0]
    done = store.read_one(f"SELECT count(*) FROM ({_DONE}) SEMI JOIN ({_SCOPE}) s USING (query_id, doc_id, start, "
                          "\"end\") SEMI JOIN queries USING (query_id)", [actor, actor, actor])[0]
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
        # the round that gave this item to this annotator (the latest, if several did)
        rnd = cur.execute(
            "SELECT ra.round_id FROM round_assignments ra JOIN rounds r USING (round_id) WHERE ra.annotator = ? "
            "AND ra.query_id = ? AND ra.doc_id = ? AND ra.start = ? AND ra.\"end\" = ? "
            "ORDER BY r.created_at DESC LIMIT 1", [actor, query_id, doc_id, start, end]).fetchone()
        cur.execute(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at,"
            " rubric_version, round_id, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [query_id, doc_id, start, end, sha[0], op, grade if op == "grade" else None, actor, utcnow(),
             rubric_version, rnd[0] if rnd else None, note or None])

    store.write(tx)


def recent(store: Store, actor: str, n: int = 10) -> list[dict]:
    return store.read_dicts(
        "SELECT e.event_id, e.query_id, e.doc_id, e.start, e.\"end\", e.op, e.grade, e.note, e.created_at "
        "FROM grade_events e WHERE actor = ? AND op IN ('grade', 'skip', 'unsure') "
        "ORDER BY event_id DESC LIMIT ?", [actor, n])


def pool_counts(store: Store) -> dict[str, int]:
    """Workflow counts for the home page (numbers only, nobody's labels): pool size, items
    with at least one grade, items graded by two or more, disagreements waiting, rounds."""
    row = store.read_one(
        "WITH g AS (SELECT query_id, doc_id, start, \"end\", count(*) AS n FROM current_grades GROUP BY ALL) "
        "SELECT (SELECT count(*) FROM pool_items SEMI JOIN queries USING (query_id)), "
        "(SELECT count(*) FROM pool_items p SEMI JOIN g USING (query_id, doc_id, start, \"end\")), "
        "(SELECT count(*) FROM g WHERE n >= 2), "
        "(SELECT count(*) FROM pending_grades SEMI JOIN queries USING (query_id)), "
        "(SELECT count(*) FROM rounds)")
    keys = ("pool_items", "pool_graded", "double_graded", "pending", "rounds")
    return {k: int(v) for k, v in zip(keys, row)}
