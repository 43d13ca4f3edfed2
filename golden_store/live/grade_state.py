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
    if op != "adjudicate" and not _concurrent(cur):
        _fold_serial_tx(cur, [e])
        return
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


def _concurrent(cur: Cursor) -> bool:
    """Whether other transactions may write the state tables beside this one: PostgreSQL
    (several processes; its cursor takes advisory locks). DuckDB's writes are serialized by
    the one process that owns the file (``Store.write``)."""
    return hasattr(cur, "advisory_lock")


_KEY = 'query_id, doc_id, start, "end"'


def _values(n_rows: int, n_cols: int) -> str:
    row = "(" + ", ".join("?" * n_cols) + ")"
    return ", ".join([row] * n_rows)


_INSERT_GRADE = ("INSERT INTO grade_state (query_id, doc_id, start, \"end\", actor, op, grade, doc_sha256, "
                 "rubric_version, round_id, note, created_at, event_id) VALUES ")
_UPDATE_GRADE = (
    "UPDATE grade_state SET op = ?, grade = ?, doc_sha256 = ?, rubric_version = ?, round_id = ?, note = ?, "
    f"created_at = ?, event_id = ? WHERE {_ITEM} AND actor = ?")
_INSERT_ITEM = ("INSERT INTO grade_item_state (query_id, doc_id, start, \"end\", n_graded, n_distinct, grade, actors, "
                "rubric_version, first_graded_at, last_graded_at) VALUES ")
_UPDATE_ITEM = (
    "UPDATE grade_item_state SET n_graded = ?, n_distinct = ?, grade = ?, actors = ?, rubric_version = ?, "
    f"first_graded_at = ?, last_graded_at = ? WHERE {_ITEM}")
_INSERT_JUDGING = "INSERT INTO judging_state (actor, query_id, doc_id, start, \"end\", op, event_id) VALUES "
_UPDATE_JUDGING = f"UPDATE judging_state SET op = ?, event_id = ? WHERE actor = ? AND {_ITEM}"


def _recount(rows: list[tuple]) -> list:
    """``_RECOUNT_ITEM``'s aggregates over one item's grade_state rows ``(actor, op, grade,
    rubric_version, created_at, ...)``, in Python: DuckDB's default collation orders by code
    point, as ``sorted`` does, so ``actors`` is the string ``string_agg(... ORDER BY actor)``
    makes."""
    graded = [r for r in rows if r[1] == "grade"]
    values = {r[2] for r in rows if r[2] is not None}
    versions = [r[3] for r in graded if r[3] is not None]
    times = [r[4] for r in graded]
    return [len(graded), len(values), min(values) if values else None,
            ",".join(sorted(r[0] for r in graded)) if graded else None, max(versions) if versions else None,
            min(times) if times else None, max(times) if times else None]


