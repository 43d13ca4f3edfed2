"""Adjudication for leads (METHODOLOGY §3.7 step 3): every disagreement is queued with each
annotator's label, note and time and the rubric in force; the lead's decision is an event
with a rationale, and can become a rubric clarification in the same step. Only leads see
who labelled what."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import adjudication, corpus
from golden_store.rubric import current_rubric
from golden_store.store import Store


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


def queue(store: Store, user: User, stratum: str | None = None) -> list[dict]:
    require(user, Permission.ADJUDICATE)
    return adjudication.queue(store, stratum)


def dispute(store: Store, user: User, item: dict) -> Dispute:
    """One queued item in full: the passage and every annotator's label on it."""
    require(user, Permission.ADJUDICATE)
    raw = corpus.raw_text(store, item["doc_id"]) or ""
    return Dispute(item["query_id"], item["query_text"], item["stratum"], item["doc_id"], item["start"], item["end"],
                   raw[item["start"]:item["end"]],
                   tuple(adjudication.labels(store, item["query_id"], item["doc_id"], item["start"], item["end"])))


def decide(store: Store, user: User, d: Dispute, grade: int, rationale: str,
           clarification: str | None = None) -> int | None:
    """Record the final grade; with ``clarification``, also a new rubric version (returned)."""
    require(user, Permission.ADJUDICATE)
    if clarification and clarification.strip():
        require(user, Permission.EDIT_RUBRIC)
    return adjudication.decide(store, user.username, d.query_id, d.doc_id, d.start, d.end, grade, rationale,
                               clarification)


def history(store: Store, user: User, limit: int = 200) -> list[dict]:
    require(user, Permission.ADJUDICATE)
    return adjudication.history(store, limit)


def rubric(store: Store, user: User) -> dict | None:
    require(user, Permission.ADJUDICATE)
    return current_rubric(store)


def pending_count(store: Store, user: User) -> int:
    require(user, Permission.ADJUDICATE)
    return adjudication.count_pending(store)
