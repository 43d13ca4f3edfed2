"""The demo's claim verdicts: the faithfulness judge's checks of some of both systems' answers,
replayed from ``data/claims.jsonl`` (no model is called), and a reviewer's blind review of a
seeded sample of them, so the Claim review page, ``golden answers faithfulness`` and the
Results page's corrected faithfulness have data on a fresh demo.

A claim's ``review`` in the file is what the demo reviewer says when the sample reaches it;
without one the reviewer agrees with the judge. The two disagreements are a lenient judge
(a claim it called supported that the passage does not carry) and a strict one."""

from __future__ import annotations

import json

from golden_store.db.cursor import Cursor
from golden_store.db.store import Store
from golden_store.live import faithfulness
from golden_store.live import nuggets as live_nuggets

CLAIMS_FILE = "claims.jsonl"
REVIEW_SAMPLE = 10  # claims the demo reviewer reviews, drawn as the Claim review page draws them (seed 0)


def load_claims(store: Store, data_dir, *, judge_model: str, reviewer: str) -> dict[str, int]:
    """Record the replayed checks and the reviewer's reviews; counts of both."""
    from annotator.judge.faithfulness_judge import CHECK_SHA, DECOMPOSE_SHA

    lines = [json.loads(s) for s in (data_dir / CLAIMS_FILE).read_text("utf-8").splitlines() if s.strip()]
    answers = {(a["system"], a["query_id"]): a["answer"] for a in live_nuggets.answers(store)}
    wanted: dict[tuple[str, str, int], str] = {}

    def checks(cur: Cursor) -> int:
        for line in lines:
            rows = [faithfulness.ClaimRow(c["claim"], c["verdict"], c["verdict"], c.get("quote"),
                                          c.get("quote") is not None or c["verdict"] != "supported", None)
                    for c in line["claims"]]
            faithfulness.record_tx(cur, system=line["system"], query_id=line["query_id"],
                                   answer=answers[(line["system"], line["query_id"])], outcome="ok", model=judge_model,
                                   decompose_sha=DECOMPOSE_SHA, check_sha=CHECK_SHA, input_tokens=0, output_tokens=0,
                                   claims=rows, actor=judge_model)
            for n, c in enumerate(line["claims"], 1):
                wanted[(line["system"], line["query_id"], n)] = c.get("review", c["verdict"])
        return len(lines)

    n_checks = store.write(checks)
    chosen = faithfulness.sample(faithfulness.reviewable_claims(store), REVIEW_SAMPLE, seed=0)

    def reviews(cur: Cursor) -> int:
        for c in chosen:
            faithfulness.review_tx(cur, check_id=c["check_id"], claim_no=c["claim_no"], reviewer=reviewer,
                                   verdict=wanted[(c["system"], c["query_id"], c["claim_no"])])
        return len(chosen)

    return {"claim_checks": n_checks, "claim_reviews": store.write(reviews)}
