"""Webhooks (issue 28): the endpoints a team registers, and the events the studio tells them
about, signed per Standard Webhooks (``golden_store.core.standard_webhooks``).

Events and what their ``data`` holds:

- ``version.frozen``: name, content_digest, data_digest, counts, signed, location
- ``round.completed``: round_id, kind, annotators, items (every assignment has a grade)
- ``agreement.below_bar``: round_id, measure, value, threshold, bar, text
- ``adjudication.decided``: item, grade, rationale, clarification, lead
- ``evaluation.recorded``: evaluation_id, version, system, trial, labels, means

Every event but ``version.frozen`` is written by :func:`emit_tx` inside the transaction of the
change it reports (a rolled-back change emits nothing); delivery happens later, from the
outbox (``annotator/events/webhook_delivery.py``), so a slow receiver never holds up a labeler."""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from annotator.events import webhook_urls
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core import standard_webhooks
from golden_store.core.errors import ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store
from golden_store.live import webhooks as rows
from golden_store.live.webhooks import EVENT_TYPES, TEST_EVENT, new_event_id

__all__ = ["EVENT_TYPES", "TEST_EVENT", "Endpoint", "add_endpoint", "list_endpoints", "disable_endpoint",
           "emit_tx", "deliveries", "attempts", "retry", "send_test"]


@dataclass(frozen=True)
class Endpoint:
    endpoint_id: str
    url: str
    event_types: tuple[str, ...]  # ("*",): every event
    description: str | None
    created_by: str
    created_at: datetime
    disabled_at: datetime | None

    @property
    def enabled(self) -> bool:
        return self.disabled_at is None


def _endpoint(r: dict) -> Endpoint:
    """An endpoint as this layer hands it out: its URL masked (``webhook_urls.mask_url``), so
    no page, command or log shows a credential the URL carries; only the dispatcher reads
    the URL itself, from the store."""
    return Endpoint(r["endpoint_id"], webhook_urls.mask_url(r["url"]),
                    tuple(t for t in r["event_types"].split(",") if t),
                    r["description"], r["created_by"], r["created_at"], r["disabled_at"])


def check_url(url: str) -> str:
    """Only http(s) URLs with a host and a valid port, to a public address unless the operator
    allows private ones (``webhook_urls.check_destination``): anything else is refused
    before it is stored, with the URL quoted masked."""
    u = (url or "").strip()
    try:
        parts = urlsplit(u)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # "http://[::1/": a bracket left open
        ok = False
    if not ok:
        raise ValidationError(f"Webhook URL {webhook_urls.mask_url(url)!r}: give an http:// or https:// URL with a "
                              f"host, e.g. https://ci.example.com/hooks/golden.")
    try:
        parts.port
    except ValueError:
        raise ValidationError(f"Webhook URL {webhook_urls.mask_url(u)!r}: its port is not a number from 0 to "
                              f"65535.") from None
    webhook_urls.check_destination(u)
    return u


def check_event_types(types: list[str] | None) -> list[str]:
    if not types:
        return [rows.ALL]
    unknown = sorted(set(types) - set(EVENT_TYPES))
    if unknown:
        raise ValidationError(f"Unknown webhook event {', '.join(unknown)}: choose from {', '.join(EVENT_TYPES)}.")
    return sorted(set(types))


def add_endpoint(store: Store, user: User, url: str, event_types: list[str] | None = None,
                 description: str | None = None) -> tuple[Endpoint, str]:
    """Register ``url`` for ``event_types`` (all events when none); returns the endpoint and
    its signing secret, which is shown this once (the store keeps it to sign with)."""
    require(user, Permission.MANAGE_WEBHOOKS)
    u = check_url(url)
    types = check_event_types(event_types)
    secret = standard_webhooks.new_secret()
    endpoint_id = "ep_" + secrets.token_hex(6)
    rows.insert_endpoint(store, endpoint_id=endpoint_id, url=u, secret=secret, event_types=types,
                         description=(description or "").strip() or None, created_by=user.username)
    return _endpoint(rows.endpoint(store, endpoint_id)), secret


