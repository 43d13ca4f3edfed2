"""Reference answers and answer criteria as people author them (role-checked).

A domain expert writes a question's reference answer - a short extractive form (a date, a
number, a clause: what exact match and token F1 compare a system's answer against) and/or a
full answer - anchored to evidence spans of the corpus, and approves it; a lead sets the
criteria a rubric-graded judge and people mark answers by. Every revision is kept (the store's
event log); an edit after an approval needs a fresh approval, so nothing scores against a
reference nobody read in its current form.

Scoring a system's answers against the approved short references (:func:`match`) is the
deterministic tier of answer correctness: free, and run before any judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from annotator.evidence.reference_rounds import check_can_write
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.textin import loads, read_text
from golden_store.db.store import Store
from golden_store.live import evidence as live_evidence
from golden_store.live import nuggets as live_nuggets
from golden_store.live import queries as live_queries
from golden_store.live import reference_answers as live
from golden_store.live import reference_rounds as live_rounds
from golden_store.live.reference_answers import Anchor, CriterionDraft, ReferenceDraft
from golden_store.scoring.answers import exact_match, token_f1


def parse_anchor(text: str) -> Anchor:
    """``DOC_ID:START-END`` (the form the CLI takes) as an :class:`Anchor`."""
    doc, sep, span = text.rpartition(":")
    start, dash, end = span.partition("-")
    if not (sep and dash and doc and start.isdigit() and end.isdigit()):
        raise ValidationError(f"evidence {text!r}: write a span as DOC_ID:START-END (character offsets), "
                              f"e.g. leave-policy:120-245.")
    return Anchor(doc, int(start), int(end))


def write(store: Store, user: User, query_id: str, *, short_answer: str | None, full_answer: str | None,
          evidence: Sequence[Anchor] = (), note: str | None = None) -> int:
    """Record a revision of the question's reference answer (by this person); its revision."""
    require(user, Permission.LABEL)
    check_can_write(store, user, [query_id])
    draft = ReferenceDraft(short_answer, full_answer, tuple(evidence))
    return store.write(lambda cur: live.write_tx(cur, query_id, draft, actor=user.username, note=note))


def approve(store: Store, user: User, query_id: str, *, revision: int | None = None) -> int:
    require(user, Permission.LABEL)
    check_can_write(store, user, [query_id])
    return store.write(lambda cur: live.approve_tx(cur, query_id, actor=user.username, revision=revision))


def retire(store: Store, user: User, query_id: str, *, note: str | None = None) -> int:
    require(user, Permission.LABEL)
    check_can_write(store, user, [query_id])
    return store.write(lambda cur: live.retire_tx(cur, query_id, actor=user.username, note=note))


def current(store: Store, user: User, query_id: str | None = None) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return live.current(store, query_id)


def history(store: Store, user: User, query_id: str) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return live.history(store, query_id)


def questions(store: Store, user: User) -> dict[str, str]:
    """Every live question, id -> "id - text", for a picker. The label never carries the
    reference's state: a picker whose labels change under it (after a save or an approval) is
    a new widget to the browser, which snapped back to the first question and dropped the click
    on "Approve" (seen in a walkthrough). :func:`states` says which have what."""
    require(user, Permission.LABEL)
    frame = live_queries.list_queries(store)
    return {str(q): f"{q} - {text}" for q, text in zip(frame["query_id"], frame["text"])}


def round_of(store: Store, user: User, query_id: str) -> str | None:
    """The reference round the question waits in (not adjudicated), if any."""
    require(user, Permission.VIEW_STORE)
    return live_rounds.open_questions(store).get(query_id)


def states(store: Store, user: User) -> dict[str, str]:
    """query_id -> "approved" / "not approved" for the questions that have a reference answer."""
    require(user, Permission.LABEL)
    return {r["query_id"]: ("approved" if r["approved"] else "not approved") for r in live.current(store)}


def evidence_spans(store: Store, user: User, query_id: str) -> list[dict]:
    """The question's current evidence spans (what a reference answer is anchored to), each
    with its quote as placed in the document."""
    require(user, Permission.LABEL)
    return [{"doc_id": e["doc_id"], "start": int(e["start"]), "end": int(e["end"]), "quote": e["quote"]}
            for e in live_evidence.list_evidence(store, query_id) if e["doc_id"] is not None]


