"""Reference answers and answer criteria, the SQL side: every write, approval and retirement is
an event (who, when, and the model and prompt sha when Claude drafted it), and the current
state is a view, so a question's revisions are all kept.

A reference answer has a short extractive form (what exact match and token F1 compare
against) and/or a full answer, and is anchored to evidence: a list of corpus spans
(``doc_id``, ``start``, ``end``) each checked against the document when written. It is
*approved* when a person approved its latest revision; an edit after an approval needs a new
one.

Criteria are what a rubric-graded judge and people mark an answer by: each independently
checkable, with a worked example, a fixed weight and a narrow scale (pass/fail, or 0-2, or
0-3), set for one question or for every question of a stratum (a question's own criteria,
when it has any, replace its stratum's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow

SCOPES = ("query", "stratum")
MAX_CRITERIA = 5


@dataclass(frozen=True)
class Anchor:
    """An evidence span the reference answer rests on."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class ReferenceDraft:
    short_answer: str | None
    full_answer: str | None
    evidence: tuple[Anchor, ...] = ()


@dataclass(frozen=True)
class CriterionDraft:
    criterion_id: str
    text: str
    example: str
    weight: float = 1.0
    scale_max: int = 1


def _clean(text: str | None) -> str | None:
    return text.strip() if text and text.strip() else None


def check_anchors(cur: Cursor, query_id: str, anchors: Sequence[Anchor]) -> list[dict]:
    """The anchors as stored: each span checked against the document's text as imported (the
    offsets evidence spans use, ``start``/``end``) and kept with the document's canonical sha,
    as evidence quotes keep it, so a later change of the document is seen as drift."""
    out: list[dict] = []
    for a in anchors:
        row = cur.execute("SELECT length(raw_text), canonical_sha256 FROM documents WHERE doc_id = ?",
                          [a.doc_id]).fetchone()
        if row is None:
            raise ValidationError(f"{query_id}: evidence span {a.doc_id}:{a.start}-{a.end} names no document of the "
                                  f"corpus; anchor the answer to a span of an imported document.")
        if not 0 <= a.start < a.end <= int(row[0]):
            raise ValidationError(f"{query_id}: evidence span {a.doc_id}:{a.start}-{a.end} is outside the document "
                                  f"(0-{int(row[0])}); take the offsets from the document as it is in the corpus.")
        out.append({"doc_id": a.doc_id, "start": a.start, "end": a.end, "doc_sha256": row[1]})
    return out


def write_tx(cur: Cursor, query_id: str, draft: ReferenceDraft, *, actor: str, source: str = "person",
             model: str | None = None, prompt_sha: str | None = None, note: str | None = None,
             round_id: str | None = None) -> int:
    """Record a revision of the question's reference answer; its event id. ``round_id``: the
    reference round whose adjudication wrote it."""
    short, full = _clean(draft.short_answer), _clean(draft.full_answer)
    if short is None and full is None:
        raise ValidationError(f"{query_id}: a reference answer needs a short answer, a full answer or both.")
    if source not in ("person", "llm"):
        raise ValidationError(f"source must be person or llm, not {source!r}")
    if not cur.execute("SELECT 1 FROM queries WHERE query_id = ?", [query_id]).fetchone():
        raise NotFoundError(f"No live question {query_id!r}; add or import the question first.")
    evidence = json.dumps(check_anchors(cur, query_id, draft.evidence))
    row = cur.execute(
        "INSERT INTO reference_answer_events (query_id, op, short_answer, full_answer, evidence, source, model, "
        "prompt_sha, note, actor, created_at, round_id) VALUES (?, 'write', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "RETURNING event_id",
        [query_id, short, full, evidence, source, model, prompt_sha, _clean(note), actor, utcnow(),
         round_id]).fetchone()
    assert row is not None  # INSERT ... RETURNING gives the row it wrote
    return int(row[0])


def _current_tx(cur: Cursor, query_id: str) -> dict | None:
    row = cur.execute("SELECT revision, approved FROM current_reference_answers WHERE query_id = ?",
                      [query_id]).fetchone()
    return None if row is None else {"revision": int(row[0]), "approved": bool(row[1])}


