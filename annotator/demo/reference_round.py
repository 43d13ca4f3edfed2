"""The demo's reference-answer round, finished: both demo annotators wrote the reference answers of
two questions blind to each other (``data/reference_round.json``); on q007 they agree and the lead
accepted one answer; on q013 they disagree (short form, the span cited, their criteria) and the
lead wrote a merged answer with a note of why. Each adjudicated revision keeps the content the
demo's reference answers already had (``references.jsonl``), so every figure scored against
them is as before; the Reference answers page's rounds section and ``golden references
round-status ref1`` show the round, its agreement and the decisions."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.evidence import reference_answers, reference_rounds
from annotator.people.identity import User
from golden_store.db.store import Store
from golden_store.live import reference_rounds as live_rounds
from golden_store.live.documents import raw_text
from golden_store.live.reference_answers import Anchor

ROUND_FILE = "reference_round.json"


def _answer(store: Store, reader: User, row: dict) -> reference_rounds.RoundAnswer:
    """The row's answer, anchored to its question's evidence (or to the part of its first span
    that ``evidence_within`` quotes)."""
    spans = [Anchor(e["doc_id"], e["start"], e["end"]) for e in reference_answers.evidence_spans(store, reader,
                                                                                                  row["query_id"])]
    if row.get("evidence_within"):
        first = spans[0]
        at = (raw_text(store, first.doc_id) or "").find(row["evidence_within"], first.start, first.end)
        if at < 0:
            raise ValueError(f"demo {ROUND_FILE}: {row['evidence_within']!r} is not in {row['query_id']}'s evidence")
        spans = [Anchor(first.doc_id, at, at + len(row["evidence_within"]))]
    return reference_rounds.answer_from(row.get("short_answer"), row.get("full_answer"), spans,
                                        reference_answers.criteria_drafts(row.get("criteria", []), ROUND_FILE))


def load_reference_round(store: Store, data_dir: Path, *, lead: User, authors: dict[str, User]) -> dict[str, object]:
    """Open the round (as the lead, through the live layer as the demo's other rounds are: its
    authors are demo names, not accounts), write each author's submission and the lead's
    adjudications through the service; the round's id and how many questions were settled."""
    spec = json.loads((data_dir / ROUND_FILE).read_text("utf-8"))
    rid = live_rounds.create(store, sorted(authors), spec["questions"], actor=lead.username, note=spec["note"])
    for row in spec["submissions"]:
        author = authors[row["author"]]
        reference_rounds.submit(store, author, rid, row["query_id"], _answer(store, author, row))
    for adj in spec["adjudications"]:
        merged = _answer(store, lead, {"query_id": adj["query_id"], **adj["merged"]}) if "merged" in adj else None
        reference_rounds.adjudicate(store, lead, rid, adj["query_id"], accept=adj.get("accept"), merged=merged,
                                    note=adj["note"])
    return {"reference_round": rid, "reference_round_adjudicated": len(spec["adjudications"])}