def import_file(store: Store, user: User, path: str | Path, *, approve_all: bool = False,
                label: str | None = None) -> int:
    """Reference answers from JSONL, one per line: ``{"query_id", "short_answer"?,
    "full_answer"?, "evidence"?: [{"doc_id", "start", "end"}, ...]}``. All lines are checked
    before anything is written, and all are written in one transaction (a bad line writes
    nothing). ``approve_all``: the person importing approves each revision as they write it
    (they vouch for the file)."""
    require(user, Permission.LABEL)
    text = read_text(path, label)
    name = label or str(path)  # an upload names its file, not its temporary copy
    drafts: list[tuple[str, ReferenceDraft]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}, line {n}"
        try:
            row = loads(line)
        except ValueError as exc:
            raise ValidationError(f"{where}: not JSON ({exc}); each line is one reference answer object.") from None
        if not isinstance(row, dict) or not isinstance(row.get("query_id"), str):
            raise ValidationError(f"{where}: each line needs a \"query_id\" string.")
        try:
            anchors = tuple(Anchor(str(e["doc_id"]), int(e["start"]), int(e["end"])) for e in row.get("evidence") or [])
        except (KeyError, TypeError, ValueError):
            raise ValidationError(f"{where}: \"evidence\" is a list of {{\"doc_id\", \"start\", \"end\"}}.") from None
        for key in ("short_answer", "full_answer"):
            if row.get(key) is not None and not isinstance(row[key], str):
                raise ValidationError(f"{where}: \"{key}\" must be text.")
        drafts.append((row["query_id"], ReferenceDraft(row.get("short_answer"), row.get("full_answer"), anchors)))
    if not drafts:
        raise ValidationError(f"{name}: no reference answers in the file.")
    seen: set[str] = set()
    for qid, _ in drafts:
        if qid in seen:
            raise ValidationError(f"{name}: {qid} appears twice; give each question one reference answer per file.")
        seen.add(qid)
    check_can_write(store, user, sorted(seen))

    def tx(cur) -> int:
        for n, (qid, draft) in enumerate(drafts, 1):
            try:
                live.write_tx(cur, qid, draft, actor=user.username)
            except (ValidationError, NotFoundError) as exc:
                raise type(exc)(f"{name}, line of {qid}: {exc}") from None
            if approve_all:
                live.approve_tx(cur, qid, actor=user.username)
        return len(drafts)

    return store.write(tx)


# ---- criteria ---------------------------------------------------------------------------------


def set_criteria(store: Store, user: User, *, scope: str, scope_id: str, criteria: Sequence[CriterionDraft]) -> int:
    """Make ``criteria`` the question's (or stratum's) rubric for answers: a lead's decision."""
    require(user, Permission.EDIT_RUBRIC)
    return store.write(lambda cur: live.set_criteria_tx(cur, scope, scope_id, criteria, actor=user.username))


def criteria_file(path: str | Path) -> list[CriterionDraft]:
    """A criteria file: a JSON list of ``{"id", "text", "example", "weight"?, "scale_max"?}``."""
    try:
        rows = loads(read_text(path))
    except ValueError as exc:
        raise ValidationError(f"{path}: not JSON ({exc}); a criteria file is a JSON list of criteria.") from None
    if not isinstance(rows, list):
        raise ValidationError(f"{path}: a criteria file is a JSON list of {{\"id\", \"text\", \"example\"}} objects.")
    return criteria_drafts(rows, str(path))


def criteria_drafts(rows: list, where: str) -> list[CriterionDraft]:
    """Criteria from parsed JSON objects ``{"id", "text", "example", "weight"?, "scale_max"?}``."""
    out: list[CriterionDraft] = []
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("id", "text", "example")):
            raise ValidationError(f"{where}, criterion {i}: needs \"id\", \"text\" and \"example\" strings.")
        try:
            out.append(CriterionDraft(r["id"], r["text"], r["example"], float(r.get("weight", 1.0)),
                                      int(r.get("scale_max", 1))))
        except (TypeError, ValueError):
            raise ValidationError(f"{where}, criterion {i}: \"weight\" is a number and \"scale_max\" 1, 2 or 3.") from None
    return out


def criteria_for_query(store: Store, user: User, query_id: str) -> tuple[str, list[dict]]:
    require(user, Permission.VIEW_STORE)
    return live.criteria_for_query(store, query_id)


# ---- the deterministic tier: exact match and token F1 ----------------------------------------


@dataclass(frozen=True)
class MatchReport:
    """One system's answers against the approved short references."""

    system: str
    per_query: list[dict]   # query_id, answer, reference, em, f1
    exact_match: float | None
    token_f1: float | None
    no_reference: list[str]  # answered questions without an approved short reference: not scored

    def as_dict(self) -> dict:
        return {"system": self.system, "n": len(self.per_query), "exact_match": self.exact_match,
                "token_f1": self.token_f1, "no_reference": self.no_reference, "per_query": self.per_query}


def match(store: Store, user: User, system: str | None = None) -> dict[str, MatchReport]:
    """Exact match and token F1 of each system's answers against the approved short
    references, per question and as means over the questions that have one."""
    require(user, Permission.VIEW_RESULTS)
    refs = live.short_references(store)
    by_system: dict[str, list[dict]] = {}
    for a in live_nuggets.answers(store, system):
        by_system.setdefault(a["system"], []).append(a)
    out: dict[str, MatchReport] = {}
    for name, rows in sorted(by_system.items()):
        scored, missing = [], []
        for a in sorted(rows, key=lambda r: r["query_id"]):
            ref = refs.get(a["query_id"])
            if ref is None:
                missing.append(a["query_id"])
                continue
            scored.append({"query_id": a["query_id"], "answer": a["answer"], "reference": ref,
                           "em": exact_match(a["answer"], ref), "f1": token_f1(a["answer"], ref)})
        n = len(scored)
        out[name] = MatchReport(name, scored, sum(r["em"] for r in scored) / n if n else None,
                                sum(r["f1"] for r in scored) / n if n else None, missing)
    return out
