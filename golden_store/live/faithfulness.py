"""Faithfulness checks of systems' answers, the SQL side: one row per check of an answer (who
judged, with which prompts, on which answer text) and one per claim it found, with its verdict.

The current check of an answer is its latest one whose ``answer_sha`` is the answer's text
now; a check of text since replaced is stale and counted as such, never scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

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
