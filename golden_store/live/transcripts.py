"""Evaluation transcripts and their review, the SQL side (METHODOLOGY §12.5, §15.4): the
imported transcripts, every sample drawn, the reviewers' verdicts (transcript_review_events),
the grader failures a lead must settle (transcript_resolution_events), and the per-stratum
summary.

A transcript is keyed by (evaluation_id, query_id, trial) in every table: the evaluation it came
from (an evaluation's or a production log's export; called ``run_id`` before schema 15, a
name now kept for a system's ranked results), the question, the trial. Pages, the CLI and the
labeling surface name one by a single opaque string, :func:`item_key`: the three parts joined
by ``|`` with ``\\`` and ``|`` inside a part escaped by a backslash, so any evaluation or query id
(one holding ``|`` included) round-trips through :func:`parse_item_key`; ids without either
character read as before (``eval-7|q001|0``)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from golden_store.db.cursor import Cursor
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.textin import shown
from golden_store.db.store import Store, utcnow

# 'no_failure' (schema 22): the answer is right. On a judged pass it confirms the judge; on a
# judged failure the judge failed a good answer (a false fail), as 'grader_failure' says of it.
VERDICTS = ("system_failure", "grader_failure", "ambiguous", "no_failure")
WITHDRAWN = "withdrawn"  # a reviewer's undo: the transcript is unreviewed again
FAILURE_CLASSES = ("retrieval_miss", "ranking", "generation_unfaithful", "incomplete", "over_answering",
                   "over_refusal")
RESOLUTIONS = ("label_fixed", "judge_fixed", "reviewer_wrong")
SATURATED = 0.98  # a stratum passing at least this share has no headroom left (§13.6) ...
SATURATION_MIN = 30  # ... once it has this many transcripts: 3 of 3 passing says little about headroom
# The judge check (METHODOLOGY §11.1 step 6, Case 3), by the reviewer's latest verdict: on a
# judged pass 'no_failure' confirms it and a system or grader failure overturns it (a judge
# false pass); on a judged failure 'system_failure' confirms it and 'no_failure' or
# 'grader_failure' overturns it (a judge false fail). 'ambiguous' does neither.
CONFIRMS_PASS = "no_failure"
OVERTURNS_PASS = ("system_failure", "grader_failure")
CONFIRMS_FAILURE = "system_failure"
OVERTURNS_FAILURE = ("no_failure", "grader_failure")


def _in(values: Sequence[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# A latest verdict that contradicts the judge's (over rows of _with_review, aliases t and v):
# a grader failure anywhere, a judged pass overturned, a judged failure overturned. These are
# the grades a lead settles (:func:`questioned`).
_AGAINST_JUDGE = (f"(v.verdict = 'grader_failure' OR (t.passed AND v.verdict IN ({_in(OVERTURNS_PASS)})) "
                 f"OR (NOT t.passed AND v.verdict IN ({_in(OVERTURNS_FAILURE)})))")
# the same over the columns of _with_review() read as a subquery (no aliases)
_AGAINST = (f"(verdict = 'grader_failure' OR (passed AND verdict IN ({_in(OVERTURNS_PASS)})) "
            f"OR (NOT passed AND verdict IN ({_in(OVERTURNS_FAILURE)})))")


_TRIAL = re.compile(r"-?[0-9]{1,10}")


def _escape(part: str) -> str:
    return part.replace("\\", "\\\\").replace("|", "\\|")


def item_key(evaluation_id: str, query_id: str, trial: int) -> str:
    """The one string that names a transcript outside the store (see the module docstring)."""
    return "|".join((_escape(evaluation_id), _escape(query_id), str(trial)))


def parse_item_key(item_id: str) -> tuple[str, str, int]:
    """(evaluation_id, query_id, trial) of an :func:`item_key`; NotFoundError for a string that is
    not one (it cannot name a transcript). A backslash before anything but ``\\`` or ``|`` is
    kept as it is, so a key written before escaping existed reads the same."""
    if not isinstance(item_id, str):
        raise NotFoundError(f"No transcript {item_id!r}.")
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(item_id):
        ch = item_id[i]
        if ch == "\\" and i + 1 < len(item_id) and item_id[i + 1] in "\\|":
            cur.append(item_id[i + 1])
            i += 2
            continue
        if ch == "|":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    if len(parts) != 3 or not _TRIAL.fullmatch(parts[2]) or not -(2**31) <= int(parts[2]) < 2**31:
        raise NotFoundError(f"No transcript {item_id!r}.")
    return parts[0], parts[1], int(parts[2])


def _keyed(rows: list[dict]) -> list[dict]:
    """``rows`` (each with evaluation_id, query_id, trial) given the item_id that names them above the store."""
    for r in rows:
        r["item_id"] = item_key(r["evaluation_id"], r["query_id"], r["trial"])
    return rows


def store_transcripts(store: Store, rows: Sequence[dict[str, Any]], *, actor: str) -> int:
    """Insert validated transcripts in one transaction; an (evaluation, query, trial) already there
    is refused (nothing is overwritten)."""

    # the column is a 32-bit integer; and NaN/Infinity metrics would be stored as invalid JSON
    bad = [r for r in rows if not -(2**31) <= r["trial"] < 2**31]
    bad += [r for r in rows if not all(math.isfinite(v) for v in (r.get("metrics") or {}).values())]
    if bad:
        raise ValidationError("Transcripts refused: a trial number out of range (0 to 2147483647) or a metric that "
                              "is not a finite number; nothing was imported.",
                              [f"evaluation {shown(r['evaluation_id'])} query {shown(r['query_id'])} trial {shown(r['trial'])}"
                               for r in bad[:5]])

    def tx(cur: Cursor) -> int:
        keys = [(r["evaluation_id"], r["query_id"], r["trial"]) for r in rows]
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _tkeys (evaluation_id VARCHAR, query_id VARCHAR, trial INTEGER)")
        cur.execute("DELETE FROM _tkeys")
        cur.executemany("INSERT INTO _tkeys VALUES (?, ?, ?)", keys)
        dup = cur.execute("SELECT evaluation_id, query_id, trial FROM _tkeys SEMI JOIN transcripts "
                          "USING (evaluation_id, query_id, trial) ORDER BY 1, 2, 3 LIMIT 5").fetchall()
        if dup:
            raise ValidationError("Some transcripts are already imported; nothing was imported.",
                                  [f"evaluation {r} query {q} trial {t}" for r, q, t in dup])
        now = utcnow()
        cur.executemany(
            "INSERT INTO transcripts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(r["evaluation_id"], r["query_id"], r["trial"], r["source"], r["question"], r["stratum"], r["passed"],
              r.get("failure_type"), json.dumps(r.get("metrics") or {}), json.dumps(r.get("retrieved") or []),
              r.get("answer"), r.get("judge_verdict"), r.get("judge_justification"), r.get("trace_id"), now, actor)
             for r in rows])
        return len(rows)

    return store.write(tx)




def _with_review(where: str = "TRUE") -> str:
    """Every transcript with its current review (NULLs when unreviewed or withdrawn)."""
    return (
        "SELECT t.evaluation_id, t.query_id, t.trial, "
        "t.source, t.question, coalesce(q.stratum, t.stratum, 'unassigned') AS stratum, t.passed, t.failure_type, "
        "t.metrics, t.retrieved, t.answer, t.judge_verdict, t.judge_justification, t.trace_id, "
        "q.query_id IS NOT NULL AS in_golden_set, v.verdict, v.failure_class, "
        "v.note AS review_note, v.actor AS reviewer, v.created_at AS reviewed_at, v.event_id AS review_event_id "
        "FROM transcripts t LEFT JOIN queries q USING (query_id) "
        "LEFT JOIN current_transcript_reviews v "
        "ON v.evaluation_id = t.evaluation_id AND v.query_id = t.query_id AND v.trial = t.trial "
        f"WHERE {where}")


_ORDER = " ORDER BY evaluation_id, query_id, trial"
_KEY_IS = "t.evaluation_id = ? AND t.query_id = ? AND t.trial = ?"
_IN_DRAWS_OF = ("EXISTS (SELECT 1 FROM transcript_draws d WHERE d.actor = ? AND d.evaluation_id = t.evaluation_id "
                "AND d.query_id = t.query_id AND d.trial = t.trial)")


def failures(store: Store) -> list[dict]:
    """Every failed transcript with its stratum and current review verdict (if any)."""
    return _keyed(store.read_dicts(_with_review("NOT t.passed") + _ORDER))


def passes(store: Store) -> list[dict]:
    """Every transcript the judge passed, with its stratum and current review verdict (if any)."""
    return _keyed(store.read_dicts(_with_review("t.passed") + _ORDER))


def get(store: Store, item_id: str) -> dict:
    rows = _keyed(store.read_dicts(_with_review(_KEY_IS), list(parse_item_key(item_id))))
    if not rows:
        raise NotFoundError(f"No transcript {item_id!r}.")
    r = rows[0]
    r["metrics"] = json.loads(r["metrics"] or "{}")
    r["retrieved"] = json.loads(r["retrieved"] or "[]")
    return r


def drawn_before(store: Store) -> set[str]:
    return {item_key(*r) for r in store.read("SELECT DISTINCT evaluation_id, query_id, trial FROM transcript_draws")}


def record_draw(store: Store, items: Sequence[str], seed: int, *, actor: str) -> str:
    keys = [parse_item_key(it) for it in items]

    def tx(cur: Cursor) -> str:
        n = cur.execute("SELECT count(DISTINCT draw_id) FROM transcript_draws").fetchone()[0]
        draw_id = f"d{n + 1}"
        now = utcnow()
        cur.executemany("INSERT INTO transcript_draws (draw_id, evaluation_id, query_id, trial, position, seed, actor, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(draw_id, *k, i, seed, actor, now) for i, k in enumerate(keys)])
        return draw_id

    return store.write(tx)


def draw_items(store: Store, draw_id: str) -> list[str]:
    return [item_key(*r) for r in store.read(
        "SELECT evaluation_id, query_id, trial FROM transcript_draws WHERE draw_id = ? ORDER BY position", [draw_id])]


def latest_draw(store: Store, actor: str) -> str | None:
    row = store.read_one("SELECT draw_id FROM transcript_draws WHERE actor = ? ORDER BY created_at DESC, draw_id DESC "
                         "LIMIT 1", [actor])
    return row[0] if row else None


def _transcript_key_tx(cur: Cursor, item_id: str) -> tuple[str, str, int]:
    """The key of an existing transcript named by ``item_id``, else NotFoundError."""
    key = parse_item_key(item_id)
    if cur.execute("SELECT 1 FROM transcripts WHERE evaluation_id = ? AND query_id = ? AND trial = ?",
                   list(key)).fetchone() is None:
        raise NotFoundError(f"No transcript {item_id!r}.")
    return key


def review_tx(cur: Cursor, item_id: str, verdict: str, failure_class: str | None,
              note: str | None, actor: str) -> int:
    """Append a reviewer's verdict (or WITHDRAWN) inside the caller's transaction."""
    if verdict not in VERDICTS + (WITHDRAWN,):
        raise ValidationError(f"A review verdict is one of {', '.join(VERDICTS)}, not {verdict!r}.")
    if verdict == "system_failure" and failure_class not in FAILURE_CLASSES:
        raise ValidationError(f"A system failure needs its class: one of {', '.join(FAILURE_CLASSES)}.")
    key = _transcript_key_tx(cur, item_id)
    return cur.execute(
        "INSERT INTO transcript_review_events (evaluation_id, query_id, trial, verdict, failure_class, note, actor, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING event_id",
        [*key, verdict, failure_class if verdict == "system_failure" else None, note or None, actor,
         utcnow()]).fetchone()[0]


def content_tx(cur: Cursor, item_id: str) -> dict | None:
    """What a reviewer reads of a transcript, as it stands now, and whether it was ever drawn
    for review (None if there is no such transcript)."""
    try:
        key = parse_item_key(item_id)
    except NotFoundError:
        return None
    row = cur.execute(
        "SELECT question, retrieved, answer, judge_verdict, judge_justification, "
        "EXISTS (SELECT 1 FROM transcript_draws d WHERE d.evaluation_id = t.evaluation_id AND d.query_id = t.query_id "
        "AND d.trial = t.trial) FROM transcripts t WHERE " + _KEY_IS, list(key)).fetchone()
    if row is None:
        return None
    return {"question": row[0], "retrieved": json.loads(row[1] or "[]"), "answer": row[2],
            "judge_verdict": row[3], "judge_justification": row[4], "drawn": bool(row[5])}


def latest_verdict_event_tx(cur: Cursor, item_id: str) -> int | None:
    """The id of the latest review event on the transcript (None if none, or no such key)."""
    try:
        key = parse_item_key(item_id)
    except NotFoundError:
        return None
    return cur.execute("SELECT max(event_id) FROM transcript_review_events WHERE evaluation_id = ? AND query_id = ? "
                       "AND trial = ?", list(key)).fetchone()[0]


# Each review event with the one it superseded (NULLs for the first, or after a withdrawal):
# a verdict whose predecessor is a verdict (not a withdrawal) corrected it.
_SUPERSEDED = ("SELECT event_id, lag(verdict) OVER w AS previous_verdict, lag(failure_class) OVER w AS previous_class, "
               "count(*) FILTER (WHERE verdict <> 'withdrawn') OVER w AS verdicts_so_far "
               "FROM transcript_review_events WINDOW w AS (PARTITION BY evaluation_id, query_id, trial ORDER BY event_id)")


def reviewed_in_draws(store: Store, actor: str) -> list[dict]:
    """The transcripts of ``actor``'s draws that have a current verdict, with what the judge
    said, whether the verdict contradicts it, and whether it corrected an earlier verdict
    (``previous_verdict``/``previous_class``: the verdict it replaced, NULL when it replaced
    none or a withdrawal; ``verdicts``: how many verdicts the transcript has had, this one
    included)."""
    return _keyed(store.read_dicts(
        "SELECT t.evaluation_id, t.query_id, t.trial, t.stratum, t.question, t.verdict, t.failure_class, t.reviewer, "
        "t.review_note, t.reviewed_at, t.review_event_id, t.passed, t.judge_verdict, t.judge_justification, "
        f"{_AGAINST} AS against_judge, "
        "CASE WHEN p.previous_verdict <> 'withdrawn' THEN p.previous_verdict END AS previous_verdict, "
        "CASE WHEN p.previous_verdict <> 'withdrawn' THEN p.previous_class END AS previous_class, "
        "p.verdicts_so_far AS verdicts "
        f"FROM ({_with_review()}) t LEFT JOIN ({_SUPERSEDED}) p ON p.event_id = t.review_event_id "
        f"WHERE t.verdict IS NOT NULL AND {_IN_DRAWS_OF}" + _ORDER, [actor]))


def verdict_history(store: Store, item_id: str) -> list[dict]:
    """Every review event of one transcript, oldest first (verdicts, withdrawals): nothing is
    overwritten, a correction is a new event."""
    return store.read_dicts(
        "SELECT event_id, verdict, failure_class, note, actor, created_at FROM transcript_review_events "
        "WHERE evaluation_id = ? AND query_id = ? AND trial = ? ORDER BY event_id", list(parse_item_key(item_id)))


def review_state_tx(cur: Cursor, item_id: str, actor: str) -> dict | None:
    """Inside a transaction: the transcript's current review (``event_id``, ``verdict``,
    ``failure_class``, ``actor``; all None when unreviewed or withdrawn) and whether it is in
    ``actor``'s draws (``in_draws``); None when there is no such transcript."""
    try:
        key = parse_item_key(item_id)
    except NotFoundError:
        return None
    row = cur.execute(
        "SELECT t.evaluation_id, v.event_id, v.verdict, v.failure_class, v.actor, " + _IN_DRAWS_OF + " "
        "FROM transcripts t LEFT JOIN current_transcript_reviews v ON v.evaluation_id = t.evaluation_id "
        "AND v.query_id = t.query_id AND v.trial = t.trial WHERE " + _KEY_IS, [actor, *key]).fetchone()
    if row is None:
        return None
    return {"event_id": row[1], "verdict": row[2], "failure_class": row[3], "actor": row[4], "in_draws": bool(row[5])}


