"""Receipts for labels sent by the client-side labeling surface, the SQL side.

The browser gives every label an id of its own and re-sends a label until the server
acknowledges it (after a lost reply, a reconnect, a server restart). A receipt per id is
written in the same transaction as the event the label made, so a label that arrives twice
writes once: the second arrival finds the receipt and changes nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from golden_store.db.cursor import Cursor
from golden_store.core.errors import ValidationError
from golden_store.db.store import utcnow

# Browser-made ids: a UUID or any short token of safe characters (never user text).
_LABEL_ID = re.compile(r"^[A-Za-z0-9_-]{8,64}$")


def check_label_id(label_id: object) -> str:
    if not isinstance(label_id, str) or not _LABEL_ID.match(label_id):
        raise ValidationError("A label id is 8-64 letters, digits, '-' or '_' (the labeling surface makes one).")
    return label_id


def find(cur: Cursor, label_id: str) -> dict[str, Any] | None:
    """The receipt of ``label_id``, if that label was written already."""
    row = cur.execute("SELECT actor, surface, item, action, event_id FROM label_receipts WHERE label_id = ?",
                      [label_id]).fetchone()
    if row is None:
        return None
    return {"actor": row[0], "surface": row[1], "item": json.loads(row[2]), "action": row[3], "event_id": row[4]}


def add(cur: Cursor, label_id: str, *, actor: str, surface: str, item: dict[str, Any],
        action: str, event_id: int | None) -> None:
    """Record that ``label_id`` wrote ``event_id`` (call inside the event's transaction)."""
    cur.execute("INSERT INTO label_receipts VALUES (?, ?, ?, ?, ?, ?, ?)",
                [label_id, actor, surface, json.dumps(item, sort_keys=True), action, event_id, utcnow()])


def written_by(cur: Cursor, label_id: str | None, actor: str) -> tuple[int, dict] | None:
    """(event id, item) that a label of ``actor`` wrote; None if there is no such label of theirs."""
    seen = find(cur, label_id) if label_id else None
    if seen is None or seen["actor"] != actor or seen["event_id"] is None:
        return None
    return seen["event_id"], seen["item"]


def count(store, actor: str | None = None) -> int:
    """How many labels were written through the surface (by ``actor`` if given)."""
    if actor is None:
        return int(store.read_one("SELECT count(*) FROM label_receipts")[0])
    return int(store.read_one("SELECT count(*) FROM label_receipts WHERE actor = ?", [actor])[0])


# ---- many labels at once (issue 41: the label channel writes the labels that arrive together) ----


def find_many(cur: Cursor, label_ids: list[str]) -> dict[str, dict[str, Any]]:
    """:func:`find` for several ids in one statement: the receipts that exist, by label id."""
    if not label_ids:
        return {}
    marks = ", ".join("?" * len(label_ids))
    rows = cur.execute(f"SELECT label_id, actor, surface, item, action, event_id FROM label_receipts "
                       f"WHERE label_id IN ({marks})", list(label_ids)).fetchall()
    return {r[0]: {"actor": r[1], "surface": r[2], "item": json.loads(r[3]), "action": r[4], "event_id": r[5]}
            for r in rows}


def add_many(cur: Cursor, receipts: list[tuple[str, str, str, dict[str, Any], str, int | None]]) -> None:
    """:func:`add` for several labels ``(label_id, actor, surface, item, action, event_id)``
    in one statement (call inside their events' transaction)."""
    if not receipts:
        return
    now = utcnow()
    cur.execute("INSERT INTO label_receipts VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(receipts)),
                [v for lid, actor, surface, item, action, event_id in receipts
                 for v in (lid, actor, surface, json.dumps(item, sort_keys=True), action, event_id, now)])
