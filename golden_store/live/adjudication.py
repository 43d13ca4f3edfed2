"""Adjudication, the SQL side (METHODOLOGY §3.7 step 3): the queue of graded items the
annotators disagree on, each annotator's label on an item, the lead's decision (an
``adjudicate`` grade event with its rationale, optionally with a rubric clarification in the
same transaction), and the history of decisions."""

from __future__ import annotations

from golden_store.db.cursor import Cursor
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import grade_state
from golden_store.live.rubric import add_rubric_version_tx

CLARIFICATIONS_HEADING = "## Clarifications from adjudication"


# Disagreements nobody decided, with each item's label count and first/last label time, read
# from the per-item grading state (migration 13) that follows every grade event: the queue's
# count, strata and one page read the items' rows, no aggregation over the labels.
_PENDING = (
    "WITH p AS (SELECT i.query_id, i.doc_id, i.start, i.\"end\", i.n_graded AS n_annotators, "
    "i.first_graded_at AS first_label_at, i.last_graded_at AS last_label_at, q.stratum, q.text AS query_text "
    "FROM grade_item_state i JOIN queries q USING (query_id) WHERE i.n_distinct > 1 "
    "AND NOT EXISTS (SELECT 1 FROM adjudication_state a WHERE a.query_id = i.query_id AND a.doc_id = i.doc_id "
    "AND a.start = i.start AND a.\"end\" = i.\"end\") "
    "AND (?::VARCHAR IS NULL OR q.stratum = ?)) ")


def queue(store: Store, stratum: str | None = None, *, limit: int | None = None, offset: int = 0) -> list[dict]:
    """Disagreements nobody has adjudicated, by stratum then age (oldest first); ``limit``
    and ``offset`` page through it in SQL (a team's queue holds tens of thousands)."""
    return store.read_dicts(
        _PENDING + "SELECT query_id, doc_id, start, \"end\", stratum, query_text, n_annotators, first_label_at, "
        "last_label_at FROM p ORDER BY stratum, first_label_at, query_id, doc_id, start LIMIT ? OFFSET ?",
        [stratum, stratum, limit, offset])


def pending_by_stratum(store: Store) -> dict[str, int]:
    """How many disagreements wait in each stratum (the queue's size without its rows)."""
    return dict(store.read(_PENDING + "SELECT stratum, count(*) FROM p GROUP BY stratum ORDER BY stratum",
                           [None, None]))


def labels(store: Store, query_id: str, doc_id: str, start: int, end: int) -> list[dict]:
    """Each annotator's current label on one item: grade, note, time, rubric version, round."""
    return store.read_dicts(
        "SELECT actor, grade, note, created_at, rubric_version, round_id FROM current_grades "
        "WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ? ORDER BY actor",
        [query_id, doc_id, start, end])


def is_pending_tx(cur: Cursor, query_id: str, doc_id: str, start: int, end: int) -> bool:
    """Is this item still a disagreement nobody has decided?"""
    return cur.execute("SELECT 1 FROM pending_grades WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?",
                       [query_id, doc_id, start, end]).fetchone() is not None


def labels_tx(cur: Cursor, query_id: str, doc_id: str, start: int, end: int) -> list[tuple]:
    """(annotator, grade) of each current label on the item, by annotator."""
    return cur.execute("SELECT actor, grade FROM current_grades WHERE query_id = ? AND doc_id = ? AND start = ? "
                       "AND \"end\" = ? ORDER BY actor", [query_id, doc_id, start, end]).fetchall()


def decide_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int, end: int,
              grade: int, rationale: str, clarification: str | None = None) -> tuple[int, int | None]:
    """Record the final grade with its rationale, inside the caller's transaction. With
    ``clarification``, the rubric gets a new version (the sentence appended under a
    clarifications heading, the item named in the changelog) in the same transaction.
    Returns (the decision's event id, the new rubric version or None)."""
    if grade not in (0, 1, 2, 3):
        raise ValidationError("A final grade is 0, 1, 2 or 3.")
    if not rationale or not rationale.strip():
        raise ValidationError("Write the rationale: it is what turns a disagreement into a rubric fix.")
    labelled = cur.execute(
        "SELECT count(*) FROM current_grades WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?",
        [query_id, doc_id, start, end]).fetchone()[0]
    if not labelled:
        raise NotFoundError(f"No annotator has graded {query_id} · {doc_id} [{start}:{end}]: nothing to adjudicate.")
    sha = cur.execute("SELECT canonical_sha256 FROM documents WHERE doc_id = ?", [doc_id]).fetchone()
    rubric = cur.execute("SELECT version, text FROM rubric_versions ORDER BY version DESC LIMIT 1").fetchone()
    event_id = grade_state.append_tx(
        cur, query_id=query_id, doc_id=doc_id, start=start, end=end, op="adjudicate", grade=grade, actor=actor,
        created_at=utcnow(), doc_sha256=sha[0] if sha else None, rubric_version=rubric[0] if rubric else None,
        note=rationale.strip())
    if not (clarification and clarification.strip()):
        return event_id, None
    text = rubric[1] if rubric else ""
    if CLARIFICATIONS_HEADING not in text:
        text = text.rstrip() + f"\n\n{CLARIFICATIONS_HEADING}\n"
    text = text.rstrip() + f"\n- {clarification.strip()}\n"
    return event_id, add_rubric_version_tx(
        cur, text, f"Clarification from adjudicating {query_id} · {doc_id} [{start}:{end}] "
                   f"(final grade {grade}): {clarification.strip()}", actor)


