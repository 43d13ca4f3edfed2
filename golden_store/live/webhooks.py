"""The webhook outbox, the SQL side (schema 23; the rules live in ``annotator/webhooks.py`` and
``annotator/webhook_delivery.py``).

An event is a row of ``webhook_events`` written in the same transaction as the change it
reports (the transactional outbox: a rolled-back change leaves no event, a committed one
cannot lose its event), with one ``webhook_deliveries`` row per subscribed endpoint. A
dispatcher claims due deliveries by moving ``next_attempt_at`` forward by a lease before it
sends, so a process that dies mid-send leaves the row to be retried after the lease, never
lost; every attempt is a ``webhook_attempts`` row (the delivery log)."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from golden_store.core.errors import NotFoundError
from golden_store.core.standard_webhooks import EVENT_TYPES, TEST_EVENT
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow

__all__ = ["EVENT_TYPES", "TEST_EVENT"]  # the rest is imported by name; these two live in core
ALL = "*"

_ENDPOINT_COLUMNS = "endpoint_id, url, event_types, description, created_by, created_at, disabled_at, disabled_by"

# called (no arguments) after an event row is written, so a dispatcher in this process can
# wake early; called inside the writing transaction, so a listener only sets a flag
_listeners: list[Callable[[], None]] = []
_listeners_lock = threading.Lock()


def add_listener(fn: Callable[[], None]) -> None:
    with _listeners_lock:
        _listeners.append(fn)


def remove_listener(fn: Callable[[], None]) -> None:
    with _listeners_lock:
        if fn in _listeners:
            _listeners.remove(fn)


def _notify() -> None:
    with _listeners_lock:
        fns = list(_listeners)
    for fn in fns:
        fn()


def body(event_type: str, data: dict[str, Any], at: datetime) -> str:
    """The JSON a receiver gets (Standard Webhooks / Argilla shape): type, ISO-8601 timestamp, data."""
    return json.dumps({"type": event_type, "timestamp": at.replace(microsecond=0).isoformat() + "Z", "data": data},
                      sort_keys=True, ensure_ascii=False, default=str)


# ---- endpoints ---------------------------------------------------------------------------------


def insert_endpoint(store: Store, *, endpoint_id: str, url: str, secret: str, event_types: list[str],
                    description: str | None, created_by: str) -> None:
    store.write(lambda cur: cur.execute(
        "INSERT INTO webhook_endpoints (endpoint_id, url, secret, event_types, description, created_by, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [endpoint_id, url, secret, ",".join(event_types), description, created_by, utcnow()]))


def list_endpoints(store: Store) -> list[dict]:
    """Every endpoint, oldest first (never the secret)."""
    return store.read_dicts(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, endpoint_id")


def endpoint(store: Store, endpoint_id: str) -> dict:
    rows = store.read_dicts(f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE endpoint_id = ?", [endpoint_id])
    if not rows:
        raise NotFoundError(f"No webhook endpoint {endpoint_id!r}; `golden webhooks list` shows them.")
    return rows[0]


def disable_endpoint(store: Store, endpoint_id: str, *, actor: str) -> None:
    """Disable an endpoint: nothing more is sent to it (its pending deliveries wait)."""

    def run(cur: Cursor) -> None:
        row = cur.execute("SELECT disabled_at FROM webhook_endpoints WHERE endpoint_id = ?", [endpoint_id]).fetchone()
        if row is None:
            raise NotFoundError(f"No webhook endpoint {endpoint_id!r}; `golden webhooks list` shows them.")
        if row[0] is None:
            cur.execute("UPDATE webhook_endpoints SET disabled_at = ?, disabled_by = ? WHERE endpoint_id = ?",
                        [utcnow(), actor, endpoint_id])

    store.write(run)


# ---- events (inside the writing transaction) ------------------------------------------------------


def new_event_id() -> str:
    return "msg_" + secrets.token_hex(12)


def event_exists_tx(cur: Cursor, event_id: str) -> bool:
    return cur.execute("SELECT 1 FROM webhook_events WHERE event_id = ?", [event_id]).fetchone() is not None


def emit_tx(cur: Cursor, event_id: str, event_type: str, data: dict[str, Any], *, actor: str | None,
            only_endpoint: str | None = None) -> bool:
    """Write event ``event_id`` and a pending delivery to each enabled endpoint subscribed to
    ``event_type`` (or to ``only_endpoint`` alone, for a test event), inside the caller's
    transaction. An id already written is left alone (returns False): events that happen
    once (a round completing) carry an id derived from what they report."""
    if event_exists_tx(cur, event_id):
        return False
    now = utcnow()
    cur.execute("INSERT INTO webhook_events (event_id, event_type, payload, actor, created_at) VALUES (?, ?, ?, ?, ?)",
                [event_id, event_type, body(event_type, data, now), actor, now])
    if only_endpoint is not None:
        targets = [only_endpoint]
    else:
        targets = [eid for eid, types in cur.execute(
            "SELECT endpoint_id, event_types FROM webhook_endpoints WHERE disabled_at IS NULL").fetchall()
            if types == ALL or event_type in types.split(",")]
    if targets:
        cur.executemany(
            "INSERT INTO webhook_deliveries (event_id, endpoint_id, status, attempts, next_attempt_at) "
            "VALUES (?, ?, 'pending', 0, ?)", [(event_id, t, now) for t in targets])
    _notify()
    return True


def round_state_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int, end: int) -> str | None:
    """The round a grade just written completed, or None. Runs on every grade, so it is kept
    cheap: the round the grade counts for is a primary-key read (``grade_state.round_id``: the
    round that gave this annotator this item), and "is any assignment of that round still
    without a grade" stops at the first one found. On PostgreSQL that is a nested loop of
    primary-key probes into ``grade_state`` (an open round meets an ungraded assignment within
    a few rows); on DuckDB, which would hash the whole ``grade_state``, the probe side is first
    narrowed to the round's own grades (``round_id`` filter in the scan). Measured in the
    report of issue 28 (webhooks)."""
    row = cur.execute("SELECT round_id FROM grade_state WHERE query_id = ? AND doc_id = ? AND start = ? "
                      "AND \"end\" = ? AND actor = ? AND op = 'grade'", [query_id, doc_id, start, end, actor]).fetchone()
    if row is None or row[0] is None:
        return None
    round_id = str(row[0])
    narrow = "" if hasattr(cur, "advisory_lock") else "AND g.round_id = ? "  # DuckDB (see above)
    left = cur.execute(
        "SELECT 1 FROM round_assignments a WHERE a.round_id = ? AND NOT EXISTS (SELECT 1 FROM grade_state g "
        "WHERE g.query_id = a.query_id AND g.doc_id = a.doc_id AND g.start = a.start AND g.\"end\" = a.\"end\" "
        f"AND g.actor = a.annotator AND g.op = 'grade' {narrow}) LIMIT 1",
        [round_id, round_id] if narrow else [round_id]).fetchone()
    return None if left else round_id


def round_facts_tx(cur: Cursor, round_id: str) -> dict[str, Any]:
    r = cur.execute("SELECT kind, annotators, n_items, created_by FROM rounds WHERE round_id = ?", [round_id]).fetchone()
    n = cur.execute("SELECT count(*) FROM round_assignments WHERE round_id = ?", [round_id]).fetchone()[0]
    return {"round_id": round_id, "kind": r[0], "annotators": sorted(r[1]), "items": int(r[2]),
            "assignments": int(n), "created_by": r[3]}


# ---- delivery ------------------------------------------------------------------------------------


def claim_due(store: Store, *, now: datetime, lease: timedelta, limit: int = 20) -> list[dict]:
    """Claim up to ``limit`` due deliveries to enabled endpoints: their ``next_attempt_at`` moves
    to ``now + lease`` in this transaction, so no other dispatcher takes them meanwhile and a
    dispatcher that dies mid-send leaves them due again after the lease. On PostgreSQL the
    rows are locked ``FOR UPDATE SKIP LOCKED``: two server processes never claim one row."""
    lock = " FOR UPDATE OF d SKIP LOCKED" if store.engine == "postgresql" else ""

    def run(cur: Cursor) -> list[dict]:
        rows = cur.execute(
            "SELECT d.event_id, d.endpoint_id, d.attempts FROM webhook_deliveries d JOIN webhook_endpoints e "
            "USING (endpoint_id) JOIN webhook_events v USING (event_id) WHERE d.status = 'pending' "
            "AND d.next_attempt_at <= ? AND e.disabled_at IS NULL "
            f"ORDER BY d.next_attempt_at, v.created_at, d.event_id LIMIT ?{lock}", [now, limit]).fetchall()
        if not rows:
            return []
        cur.executemany("UPDATE webhook_deliveries SET next_attempt_at = ? WHERE event_id = ? AND endpoint_id = ?",
                        [(now + lease, r[0], r[1]) for r in rows])
        out = []
        for event_id, endpoint_id, attempts in rows:
            url, secret = cur.execute("SELECT url, secret FROM webhook_endpoints WHERE endpoint_id = ?",
                                      [endpoint_id]).fetchone()
            payload = cur.execute("SELECT payload FROM webhook_events WHERE event_id = ?", [event_id]).fetchone()[0]
            out.append({"event_id": event_id, "endpoint_id": endpoint_id, "attempts": int(attempts), "url": url,
                        "secret": secret, "payload": payload})
        return out

    return store.write(run, bookkeeping=True)


def release_claim(store: Store, *, event_id: str, endpoint_id: str, until: datetime, due: datetime) -> None:
    """Give back a claimed delivery its dispatcher will not send (it could not finish within
    the lease): due at ``due`` again, but only while the claim is still this one (its
    ``next_attempt_at`` is ``until``), so a claim taken since by another dispatcher is left alone."""
    store.write(lambda cur: cur.execute(
        "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE event_id = ? AND endpoint_id = ? "
        "AND status = 'pending' AND next_attempt_at = ?", [due, event_id, endpoint_id, until]), bookkeeping=True)
    _notify()


def record_attempt(store: Store, *, event_id: str, endpoint_id: str, status_code: int | None, error: str | None,
                   duration_ms: float, at: datetime, delivered: bool, next_attempt_at: datetime | None) -> None:
    """Log one attempt and move its delivery on: delivered, failed (``next_attempt_at`` None:
    no retry left) or pending until ``next_attempt_at``. A delivery already delivered (another
    dispatcher's attempt after an expired lease) stays delivered."""

    def run(cur: Cursor) -> None:
        row = cur.execute("SELECT status, attempts FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?",
                          [event_id, endpoint_id]).fetchone()
        if row is None:
            return
        attempt = int(row[1]) + 1
        cur.execute("INSERT INTO webhook_attempts (event_id, endpoint_id, attempt, status_code, error, duration_ms, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [event_id, endpoint_id, attempt, status_code, error, duration_ms, at])
        if row[0] == "delivered":
            cur.execute("UPDATE webhook_deliveries SET attempts = ? WHERE event_id = ? AND endpoint_id = ?",
                        [attempt, event_id, endpoint_id])
            return
        status = "delivered" if delivered else ("failed" if next_attempt_at is None else "pending")
        cur.execute(
            "UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?, "
            "last_status_code = ?, last_error = ?, delivered_at = ? WHERE event_id = ? AND endpoint_id = ?",
            [status, attempt, None if delivered else next_attempt_at, at, status_code, error,
             at if delivered else None, event_id, endpoint_id])

    store.write(run, bookkeeping=True)


def retry_now(store: Store, event_id: str, endpoint_id: str) -> None:
    """Make a failed (or waiting) delivery due now; its attempt count carries on."""

    def run(cur: Cursor) -> None:
        row = cur.execute("SELECT status FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?",
                          [event_id, endpoint_id]).fetchone()
        if row is None:
            raise NotFoundError(f"No delivery of event {event_id!r} to endpoint {endpoint_id!r}.")
        if row[0] == "delivered":
            return
        cur.execute("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE event_id = ? "
                    "AND endpoint_id = ?", [utcnow(), event_id, endpoint_id])

    store.write(run, bookkeeping=True)
    _notify()


def deliveries(store: Store, *, endpoint_id: str | None = None, status: str | None = None,
               limit: int = 200) -> list[dict]:
    """The delivery log, newest event first: each delivery's state, attempts, last status code
    or error and next attempt, with its event's type."""
    return store.read_dicts(
        "SELECT d.event_id, v.event_type, d.endpoint_id, e.url, d.status, d.attempts, d.last_attempt_at, "
        "d.last_status_code, d.last_error, d.next_attempt_at, d.delivered_at, v.created_at "
        "FROM webhook_deliveries d JOIN webhook_events v USING (event_id) JOIN webhook_endpoints e USING (endpoint_id) "
        "WHERE (CAST(? AS VARCHAR) IS NULL OR d.endpoint_id = ?) AND (CAST(? AS VARCHAR) IS NULL OR d.status = ?) "
        "ORDER BY v.created_at DESC, d.event_id DESC LIMIT ?",
        [endpoint_id, endpoint_id, status, status, limit])


def attempts(store: Store, *, endpoint_id: str | None = None, limit: int = 200) -> list[dict]:
    """Latest attempts first (status code or error, how long it took)."""
    return store.read_dicts(
        "SELECT attempt_id, event_id, endpoint_id, attempt, status_code, error, duration_ms, created_at "
        "FROM webhook_attempts WHERE CAST(? AS VARCHAR) IS NULL OR endpoint_id = ? "
        "ORDER BY attempt_id DESC LIMIT ?", [endpoint_id, endpoint_id, limit])


def events(store: Store, *, event_type: str | None = None) -> list[dict]:
    return store.read_dicts(
        "SELECT event_id, event_type, payload, actor, created_at FROM webhook_events "
        "WHERE CAST(? AS VARCHAR) IS NULL OR event_type = ? ORDER BY created_at, event_id", [event_type, event_type])


def next_due(store: Store) -> datetime | None:
    """When the earliest pending delivery to an enabled endpoint is due (None: nothing pending)."""
    row = store.read_one("SELECT min(d.next_attempt_at) FROM webhook_deliveries d JOIN webhook_endpoints e "
                         "USING (endpoint_id) WHERE d.status = 'pending' AND e.disabled_at IS NULL")
    return row[0] if row else None