def approve_tx(cur: Cursor, query_id: str, *, actor: str, revision: int | None = None,
               round_id: str | None = None) -> int:
    """Approve the question's latest revision (``revision``, when given, must be it: a
    person approves what they read, not an edit made since)."""
    now = _current_tx(cur, query_id)
    if now is None:
        raise NotFoundError(f"{query_id} has no reference answer to approve; write one first.")
    if revision is not None and revision != now["revision"]:
        raise ValidationError(f"{query_id}: the reference answer changed since you read it (revision {revision}, "
                              f"now {now['revision']}); read it again before approving.")
    row = cur.execute("INSERT INTO reference_answer_events (query_id, op, source, actor, created_at, round_id) "
                      "VALUES (?, 'approve', 'person', ?, ?, ?) RETURNING event_id",
                      [query_id, actor, utcnow(), round_id]).fetchone()
    assert row is not None
    return int(row[0])


def retire_tx(cur: Cursor, query_id: str, *, actor: str, note: str | None = None) -> int:
    if _current_tx(cur, query_id) is None:
        raise NotFoundError(f"{query_id} has no reference answer to retire.")
    row = cur.execute("INSERT INTO reference_answer_events (query_id, op, source, note, actor, created_at) "
                      "VALUES (?, 'retire', 'person', ?, ?, ?) RETURNING event_id",
                      [query_id, _clean(note), actor, utcnow()]).fetchone()
    assert row is not None
    return int(row[0])


def _with_evidence(rows: list[dict]) -> list[dict]:
    for r in rows:
        r["evidence"] = json.loads(r["evidence"] or "[]")
    return rows


def current(store: Store, query_id: str | None = None) -> list[dict]:
    """The current reference answers (one question's, or all), each with ``approved``."""
    where, params = ("WHERE query_id = ?", [query_id]) if query_id else ("", [])
    return _with_evidence(store.read_dicts(
        "SELECT query_id, revision, short_answer, full_answer, evidence, source, model, prompt_sha, note, actor, "
        f"created_at, approved FROM current_reference_answers {where} ORDER BY query_id", params))


def history(store: Store, query_id: str) -> list[dict]:
    """Every event of the question's reference answer, oldest first."""
    return _with_evidence(store.read_dicts(
        "SELECT event_id, op, short_answer, full_answer, evidence, source, model, prompt_sha, note, actor, created_at, "
        "round_id FROM reference_answer_events WHERE query_id = ? ORDER BY event_id", [query_id]))


def short_references(store: Store) -> dict[str, str]:
    """query id -> approved short answer: what exact match and token F1 score against."""
    return {r[0]: r[1] for r in store.read(
        "SELECT query_id, short_answer FROM current_reference_answers WHERE approved AND short_answer IS NOT NULL "
        "ORDER BY query_id")}


# ---- criteria ---------------------------------------------------------------------------------


def _check_criterion(c: CriterionDraft, where: str) -> None:
    if not c.criterion_id.strip() or not c.text.strip():
        raise ValidationError(f"{where}: a criterion needs an id and its text.")
    if not c.example.strip():
        raise ValidationError(f"{where}: criterion {c.criterion_id!r} needs a worked example (what an answer that "
                              f"meets it says), so that people and the judge read it alike.")
    if not c.weight > 0:
        raise ValidationError(f"{where}: criterion {c.criterion_id!r}: the weight must be above 0, not {c.weight}.")
    if c.scale_max not in (1, 2, 3):
        raise ValidationError(f"{where}: criterion {c.criterion_id!r}: the scale tops at 1 (pass/fail), 2 or 3, "
                              f"not {c.scale_max}.")


