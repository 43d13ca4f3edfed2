"""Evaluation transcripts and their review, the SQL side (METHODOLOGY §12.5, §15.4): the
imported transcripts, every sample drawn, the reviewers' verdicts (verdict_events of kind
'transcript'), the grader failures a lead must settle (kind 'grader_failure_resolution'),
and the per-stratum summary."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import duckdb

from golden_store.errors import NotFoundError, ValidationError
from golden_store.store import Store, utcnow
from golden_store.textin import shown

KIND = "transcript"
RESOLUTION = "grader_failure_resolution"
VERDICTS = ("system_failure", "grader_failure", "ambiguous")
WITHDRAWN = "withdrawn"  # a reviewer's undo: the transcript is unreviewed again
FAILURE_CLASSES = ("retrieval_miss", "ranking", "generation_unfaithful", "incomplete", "over_answering",
                   "over_refusal")
RESOLUTIONS = ("label_fixed", "judge_fixed", "reviewer_wrong")
SATURATED = 0.98  # a stratum passing at least this share has no headroom left (§13.6)


def item_key(run_id: str, query_id: str, trial: int) -> str:
    return f"{run_id}|{query_id}|{trial}"


def store_transcripts(store: Store, rows: Sequence[dict[str, Any]], *, actor: str) -> int:
    """Insert validated transcripts in one transaction; a (run, query, trial) already there
    is refused (nothing is overwritten)."""

    # the column is a 32-bit integer; and NaN/Infinity metrics would be stored as invalid JSON
    bad = [r for r in rows if not -(2**31) <= r["trial"] < 2**31]
    bad += [r for r in rows if not all(math.isfinite(v) for v in (r.get("metrics") or {}).values())]
    if bad:
        raise ValidationError("Transcripts refused: a trial number out of range (0 to 2147483647) or a metric that "
                              "is not a finite number; nothing was imported.",
                              [f"run {shown(r['run_id'])} query {shown(r['query_id'])} trial {shown(r['trial'])}"
                               for r in bad[:5]])

    def tx(cur: duckdb.DuckDBPyConnection) -> int:
        keys = [(r["run_id"], r["query_id"], r["trial"]) for r in rows]
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _tkeys (run_id VARCHAR, query_id VARCHAR, trial INTEGER)")
        cur.execute("DELETE FROM _tkeys")
        cur.executemany("INSERT INTO _tkeys VALUES (?, ?, ?)", keys)
        dup = cur.execute("SELECT run_id, query_id, trial FROM _tkeys SEMI JOIN transcripts "
                          "USING (run_id, query_id, trial) ORDER BY 1, 2, 3 LIMIT 5").fetchall()
        if dup:
            raise ValidationError("Some transcripts are already imported; nothing was imported.",
                                  [f"run {r} query {q} trial {t}" for r, q, t in dup])
        now = utcnow()
        cur.executemany(
            "INSERT INTO transcripts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(r["run_id"], r["query_id"], r["trial"], r["source"], r["question"], r["stratum"], r["passed"],
              r.get("failure_type"), json.dumps(r.get("metrics") or {}), json.dumps(r.get("retrieved") or []),
              r.get("answer"), r.get("judge_verdict"), r.get("judge_justification"), r.get("trace_id"), now, actor)
             for r in rows])
        return len(rows)

    return store.write(tx)




def _with_review(where: str = "TRUE") -> str:
    return (
        "WITH v AS (SELECT item_id, value, detail, note, actor, created_at, row_number() OVER "
        f"  (PARTITION BY item_id ORDER BY event_id DESC) AS rn FROM verdict_events WHERE kind = '{KIND}') "
        "SELECT t.run_id, t.query_id, t.trial, t.run_id || '|' || t.query_id || '|' || t.trial AS item_id, "
        "t.source, t.question, coalesce(q.stratum, t.stratum, 'unassigned') AS stratum, t.passed, t.failure_type, "
        "t.metrics, t.retrieved, t.answer, t.judge_verdict, t.judge_justification, t.trace_id, "
        "q.query_id IS NOT NULL AS in_golden_set, v.value AS verdict, v.detail AS failure_class, "
        "v.note AS review_note, v.actor AS reviewer "
        "FROM transcripts t LEFT JOIN queries q USING (query_id) "
        "LEFT JOIN v ON v.item_id = t.run_id || '|' || t.query_id || '|' || t.trial AND v.rn = 1 "
        f"AND v.value <> '{WITHDRAWN}' "
        f"WHERE {where}")


def failures(store: Store) -> list[dict]:
    """Every failed transcript with its stratum and current review verdict (if any)."""
    return store.read_dicts(_with_review("NOT t.passed") + " ORDER BY item_id")


def get(store: Store, item_id: str) -> dict:
    rows = store.read_dicts(_with_review("t.run_id || '|' || t.query_id || '|' || t.trial = ?"), [item_id])
    if not rows:
        raise NotFoundError(f"No transcript {item_id!r}.")
    r = rows[0]
    r["metrics"] = json.loads(r["metrics"] or "{}")
    r["retrieved"] = json.loads(r["retrieved"] or "[]")
    return r


def drawn_before(store: Store) -> set[str]:
    return {r[0] for r in store.read("SELECT DISTINCT item_id FROM transcript_draws")}


def record_draw(store: Store, items: Sequence[str], seed: int, *, actor: str) -> str:
    def tx(cur: duckdb.DuckDBPyConnection) -> str:
        n = cur.execute("SELECT count(DISTINCT draw_id) FROM transcript_draws").fetchone()[0]
        draw_id = f"d{n + 1}"
        now = utcnow()
        cur.executemany("INSERT INTO transcript_draws VALUES (?, ?, ?, ?, ?, ?)",
                        [(draw_id, it, i, seed, actor, now) for i, it in enumerate(items)])
        return draw_id

    return store.write(tx)


def draw_items(store: Store, draw_id: str) -> list[str]:
    return [r[0] for r in store.read("SELECT item_id FROM transcript_draws WHERE draw_id = ? ORDER BY position",
                                     [draw_id])]


def latest_draw(store: Store, actor: str) -> str | None:
    row = store.read_one("SELECT draw_id FROM transcript_draws WHERE actor = ? ORDER BY created_at DESC, draw_id DESC "
                         "LIMIT 1", [actor])
    return row[0] if row else None


def _verdict_tx(cur: duckdb.DuckDBPyConnection, kind: str, item_id: str, value: str, detail: str | None,
                note: str | None, actor: str) -> int:
    """Append a verdict event on an existing transcript (its query id recorded with it)."""
    row = cur.execute("SELECT query_id FROM transcripts WHERE run_id || '|' || query_id || '|' || trial = ?",
                      [item_id]).fetchone()
    if row is None:
        raise NotFoundError(f"No transcript {item_id!r}.")
    return cur.execute(
        "INSERT INTO verdict_events (kind, item_id, query_id, value, detail, note, actor, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
        [kind, item_id, row[0], value, detail, note or None, actor, utcnow()]).fetchone()[0]


def review_tx(cur: duckdb.DuckDBPyConnection, item_id: str, verdict: str, failure_class: str | None,
              note: str | None, actor: str) -> int:
    """Append a reviewer's verdict (or WITHDRAWN) inside the caller's transaction."""
    if verdict not in VERDICTS + (WITHDRAWN,):
        raise ValidationError(f"A review verdict is one of {', '.join(VERDICTS)}, not {verdict!r}.")
    if verdict == "system_failure" and failure_class not in FAILURE_CLASSES:
        raise ValidationError(f"A system failure needs its class: one of {', '.join(FAILURE_CLASSES)}.")
    return _verdict_tx(cur, KIND, item_id, verdict, failure_class if verdict == "system_failure" else None, note,
                       actor)


def content_tx(cur: duckdb.DuckDBPyConnection, item_id: str) -> dict | None:
    """What a reviewer reads of a transcript, as it stands now, and whether it was ever drawn
    for review (None if there is no such transcript)."""
    row = cur.execute(
        "SELECT question, retrieved, answer, judge_verdict, judge_justification, "
        "EXISTS (SELECT 1 FROM transcript_draws d WHERE d.item_id = ?) FROM transcripts "
        "WHERE run_id || '|' || query_id || '|' || trial = ?", [item_id, item_id]).fetchone()
    if row is None:
        return None
    return {"question": row[0], "retrieved": json.loads(row[1] or "[]"), "answer": row[2],
            "judge_verdict": row[3], "judge_justification": row[4], "drawn": bool(row[5])}


def latest_verdict_event_tx(cur: duckdb.DuckDBPyConnection, item_id: str) -> int | None:
    return cur.execute("SELECT max(event_id) FROM verdict_events WHERE kind = ? AND item_id = ?",
                       [KIND, item_id]).fetchone()[0]


def reviewed_in_draws(store: Store, actor: str) -> list[dict]:
    return store.read_dicts(
        f"SELECT t.item_id, t.stratum, t.verdict, t.failure_class, t.reviewer, t.review_note FROM ({_with_review()}) t "
        "WHERE t.verdict IS NOT NULL AND t.item_id IN (SELECT item_id FROM transcript_draws WHERE actor = ?) "
        "ORDER BY t.item_id", [actor])


def draw_progress(store: Store, actor: str) -> tuple[int, int]:
    """(reviewed, drawn) over every transcript in the reviewer's samples."""
    row = store.read_one(
        f"SELECT count(*) FILTER (WHERE t.verdict IS NOT NULL), count(*) FROM ({_with_review()}) t "
        "WHERE t.item_id IN (SELECT item_id FROM transcript_draws WHERE actor = ?)", [actor])
    return int(row[0]), int(row[1])


