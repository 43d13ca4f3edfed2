"""Faithfulness as a job from the CLI, against the local Messages-API server: the worked example
(one answer, 5 claims, 4 supported: faithfulness 0.8) stored per claim and reported; a refusal
counted apart, never scored; a held-out question's answer and an answer without a context never
sent (and said so); a replaced answer's check reported stale, not scored."""

from __future__ import annotations

import json

from annotator.cli import main
from tests.llm_server import message

CONTEXT = ("Unused leave of up to 5 days may be carried over to the next calendar year. Carried-over days lapse on "
           "31 March. Carry-over requests are made in the HR portal. Part-time staff carry over a pro-rata share.")
CLAIMS = ["Up to 5 unused days carry over.", "Carry-over needs the manager's approval.",
          "Carried-over days lapse on 31 March.", "Requests go through the HR portal.",
          "Part-time staff carry over a pro-rata share."]
QUOTES = {1: "Unused leave of up to 5 days may be carried over", 3: "Carried-over days lapse on 31 March.",
          4: "Carry-over requests are made in the HR portal.", 5: "Part-time staff carry over a pro-rata share."}


def golden(golden_db, capsys, *argv):
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _judge(body: dict):
    """The scripted model: claims for the decomposition call, checks for the check call; q008's
    check is refused."""
    props = body["output_config"]["format"]["schema"].get("properties", {})
    text = body["messages"][0]["content"]
    if "claims" in props:
        return 200, message(json.dumps({"claims": CLAIMS}))
    if "Refuse me" in text:
        return 200, message("I can't help with that.", stop_reason="refusal")
    checks = [{"claim": i, "justification": "see context", "verdict": "supported" if i in QUOTES else "insufficient",
               "supporting_quote": QUOTES.get(i)} for i in range(1, 6)]
    return 200, message(json.dumps({"checks": checks}))


def _answers(tmp_path, held_out_qid: str, q004_answer: str = "You can carry over up to 5 days ..."):
    rows = [
        {"query_id": "q004", "answer": q004_answer, "contexts": [{"text": CONTEXT}]},
        {"query_id": "q002", "answer": "Tell your manager.", "contexts": [{"text": "Refuse me. " + CONTEXT}]},
        {"query_id": "q001", "answer": "Renew the certificate."},                       # no context
        {"query_id": held_out_qid, "answer": "Some answer.", "contexts": [{"text": CONTEXT}]},
    ]
    p = tmp_path / "answers.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_claims_checked_stored_and_reported(demo_store, golden_db, capsys, tmp_path, llm_server):
    held_qid, held_text = demo_store.read_one("SELECT query_id, text FROM queries WHERE held_out ORDER BY query_id LIMIT 1")
    llm_server.default = _judge
    assert golden(golden_db, capsys, "answers", "import", _answers(tmp_path, held_qid), "--system", "s1")[0] == 0
    code, out, err = golden(golden_db, capsys, "answers", "check-claims", "--system", "s1", "--yes")
    assert code == 0, err
    assert f"skipped {held_qid}: held out: never sent to a hosted model" in out
    assert "skipped q001: no context imported with the answer" in out
    assert "2 answer(s) checked (1 refused by the model" in out
    sent = json.dumps([r["body"] for r in llm_server.requests])
    assert held_text not in sent and "Renew the certificate." not in sent
    assert len(llm_server.requests) == 4  # q004 and q002: a decomposition and a check each

    code, out, _ = golden(golden_db, capsys, "--json", "answers", "faithfulness", "--system", "s1")
    r = json.loads(out)["s1"]
    assert code == 0 and r["faithfulness"] == 0.8 and r["answers_with_claims"] == 1 and r["refused"] == 1
    assert r["claims"] == {"supported": 4, "contradicted": 0, "insufficient": 1}
    kept = demo_store.read("SELECT v.claim_no, v.verdict, v.quote FROM claim_verdicts v JOIN faithfulness_checks c "
                           "USING (check_id) WHERE c.query_id = 'q004' ORDER BY v.claim_no")
    assert [(n, v) for n, v, _ in kept] == [(1, "supported"), (2, "insufficient"), (3, "supported"),
                                            (4, "supported"), (5, "supported")]

    # the answer replaced: its check no longer describes it
    assert golden(golden_db, capsys, "answers", "import", _answers(tmp_path, held_qid, "Five days carry over."),
                  "--system", "s1", "--replace")[0] == 0
    r = json.loads(golden(golden_db, capsys, "--json", "answers", "faithfulness", "--system", "s1")[1])["s1"]
    assert r["stale"] == 1 and r["faithfulness"] is None and r["answers_with_claims"] == 0
