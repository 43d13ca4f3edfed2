"""The judge's labels on the pool, the SQL side (METHODOLOGY §11.1, §11.8): pool-grading jobs
and their pause/resume events, one ``judge_label_events`` row per item the judge answered
(or refused, or failed on), and ``judge_item_state``, each item's latest judge decision.

A judge label is never a ``grade_event``: the views people's grades come from
(``current_grades``, ``final_grades``) never see it. ``route`` says who labels the item in
the end: ``judge`` (the judge's grade stands; the item leaves every person's Judge queue),
``human`` (in the band, refused or failed: people grade it) or ``sample`` (the judge
labeled it, and it is in the standing human sample: people grade it blind to the judge).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow

OUTCOMES = ("labeled", "escalated", "refused", "error")
ROUTES = ("judge", "human", "sample")
STATUSES = ("started", "paused", "resumed", "done", "failed")

# Items whose judge label stands: out of every person's Judge queue.
JUDGE_ROUTED = "SELECT query_id, doc_id, start, \"end\" FROM judge_item_state WHERE route = 'judge'"


@dataclass(frozen=True)
class JudgeLabel:
    """One judged item as the pool-grading job writes it."""

    query_id: str
    doc_id: str
    start: int
    end: int
    outcome: str
    route: str
    grade: int | None = None
    p_fail: float | None = None
    p_used: float | None = None
    reason: str | None = None
    justification: str | None = None
    prompt_sha: str | None = None
    batch_id: str | None = None


def create_job_tx(cur: Cursor, *, calibration_id: str, judge_model: str, rubric_sha: str, mode: str,
                  sample_share: float, sample_seed: int, gate_kappa: float | None, gate_override: str | None,
                  estimate: dict[str, Any] | None, actor: str) -> str:
    """A new job (j1, j2, ...) and its 'started' event."""
    if mode not in ("batch", "direct"):
        raise ValidationError(f"A pool-grading job runs 'batch' or 'direct', not {mode!r}.")
    n = cur.execute("SELECT count(*) FROM judge_jobs").fetchone()[0]
    job_id = f"j{n + 1}"
    now = utcnow()
    cur.execute("INSERT INTO judge_jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [job_id, calibration_id, judge_model, rubric_sha, mode, sample_share, sample_seed, gate_kappa,
                 gate_override, json.dumps(estimate) if estimate is not None else None, actor, now])
    cur.execute("INSERT INTO judge_job_events (job_id, status, note, actor, created_at) VALUES (?, 'started', NULL, ?, ?)",
                [job_id, actor, now])
    return job_id


def job_event_tx(cur: Cursor, job_id: str, status: str, *, actor: str, note: str | None = None) -> None:
    if status not in STATUSES:
        raise ValidationError(f"Unknown job status {status!r}: one of {', '.join(STATUSES)}.")
    cur.execute("INSERT INTO judge_job_events (job_id, status, note, actor, created_at) VALUES (?, ?, ?, ?, ?)",
                [job_id, status, note, actor, utcnow()])


def job_status(store: Store, job_id: str) -> str:
    row = store.read_one("SELECT status FROM judge_job_events WHERE job_id = ? ORDER BY event_id DESC LIMIT 1",
                         [job_id])
    if row is None:
        raise NotFoundError(f"No pool-grading job {job_id!r}.")
    return row[0]


def job(store: Store, job_id: str) -> dict[str, Any]:
    rows = store.read_dicts("SELECT * FROM judge_jobs WHERE job_id = ?", [job_id])
    if not rows:
        raise NotFoundError(f"No pool-grading job {job_id!r}.")
    r = rows[0]
    r["estimate"] = json.loads(r["estimate"]) if r["estimate"] else None
    return r


def jobs(store: Store) -> list[dict[str, Any]]:
    """Every job, newest first, with its latest status and its counts by outcome and route."""
    return store.read_dicts(
        "SELECT j.job_id, j.calibration_id, j.judge_model, j.rubric_sha, j.mode, j.sample_share, j.gate_kappa, "
        "j.gate_override, j.actor, j.created_at, "
        "(SELECT status FROM judge_job_events e WHERE e.job_id = j.job_id ORDER BY event_id DESC LIMIT 1) AS status, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id) AS answered, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id AND l.route = 'judge') AS judge_labeled, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id AND l.route = 'sample') AS sampled, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id AND l.outcome = 'escalated') "
        "AS escalated, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id AND l.outcome = 'refused') AS refused, "
        "(SELECT count(*) FROM judge_label_events l WHERE l.job_id = j.job_id AND l.outcome = 'error') AS errors "
        "FROM judge_jobs j ORDER BY j.created_at DESC, j.job_id DESC")


def insert_tx(cur: Cursor, job_id: str, labels: Sequence[JudgeLabel]) -> int:
    """Append the judge's answers for items of ``job_id`` and fold each into
    ``judge_item_state``, in the caller's transaction. An item this job already answered is
    skipped (a batch applied twice, or a resumed job, writes each item once); returns how
    many were written."""
    meta = cur.execute("SELECT calibration_id, judge_model, rubric_sha FROM judge_jobs WHERE job_id = ?",
                       [job_id]).fetchone()
    if meta is None:
        raise NotFoundError(f"No pool-grading job {job_id!r}.")
    cid, model, rubric = meta
    written = 0
    now = utcnow()
    for lb in labels:
        if lb.outcome not in OUTCOMES or lb.route not in ROUTES:
            raise ValidationError(f"A judge label's outcome is one of {OUTCOMES} and its route one of {ROUTES}.")
        if (lb.route == "judge" or lb.route == "sample") != (lb.outcome == "labeled"):
            raise ValidationError("Only a labeled item is judge- or sample-routed; every other outcome goes to people.")
        if lb.outcome == "labeled" and lb.grade not in (0, 1, 2, 3):
            raise ValidationError("A judge label carries a grade of 0, 1, 2 or 3.")
        key = [lb.query_id, lb.doc_id, lb.start, lb.end]
        if cur.execute("SELECT 1 FROM judge_label_events WHERE job_id = ? AND query_id = ? AND doc_id = ? "
                       "AND start = ? AND \"end\" = ?", [job_id, *key]).fetchone():
            continue
        sha = cur.execute("SELECT canonical_sha256 FROM documents WHERE doc_id = ?", [lb.doc_id]).fetchone()
        event_id = cur.execute(
            "INSERT INTO judge_label_events (job_id, calibration_id, query_id, doc_id, start, \"end\", outcome, route, "
            "grade, p_fail, p_used, reason, justification, model, rubric_sha, prompt_sha, doc_sha256, batch_id, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
            [job_id, cid, *key, lb.outcome, lb.route, lb.grade if lb.outcome == "labeled" else None, lb.p_fail,
             lb.p_used, lb.reason, lb.justification, model, rubric, lb.prompt_sha, sha[0] if sha else None,
             lb.batch_id, now]).fetchone()[0]
        cur.execute("DELETE FROM judge_item_state WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?", key)
        cur.execute("INSERT INTO judge_item_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [*key, event_id, job_id, cid, lb.outcome, lb.route,
                     lb.grade if lb.outcome == "labeled" else None, now])
        written += 1
    return written


def answered_by_job(store: Store, job_id: str) -> set[tuple[str, str, int, int]]:
    return {tuple(r) for r in store.read(  # type: ignore[misc]
        "SELECT query_id, doc_id, start, \"end\" FROM judge_label_events WHERE job_id = ?", [job_id])}


def sample_pairs(store: Store) -> list[dict[str, Any]]:
    """The standing sample's items that people have graded: the judge's grade, the people's
    final grade (adjudicated, else agreed), when, and the judge that labeled it."""
    return store.read_dicts(
        "SELECT s.query_id, s.doc_id, s.start, s.\"end\", s.grade AS judge_grade, CAST(f.grade AS INTEGER) AS human_grade, "
        "f.basis, e.model, e.rubric_sha, e.calibration_id, e.job_id, e.created_at AS judged_at, "
        "coalesce(q.stratum, 'unassigned') AS stratum "
        "FROM judge_item_state s JOIN judge_label_events e ON e.event_id = s.event_id "
        "JOIN final_grades f ON f.query_id = s.query_id AND f.doc_id = s.doc_id AND f.start = s.start "
        "AND f.\"end\" = s.\"end\" LEFT JOIN queries q ON q.query_id = s.query_id "
        "WHERE s.route = 'sample' ORDER BY e.created_at, s.query_id, s.doc_id, s.start")


def counts(store: Store) -> dict[str, int]:
    """Items by their latest judge route and outcome (for the pool's status)."""
    row = store.read_one(
        "SELECT count(*) FILTER (WHERE route = 'judge'), count(*) FILTER (WHERE route = 'sample'), "
        "count(*) FILTER (WHERE outcome = 'escalated'), count(*) FILTER (WHERE outcome = 'refused'), "
        "count(*) FILTER (WHERE outcome = 'error') FROM judge_item_state")
    keys = ("judge", "sample", "escalated", "refused", "error")
    return {k: int(v or 0) for k, v in zip(keys, row or (0,) * len(keys))}


# ---- what a pool-grading job may send -----------------------------------------------------------

# Pool items a judge may grade: no person has graded them, no round gave them to people (a
# round's items are its annotators'), the judge has not answered them (an earlier error is
# tried again), and their question is not held out (never sent to a hosted model, §3.8).
_CANDIDATE_WHERE = (
    "NOT EXISTS (SELECT 1 FROM grade_item_state g WHERE g.query_id = p.query_id AND g.doc_id = p.doc_id "
    "  AND g.start = p.start AND g.\"end\" = p.\"end\" AND g.n_graded > 0) "
    "AND NOT EXISTS (SELECT 1 FROM round_assignments ra WHERE ra.query_id = p.query_id AND ra.doc_id = p.doc_id "
    "  AND ra.start = p.start AND ra.\"end\" = p.\"end\") "
    "AND NOT EXISTS (SELECT 1 FROM judge_item_state s WHERE s.query_id = p.query_id AND s.doc_id = p.doc_id "
    "  AND s.start = p.start AND s.\"end\" = p.\"end\" AND s.outcome <> 'error')"
)


def candidates(store: Store, limit: int | None = None) -> list[dict[str, Any]]:
    """The items a judge may grade now (keys, question, stratum, passage length), in a stable
    order; held-out questions are not among them."""
    return store.read_dicts(
        "SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.text AS question, "
        "coalesce(q.stratum, 'unassigned') AS stratum, p.\"end\" - p.start AS length "
        "FROM pool_items p JOIN queries q USING (query_id) "
        f"WHERE NOT q.held_out AND {_CANDIDATE_WHERE} "
        "ORDER BY p.query_id, p.doc_id, p.start, p.\"end\"" + (" LIMIT ?" if limit is not None else ""),
        [limit] if limit is not None else [])


def plan_counts(store: Store) -> dict[str, int]:
    """Why pool items are or are not a judge's to grade: the pool, graded by people, given to
    a round, answered by the judge already, held out (never sent), and what is left."""
    row = store.read_one(
        "SELECT count(*), "
        "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM grade_item_state g WHERE g.query_id = p.query_id "
        "  AND g.doc_id = p.doc_id AND g.start = p.start AND g.\"end\" = p.\"end\" AND g.n_graded > 0)), "
        "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM round_assignments ra WHERE ra.query_id = p.query_id "
        "  AND ra.doc_id = p.doc_id AND ra.start = p.start AND ra.\"end\" = p.\"end\")), "
        "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM judge_item_state s WHERE s.query_id = p.query_id "
        "  AND s.doc_id = p.doc_id AND s.start = p.start AND s.\"end\" = p.\"end\" AND s.outcome <> 'error')), "
        "count(*) FILTER (WHERE q.held_out), "
        f"count(*) FILTER (WHERE NOT q.held_out AND {_CANDIDATE_WHERE}) "
        "FROM pool_items p JOIN queries q USING (query_id)")
    keys = ("pool_items", "graded_by_people", "in_rounds", "judge_answered", "held_out", "to_grade")
    return {k: int(v or 0) for k, v in zip(keys, row or (0,) * len(keys))}


def passages(store: Store, keys: Sequence[tuple[str, str, int, int]]) -> dict[tuple[str, str, int, int], str]:
    """The passage text of each pool item key (raw text of its span), read per chunk of a job."""
    out: dict[tuple[str, str, int, int], str] = {}
    by_doc: dict[str, list[tuple[str, str, int, int]]] = {}
    for k in keys:
        by_doc.setdefault(k[1], []).append(k)
    for doc_id, ks in by_doc.items():
        row = store.read_one("SELECT raw_text FROM documents WHERE doc_id = ?", [doc_id])
        if row is None:
            continue
        for k in ks:
            if 0 <= k[2] <= k[3] <= len(row[0]):
                out[k] = row[0][k[2]:k[3]]
    return out


def sample_counts_tx(cur: Cursor) -> dict[str, tuple[int, int]]:
    """stratum -> (judge-labeled items, of which in the standing sample), over every job:
    what the next draw tops up to (read inside the writing transaction)."""
    rows = cur.execute(
        "SELECT coalesce(q.stratum, 'unassigned'), count(*), count(*) FILTER (WHERE s.route = 'sample') "
        "FROM judge_item_state s LEFT JOIN queries q USING (query_id) WHERE s.outcome = 'labeled' GROUP BY 1"
    ).fetchall()
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


def routed(store: Store, route: str) -> list[tuple[str, str, int, int]]:
    """The pool items whose latest judge decision sends them ``route`` ('judge', 'human' or
    'sample'), in a stable order: who grades what after a job (the demo has people grade its
    standing sample; a lead sees what the band sent them)."""
    if route not in ("judge", "human", "sample"):
        raise ValueError(f"route is 'judge', 'human' or 'sample', not {route!r}.")
    return [(str(q), str(d), int(s), int(e)) for q, d, s, e in store.read(
        "SELECT query_id, doc_id, start, \"end\" FROM judge_item_state WHERE route = ? "
        "ORDER BY query_id, doc_id, start, \"end\"", [route])]