def draw_progress(store: Store, actor: str) -> tuple[int, int]:
    """(reviewed, drawn) over every transcript in the reviewer's samples."""
    row = store.read_row(
        f"SELECT count(*) FILTER (WHERE t.verdict IS NOT NULL), count(*) FROM ({_with_review()}) t "
        f"WHERE {_IN_DRAWS_OF}", [actor])
    return int(row[0]), int(row[1])


def review_queue(store: Store, actor: str, limit: int) -> list[str]:
    """The reviewer's transcripts still to review, from every sample they drew (oldest draw
    first, in drawn order): an earlier sample's item stays reachable."""
    return [item_key(*r) for r in store.read(
        f"SELECT d.evaluation_id, d.query_id, d.trial FROM transcript_draws d JOIN ({_with_review()}) t "
        "USING (evaluation_id, query_id, trial) WHERE d.actor = ? AND t.verdict IS NULL "
        "GROUP BY d.evaluation_id, d.query_id, d.trial ORDER BY min(d.created_at), min(d.draw_id), min(d.position) "
        "LIMIT ?", [actor, limit])]


def record_verdict(store: Store, item_id: str, verdict: str, failure_class: str | None, note: str | None, *,
                   actor: str) -> None:
    if verdict not in VERDICTS:
        raise ValidationError(f"A review verdict is one of {', '.join(VERDICTS)}, not {verdict!r}.")
    store.write(lambda cur: review_tx(cur, item_id, verdict, failure_class, note, actor))