def list_endpoints(store: Store, user: User) -> list[Endpoint]:
    require(user, Permission.MANAGE_WEBHOOKS)
    return [_endpoint(r) for r in rows.list_endpoints(store)]


def disable_endpoint(store: Store, user: User, endpoint_id: str) -> Endpoint:
    require(user, Permission.MANAGE_WEBHOOKS)
    rows.disable_endpoint(store, endpoint_id, actor=user.username)
    return _endpoint(rows.endpoint(store, endpoint_id))


def deliveries(store: Store, user: User, *, endpoint_id: str | None = None, status: str | None = None,
               limit: int = 200) -> list[dict]:
    """The delivery log (newest first); each row's endpoint URL masked."""
    require(user, Permission.MANAGE_WEBHOOKS)
    if status is not None and status not in ("pending", "delivered", "failed"):
        raise ValidationError(f"--status {status!r}: use pending, delivered or failed.")
    return [{**r, "url": webhook_urls.mask_url(r["url"])}
            for r in rows.deliveries(store, endpoint_id=endpoint_id, status=status, limit=limit)]


def attempts(store: Store, user: User, *, endpoint_id: str | None = None, limit: int = 200) -> list[dict]:
    require(user, Permission.MANAGE_WEBHOOKS)
    return rows.attempts(store, endpoint_id=endpoint_id, limit=limit)


def retry(store: Store, user: User, event_id: str, endpoint_id: str) -> None:
    """Make a delivery due now (a failed one gets its retries again)."""
    require(user, Permission.MANAGE_WEBHOOKS)
    rows.retry_now(store, event_id, endpoint_id)


def send_test(store: Store, user: User, endpoint_id: str) -> str:
    """Queue a ``webhook.test`` event to one endpoint (whatever it subscribes to); returns its id."""
    require(user, Permission.MANAGE_WEBHOOKS)
    ep = rows.endpoint(store, endpoint_id)
    if ep["disabled_at"] is not None:
        raise ValidationError(f"Webhook endpoint {endpoint_id} is disabled: nothing is sent to it.")
    event_id = new_event_id()
    store.write(lambda cur: rows.emit_tx(cur, event_id, TEST_EVENT, {"endpoint_id": endpoint_id,
                                                                     "message": "A test event from the studio."},
                                         actor=user.username, only_endpoint=endpoint_id))
    return event_id


# ---- emitting ---------------------------------------------------------------------------------


def once_id(event_type: str, *key: object) -> str:
    """The id of an event that happens once per ``key`` (a round completing): a second emit
    of it is a no-op, so "exactly once per occurrence" holds across processes and retries."""
    return "msg_" + hashlib.sha256(json.dumps([event_type, *key], default=str).encode()).hexdigest()[:24]


