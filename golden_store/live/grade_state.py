"""Writing a grade event and keeping the current grading state beside it (migration 13).

Why: the current grade of every (item, annotator), the per-item dispute state and the latest
lead decision used to be window views over the whole ``grade_events`` log; at team scale
(millions of events) every page that counts anything replayed the log, seconds per visit
(issue 19). The state now lives in four tables (``grade_state``, ``judging_state``,
``adjudication_state``, ``grade_item_state``; see ``golden_store/db/schema.py`` V13) that the
views read, and this module is the one place that appends a grade event: :func:`append_tx`
inserts the event and folds it into those tables in the caller's transaction, so an event
and the state it implies commit together or not at all (:func:`append_bulk_tx` does the same
for a batch of one actor's events, set-wise: a judgments import).

The log stays the truth. Each table is a pure function of it (``schema.GRADE_STATE_FILL``
computes them from scratch; :func:`rebuild_tx` refills them with it, for a bulk writer that
appended events some other way), and ``tests/golden_store/test_grade_state.py`` replays the
events through the former view definitions after every kind of write and compares.

Folding one event, exactly as the fill would:

* ``grade`` / ``retract`` → the annotator's row in ``grade_state`` (latest by event id wins),
  then the item's ``grade_item_state`` row is recounted from its ``grade_state`` rows (a few
  per item): number of current grades, distinct values, the lowest (the agreed value when
  there is one distinct), who graded, the newest rubric version, first and last grade time;
* ``grade`` / ``skip`` / ``unsure`` / ``retract`` → the annotator's ``judging_state`` row;
* ``adjudicate`` → the item's ``adjudication_state`` row.

Every upsert only replaces a row with a newer event (``WHERE excluded.event_id > ...``), and
the item's row is claimed (a no-op update) before the annotator's row is written, so on an
engine with concurrent writers (PostgreSQL, read committed) two grades of one item recount it
one after the other, each seeing the other's committed row.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

import pandas as pd

from golden_store.db.cursor import Cursor
from golden_store.db.schema import GRADE_STATE_FILL

STATE_TABLES = ("grade_state", "judging_state", "adjudication_state", "grade_item_state")

_ITEM = 'query_id = ? AND doc_id = ? AND start = ? AND "end" = ?'

_CLAIM_ITEM = (
    "INSERT INTO grade_item_state (query_id, doc_id, start, \"end\", n_graded, n_distinct) VALUES (?, ?, ?, ?, 0, 0) "
    "ON CONFLICT (query_id, doc_id, start, \"end\") DO UPDATE SET n_graded = grade_item_state.n_graded")

_UPSERT_GRADE = (
    "INSERT INTO grade_state (query_id, doc_id, start, \"end\", actor, op, grade, doc_sha256, rubric_version, "
    "round_id, note, created_at, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (query_id, doc_id, start, \"end\", actor) DO UPDATE SET op = excluded.op, grade = excluded.grade, "
    "doc_sha256 = excluded.doc_sha256, rubric_version = excluded.rubric_version, round_id = excluded.round_id, "
    "note = excluded.note, created_at = excluded.created_at, event_id = excluded.event_id "
    "WHERE excluded.event_id > grade_state.event_id")

# The same aggregates as the fill's grade_item_state statement, over one item's rows.
_RECOUNT_ITEM = (
    "UPDATE grade_item_state SET n_graded = s.n_graded, n_distinct = s.n_distinct, grade = s.grade, "
    "actors = s.actors, rubric_version = s.rubric_version, first_graded_at = s.first_graded_at, "
    "last_graded_at = s.last_graded_at "
    "FROM (SELECT count(*) FILTER (WHERE op = 'grade') AS n_graded, count(DISTINCT grade) AS n_distinct, "
    "min(grade) AS grade, string_agg(actor, ',' ORDER BY actor) FILTER (WHERE op = 'grade') AS actors, "
    "max(rubric_version) FILTER (WHERE op = 'grade') AS rubric_version, "
    "min(created_at) FILTER (WHERE op = 'grade') AS first_graded_at, "
    f"max(created_at) FILTER (WHERE op = 'grade') AS last_graded_at FROM grade_state WHERE {_ITEM}) s "
    "WHERE grade_item_state.query_id = ? AND grade_item_state.doc_id = ? AND grade_item_state.start = ? "
    "AND grade_item_state.\"end\" = ?")

_UPSERT_JUDGING = (
    "INSERT INTO judging_state (actor, query_id, doc_id, start, \"end\", op, event_id) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (actor, query_id, doc_id, start, \"end\") DO UPDATE SET op = excluded.op, event_id = excluded.event_id "
    "WHERE excluded.event_id > judging_state.event_id")

_UPSERT_DECISION = (
    "INSERT INTO adjudication_state (query_id, doc_id, start, \"end\", grade, actor, note, doc_sha256, rubric_version, "
    "created_at, event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (query_id, doc_id, start, \"end\") DO UPDATE SET grade = excluded.grade, actor = excluded.actor, "
    "note = excluded.note, doc_sha256 = excluded.doc_sha256, rubric_version = excluded.rubric_version, "
    "created_at = excluded.created_at, event_id = excluded.event_id "
    "WHERE excluded.event_id > adjudication_state.event_id")

_COLUMNS = ("event_id", "query_id", "doc_id", "start", "end", "op", "grade", "actor", "created_at", "doc_sha256",
            "rubric_version", "round_id", "note")


def append_tx(cur: Cursor, *, query_id: str, doc_id: str, start: int, end: int, op: str,
              grade: int | None, actor: str, created_at: datetime, doc_sha256: str | None,
              rubric_version: int | None, round_id: str | None = None, note: str | None = None) -> int:
    """Append one grade event and fold it into the state tables, in the caller's transaction;
    returns its event id. The row folded is the one the database stored (``RETURNING``), so
    the state holds exactly what the log holds."""
    row = cur.execute(
        "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at, "
        "rubric_version, round_id, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "RETURNING " + ", ".join(f'"{c}"' if c == "end" else c for c in _COLUMNS),
        [query_id, doc_id, start, end, doc_sha256, op, grade, actor, created_at, rubric_version, round_id,
         note]).fetchone()
    fold_tx(cur, dict(zip(_COLUMNS, row)))
    return int(row[0])


def fold_tx(cur: Cursor, event: dict) -> None:
    """Fold one stored grade event (a ``grade_events`` row as a dict) into the state tables."""
    e = event
    item = [e["query_id"], e["doc_id"], e["start"], e["end"]]
    op = e["op"]
    if op in ("grade", "retract"):
        cur.execute(_CLAIM_ITEM, item)
        cur.execute(_UPSERT_GRADE, [*item, e["actor"], op, e["grade"], e["doc_sha256"], e["rubric_version"],
                                    e["round_id"], e["note"], e["created_at"], e["event_id"]])
        cur.execute(_RECOUNT_ITEM, item + item)
    if op in ("grade", "skip", "unsure", "retract"):
        cur.execute(_UPSERT_JUDGING, [e["actor"], *item, op, e["event_id"]])
    if op == "adjudicate":
        cur.execute(_UPSERT_DECISION, [*item, e["grade"], e["actor"], e["note"], e["doc_sha256"],
                                       e["rubric_version"], e["created_at"], e["event_id"]])


def rebuild_tx(cur: Cursor) -> None:
    """Refill every state table from the event log (what migration 13 did), in the caller's
    transaction: for a bulk writer that appended grade events with plain INSERTs (benchmarks,
    tests building large stores), and the remedy should the tables ever be doubted."""
    for table in STATE_TABLES:
        cur.execute(f"DELETE FROM {table}")
    for stmt in GRADE_STATE_FILL:
        cur.execute(stmt)


# ---- many events at once (issue 28: a million imported judgments) ------------------------------

_BULK_COLUMNS = ("query_id", "doc_id", "start", "end", "grade", "doc_sha256")


def append_bulk_tx(cur: Cursor, rows: pd.DataFrame, *, op: str, actor: str, created_at: datetime,
                   rubric_version: int | None = None, note: str | None = None) -> int:
    """Append one ``grade`` or ``retract`` event per row of ``rows`` (``query_id, doc_id,
    start, end, grade, doc_sha256``; no item twice) by ``actor``, and fold them into the state
    tables set-wise, in the caller's transaction; returns how many.

    The same fold as :func:`fold_tx`, one statement per table for the whole batch instead of
    four per event: the events are appended with one ``INSERT ... SELECT``, read back
    (``RETURNING`` per row would be a million rows through Python), and upserted into
    ``grade_state`` / ``judging_state`` (only over an older event, as the one-event upserts);
    then each touched item's ``grade_item_state`` row is recounted from its ``grade_state``
    rows with the aggregates of ``_RECOUNT_ITEM``. The cost follows the batch, not the log
    (:func:`rebuild_tx` recomputes every table from every event)."""
    if op not in ("grade", "retract"):
        raise ValueError(f"append_bulk_tx writes grade or retract events, not {op!r}")
    if rows.empty:
        return 0
    frame = pd.DataFrame({c: rows[c] for c in _BULK_COLUMNS})
    frame["grade"] = frame["grade"].astype("Int64") if op == "grade" else pd.Series([None] * len(frame), dtype="Int64")
    before = cur.execute("SELECT coalesce(max(event_id), 0) FROM grade_events").fetchall()[0][0]
    # A failed statement aborts the transaction (which the caller rolls back, temporary tables
    # with it): cleaning up in a `finally` would then fail too and hide the first error.
    cur.register("_bulk_events", frame)
    try:
        cur.execute(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at, "
            "rubric_version, round_id, note) SELECT query_id, doc_id, CAST(start AS INTEGER), CAST(\"end\" AS INTEGER), "
            "doc_sha256, ?, CAST(grade AS SMALLINT), ?, ?, ?, NULL, ? FROM _bulk_events "
            "ORDER BY query_id, doc_id, start, \"end\"", [op, actor, created_at, rubric_version, note])
    except BaseException:
        with contextlib.suppress(Exception):
            cur.unregister("_bulk_events")  # DuckDB: a view on the frame; PostgreSQL: gone with the rollback
        raise
    cur.unregister("_bulk_events")
    cols = ", ".join(f'"{c}"' if c == "end" else c for c in _COLUMNS)
    cur.execute(f"CREATE TEMP TABLE _bulk_new AS SELECT {cols} FROM grade_events WHERE event_id > ? AND actor = ? "
                "AND op = ? AND note IS NOT DISTINCT FROM ?", [before, actor, op, note])
    n = int(cur.execute("SELECT count(*) FROM _bulk_new").fetchall()[0][0])
    key = 'query_id, doc_id, start, "end"'
    cur.execute(f"INSERT INTO grade_item_state ({key}, n_graded, n_distinct) SELECT DISTINCT {key}, 0, 0 "
                f"FROM _bulk_new ON CONFLICT ({key}) DO UPDATE SET n_graded = grade_item_state.n_graded")
    cur.execute(
        f"INSERT INTO grade_state ({key}, actor, op, grade, doc_sha256, rubric_version, round_id, note, created_at, "
        f"event_id) SELECT {key}, actor, op, grade, doc_sha256, rubric_version, round_id, note, created_at, event_id "
        f"FROM _bulk_new ON CONFLICT ({key}, actor) DO UPDATE SET op = excluded.op, grade = excluded.grade, "
        "doc_sha256 = excluded.doc_sha256, rubric_version = excluded.rubric_version, round_id = excluded.round_id, "
        "note = excluded.note, created_at = excluded.created_at, event_id = excluded.event_id "
        "WHERE excluded.event_id > grade_state.event_id")
    cur.execute(
        "UPDATE grade_item_state SET n_graded = s.n_graded, n_distinct = s.n_distinct, grade = s.grade, "
        "actors = s.actors, rubric_version = s.rubric_version, first_graded_at = s.first_graded_at, "
        "last_graded_at = s.last_graded_at "
        f"FROM (SELECT g.query_id, g.doc_id, g.start, g.\"end\", count(*) FILTER (WHERE g.op = 'grade') AS n_graded, "
        "count(DISTINCT g.grade) AS n_distinct, min(g.grade) AS grade, "
        "string_agg(g.actor, ',' ORDER BY g.actor) FILTER (WHERE g.op = 'grade') AS actors, "
        "max(g.rubric_version) FILTER (WHERE g.op = 'grade') AS rubric_version, "
        "min(g.created_at) FILTER (WHERE g.op = 'grade') AS first_graded_at, "
        "max(g.created_at) FILTER (WHERE g.op = 'grade') AS last_graded_at "
        f"FROM grade_state g JOIN (SELECT DISTINCT {key} FROM _bulk_new) b USING ({key}) "
        "GROUP BY g.query_id, g.doc_id, g.start, g.\"end\") s "
        "WHERE grade_item_state.query_id = s.query_id AND grade_item_state.doc_id = s.doc_id "
        "AND grade_item_state.start = s.start AND grade_item_state.\"end\" = s.\"end\"")
    cur.execute(
        f"INSERT INTO judging_state (actor, {key}, op, event_id) SELECT actor, {key}, op, event_id FROM _bulk_new "
        f"ON CONFLICT (actor, {key}) DO UPDATE SET op = excluded.op, event_id = excluded.event_id "
        "WHERE excluded.event_id > judging_state.event_id")
    cur.execute("DROP TABLE _bulk_new")
    return n
