"""Faithfulness checks of systems' answers, the SQL side: one row per check of an answer (who
judged, with which prompts, on which answer text) and one per claim it found, with its verdict.

The current check of an answer is its latest one whose ``answer_sha`` is the answer's text
now; a check of text since replaced is stale and counted as such, never scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow


def answer_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ClaimRow:
    claim: str
    verdict: str
    judge_verdict: str | None
    quote: str | None
    quote_ok: bool
    justification: str | None


def record_tx(cur: Cursor, *, system: str, query_id: str, answer: str, outcome: str, model: str,
              decompose_sha: str, check_sha: str, input_tokens: int, output_tokens: int,
              claims: Sequence[ClaimRow], actor: str) -> int:
    """Record one check of an answer and its claims; the check's id."""
    row = cur.execute(
        "INSERT INTO faithfulness_checks (system, query_id, outcome, model, decompose_sha, check_sha, answer_sha, "
        "input_tokens, output_tokens, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING check_id",
        [system, query_id, outcome, model, decompose_sha, check_sha, answer_sha(answer), input_tokens,
         output_tokens, actor, utcnow()]).fetchone()
    assert row is not None  # INSERT ... RETURNING gives the row it wrote
    check_id = int(row[0])
    if claims:
        cur.executemany(
            "INSERT INTO claim_verdicts (check_id, claim_no, claim, verdict, judge_verdict, quote, quote_ok, "
            "justification) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(check_id, n, c.claim, c.verdict, c.judge_verdict, c.quote, c.quote_ok, c.justification)
             for n, c in enumerate(claims, 1)])
    return check_id


_CURRENT = (
    "SELECT c.* FROM (SELECT *, row_number() OVER (PARTITION BY system, query_id ORDER BY check_id DESC) AS rn "
    "FROM faithfulness_checks) AS c WHERE c.rn = 1"
)


def current_checks(store: Store, system: str | None = None) -> list[dict]:
    """Each answer's latest check, with ``stale`` (the answer's text changed since) and its
    claims' verdict counts; answers to live questions only."""
    return store.read_dicts(
        "SELECT c.system, c.query_id, c.check_id, c.outcome, c.model, c.decompose_sha, c.check_sha, "
        "c.answer_sha, c.created_at, a.answer, "
        "count(v.claim_no) AS claims, count(v.claim_no) FILTER (WHERE v.verdict = 'supported') AS supported, "
        "count(v.claim_no) FILTER (WHERE v.verdict = 'contradicted') AS contradicted, "
        "count(v.claim_no) FILTER (WHERE v.verdict = 'insufficient') AS insufficient, "
        "count(v.claim_no) FILTER (WHERE NOT v.quote_ok) AS quote_failed "
        f"FROM ({_CURRENT}) AS c SEMI JOIN queries q USING (query_id) "
        "LEFT JOIN answers a ON a.system = c.system AND a.query_id = c.query_id "
        "LEFT JOIN claim_verdicts v ON v.check_id = c.check_id "
        "WHERE ? IS NULL OR c.system = ? "
        "GROUP BY c.system, c.query_id, c.check_id, c.outcome, c.model, c.decompose_sha, c.check_sha, c.answer_sha, "
        "c.created_at, a.answer ORDER BY c.system, c.query_id", [system, system])


def claims(store: Store, check_id: int) -> list[dict]:
    return store.read_dicts(
        "SELECT claim_no, claim, verdict, judge_verdict, quote, quote_ok, justification FROM claim_verdicts "
        "WHERE check_id = ? ORDER BY claim_no", [check_id])


# ---- people reviewing the judge's claim verdicts (METHODOLOGY §11.1) ---------------------------
#
# A reviewer gives each claim of a sample their own verdict, blind to the judge's; the review is
# an event (claim_reviews), the current one per (check, claim, reviewer) the latest, an undo a
# 'withdrawn' row. Only claims of an answer's current check, whose answer text is unchanged, are
# offered: a stale check's claims describe text the system no longer gives.

