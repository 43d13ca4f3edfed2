"""Adjudication for leads (METHODOLOGY §3.7 step 3): every disagreement is queued with each
annotator's label, note and time and the rubric in force; the lead's decision is an event
with a rationale, and can become a rubric clarification in the same step. Only leads see
who labelled what."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from golden_store.db.cursor import Cursor

from annotator.events import webhooks
from annotator.labeling import labeling
from annotator.labeling.evidence_rounds import visible_evidence
from annotator.people.identity import User, require
from annotator.labeling.judging import GRADES, marked_segments
from annotator.labeling.labeling import Ack, Label, LabelRefused
from annotator.people.roles import Permission
from golden_store.live import adjudication, judging
from golden_store.live import documents
from golden_store.live.rubric import current_rubric
from golden_store.core.judgment_formats import shown_actor
from golden_store.db.store import Store

SURFACE = "adjudication"
KEYS = tuple((str(g), "adjudicate", g, f"final {g}: {name}") for g, name in GRADES.items())
QUEUE_AHEAD = 8


@dataclass(frozen=True)
class Dispute:
    query_id: str
    query_text: str
    stratum: str
    doc_id: str
    start: int
    end: int
    passage: str
    labels: tuple[dict, ...]  # actor, grade, note, created_at, rubric_version, round_id


def queue(store: Store, user: User, stratum: str | None = None, *, limit: int | None = None,
          offset: int = 0) -> list[dict]:
    """The disagreements waiting (of ``stratum`` if given), oldest first; ``limit``/``offset``
    page through them in SQL."""
    require(user, Permission.ADJUDICATE)
    return adjudication.queue(store, stratum, limit=limit, offset=offset)


def pending_by_stratum(store: Store, user: User) -> dict[str, int]:
    """Disagreements waiting per stratum: the page's stratum list and count without loading
    the queue (tens of thousands of rows at team scale)."""
    require(user, Permission.ADJUDICATE)
    return adjudication.pending_by_stratum(store)


def dispute(store: Store, user: User, item: dict) -> Dispute:
    """One queued item in full: the passage and every annotator's label on it."""
    require(user, Permission.ADJUDICATE)
    raw = documents.raw_text(store, item["doc_id"]) or ""
    return Dispute(item["query_id"], item["query_text"], item["stratum"], item["doc_id"], item["start"], item["end"],
                   raw[item["start"]:item["end"]],
                   tuple(adjudication.labels(store, item["query_id"], item["doc_id"], item["start"], item["end"])))


def decide(store: Store, user: User, d: Dispute, grade: int, rationale: str,
           clarification: str | None = None) -> int | None:
    """Record the final grade; with ``clarification``, also a new rubric version (returned)."""
    require(user, Permission.ADJUDICATE)
    if clarification and clarification.strip():
        require(user, Permission.EDIT_RUBRIC)

    def tx(cur: Cursor) -> int | None:
        out = adjudication.decide_tx(cur, user.username, d.query_id, d.doc_id, d.start, d.end, grade, rationale,
                                     clarification)[1]
        _emit_decided(cur, user, d.query_id, d.doc_id, d.start, d.end, grade, rationale, clarification)
        return out

    return store.write(tx)


def decide_item_tx(cur: Cursor, user: User, query_id: str, doc_id: str, start: int, end: int, grade: int,
                   rationale: str) -> int:
    """A lead's final grade on one item, disputed or not, inside the caller's transaction: the
    same ``adjudicate`` event with its rationale and ``adjudication.decided`` webhook as a
    decision on the queue. The Freeze conflicts page re-grades through it (issue 37 item 9):
    a passage one annotator graded as answering an unanswerable question is no disagreement,
    so the queue never offers it. Returns the event id."""
    require(user, Permission.ADJUDICATE)
    event_id = adjudication.decide_tx(cur, user.username, query_id, doc_id, start, end, grade, rationale)[0]
    _emit_decided(cur, user, query_id, doc_id, start, end, grade, rationale, None)
    return event_id


def _emit_decided(cur: Cursor, user: User, q: str, d: str, s: int, e: int, grade: int, rationale: str,
                  clarification: str | None) -> None:
    """``adjudication.decided``, in the decision's transaction."""
    webhooks.emit_tx(cur, "adjudication.decided",
                     webhooks.adjudication_data(user.username, q, d, s, e, grade, rationale, clarification),
                     user.username)


# ---- the keyed adjudication surface ------------------------------------------------------------


def _digest(query_text: str, passage: str, labels: list[tuple]) -> str:
    """What the lead decides on: the question, the passage and who graded what."""
    return labeling.digest(query_text, passage, ";".join(f"{a}={g}" for a, g in labels))


