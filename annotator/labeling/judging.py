"""Graded pooled judging for domain experts: the next item of their own queue, the passage
with query words and known evidence marked, grade / skip / unsure with a note, the rubric in
force, and their last judgments to correct. Blind: nothing returned here names a system."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from golden_store.db.cursor import Cursor

from annotator.events import webhooks
from annotator.labeling import labeling
from annotator.labeling.evidence_rounds import visible_evidence_for
from annotator.people.identity import User, require
from annotator.labeling.labeling import Ack, Label, LabelRefused
from annotator.people.roles import Permission
from golden_store.live import documents
from golden_store.live import judging, label_receipts
from golden_store.live import rubric as rubric_store
from golden_store.live.rubric import add_rubric_version, current_rubric, current_version_tx
from golden_store.corpus.search import question_terms, term_spans
from golden_store.db.store import Store

GRADES = {0: "irrelevant", 1: "related, does not answer", 2: "partially answers", 3: "fully answers"}
SURFACE = "judge"
# The keys of the Judge surface: (key, action, value, label).
KEYS = tuple((str(g), "grade", g, label) for g, label in GRADES.items()) + (
    ("s", "skip", None, "skip"), ("u", "unsure", None, "unsure"))
QUEUE_AHEAD = 12  # items the browser holds, so a burst of keys never waits for the server


@dataclass(frozen=True)
class JudgeItem:
    query_id: str
    query_text: str
    doc_id: str
    start: int
    end: int
    segments: tuple[tuple[str, str], ...]  # (text, kind): kind in plain / term / evidence

    @property
    def key(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "doc_id": self.doc_id, "start": self.start, "end": self.end}

    @property
    def digest(self) -> str:
        """Digest of what the judge reads: the question and the passage."""
        return labeling.digest(self.query_text, "".join(t for t, _ in self.segments))

    def card(self) -> dict[str, Any]:
        """The item as the labeling surface paints it (plain data; the browser escapes it)."""
        return {"item": self.key, "digest": self.digest, "title": self.query_text,
                "meta": f"{self.query_id} · passage from {self.doc_id} [{self.start}:{self.end}] · "
                        "query words highlighted, known evidence in green",
                "blocks": [{"heading": "", "segments": [list(s) for s in self.segments]}]}


def marked_segments(text: str, offset: int, query: str, evidence_spans: list[tuple[int, int]]) -> tuple:
    """Mark evidence spans (passage-relative) first, then the question's terms in the rest,
    as whole tokens (``search.question_terms``: "LIS-0.12" never lights the "12" of "12:30")."""
    terms = question_terms(query)
    ev = sorted((max(0, s - offset), min(len(text), e - offset)) for s, e in evidence_spans
                if e > offset and s < offset + len(text))
    out: list[tuple[str, str]] = []

    def words(piece: str) -> None:
        pos = 0
        for a, b in term_spans(piece, terms):
            if a > pos:
                out.append((piece[pos:a], "plain"))
            out.append((piece[a:b], "term"))
            pos = b
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


def _judge_item(store: Store, user: User, it: dict, raw: str, evidence: dict[str, list[dict]]) -> JudgeItem:
    passage = raw[it["start"]:it["end"]]
    ev = [(q["start"], q["end"]) for q in evidence[it["query_id"]] if q["doc_id"] == it["doc_id"]]
    return JudgeItem(it["query_id"], it["query_text"], it["doc_id"], it["start"], it["end"],
                     marked_segments(passage, it["start"], it["query_text"], ev))


def next_items(store: Store, user: User, n: int = QUEUE_AHEAD, order: str = "random") -> list[JudgeItem]:
    """The annotator's next ``n`` items, ready to paint (each document and each question's
    visible evidence read once, in three statements however many cards)."""
    require(user, Permission.LABEL)
    rows = judging.next_items(store, user.username, n, order=order)
    texts = documents.raw_texts(store, [r["doc_id"] for r in rows])
    raws = {r["doc_id"]: texts.get(r["doc_id"]) or "" for r in rows}
    evidence = visible_evidence_for(store, user, [r["query_id"] for r in rows])
    return [_judge_item(store, user, r, raws[r["doc_id"]], evidence) for r in rows]


def next_item(store: Store, user: User) -> JudgeItem | None:
    items = next_items(store, user, 1)
    return items[0] if items else None


def _key_of(item: dict[str, Any]) -> tuple[str, str, int, int]:
    try:
        key = (item["query_id"], item["doc_id"], item["start"], item["end"])
    except KeyError as exc:
        raise LabelRefused(f"Not saved: the label does not name its passage ({exc.args[0]} missing).") from None
    if not (isinstance(key[0], str) and isinstance(key[1], str) and type(key[2]) is int and type(key[3]) is int):
        raise LabelRefused("Not saved: the label names its passage wrongly.")
    return key


def _write(cur: Cursor, user: User, label: Label) -> int:
    """The Judge surface's rules for one label, inside its transaction (see annotator/labeling)."""
    require(user, Permission.LABEL)
    if label.action == "undo":
        return _undo(cur, user, label)
    if label.action not in judging.OPS:
        raise LabelRefused(f"Not saved: {label.action!r} is not a judging action.")
    grade = label.value if label.action == "grade" else None
    if label.action == "grade" and (type(grade) is not int or grade not in GRADES):
        raise LabelRefused("Not saved: a grade is 0, 1, 2 or 3.")
    q, d, s, e = _key_of(label.item)
    where = f"{q} · {d} [{s}:{e}]"
    content = judging.item_content_tx(cur, q, d, s, e)
    if content is None:
        raise LabelRefused(f"Not saved: {where} is gone (its question was retired or its document changed).")
    if labeling.digest(*content) != label.digest:
        raise LabelRefused(f"Not saved: {where} changed since it was shown (question edited or document "
                           "re-imported); it is offered again with its new text.")
    problem = judging.scope_problem_tx(cur, user.username, q, d, s, e)
    if problem:
        raise LabelRefused(f"Not saved: you may not grade {where} now: {problem}.")
    event_id = judging.insert_tx(cur, user.username, q, d, s, e, op=label.action, grade=grade, note=label.note,
                                 rubric_version=current_version_tx(cur))
    if label.action == "grade":
        webhooks.on_grade_tx(cur, user.username, q, d, s, e)  # round.completed when this was its last grade
    return event_id