REVIEW_VERDICTS = ("supported", "contradicted", "insufficient")
WITHDRAWN = "withdrawn"
# the order a sample's places go round the judge's verdicts: the failing ones first, so a small
# sample still holds them when supported claims are most of the claims
_SAMPLE_ORDER = ("contradicted", "insufficient", "supported")


def review_tx(cur: Cursor, *, check_id: int, claim_no: int, reviewer: str, verdict: str,
              now: datetime | None = None) -> int:
    """Append one review (or, with ``WITHDRAWN``, the undo of one); its id."""
    if verdict not in (*REVIEW_VERDICTS, WITHDRAWN):
        raise ValueError(f"{verdict!r} is not a claim review verdict ({', '.join(REVIEW_VERDICTS)}).")
    row = cur.execute(
        "INSERT INTO claim_reviews (check_id, claim_no, reviewer, verdict, created_at) VALUES (?, ?, ?, ?, ?) "
        "RETURNING review_id", [check_id, claim_no, reviewer, verdict, now or utcnow()]).fetchone()
    assert row is not None  # INSERT ... RETURNING gives the row it wrote
    return int(row[0])


def latest_review_tx(cur: Cursor, check_id: int, claim_no: int, reviewer: str) -> tuple[int, str] | None:
    """(review id, verdict) of the reviewer's latest row on one claim, a withdrawal included."""
    row = cur.execute(
        "SELECT review_id, verdict FROM claim_reviews WHERE check_id = ? AND claim_no = ? AND reviewer = ? "
        "ORDER BY review_id DESC LIMIT 1", [check_id, claim_no, reviewer]).fetchone()
    return (int(row[0]), str(row[1])) if row else None


def review_item_tx(cur: Cursor, check_id: int, claim_no: int) -> dict | None:
    """One claim as a reviewer reads it, read inside a write: the claim, the question, the
    answer and its context passages, the judge's verdict (for after the review), and whether
    the claim may be reviewed now (``reviewable``: its check is the answer's latest, the answer
    unchanged since, the question live). None when there is no such claim."""
    row = cur.execute(
        "SELECT v.claim, v.verdict, v.judge_verdict, v.quote, v.quote_ok, v.justification, c.system, c.query_id, "
        "c.answer_sha, c.outcome, (SELECT max(x.check_id) FROM faithfulness_checks x WHERE x.system = c.system "
        "AND x.query_id = c.query_id) AS latest, a.answer, q.text "
        "FROM claim_verdicts v JOIN faithfulness_checks c ON c.check_id = v.check_id "
        "LEFT JOIN answers a ON a.system = c.system AND a.query_id = c.query_id "
        "LEFT JOIN queries q ON q.query_id = c.query_id WHERE v.check_id = ? AND v.claim_no = ?",
        [check_id, claim_no]).fetchone()
    if row is None:
        return None
    (claim, verdict, judge_verdict, quote, quote_ok, justification, system, query_id, sha, outcome, latest,
     answer, question) = row
    passages = [t if t is not None else (span or "") for t, span in cur.execute(
        "SELECT x.text, CASE WHEN x.start IS NULL THEN d.raw_text ELSE substr(d.raw_text, x.start + 1, "
        "x.\"end\" - x.start) END FROM answer_contexts x LEFT JOIN documents d ON d.doc_id = x.doc_id "
        "WHERE x.system = ? AND x.query_id = ? ORDER BY x.ordinal", [system, query_id]).fetchall()]
    stale = answer is None or answer_sha(answer) != sha
    return {"check_id": int(check_id), "claim_no": int(claim_no), "claim": claim, "judge": verdict,
            "judge_verdict": judge_verdict, "quote": quote, "quote_ok": bool(quote_ok),
            "justification": justification, "system": system, "query_id": query_id, "question": question,
            "answer": answer, "passages": passages, "superseded": int(latest) != int(check_id), "stale": stale,
            "live": question is not None,
            "reviewable": int(latest) == int(check_id) and not stale and question is not None and outcome == "ok"}