def questioned(store: Store) -> list[dict]:
    """Transcripts whose latest review contradicts the judge and that no lead has resolved
    since: the adjudication queue's second part. Contradicting: a grader failure (the judge or
    the label was wrong), a system failure on a judged pass (a false pass), no failure on a
    judged failure (a false fail); a review that agrees with the judge, or is ambiguous, is not
    questioned."""
    return _keyed(store.read_dicts(
        _with_review(_AGAINST_JUDGE)
        + " AND NOT EXISTS (SELECT 1 FROM transcript_resolution_events r WHERE r.evaluation_id = t.evaluation_id "
          "AND r.query_id = t.query_id AND r.trial = t.trial AND r.created_at >= v.created_at) "
          "ORDER BY stratum, evaluation_id, query_id, trial"))


def resolve(store: Store, item_id: str, resolution: str, rationale: str, *, actor: str) -> None:
    if resolution not in RESOLUTIONS:
        raise ValidationError(f"Resolve a questioned grade as one of {', '.join(RESOLUTIONS)}.")
    if not rationale or not rationale.strip():
        raise ValidationError("Write the rationale of the resolution.")

    def tx(cur: Cursor) -> None:
        key = _transcript_key_tx(cur, item_id)
        cur.execute("INSERT INTO transcript_resolution_events (evaluation_id, query_id, trial, resolution, note, actor, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [*key, resolution, rationale.strip(), actor, utcnow()])

    store.write(tx)


def summary(store: Store) -> list[dict]:
    """Per stratum: transcripts, failures, reviewed share of the failures, grader-failure
    rate among reviewed failures (a grader failure or no failure: the judge failed a good
    answer; reviewed passes are the judge check's, :func:`judge_check`), score (pass share),
    headroom and a saturation flag (only with SATURATION_MIN transcripts or more: a handful all
    passing is too few to call headroom gone)."""
    rows = store.read_dicts(
        "SELECT stratum, count(*) AS transcripts, count(*) FILTER (WHERE NOT passed) AS failures, "
        "count(*) FILTER (WHERE NOT passed AND verdict IS NOT NULL) AS reviewed, "
        f"count(*) FILTER (WHERE NOT passed AND verdict IN ({_in(OVERTURNS_FAILURE)})) AS grader_failures, "
        "count(*) FILTER (WHERE NOT passed AND verdict = 'system_failure') AS system_failures, "
        "avg(CASE WHEN passed THEN 1.0 ELSE 0.0 END) AS score "
        f"FROM ({_with_review()}) GROUP BY stratum ORDER BY stratum")
    for r in rows:
        r["reviewed_share"] = r["reviewed"] / r["failures"] if r["failures"] else None
        r["grader_failure_rate"] = r["grader_failures"] / r["reviewed"] if r["reviewed"] else None
        r["headroom"] = 1.0 - float(r["score"])
        r["saturated"] = r["transcripts"] >= SATURATION_MIN and float(r["score"]) >= SATURATED
    return rows


def counts(store: Store) -> dict[str, int]:
    """Home-page numbers: failed transcripts, reviewed ones, grader failures (every latest
    verdict that contradicts the judge, on a pass or a failure: what :func:`questioned` draws
    from)."""
    row = store.read_row(
        "SELECT count(*) FILTER (WHERE NOT passed), count(*) FILTER (WHERE NOT passed AND verdict IS NOT NULL), "
        f"count(*) FILTER (WHERE {_AGAINST}) FROM ({_with_review()})")
    return {"failures": int(row[0]), "reviewed": int(row[1]), "grader_failures": int(row[2])}


def judge_check(store: Store) -> list[dict]:
    """Per evaluation, the judge against its reviewers (each transcript's latest verdict; a
    withdrawn one counts as none): passes and failures, how many of each were reviewed, the
    passes confirmed (CONFIRMS_PASS) and overturned (OVERTURNS_PASS: judge false passes), the
    failures confirmed (CONFIRMS_FAILURE) and overturned (OVERTURNS_FAILURE: judge false
    fails), and the ambiguous verdicts on each."""
    return store.read_dicts(
        "SELECT evaluation_id, count(*) FILTER (WHERE passed) AS passes, "
        "count(*) FILTER (WHERE passed AND verdict IS NOT NULL) AS passes_reviewed, "
        f"count(*) FILTER (WHERE passed AND verdict = '{CONFIRMS_PASS}') AS passes_confirmed, "
        f"count(*) FILTER (WHERE passed AND verdict IN ({_in(OVERTURNS_PASS)})) AS passes_overturned, "
        "count(*) FILTER (WHERE passed AND verdict = 'ambiguous') AS passes_ambiguous, "
        "count(*) FILTER (WHERE NOT passed) AS failures, "
        "count(*) FILTER (WHERE NOT passed AND verdict IS NOT NULL) AS failures_reviewed, "
        f"count(*) FILTER (WHERE NOT passed AND verdict = '{CONFIRMS_FAILURE}') AS failures_confirmed, "
        f"count(*) FILTER (WHERE NOT passed AND verdict IN ({_in(OVERTURNS_FAILURE)})) AS failures_overturned, "
        "count(*) FILTER (WHERE NOT passed AND verdict = 'ambiguous') AS failures_ambiguous "
        f"FROM ({_with_review()}) t GROUP BY evaluation_id ORDER BY evaluation_id")