def _undo(cur: Cursor, user: User, label: Label) -> int:
    """Undo = a 'retract' event on the target label's item, only while that label is still
    the person's latest word on the item (an undo never erases a later label)."""
    target = label_receipts.written_by(cur, label.target, user.username)
    if target is None:
        raise LabelRefused("Nothing to undo: that label was never saved.")
    event_id, item = target
    q, d, s, e = _key_of(item)
    if judging.latest_own_event_tx(cur, user.username, q, d, s, e) != event_id:
        raise LabelRefused(f"Not undone: you labeled {q} · {d} [{s}:{e}] again since.")
    return judging.insert_tx(cur, user.username, q, d, s, e, op="retract", note="undo",
                             rubric_version=current_version_tx(cur))


def submit(store: Store, user: User | None, raw_labels: object) -> list[Ack]:
    """Write the labels the Judge surface sent (each bound to what was shown)."""
    return labeling.submit(store, user, SURFACE, raw_labels, _write, Permission.LABEL)


def progress(store: Store, user: User) -> tuple[int, int]:
    require(user, Permission.LABEL)
    return judging.progress(store, user.username)


def judge(store: Store, user: User, item: JudgeItem, op: str, grade: int | None = None, note: str = "") -> None:
    """Label ``item`` as shown (the same rules as the surface); a refusal raises LabelRefused."""
    ack = labeling.write_once(store, user, SURFACE, Label(uuid.uuid4().hex, user.username, item.key, item.digest, op,
                                                          grade, note), _write)
    if ack.status == "refused":
        raise LabelRefused(ack.message)


def correct(store: Store, user: User, previous: dict, grade: int, note: str = "") -> None:
    """Re-grade one of the annotator's own recent judgments (a new event; history kept)."""
    require(user, Permission.LABEL)
    rubric = current_rubric(store)
    key = (previous["query_id"], previous["doc_id"], previous["start"], previous["end"])

    def tx(cur: Cursor) -> None:
        judging.insert_tx(cur, user.username, *key, op="grade", grade=grade, note=note or "correction",
                          rubric_version=rubric["version"] if rubric else None)
        webhooks.on_grade_tx(cur, user.username, *key)  # a re-grade after an undo may complete a round

    store.write(tx)


def my_recent(store: Store, user: User, n: int = 10) -> list[dict]:
    require(user, Permission.LABEL)
    return judging.recent(store, user.username, n)


def rubric(store: Store, user: User) -> dict | None:
    require(user, Permission.LABEL)
    return current_rubric(store)


def edit_rubric(store: Store, user: User, text: str, changelog: str) -> int:
    """A new rubric version; an unchanged text is refused (no version for nothing)."""
    require(user, Permission.EDIT_RUBRIC)
    version = add_rubric_version(store, text, changelog, actor=user.username)
    rubric_store.mark_seen(store, user.username, version)  # its author has seen it
    return version


def rubric_news(store: Store, user: User) -> list[dict]:
    """The rubric versions this person has not been shown yet (version, changelog, who,
    when), oldest first; empty once they have acknowledged the one in force."""
    require(user, Permission.LABEL)
    return rubric_store.unseen_versions(store, user.username)


def acknowledge_rubric(store: Store, user: User, version: int) -> None:
    """This person has read the changelog up to ``version``: the banner does not come back."""
    require(user, Permission.LABEL)
    rubric_store.mark_seen(store, user.username, version)