def reviewable_claims(store: Store, system: str | None = None) -> list[dict]:
    """Every claim that may be reviewed now (see :func:`review_item_tx`), with the judge's
    verdict (to stratify a sample by, never shown before a review)."""
    checks = {int(c["check_id"]): c for c in current_checks(store, system)
              if c["outcome"] == "ok" and c["answer"] is not None and answer_sha(c["answer"]) == c["answer_sha"]}
    if not checks:
        return []
    rows = store.read_dicts(
        f"SELECT v.check_id, v.claim_no, v.verdict FROM claim_verdicts v JOIN ({_CURRENT}) AS c "
        "ON c.check_id = v.check_id WHERE ? IS NULL OR c.system = ? ORDER BY v.check_id, v.claim_no",
        [system, system])
    return [{**r, "check_id": int(r["check_id"]), "claim_no": int(r["claim_no"]),
             "system": checks[int(r["check_id"])]["system"], "query_id": checks[int(r["check_id"])]["query_id"]}
            for r in rows if int(r["check_id"]) in checks]


def _sample_key(seed: int, check_id: int, claim_no: int) -> str:
    return hashlib.sha256(f"{seed}:{check_id}:{claim_no}".encode()).hexdigest()


def sample(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """A seeded sample of ``n`` claims stratified by the judge's verdict (``rows`` carry
    ``check_id``, ``claim_no``, ``verdict``). Places go round the verdicts one at a time
    (contradicted, insufficient, supported), a verdict with no claim left giving its turn
    away, so failing claims are not drowned by supported ones; within a verdict, claims come in
    a seeded hash order. A larger ``n`` with the same seed only adds claims. The sample is
    returned in hash order, which mixes the verdicts: a claim's place says nothing of its
    verdict."""
    if n < 0:
        raise ValueError(f"A sample size is 0 or more, not {n}.")
    by = {v: sorted((r for r in rows if r["verdict"] == v),
                    key=lambda r: _sample_key(seed, r["check_id"], r["claim_no"])) for v in _SAMPLE_ORDER}
    quota = dict.fromkeys(_SAMPLE_ORDER, 0)
    left = min(n, sum(len(b) for b in by.values()))
    while left:
        for v in _SAMPLE_ORDER:
            if left and quota[v] < len(by[v]):
                quota[v] += 1
                left -= 1
    chosen = [r for v in _SAMPLE_ORDER for r in by[v][:quota[v]]]
    return sorted(chosen, key=lambda r: _sample_key(seed, r["check_id"], r["claim_no"]))


def current_reviews(store: Store, reviewer: str | None = None, system: str | None = None) -> list[dict]:
    """Each reviewer's current review of each claim (withdrawn ones left out), latest first,
    with the judge's verdict, quote and justification and the check's judge and prompts."""
    return store.read_dicts(
        "SELECT r.review_id, r.check_id, r.claim_no, r.reviewer, r.verdict AS review, r.created_at, v.claim, "
        "v.verdict AS judge, v.judge_verdict, v.quote, v.quote_ok, v.justification, c.system, c.query_id, c.model, "
        "c.decompose_sha, c.check_sha "
        "FROM (SELECT *, row_number() OVER (PARTITION BY check_id, claim_no, reviewer ORDER BY review_id DESC) "
        "AS rn FROM claim_reviews) AS r "
        "JOIN claim_verdicts v ON v.check_id = r.check_id AND v.claim_no = r.claim_no "
        "JOIN faithfulness_checks c ON c.check_id = r.check_id "
        "WHERE r.rn = 1 AND r.verdict <> 'withdrawn' AND (? IS NULL OR r.reviewer = ?) AND (? IS NULL OR c.system = ?) "
        "ORDER BY r.review_id DESC", [reviewer, reviewer, system, system])
