"""Freeze conflicts (issue 37 item 9): every conflict that refuses a freeze now, each with the
labels involved and the fixes this person's roles allow, and the fixes themselves.

Why: a freeze refuses, rightly, while a question marked unanswerable carries answering grades
or quotes, or a label no longer sits on the corpus; but none of the ways out its message
named worked from the app (a person corrects only their last 10 grades, the Adjudication
queue lists only disagreements, and a negative question could not be made answerable). This
is the one place listing each conflict with a fix that works:

* **re-grade** the passage: a lead's decision with the reason as its rationale, the same
  ``adjudicate`` event (and ``adjudication.decided`` webhook) as on the Adjudication page
  (:func:`annotator.labeling.adjudication.decide_item_tx`); the final grade is then the lead's;
* **retract** the grade: the store's ``retract`` event when every grade on the passage is the
  lead's own (a retract event withdraws its author's grade only: ``grade_state`` keeps one row
  per annotator, folded from that annotator's own events); otherwise the lead's decision of
  final grade 0 with the reason, which is how a lead withdraws someone else's grade; a quote is
  retracted with the evidence ``retract`` event, the lead named and the reason as its note;
* **mark the question answerable** with a reason recorded on the revision
  (:func:`annotator.evidence.query_editing.mark_answerable`).

The list is :func:`golden_store.freezing.freeze_blockers`, the freeze's own check, so what
this page shows is exactly what the freeze refuses. Listing is pure over what the store
returned (:func:`describe`); each fix re-checks, inside its transaction, that the labels are
still those shown, and refuses with a sentence (nothing written) without the role or the
reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotator.evidence import query_editing
from annotator.labeling import adjudication, labeling
from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import ROLE_PERMISSIONS, Permission, PermissionDenied
from golden_store import freezing
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store
from golden_store.freezing import (ANSWERED_UNANSWERABLE, ANSWERING_GRADE, BROKEN_QUOTE, GRADE_OFF_DOCUMENT,
                                   NO_DOCUMENTS, NO_QUERIES, QUOTED_UNANSWERABLE, STALE_GRADE, Blocker)
from golden_store.live import adjudication as adjudication_store
from golden_store.live import documents, evidence, judging, queries
from golden_store.live.rubric import current_version_tx

PAGE_TITLE = "Freeze conflicts"

REGRADE = "regrade"
RETRACT_GRADE = "retract_grade"
RETRACT_QUOTE = "retract_quote"
MARK_ANSWERABLE = "mark_answerable"

GRADE_NAMES = {0: "not relevant", 1: "related, does not answer", 2: "partly answers", 3: "fully answers"}

KIND_TITLES = {
    ANSWERED_UNANSWERABLE: "Graded as answering a question marked unanswerable",
    QUOTED_UNANSWERABLE: "Quoted as answering a question marked unanswerable",
    BROKEN_QUOTE: "A quote no longer on the corpus",
    STALE_GRADE: "A grade made on an earlier text of its document",
    GRADE_OFF_DOCUMENT: "A grade on a passage its document no longer holds",
    NO_QUERIES: "The store has no questions",
    NO_DOCUMENTS: "The store has no corpus",
}
_GRADE_KINDS = (ANSWERED_UNANSWERABLE, STALE_GRADE, GRADE_OFF_DOCUMENT)
_QUOTE_KINDS = (QUOTED_UNANSWERABLE, BROKEN_QUOTE)


@dataclass(frozen=True)
class Fix:
    """One way to clear a conflict: ``allowed`` for this person, else ``why_not`` says which
    role it needs; ``records`` says what it writes. ``grades``: the final grades a re-grade
    may choose here."""

    name: str
    title: str
    records: str
    allowed: bool
    why_not: str | None = None
    grades: tuple[int, ...] = ()


@dataclass(frozen=True)
class Conflict:
    """One conflict that refuses a freeze: its kind, the question, the passage or quote, who
    labelled what and when (``labels``: dicts with kind 'grade' / 'decision' / 'quote',
    actor, grade, note, created_at, stale), the fixes on this page and those elsewhere.
    ``digest`` binds a fix to the labels shown."""

    kind: str
    title: str
    sentence: str
    query_id: str | None
    query_text: str | None
    stratum: str | None
    answerable: bool | None
    doc_id: str | None
    start: int | None
    end: int | None
    passage: str | None  # the passage's current text; None when its document no longer holds it
    evidence_id: str | None
    quote: str | None
    labels: tuple[dict[str, Any], ...]
    fixes: tuple[Fix, ...]
    elsewhere: tuple[str, ...]
    digest: str

    @property
    def key(self) -> str:
        """A stable id for this conflict (widget keys)."""
        return labeling.digest(self.kind, self.query_id, self.doc_id, self.start, self.end, self.evidence_id)[:16]

    def fix(self, name: str) -> Fix | None:
        return next((f for f in self.fixes if f.name == name), None)


# ---- who may -----------------------------------------------------------------------------------


def may_see(user: User | None) -> bool:
    """Leads (who fix) and engineers (who freeze) see every conflict, with who labelled what."""
    return user is not None and (user.can(Permission.ADJUDICATE) or user.can(Permission.FREEZE))


def _require_see(user: User | None) -> User:
    if user is None:
        raise PermissionDenied("Sign in to see what refuses a freeze.")
    if not may_see(user):
        roles = ", ".join(sorted(r.value for r in user.roles)) or "none"
        raise PermissionDenied(f"{user.username} (roles: {roles}) may not see the freeze conflicts (they need "
                               f"permission to {Permission.ADJUDICATE.value} or to {Permission.FREEZE.value}); "
                               "ask an admin for the lead or engineer role.")
    return user


def _roles_that(perm: Permission) -> str:
    names = sorted(r.value for r, perms in ROLE_PERMISSIONS.items() if perm in perms)
    return (", ".join(names[:-1]) + " or " + names[-1]) if len(names) > 1 else names[0]


def _needs(perm: Permission, who: str) -> str:
    return f"needs the {_roles_that(perm)} role (to {perm.value}); ask {who}"


# ---- listing (pure over what the store returned) --------------------------------------------------


def _label_digest(kind: str, labels: Sequence[dict[str, Any]]) -> str:
    """What a fix is bound to: the kind and every label's author, grade and event (in any order
    of display)."""
    return labeling.digest(kind, *sorted(f"{x['kind']}:{x['actor']}:{x['grade']}:{x['event_id']}" for x in labels))


def _grade_fixes(kind: str, user: User, labels: Sequence[dict[str, Any]], fits: bool) -> list[Fix]:
    lead = user.can(Permission.ADJUDICATE)
    why = None if lead else _needs(Permission.ADJUDICATE, "a lead")
    grades = [x for x in labels if x["kind"] == "grade"]
    decided = any(x["kind"] == "decision" for x in labels)
    own = bool(grades) and not decided and all(x["actor"] == user.username for x in grades)
    fixes = []
    if fits and kind == ANSWERED_UNANSWERABLE:
        fixes.append(Fix(REGRADE, "Re-grade the passage", "your decision as lead, with the reason as its rationale "
                         "(an adjudication, as on the Adjudication page); the annotators' grades stay in the history",
                         lead, why, (0, 1)))
    elif fits and kind == STALE_GRADE:
        fixes.append(Fix(REGRADE, "Re-grade the passage on its current text",
                         "your decision as lead on the current text, with the reason as its rationale; it decides the "
                         "passage, so grades made on the earlier text no longer count", lead, why, (0, 1, 2, 3)))
    if own:
        fixes.append(Fix(RETRACT_GRADE, "Retract the grade", "a retract event for your own grade, with the reason "
                         "(the grade stays in the history)", lead, why))
    elif kind == ANSWERED_UNANSWERABLE and fits:
        fixes.append(Fix(RETRACT_GRADE, "Retract the grade",
                         "your decision as lead: final grade 0, with the reason (a grade is withdrawn only by the "
                         "person who gave it, so a lead retracts it by a decision that overrides it)", lead, why))
    return fixes


def describe(blocker: Blocker, user: User, labels: Sequence[dict[str, Any]], passage: str | None,
             question: queries.QueryRecord | None) -> Conflict:
    """One blocker as a conflict for ``user``: the labels involved, and each fix with whether
    this person may apply it. Pure."""
    b = blocker
    fixes: list[Fix] = []
    elsewhere: list[str] = []
    can_edit = user.can(Permission.EDIT_QUERIES)
    if b.kind in _GRADE_KINDS:
        fixes += _grade_fixes(b.kind, user, labels, passage is not None)
    if b.kind in _QUOTE_KINDS:
        lead = user.can(Permission.ADJUDICATE)
        fixes.append(Fix(RETRACT_QUOTE, "Retract the quote", "an evidence retract event in your name, with the reason "
                         "as its note (the quote stays in the question's history)", lead,
                         None if lead else _needs(Permission.ADJUDICATE, "a lead")))
    if b.kind in (ANSWERED_UNANSWERABLE, QUOTED_UNANSWERABLE):
        fixes.append(Fix(MARK_ANSWERABLE, "Mark the question answerable",
                         "a new revision of the question, answerable, with the reason recorded on it"
                         + (" (a question of the negative stratum moves to the stratum you choose)"
                            if question is not None and question.stratum == "negative" else ""),
                         can_edit, None if can_edit else _needs(Permission.EDIT_QUERIES, "a lead or an engineer")))
    if b.kind == BROKEN_QUOTE:
        elsewhere.append("Quote the passage again where it now stands (Evidence page), then retract this quote.")
    if b.kind == GRADE_OFF_DOCUMENT or (b.kind == STALE_GRADE and passage is None):
        elsewhere.append("The passage no longer fits its document, so it cannot be re-graded: restore the document's "
                         "text (Corpus page, an engineer, 'replace'), or retire the question (Queries page).")
    if b.kind == STALE_GRADE and not b.adjudication:
        elsewhere.append(f"{b.who} can also re-grade it on the Judge page while it is among their last 10 "
                         "judgments.")
    if b.kind == NO_QUERIES:
        elsewhere.append("Import questions on the Queries page (or golden queries import).")
    if b.kind == NO_DOCUMENTS:
        elsewhere.append("Import documents on the Corpus page (or golden corpus import).")
    return Conflict(
        kind=b.kind, title=KIND_TITLES.get(b.kind, b.kind), sentence=b.sentence, query_id=b.query_id,
        query_text=b.query_text, stratum=question.stratum if question else None,
        answerable=question.answerable if question else None, doc_id=b.doc_id, start=b.start, end=b.end,
        passage=passage, evidence_id=b.evidence_id, quote=b.quote, labels=tuple(labels), fixes=tuple(fixes),
        elsewhere=tuple(elsewhere), digest=_label_digest(b.kind, labels))


def label_line(label: dict[str, Any]) -> str:
    """Who labelled what and when, in words (the page and the CLI)."""
    when = f"{label['created_at']:%Y-%m-%d %H:%M}" if label.get("created_at") is not None else "time unknown"
    stale = " (on an earlier text of the document)" if label.get("stale") else ""
    if label["kind"] == "quote":
        what = "quoted it as evidence (counts as grade 3)"
    elif label["kind"] == "decision":
        what = f"decided final grade {label['grade']} ({GRADE_NAMES.get(label['grade'], '?')}) as lead"
    else:
        what = f"graded {label['grade']} ({GRADE_NAMES.get(label['grade'], '?')})"
    note = f" · note: {label['note']}" if label.get("note") else ""
    return f"{label['actor']} {what} · {when}{stale}{note}"


# ---- reading the store -------------------------------------------------------------------------


def _blockers(store: Store) -> list[Blocker]:
    # the same for everyone who may see it; cached per store generation (the check reads every
    # quote and final grade, seconds at team scale), so a rerun after nothing changed is free
    return cache.cached(store, "freeze_blockers", (), lambda: freezing.live_blockers(store))


def count(store: Store, user: User | None) -> int:
    """How many conflicts refuse a freeze now (the Versions page's line)."""
    _require_see(user)
    return len(_blockers(store))


def conflicts(store: Store, user: User | None) -> list[Conflict]:
    """Every conflict that refuses a freeze now, in the order the freeze checks them, each with
    the labels involved and the fixes for ``user``'s roles."""
    user = _require_see(user)
    blockers = _blockers(store)
    if not blockers:
        return []
    qids = sorted({b.query_id for b in blockers if b.query_id})
    labels = adjudication_store.labels_on_questions(store, qids)
    quotes = evidence.list_evidence_for(store, [b.query_id for b in blockers if b.kind in _QUOTE_KINDS and b.query_id])
    texts = documents.raw_texts(store, [b.doc_id for b in blockers if b.doc_id])
    questions = queries.get_queries(store, qids)
    out = []
    for b in blockers:
        if b.kind in _QUOTE_KINDS:
            on = [{"kind": "quote", "actor": q["author"], "grade": None, "note": q["note"],
                   "created_at": q["created_at"], "event_id": q["evidence_id"], "stale": False}
                  for q in quotes.get(str(b.query_id), []) if q["evidence_id"] == b.evidence_id]
        else:
            on = labels.get((b.query_id, b.doc_id, b.start, b.end), [])
            if b.kind == STALE_GRADE:  # the stale label first: it is the one the conflict is about
                on = sorted(on, key=lambda x: not (x["actor"] == b.who and (x["kind"] == "decision") == b.adjudication))
        raw = texts.get(b.doc_id) if b.doc_id else None
        fits = raw is not None and b.start is not None and b.end is not None and 0 <= b.start < b.end <= len(raw)
        out.append(describe(b, user, on, raw[b.start:b.end] if fits and raw is not None else None,
                            questions.get(b.query_id) if b.query_id else None))
    return out


def strata_for_answerable(store: Store, user: User | None) -> list[str]:
    """The strata a question may move to when it is marked answerable (all but negative)."""
    _require_see(user)
    return sorted(s for s in queries.known_strata(store) if s != "negative")


# ---- the fixes ---------------------------------------------------------------------------------


def _reason(reason: str | None, refused: str) -> str:
    return query_editing.change_reason(reason, refused)


def _check_shown(cur: Cursor, c: Conflict) -> list[dict[str, Any]]:
    """The item's labels now, refused when they are not those shown (someone fixed it, graded
    it or decided it meanwhile): a fix acts only on what the person saw."""
    now = adjudication_store.item_labels_tx(cur, str(c.query_id), str(c.doc_id), int(c.start or 0), int(c.end or 0))
    if _label_digest(c.kind, now) != c.digest:
        raise ValidationError(f"Not changed: the labels on {c.query_id} · {c.doc_id} [{c.start}:{c.end}] changed "
                              "since they were shown (fixed, graded or decided meanwhile); the list now shows them "
                              "as they are.")
    return now


def _grade_item(c: Conflict) -> tuple[str, str, int, int]:
    if c.kind not in _GRADE_KINDS or c.query_id is None or c.doc_id is None or c.start is None or c.end is None:
        raise ValidationError(f"Not changed: a {KIND_TITLES.get(c.kind, c.kind).lower()} has no grade to change.")
    return c.query_id, c.doc_id, c.start, c.end


def regrade(store: Store, user: User | None, c: Conflict, grade: int, reason: str | None) -> str:
    """Re-grade the conflict's passage: the lead's decision with ``reason`` as its rationale.
    On a question marked unanswerable only 0 or 1 (2 or 3 says it answers: mark the question
    answerable instead). Returns what was recorded, in words."""
    require(user, Permission.ADJUDICATE)
    assert user is not None
    q, d, s, e = _grade_item(c)
    where = f"{q} · {d} [{s}:{e}]"
    text = _reason(reason, f"{where} was not re-graded")
    fix = c.fix(REGRADE)
    if fix is None:
        raise ValidationError(f"{where} was not re-graded: its passage no longer fits its document, so there is "
                              "nothing to grade (see the other fixes listed with it).")
    if type(grade) is not int or grade not in fix.grades:
        allowed = " or ".join(map(str, fix.grades))
        hint = (f" (grade {ANSWERING_GRADE} or more says the passage answers a question marked unanswerable, which "
                "the freeze refuses: if the corpus does answer it, mark the question answerable instead)"
                if c.kind == ANSWERED_UNANSWERABLE else "")
        raise ValidationError(f"{where} was not re-graded: choose {allowed}{hint}.")

    def tx(cur: Cursor) -> None:
        _check_shown(cur, c)
        if judging.item_content_tx(cur, q, d, s, e) is None:
            raise ValidationError(f"{where} was not re-graded: its question was retired or its document no longer "
                                  "holds the passage.")
        adjudication.decide_item_tx(cur, user, q, d, s, e, grade, text)

    store.write(tx)
    return f"Re-graded {where}: final grade {grade} ({GRADE_NAMES[grade]}), your decision with the reason."


def retract_grade(store: Store, user: User | None, c: Conflict, reason: str | None) -> str:
    """Retract the conflict's grade with ``reason``: a retract event of the lead's own grade
    when every grade on the passage is theirs and no decision was made; otherwise (an answer
    to an unanswerable question) the lead's decision of final grade 0. Returns what was
    recorded, in words."""
    require(user, Permission.ADJUDICATE)
    assert user is not None
    q, d, s, e = _grade_item(c)
    where = f"{q} · {d} [{s}:{e}]"
    text = _reason(reason, f"The grade on {where} was not retracted")
    if c.fix(RETRACT_GRADE) is None:
        raise ValidationError(f"The grade on {where} was not retracted: a grade is withdrawn only by the person who "
                              "gave it; see the other fixes listed with it.")

    def tx(cur: Cursor) -> str:
        now = _check_shown(cur, c)
        grades = [x for x in now if x["kind"] == "grade"]
        if grades and all(x["actor"] == user.username for x in grades) and not any(
                x["kind"] == "decision" for x in now):
            judging.insert_tx(cur, user.username, q, d, s, e, op="retract", note=text,
                              rubric_version=current_version_tx(cur))
            return f"Retracted your grade on {where}, with the reason."
        if judging.item_content_tx(cur, q, d, s, e) is None:
            raise ValidationError(f"The grade on {where} was not retracted: its question was retired or its document "
                                  "no longer holds the passage.")
        adjudication.decide_item_tx(cur, user, q, d, s, e, 0, f"retracted: {text}")
        return (f"Retracted the grade on {where} by your decision as lead: final grade 0 (the annotators' grades stay "
                "in the history).")

    return store.write(tx)


def retract_quote(store: Store, user: User | None, c: Conflict, reason: str | None) -> str:
    """Retract the conflict's quote: the evidence retract event, in the lead's name, with
    ``reason`` as its note. Returns what was recorded, in words."""
    require(user, Permission.ADJUDICATE)
    assert user is not None
    if c.kind not in _QUOTE_KINDS or c.query_id is None or c.evidence_id is None:
        raise ValidationError("Not changed: this conflict has no quote to retract.")
    where = f"quote {c.evidence_id} of {c.query_id}"
    text = _reason(reason, f"The {where} was not retracted")
    if not evidence.retract_evidence(store, c.query_id, c.evidence_id, actor=user.username, note=text):
        raise NotFoundError(f"The {where} was not retracted: it is no longer a current quote (retracted or "
                            "replaced meanwhile); the list now shows what is left.")
    return f"Retracted the {where}, with the reason."


def mark_answerable(store: Store, user: User | None, query_id: str, reason: str | None, *,
                    stratum: str | None = None) -> str:
    """Mark ``query_id`` answerable with ``reason`` recorded on its revision (a negative
    question moves to ``stratum``): :func:`annotator.evidence.query_editing.mark_answerable`. Returns
    what was recorded, in words."""
    require(user, Permission.EDIT_QUERIES)
    assert user is not None
    rec = query_editing.mark_answerable(store, user, query_id, reason, stratum=stratum)
    return f"Marked {query_id} answerable (stratum {rec.stratum}), with the reason recorded on its revision."