def decide(store: Store, actor: str, query_id: str, doc_id: str, start: int, end: int, grade: int,
           rationale: str, clarification: str | None = None) -> int | None:
    """:func:`decide_tx` in its own transaction; returns the new rubric version, if any."""
    return store.write(lambda cur: decide_tx(cur, actor, query_id, doc_id, start, end, grade, rationale,
                                             clarification))[1]


def decided_count(store: Store) -> int:
    return int(store.read_row("SELECT count(*) FROM adjudications")[0])


def history(store: Store, limit: int = 200, offset: int = 0) -> list[dict]:
    """Decided items, newest first, with the annotators' grades beside the final one. The
    page of decisions is chosen first and only its items' current grades are joined."""
    return store.read_dicts(
        "WITH a AS (SELECT * FROM adjudications ORDER BY created_at DESC, event_id DESC LIMIT ? OFFSET ?) "
        "SELECT a.query_id, a.doc_id, a.start, a.\"end\", q.stratum, a.grade AS final_grade, a.rationale, "
        "a.actor AS decided_by, a.created_at AS decided_at, a.rubric_version, "
        "string_agg(g.actor || '=' || g.grade, ', ' ORDER BY g.actor) AS annotator_grades "
        "FROM a LEFT JOIN queries q USING (query_id) "
        "LEFT JOIN current_grades g ON g.query_id = a.query_id AND g.doc_id = a.doc_id AND g.start = a.start "
        "AND g.\"end\" = a.\"end\" "
        "GROUP BY ALL ORDER BY decided_at DESC, a.query_id, a.doc_id, a.start, a.\"end\"", [limit, offset])


def count_pending(store: Store) -> int:
    return int(store.read_row("SELECT count(*) FROM pending_grades SEMI JOIN queries USING (query_id)")[0])


# ---- every label that decides an item (the Freeze conflicts page, issue 37 item 9) ---------------

# Each annotator's current grade and the latest lead decision on items, with whether each was
# made on an earlier text of its document (``stale``); ``{where}`` picks the items.
_ITEM_LABELS = (
    "SELECT x.query_id, x.doc_id, x.start, x.\"end\", x.kind, x.actor, CAST(x.grade AS INTEGER) AS grade, x.note, "
    "x.created_at, x.event_id, coalesce(x.doc_sha256 IS NOT NULL AND x.doc_sha256 <> d.canonical_sha256, FALSE) "
    "AS stale FROM ("
    " SELECT query_id, doc_id, start, \"end\", 'grade' AS kind, actor, grade, note, created_at, event_id, doc_sha256"
    " FROM current_grades WHERE {where}"
    " UNION ALL"
    " SELECT query_id, doc_id, start, \"end\", 'decision' AS kind, actor, grade, note, created_at, event_id, doc_sha256"
    " FROM adjudication_state WHERE {where}"
    ") x LEFT JOIN documents d USING (doc_id) ORDER BY x.query_id, x.doc_id, x.start, x.\"end\", x.kind DESC, x.actor")
_LABEL_COLUMNS = ("query_id", "doc_id", "start", "end", "kind", "actor", "grade", "note", "created_at", "event_id",
                  "stale")


def item_labels_tx(cur: Cursor, query_id: str, doc_id: str, start: int, end: int) -> list[dict]:
    """Every label that decides one item now, inside the caller's transaction: each
    annotator's current grade (``kind`` 'grade', by annotator) then the latest lead decision
    (``kind`` 'decision'), each with actor, grade, note, time, event id and ``stale``."""
    where = "query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?"
    rows = cur.execute(_ITEM_LABELS.format(where=where), [query_id, doc_id, start, end] * 2).fetchall()
    return [dict(zip(_LABEL_COLUMNS, r)) for r in rows]


def labels_on_questions(store: Store, query_ids: list[str]) -> dict[tuple, list[dict]]:
    """:func:`item_labels_tx` for every graded item of ``query_ids`` in one read, by item
    (query_id, doc_id, start, end)."""
    ids = sorted(set(query_ids))
    out: dict[tuple, list[dict]] = {}
    if not ids:
        return out
    for row in store.read_dicts(_ITEM_LABELS.format(where="query_id IN (SELECT unnest(?))"), [ids, ids]):
        out.setdefault((row["query_id"], row["doc_id"], row["start"], row["end"]), []).append(row)
    return out
