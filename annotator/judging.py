"""Graded pooled judging for domain experts: the next item of their own queue, the passage
with query words and known evidence marked, grade / skip / unsure with a note, the rubric in
force, and their last judgments to correct. Blind: nothing returned here names a system."""

from __future__ import annotations

import re
from dataclasses import dataclass

from annotator.evidence_rounds import visible_evidence
from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import corpus, judging
from golden_store.rubric import add_rubric_version, current_rubric
from golden_store.search import STOPWORDS
from golden_store.store import Store

_WORD = re.compile(r"\w+")
GRADES = {0: "irrelevant", 1: "related, does not answer", 2: "partially answers", 3: "fully answers"}


@dataclass(frozen=True)
class JudgeItem:
    query_id: str
    query_text: str
    doc_id: str
    start: int
    end: int
    segments: tuple[tuple[str, str], ...]  # (text, kind): kind in plain / term / evidence


def _segments(text: str, offset: int, query: str, evidence_spans: list[tuple[int, int]]) -> tuple:
    """Mark evidence spans (passage-relative) first, then query words in the rest."""
    terms = {w for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 1}
    ev = sorted((max(0, s - offset), min(len(text), e - offset)) for s, e in evidence_spans
                if e > offset and s < offset + len(text))
    out: list[tuple[str, str]] = []

    def words(piece: str) -> None:
        pos = 0
        for m in _WORD.finditer(piece):
            if m.group().lower() in terms:
                if m.start() > pos:
                    out.append((piece[pos:m.start()], "plain"))
                out.append((m.group(), "term"))
                pos = m.end()
        if pos < len(piece):
            out.append((piece[pos:], "plain"))

    pos = 0
    for s, e in ev:
        if s < pos:
            continue
        words(text[pos:s])
        out.append((text[s:e], "evidence"))
        pos = e
    words(text[pos:])
    return tuple(out)


def next_item(store: Store, user: User) -> JudgeItem | None:
    require(user, Permission.LABEL)
    items = judging.next_items(store, user.username, 1)
    if not items:
        return None
    it = items[0]
    raw = corpus.raw_text(store, it["doc_id"]) or ""
    passage = raw[it["start"]:it["end"]]
    ev = [(q["start"], q["end"]) for q in visible_evidence(store, user, it["query_id"]) if q["doc_id"] == it["doc_id"]]
    return JudgeItem(it["query_id"], it["query_text"], it["doc_id"], it["start"], it["end"],
                     _segments(passage, it["start"], it["query_text"], ev))


def progress(store: Store, user: User) -> tuple[int, int]:
    require(user, Permission.LABEL)
    return judging.progress(store, user.username)


def judge(store: Store, user: User, item: JudgeItem, op: str, grade: int | None = None, note: str = "") -> None:
    require(user, Permission.LABEL)
    rubric = current_rubric(store)
    judging.record(store, user.username, item.query_id, item.doc_id, item.start, item.end, op=op, grade=grade,
                   note=note, rubric_version=rubric["version"] if rubric else None)


def correct(store: Store, user: User, previous: dict, grade: int, note: str = "") -> None:
    """Re-grade one of the annotator's own recent judgments (a new event; history kept)."""
    require(user, Permission.LABEL)
    rubric = current_rubric(store)
    judging.record(store, user.username, previous["query_id"], previous["doc_id"], previous["start"],
                   previous["end"], op="grade", grade=grade, note=note or "correction",
                   rubric_version=rubric["version"] if rubric else None)


def my_recent(store: Store, user: User, n: int = 10) -> list[dict]:
    require(user, Permission.LABEL)
    return judging.recent(store, user.username, n)


def rubric(store: Store, user: User) -> dict | None:
    require(user, Permission.LABEL)
    return current_rubric(store)


def edit_rubric(store: Store, user: User, text: str, changelog: str) -> int:
    require(user, Permission.EDIT_RUBRIC)
    return add_rubric_version(store, text, changelog, actor=user.username)