def emit_tx(cur: Cursor, event_type: str, data: dict[str, Any], actor: str | None, *,
            event_id: str | None = None) -> bool:
    """Put ``event_type`` with ``data`` in the outbox, inside the caller's transaction (the
    change and its event commit or roll back together). Returns False when ``event_id`` was
    already emitted."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    return rows.emit_tx(cur, event_id or new_event_id(), event_type, data, actor=actor)


# ---- the events of each workflow ------------------------------------------------------------------


def on_grade_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int, end: int) -> None:
    """After a grade is written (inside its transaction): when it was the last of its round's
    assignments, ``round.completed`` and, when the round's agreement is under the bar the lead
    chose, ``agreement.below_bar`` (each once per round)."""
    round_id = rows.round_state_tx(cur, actor, query_id, doc_id, start, end)
    if round_id is None or rows.event_exists_tx(cur, once_id("round.completed", round_id)):
        return
    facts = rows.round_facts_tx(cur, round_id)
    emit_tx(cur, "round.completed", facts, actor, event_id=once_id("round.completed", round_id))
    check_bar_tx(cur, _engine_of(cur), round_id, actor)


def _engine_of(cur: Cursor) -> str:
    """The engine behind a cursor (PostgreSQL's takes advisory locks; DuckDB's has no such call)."""
    return "postgresql" if hasattr(cur, "advisory_lock") else "duckdb"


def check_bar_tx(cur: Cursor, engine: str, round_id: str, actor: str | None) -> None:
    """``agreement.below_bar`` for ``round_id`` when its figures (two or more grades on some
    item) fall under the bar in force; once per round and graded measure."""
    from golden_store.live import agreement_bar, agreement_data
    from golden_store.scoring import agreement_counts as counts

    agg = agreement_data.aggregates_tx(cur, engine, round_id)
    per_round = counts.by(agg.round_pairs, agg.round_units, "round_id")
    figures = {r["round_id"]: r for r in per_round.to_dict("records")}.get(round_id)
    if not figures or not figures.get("n_units"):
        return
    emit_below_bar_tx(cur, round_id, figures, agreement_bar.current_tx(cur)[0], actor)


def emit_below_bar_tx(cur: Cursor, round_id: str, figures: dict[str, Any], bar: Any, actor: str | None) -> None:
    check = bar.check(figures)
    if check.cleared:
        return
    value = figures.get(check.measure)
    emit_tx(cur, "agreement.below_bar",
            {"round_id": round_id, "measure": check.measure, "value": _num(value),
             "kappa_binary": _num(figures.get("kappa_binary")), "bar": bar.as_dict(), "text": check.text,
             "n_units": int(figures.get("n_units") or 0)},
            actor, event_id=once_id("agreement.below_bar", round_id, check.measure))


def emit_split_check(store: Store, check: dict[str, Any], actor: str) -> None:
    """``agreement.below_bar`` when a split's bar check fails (``annotator.labeling.rounds.split_check``):
    the calibration round it read, once per round and measure (the same event id as at that
    round's completion, so it is never sent twice). Its own transaction: the check is a read."""
    if check.get("cleared") or not check.get("round_id"):
        return
    figures, measure = check.get("figures") or {}, check.get("graded_measure")
    data = {"round_id": check["round_id"], "measure": measure, "value": _num(figures.get(measure)),
            "kappa_binary": _num(figures.get("kappa_binary")), "bar": check.get("bar"), "text": check.get("text"),
            "n_units": int(figures.get("n_units") or 0)}
    store.write(lambda cur: emit_tx(cur, "agreement.below_bar", data, actor,
                                    event_id=once_id("agreement.below_bar", check["round_id"], measure)))


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else round(f, 6)


def adjudication_data(actor: str, query_id: str, doc_id: str, start: int, end: int, grade: int, rationale: str,
                      clarification: str | None) -> dict[str, Any]:
    return {"item": {"query_id": query_id, "doc_id": doc_id, "start": start, "end": end}, "grade": grade,
            "rationale": rationale.strip(), "clarification": (clarification or "").strip() or None, "lead": actor}


def emit_frozen(store: Store, result: Any, actor: str, *, signed: bool) -> None:
    """``version.frozen``, right after a freeze published its folder. Freezing writes files
    (its store transaction is a read snapshot), so this event has its own transaction, after
    the version is visible: a crash between the two loses this one event, never announces a
    version that is not there."""
    m = result.manifest
    data = {"name": result.name, "content_digest": m.get("content_digest"), "data_digest": m.get("data_digest"),
            "counts": _plain({k: m.get(k) for k in ("n_documents", "n_queries", "n_judgments", "n_spans",
                                                    "n_pending_judgments")}),
            "signed": signed, "location": str(result.path)}
    store.write(lambda cur: emit_tx(cur, "version.frozen", data, actor,
                                    event_id=once_id("version.frozen", result.name, m.get("content_digest"))))


def _plain(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))