def review_queue(store: Store, actor: str, limit: int) -> list[str]:
    """The reviewer's transcripts still to review, from every sample they drew (oldest draw
    first, in drawn order): an earlier sample's item stays reachable."""
    return [r[0] for r in store.read(
        f"SELECT d.item_id FROM transcript_draws d JOIN ({_with_review()}) t USING (item_id) "
        "WHERE d.actor = ? AND t.verdict IS NULL "
        "GROUP BY d.item_id ORDER BY min(d.created_at), min(d.draw_id), min(d.position) LIMIT ?", [actor, limit])]


def record_verdict(store: Store, item_id: str, verdict: str, failure_class: str | None, note: str | None, *,
                   actor: str) -> None:
    if verdict not in VERDICTS:
        raise ValidationError(f"A review verdict is one of {', '.join(VERDICTS)}, not {verdict!r}.")
    store.write(lambda cur: review_tx(cur, item_id, verdict, failure_class, note, actor))


def questioned(store: Store) -> list[dict]:
    """Transcripts whose latest review says the grader (judge or label) was wrong and that
    no lead has resolved since: the adjudication queue's second part."""
    return store.read_dicts(
        _with_review("v.value = 'grader_failure'")
        + " AND NOT EXISTS (SELECT 1 FROM verdict_events r WHERE r.kind = ? AND r.item_id = "
          "t.run_id || '|' || t.query_id || '|' || t.trial AND r.created_at >= v.created_at) ORDER BY stratum, item_id",
        [RESOLUTION])