def card(store: Store, user: User, d: Dispute) -> dict[str, Any]:
    """One disagreement as the labeling surface paints it: the passage with the question's
    words and known evidence marked, then each annotator's label, note, time and round."""
    ev = [(e["start"], e["end"]) for e in visible_evidence(store, user, d.query_id) if e["doc_id"] == d.doc_id]
    lines = [f"{shown_actor(lab['actor'])}: {lab['grade']} ({GRADES[lab['grade']]}) · {lab['created_at']:%Y-%m-%d %H:%M} · "
             f"rubric v{lab['rubric_version'] or '-'}" + (f" · round {lab['round_id']}" if lab["round_id"] else "")
             + (f"\n    note: {lab['note']}" if lab["note"] else "") for lab in d.labels]
    return {"item": {"query_id": d.query_id, "doc_id": d.doc_id, "start": d.start, "end": d.end},
            "digest": _digest(d.query_text, d.passage, [(lab["actor"], lab["grade"]) for lab in d.labels]),
            "title": d.query_text,
            "meta": f"{d.query_id} · {d.stratum} · passage from {d.doc_id} [{d.start}:{d.end}]",
            "blocks": [{"heading": "Passage (question words and known evidence marked)",
                        "segments": [list(x) for x in marked_segments(d.passage, d.start, d.query_text, ev)]},
                       {"heading": "The annotators' labels", "segments": [["\n".join(lines), "plain"]]}]}


def cards(store: Store, user: User, stratum: str | None = None, n: int = QUEUE_AHEAD) -> list[dict[str, Any]]:
    """The next ``n`` disagreements of the queue (of ``stratum`` if given), ready to paint."""
    return [card(store, user, dispute(store, user, it)) for it in queue(store, user, stratum, limit=n)]


def _write(cur: Cursor, user: User, label: Label) -> int:
    """The adjudication surface's rules for one decision, inside its transaction."""
    require(user, Permission.ADJUDICATE)
    if label.action != "adjudicate":
        raise LabelRefused("Not undone: a decision is final once saved (it stays under Decided items with its "
                           "rationale)." if label.action == "undo" else f"Not decided: {label.action!r}.")
    if type(label.value) is not int or label.value not in GRADES:
        raise LabelRefused("Not decided: a final grade is 0, 1, 2 or 3.")
    clarification = label.fields.get("clarification", "")
    if clarification:
        require(user, Permission.EDIT_RUBRIC)
    try:
        q, d, s, e = (label.item["query_id"], label.item["doc_id"], int(label.item["start"]), int(label.item["end"]))
    except (KeyError, TypeError, ValueError):
        raise LabelRefused("Not decided: the decision does not name its passage.") from None
    where = f"{q} · {d} [{s}:{e}]"
    content = judging.item_content_tx(cur, q, d, s, e)
    if content is None:
        raise LabelRefused(f"Not decided: {where} is gone (its question was retired or its document changed).")
    if not adjudication.is_pending_tx(cur, q, d, s, e):
        raise LabelRefused(f"Not decided: {where} is no longer waiting (decided meanwhile, or the annotators now "
                           "agree).")
    if _digest(*content, adjudication.labels_tx(cur, q, d, s, e)) != label.digest:
        raise LabelRefused(f"Not decided: {where} changed since it was shown (a grade, the question or the "
                           "passage); it is offered again as it is now.")
    event_id = adjudication.decide_tx(cur, user.username, q, d, s, e, label.value, label.note, clarification)[0]
    _emit_decided(cur, user, q, d, s, e, label.value, label.note, clarification)
    return event_id


def submit(store: Store, user: User | None, raw_labels: object) -> list[Ack]:
    """Write the decisions the adjudication surface sent (each bound to what was shown)."""
    return labeling.submit(store, user, SURFACE, raw_labels, _write, Permission.ADJUDICATE)


def decided_count(store: Store, user: User) -> int:
    require(user, Permission.ADJUDICATE)
    return adjudication.decided_count(store)


def history(store: Store, user: User, limit: int = 200, offset: int = 0) -> list[dict]:
    """One page of decided items, newest first."""
    require(user, Permission.ADJUDICATE)
    return adjudication.history(store, limit, offset)


def rubric(store: Store, user: User) -> dict | None:
    require(user, Permission.ADJUDICATE)
    return current_rubric(store)


def pending_count(store: Store, user: User) -> int:
    require(user, Permission.ADJUDICATE)
    return adjudication.count_pending(store)