def _fold_serial_tx(cur: Cursor, events: list[dict]) -> None:
    """:func:`fold_tx` for ``events`` (grade / retract / skip / unsure, in event-id order)
    where this transaction is the only writer (DuckDB): one read of the state rows the events
    touch, the fold done in Python, then one multi-row INSERT per table for the rows that are
    new and a keyed UPDATE per row that changes; each item's aggregates are recounted from its
    rows as ``_RECOUNT_ITEM`` does. The same rows as the upserts (every upsert replaces a row
    only with a newer event; ``tests/golden_store/test_grade_state.py`` compares with the former
    views). Why (issue 41): a DuckDB upsert costs ~3 ms of CPU, an INSERT or keyed UPDATE
    ~1 ms, and the fold ran four upserts per label."""
    items = list(dict.fromkeys((e["query_id"], e["doc_id"], e["start"], e["end"]) for e in events))
    judged_keys = list(dict.fromkeys((e["actor"], e["query_id"], e["doc_id"], e["start"], e["end"]) for e in events))
    found = cur.execute(
        f"WITH k ({_KEY}) AS (VALUES {_values(len(items), 4)}), j (actor, {_KEY}) AS "
        f"(VALUES {_values(len(judged_keys), 5)}) "
        f"SELECT 0, {_KEY}, actor, op, grade, rubric_version, created_at, event_id FROM grade_state SEMI JOIN k "
        f"USING ({_KEY}) UNION ALL SELECT 1, {_KEY}, NULL, NULL, NULL, NULL, NULL, NULL FROM grade_item_state "
        f"SEMI JOIN k USING ({_KEY}) UNION ALL SELECT 2, {_KEY}, actor, op, NULL, NULL, NULL, event_id "
        f"FROM judging_state SEMI JOIN j USING (actor, {_KEY})",
        [v for it in items for v in it] + [v for jk in judged_keys for v in jk]).fetchall()
    # the state as it stands: grade rows per item {actor: (actor, op, grade, rubric_version,
    # created_at, event_id, full row or None)}, items with a row, judging rows {key: (op, event_id)}
    grades: dict[tuple, dict[str, tuple]] = {it: {} for it in items}
    item_rows = set()
    judged: dict[tuple, tuple] = {}
    for kind, q, d, st, en, actor, op, grade, version, created, event_id in found:
        it = (q, d, st, en)
        if kind == 0:
            grades[it][actor] = (actor, op, grade, version, created, event_id, None)
        elif kind == 1:
            item_rows.add(it)
        else:
            judged[(actor, q, d, st, en)] = (op, event_id)
    judged_before = set(judged)
    had_grade = {(a, *it) for it, rows in grades.items() for a in rows}
    changed_grades: dict[tuple, list] = {}
    changed_judged: dict[tuple, tuple] = {}
    recount: list[tuple] = []
    for e in events:
        it = (e["query_id"], e["doc_id"], e["start"], e["end"])
        op, actor, event_id = e["op"], e["actor"], e["event_id"]
        if op in ("grade", "retract"):
            mine = grades[it].get(actor)
            if mine is None or event_id > mine[5]:
                full = [*it, actor, op, e["grade"], e["doc_sha256"], e["rubric_version"], e["round_id"], e["note"],
                        e["created_at"], event_id]
                grades[it][actor] = (actor, op, e["grade"], e["rubric_version"], e["created_at"], event_id, full)
                changed_grades[(actor,) + it] = full
            if it not in recount:
                recount.append(it)
        key = (actor, *it)
        if key not in judged or event_id > judged[key][1]:
            judged[key] = changed_judged[key] = (op, event_id)
    new_grades = [r for k, r in changed_grades.items() if k not in had_grade]
    if new_grades:
        cur.execute(_INSERT_GRADE + _values(len(new_grades), 13), [v for r in new_grades for v in r])
    for k, r in changed_grades.items():
        if k in had_grade:
            cur.execute(_UPDATE_GRADE, r[5:] + list(k[1:]) + [k[0]])
    new_items = [[*it, *_recount(list(grades[it].values()))] for it in recount if it not in item_rows]
    if new_items:
        cur.execute(_INSERT_ITEM + _values(len(new_items), 11), [v for r in new_items for v in r])
    for it in recount:
        if it in item_rows:
            cur.execute(_UPDATE_ITEM, _recount(list(grades[it].values())) + list(it))
    new_judged = [[*k, *v] for k, v in changed_judged.items() if k not in judged_before]
    if new_judged:
        cur.execute(_INSERT_JUDGING + _values(len(new_judged), 7), [x for r in new_judged for x in r])
    for k, v in changed_judged.items():
        if k in judged_before:
            cur.execute(_UPDATE_JUDGING, [*v, *k])


_EVENT_COLUMNS = ("query_id", "doc_id", "start", "end", "doc_sha256", "op", "grade", "actor", "created_at",
                  "rubric_version", "round_id", "note")


def append_many_tx(cur: Cursor, events: list[dict]) -> list[int]:
    """Append several grade events (dicts with ``_EVENT_COLUMNS``; grade, retract, skip or
    unsure, of any annotators and items) in the caller's transaction, in list order, and fold
    them into the state tables; returns their event ids, in the same order. On DuckDB: one
    statement takes the ids, one appends the events, and the fold is :func:`_fold_serial_tx`
    over all of them (issue 41: the label channel writes the labels that arrive together
    this way); elsewhere, :func:`append_tx` per event."""
    if not events:
        return []
    if _concurrent(cur) or any(e["op"] not in ("grade", "retract", "skip", "unsure") for e in events):
        return [append_tx(cur, **{c: e[c] for c in _EVENT_COLUMNS}) for e in events]
    ids = sorted(int(r[0]) for r in cur.execute("SELECT nextval('event_seq') FROM range(?)",
                                                 [len(events)]).fetchall())
    stored = [{"event_id": i, **{c: e[c] for c in _EVENT_COLUMNS}} for i, e in zip(ids, events)]
    cols = ", ".join(f'"{c}"' if c == "end" else c for c in ("event_id", *_EVENT_COLUMNS))
    cur.execute(f"INSERT INTO grade_events ({cols}) VALUES {_values(len(stored), 13)}",
                [r[c] for r in stored for c in ("event_id", *_EVENT_COLUMNS)])
    _fold_serial_tx(cur, stored)
    return ids


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