def resolve(store: Store, item_id: str, resolution: str, rationale: str, *, actor: str) -> None:
    if resolution not in RESOLUTIONS:
        raise ValidationError(f"Resolve a questioned grade as one of {', '.join(RESOLUTIONS)}.")
    if not rationale or not rationale.strip():
        raise ValidationError("Write the rationale of the resolution.")

    store.write(lambda cur: _verdict_tx(cur, RESOLUTION, item_id, resolution, None, rationale.strip(), actor))


def summary(store: Store) -> list[dict]:
    """Per stratum: transcripts, failures, reviewed share of the failures, grader-failure
    rate among reviewed failures, score (pass share), headroom and a saturation flag."""
    rows = store.read_dicts(
        "SELECT stratum, count(*) AS transcripts, count(*) FILTER (WHERE NOT passed) AS failures, "
        "count(*) FILTER (WHERE NOT passed AND verdict IS NOT NULL) AS reviewed, "
        "count(*) FILTER (WHERE verdict = 'grader_failure') AS grader_failures, "
        "count(*) FILTER (WHERE verdict = 'system_failure') AS system_failures, "
        "avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS score "
        f"FROM ({_with_review()}) GROUP BY stratum ORDER BY stratum")
    for r in rows:
        r["reviewed_share"] = r["reviewed"] / r["failures"] if r["failures"] else None
        r["grader_failure_rate"] = r["grader_failures"] / r["reviewed"] if r["reviewed"] else None
        r["headroom"] = 1.0 - float(r["score"])
        r["saturated"] = float(r["score"]) >= SATURATED
    return rows


def counts(store: Store) -> dict[str, int]:
    """Home-page numbers: failed transcripts, reviewed ones, grader failures."""
    row = store.read_one(
        "SELECT count(*) FILTER (WHERE NOT passed), count(*) FILTER (WHERE NOT passed AND verdict IS NOT NULL), "
        f"count(*) FILTER (WHERE verdict = 'grader_failure') FROM ({_with_review()})")
    return {"failures": int(row[0]), "reviewed": int(row[1]), "grader_failures": int(row[2])}
