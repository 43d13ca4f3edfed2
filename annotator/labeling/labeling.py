"""Labels bound to what was shown: the rules every keyed labeling surface shares.

A label sent by the browser names the item it was given for *and* carries a digest of the
content that was on screen, a browser-made label id, and the username it was made by. The
server writes it only when:

- it was made by the person now signed in (a browser's unsent labels never change owner);
- the item still shows what the person saw (same digest; a re-imported document or an
  edited question refuses the label rather than moving it onto other text);
- the person may label that item now (role, assignment, round, blindness: each surface
  checks its own rule inside the same transaction as the write);
- the label id is new: a repeat is acknowledged as a duplicate and writes nothing, so a
  browser may re-send until it hears back (lost reply, reconnect, server restart).

Anything refused comes back as one sentence that the surface shows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from golden_store.db.cursor import Cursor

from annotator.people.identity import User
from annotator.people.roles import Permission, PermissionDenied
from golden_store.live import label_receipts
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import Store

MAX_NOTE = 2000  # characters; a note is a reminder, not an essay
MAX_BATCH = 200  # labels accepted in one send (a browser re-sends the rest)


class LabelRefused(GoldenError):
    """The label was not written; ``str(err)`` says why in one sentence."""


def digest(*parts: object) -> str:
    """A short digest of displayed content (question, passage, ...): what the browser sends
    back with a label, compared to the content as it stands when the label is written."""
    blob = json.dumps([str(p) for p in parts], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True)
class Label:
    """One label as the surface sends it (validated)."""

    label_id: str
    by: str
    item: dict[str, Any]
    digest: str
    action: str
    value: Any = None
    note: str = ""
    target: str | None = None  # for "undo": the label id being undone
    fields: dict[str, str] = field(default_factory=dict)  # a surface's extra text fields

    @staticmethod
    def parse(raw: object) -> "Label":
        if not isinstance(raw, dict):
            raise ValidationError("A label is an object.")
        label_id = label_receipts.check_label_id(raw.get("id"))
        item = raw.get("item")
        action = raw.get("action")
        note = raw.get("note") or ""
        if not isinstance(item, dict) or not isinstance(action, str) or not isinstance(note, str):
            raise ValidationError("A label names its item and action.")
        target = raw.get("target")
        if target is not None:
            target = label_receipts.check_label_id(target)
        fields = raw.get("fields") or {}
        if not isinstance(fields, dict) or not all(isinstance(v, str) for v in fields.values()):
            raise ValidationError("A label's extra fields are text.")
        return Label(label_id, str(raw.get("by") or ""), item, str(raw.get("digest") or ""), action,
                     raw.get("value"), note.strip()[:MAX_NOTE], target,
                     {str(k)[:40]: v.strip()[:MAX_NOTE] for k, v in list(fields.items())[:8]})


@dataclass(frozen=True)
class Ack:
    """What happened to one label: saved, duplicate (already saved), refused (why), or held
    (not written yet, the browser keeps it and sends it again)."""

    label_id: str
    status: str
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# A surface's writer: inside one transaction, check its rules and write the label's event;
# returns the event id. It raises LabelRefused (or ValidationError) to refuse.
Writer = Callable[[Cursor, User, Label], int | None]


def write_once(store: Store, user: User, surface: str, label: Label, writer: Writer) -> Ack:
    """Write ``label`` with ``writer`` unless its id was written before; one transaction
    holds the check, the event and the receipt, so two arrivals cannot both write."""
    if label.by and label.by != user.username:
        return Ack(label.label_id, "refused", f"Not saved: this label was made by {label.by}, and {user.username} "
                                              "is signed in now.")

    def tx(cur: Cursor) -> str:
        seen = label_receipts.find(cur, label.label_id)
        if seen is not None:
            if seen["actor"] != user.username:
                raise LabelRefused("Not saved: that label id belongs to another person's label.")
            return "duplicate"
        event_id = writer(cur, user, label)
        label_receipts.add(cur, label.label_id, actor=user.username, surface=surface, item=label.item,
                           action=label.action, event_id=event_id)
        return "saved"

    try:
        return Ack(label.label_id, store.write(tx))
    except (LabelRefused, ValidationError, PermissionDenied) as exc:
        return Ack(label.label_id, "refused", _one_line(exc))


def submit(store: Store, user: User | None, surface: str, raw_labels: object, writer: Writer,
           perm: Permission) -> list[Ack]:
    """Write a browser's batch of labels in the order it made them; one Ack per label. A
    person who is signed out, or lost the role meanwhile, gets every label refused."""
    if not isinstance(raw_labels, list):
        return []
    raw_labels = raw_labels[:MAX_BATCH]
    ids = [str(r.get("id"))[:64] if isinstance(r, dict) else "" for r in raw_labels]
    if user is None:  # held, not refused: the browser keeps them and sends them after sign-in
        return [Ack(i, "held", "Not saved yet: you are signed out; sign in again and they are sent.") for i in ids]
    if not user.can(perm):
        return [Ack(i, "refused", f"Not saved: your account may no longer {perm.value}.") for i in ids]
    acks = []
    for raw in raw_labels:
        try:
            label = Label.parse(raw)
        except ValidationError as exc:
            rid = raw.get("id") if isinstance(raw, dict) else None
            acks.append(Ack(rid[:64] if isinstance(rid, str) else "", "refused", _one_line(exc)))
            continue
        acks.append(write_once(store, user, surface, label, writer))
    return acks


def _one_line(exc: BaseException) -> str:
    text = exc.summary if isinstance(exc, ValidationError) else str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