def check_criteria(criteria: Sequence[CriterionDraft], where: str) -> None:
    """At most :data:`MAX_CRITERIA`, distinct ids, each with its text, worked example, a weight
    above 0 and a scale of 1, 2 or 3 (an empty list passes: whether one is needed is the
    caller's rule)."""
    if len(criteria) > MAX_CRITERIA:
        raise ValidationError(f"{where}: {len(criteria)} criteria; a rubric has 1-{MAX_CRITERIA} (3-5 is the aim: "
                              f"each independently checkable).")
    ids = [c.criterion_id.strip() for c in criteria]
    if len(set(ids)) != len(ids):
        raise ValidationError(f"{where}: criterion ids must be distinct ({', '.join(ids)}).")
    for c in criteria:
        _check_criterion(c, where)


def criteria_json(criteria: Sequence[CriterionDraft]) -> str:
    """Criteria as stored with a round's submission (``{"id", "text", "example", "weight",
    "scale_max"}``, the criteria file's form)."""
    return json.dumps([{"id": c.criterion_id.strip(), "text": c.text.strip(), "example": c.example.strip(),
                        "weight": float(c.weight), "scale_max": int(c.scale_max)} for c in criteria])


def _scope_exists(cur: Cursor, scope: str, scope_id: str) -> bool:
    if scope == "query":
        return cur.execute("SELECT 1 FROM queries WHERE query_id = ?", [scope_id]).fetchone() is not None
    return cur.execute("SELECT 1 FROM strata WHERE name = ?", [scope_id]).fetchone() is not None


def set_criteria_tx(cur: Cursor, scope: str, scope_id: str, criteria: Sequence[CriterionDraft], *,
                    actor: str) -> int:
    """Make ``criteria`` the scope's whole list (those left out are retired); how many events."""
    if scope not in SCOPES:
        raise ValidationError(f"scope must be query or stratum, not {scope!r}")
    where = f"{scope} {scope_id}"
    if not _scope_exists(cur, scope, scope_id):
        raise NotFoundError(f"No {scope} {scope_id!r} in the store.")
    if not criteria:
        raise ValidationError(f"{where}: 0 criteria; a rubric has 1-{MAX_CRITERIA} (3-5 is the aim: each "
                              f"independently checkable).")
    check_criteria(criteria, where)
    ids = [c.criterion_id.strip() for c in criteria]
    now = utcnow()
    old = {r[0] for r in cur.execute("SELECT criterion_id FROM current_answer_criteria WHERE scope = ? AND scope_id = ?",
                                     [scope, scope_id]).fetchall()}
    n = 0
    for position, c in enumerate(criteria):
        cur.execute("INSERT INTO answer_criterion_events (scope, scope_id, criterion_id, op, text, example, weight, "
                    "scale_max, position, actor, created_at) VALUES (?, ?, ?, 'write', ?, ?, ?, ?, ?, ?, ?)",
                    [scope, scope_id, c.criterion_id.strip(), c.text.strip(), c.example.strip(), float(c.weight),
                     c.scale_max, position, actor, now])
        n += 1
    for gone in sorted(old - set(ids)):
        cur.execute("INSERT INTO answer_criterion_events (scope, scope_id, criterion_id, op, actor, created_at) "
                    "VALUES (?, ?, ?, 'retire', ?, ?)", [scope, scope_id, gone, actor, now])
        n += 1
    return n


def criteria(store: Store, scope: str, scope_id: str) -> list[dict]:
    return store.read_dicts(
        "SELECT criterion_id, text, example, weight, scale_max, position, actor, created_at, revision "
        "FROM current_answer_criteria WHERE scope = ? AND scope_id = ? ORDER BY position, criterion_id",
        [scope, scope_id])


def criteria_for_query(store: Store, query_id: str) -> tuple[str, list[dict]]:
    """The criteria a question's answers are marked by, and where they come from: its own
    (``"query"``), else its stratum's (``"stratum"``), else none (``""``)."""
    own = criteria(store, "query", query_id)
    if own:
        return "query", own
    row = store.read_one("SELECT stratum FROM queries WHERE query_id = ?", [query_id])
    if row is None:
        raise NotFoundError(f"No live question {query_id!r}.")
    if row[0]:
        of_stratum = criteria(store, "stratum", str(row[0]))
        if of_stratum:
            return "stratum", of_stratum
    return "", []
