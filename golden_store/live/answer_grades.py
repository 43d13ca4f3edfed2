"""Rubric grades of systems' answers, the SQL side: one row per mark of one criterion of one
answer, by a person or by the judge (METHODOLOGY §10.4, §11.1).

Every grade is an event (``answer_grades``); the current grade of a (system, question,
criterion, grader) is its latest row. Each row keeps the sha of the answer text it marked, so
a grade of text since replaced is *stale*: shown as such and never scored. The criteria an
answer is marked by are the question's own, else its stratum's (as
:func:`golden_store.live.reference_answers.criteria_for_query` reads them), here for every live
question at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow
from golden_store.live.faithfulness import answer_sha

KINDS = ("human", "judge")

__all__ = ["KINDS", "JudgeMark", "answer_sha", "criteria_by_query", "grade_tx", "record_judge_tx", "answer_tx",
           "gradeable_answers", "current_grades", "approved_references"]


def criteria_by_query(store: Store) -> dict[str, list[dict]]:
    """Every live question with criteria -> its criteria in order (its own when it has any,
    else its stratum's), each ``criterion_id, text, example, weight, scale_max``."""
    rows = store.read_dicts(
        "SELECT scope, scope_id, criterion_id, text, example, weight, scale_max FROM current_answer_criteria "
        "ORDER BY scope, scope_id, position, criterion_id")
    own: dict[str, list[dict]] = {}
    of_stratum: dict[str, list[dict]] = {}
    for r in rows:
        c = {k: r[k] for k in ("criterion_id", "text", "example")} | {"weight": float(r["weight"]),
                                                                     "scale_max": int(r["scale_max"])}
        (own if r["scope"] == "query" else of_stratum).setdefault(r["scope_id"], []).append(c)
    out: dict[str, list[dict]] = {}
    for qid, stratum in store.read("SELECT query_id, stratum FROM queries ORDER BY query_id"):
        crit = own.get(qid) or (of_stratum.get(stratum) if stratum else None)
        if crit:
            out[str(qid)] = crit
    return out


def approved_references(store: Store) -> dict[str, dict]:
    """query id -> its approved reference answer (``short_answer``, ``full_answer``)."""
    return {r["query_id"]: r for r in store.read_dicts(
        "SELECT query_id, short_answer, full_answer FROM current_reference_answers WHERE approved ORDER BY query_id")}


def gradeable_answers(store: Store, system: str | None = None) -> list[dict]:
    """Every answer to a live question that has criteria: ``system, query_id, question,
    stratum, held_out, answer``."""
    crit = criteria_by_query(store)
    rows = store.read_dicts(
        "SELECT a.system, a.query_id, q.text AS question, q.stratum, q.held_out, a.answer FROM answers a "
        "JOIN queries q USING (query_id) WHERE ? IS NULL OR a.system = ? ORDER BY a.system, a.query_id",
        [system, system])
    return [r for r in rows if r["query_id"] in crit]


def answer_tx(cur: Cursor, system: str, query_id: str) -> tuple[str, str] | None:
    """(answer text, question text) of one answer to a live question, read inside a write."""
    row = cur.execute("SELECT a.answer, q.text FROM answers a JOIN queries q USING (query_id) "
                      "WHERE a.system = ? AND a.query_id = ?", [system, query_id]).fetchone()
    return (str(row[0] or ""), str(row[1])) if row else None


def grade_tx(cur: Cursor, *, system: str, query_id: str, criterion_id: str, mark: int, grader: str, kind: str,
             answer: str, prompt_sha: str | None = None, reason: str | None = None,
             now: datetime | None = None) -> int:
    """Append one grade of one criterion of the answer whose text is ``answer``; its id. The
    caller has checked the criterion and the mark's range (the table checks 0..3 and kind)."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a grade kind ({', '.join(KINDS)}).")
    row = cur.execute(
        "INSERT INTO answer_grades (system, query_id, criterion_id, mark, grader, kind, prompt_sha, reason, answer_sha, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING grade_id",
        [system, query_id, criterion_id, int(mark), grader, kind, prompt_sha, reason, answer_sha(answer),
         now or utcnow()]).fetchone()
    assert row is not None  # INSERT ... RETURNING gives the row it wrote
    return int(row[0])


@dataclass(frozen=True)
class JudgeMark:
    criterion_id: str
    mark: int
    reason: str | None


def record_judge_tx(cur: Cursor, *, system: str, query_id: str, answer: str, model: str, prompt_sha: str,
                    marks: Sequence[JudgeMark], now: datetime | None = None) -> list[int]:
    """Record the judge's marks of one answer (one row per criterion it marked)."""
    at = now or utcnow()
    return [grade_tx(cur, system=system, query_id=query_id, criterion_id=m.criterion_id, mark=m.mark, grader=model,
                     kind="judge", answer=answer, prompt_sha=prompt_sha, reason=m.reason, now=at) for m in marks]


def current_grades(store: Store, system: str | None = None, kind: str | None = None) -> list[dict]:
    """The current grade per (system, question, criterion, grader) on live questions, oldest
    answer first, with ``stale`` (the answer's text changed since, or the answer is gone)."""
    rows = store.read_dicts(
        "SELECT g.grade_id, g.system, g.query_id, g.criterion_id, g.mark, g.grader, g.kind, g.prompt_sha, g.reason, "
        "g.answer_sha, g.created_at, a.answer FROM (SELECT *, row_number() OVER (PARTITION BY system, query_id, "
        "criterion_id, grader ORDER BY grade_id DESC) AS rn FROM answer_grades) AS g "
        "SEMI JOIN queries q USING (query_id) "
        "LEFT JOIN answers a ON a.system = g.system AND a.query_id = g.query_id "
        "WHERE g.rn = 1 AND (? IS NULL OR g.system = ?) AND (? IS NULL OR g.kind = ?) "
        "ORDER BY g.system, g.query_id, g.criterion_id, g.grader", [system, system, kind, kind])
    for r in rows:
        text = r.pop("answer")
        r["mark"] = int(r["mark"])
        r["stale"] = text is None or answer_sha(text) != r["answer_sha"]
    return rows
