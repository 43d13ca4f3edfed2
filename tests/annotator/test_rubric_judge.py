"""The rubric judge against the local Messages-API server with the real SDK: one structured call
per answer, every criterion marked with a reason, the score combined in code; a null or
off-scale mark left unmarked, never a zero; refusals counted, never a crash; held-out text in
no request; the instructions the cached prefix and long enough to cache. Then the job on a real
store: marks kept as judge grades with the model and prompt sha, held-out answers skipped."""

from __future__ import annotations

import json

import pytest

from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets, reference_answers
from annotator.judge import llm, llm_cost, rubric_grading
from annotator.judge import rubric_judge as rj
from annotator.judge.held_out import HeldOut
from annotator.people.identity import LOCAL_USER
from golden_store.live import answer_grades
from tests.llm_server import message

CRITERIA = [
    {"criterion_id": "amount", "text": "States the amount", "example": "EUR 58 for a full day", "weight": 2.0,
     "scale_max": 1},
    {"criterion_id": "condition", "text": "Names the case", "example": "a full day in Berlin", "weight": 1.0,
     "scale_max": 2},
    {"criterion_id": "no_invention", "text": "Adds nothing the policy does not state", "example": "no breakfast",
     "weight": 1.0, "scale_max": 1},
]
QUESTION = "What's the per diem for a full day in Berlin?"
ANSWER = "In Berlin you get EUR 58 a day and a further EUR 12 for the taxi."
ITEM = rj.RubricItem("rag|q004", QUESTION, ANSWER, CRITERIA, "EUR 58")


def _reply(grades: list[dict], **kw):
    return lambda body: (200, message(json.dumps({"grades": grades}), **kw))


def _g(cid: str, mark: int | None) -> dict:
    return {"criterion": cid, "reason": f"reason for {cid}", "mark": mark}


def test_every_criterion_marked_and_the_score_combined_in_code(llm_server):
    llm_server.script = [_reply([_g("amount", 1), _g("condition", 1), _g("no_invention", 0)])]
    res = rj.grade_answer(llm.LLMClient(max_retries=0), ITEM)
    assert res.outcome == "ok" and res.unmarked == []
    assert [(m.criterion_id, m.mark) for m in res.marks] == [("amount", 1), ("condition", 1), ("no_invention", 0)]
    assert res.marks[0].reason == "reason for amount"
    assert res.score == pytest.approx((2 * 1 + 1 * 0.5 + 0) / 4)  # 0.625, by the weights, not the model
    assert res.prompt_sha == rj.PROMPT_SHA
    (request,) = llm_server.requests
    body = request["body"]
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert "grades" in body["output_config"]["format"]["schema"]["properties"]
    user = body["messages"][0]["content"]
    assert f"<answer>\n{ANSWER}\n</answer>" in user and "<reference_answer>\nEUR 58\n" in user
    assert '<criterion id="condition" scale="0-2">' in user and "Example: a full day in Berlin" in user


def test_null_off_scale_missing_and_unknown_marks_are_left_unmarked(llm_server):
    llm_server.script = [_reply([_g("amount", 1), _g("amount", 0), _g("condition", 5), _g("speed", 1)]),
                         _reply([_g("amount", None), _g("condition", 2), _g("no_invention", 1)])]
    client = llm.LLMClient(max_retries=0)
    res = rj.grade_answer(client, ITEM)
    assert [(m.criterion_id, m.mark) for m in res.marks] == [("amount", 1)]  # the first grade of a criterion counts
    assert [c for c, _ in res.unmarked] == ["condition", "no_invention"] and res.score is None
    assert "off the 0-2 scale" in res.unmarked[0][1] and "no grade" in res.unmarked[1][1]
    res = rj.grade_answer(client, ITEM)
    assert res.unmarked[0][0] == "amount" and "could not tell" in res.unmarked[0][1] and res.score is None


def test_a_refusal_is_counted_never_read_and_never_a_crash(llm_server):
    llm_server.script = [lambda body: (200, message("I can't help with that.", stop_reason="refusal"))]
    res = rj.grade_answer(llm.LLMClient(max_retries=0), ITEM)
    assert res.outcome == "refusal" and res.marks == [] and res.score is None


def test_held_out_text_is_in_no_request(llm_server):
    guard = HeldOut.build([("q7", QUESTION)])
    client = llm.LLMClient(max_retries=0)
    with pytest.raises(llm.LLMRefused, match="held out"):
        rj.grade_answer(client, ITEM, held_out=True)
    with pytest.raises(llm.LLMRefused, match="q7"):  # the question under another id
        rj.grade_answer(client, ITEM, guard_index=guard)
    with pytest.raises(llm.LLMRefused, match="q7"):  # quoted in a criterion's worked example
        crit = [{**CRITERIA[0], "example": f"for '{QUESTION}' say EUR 58"}]
        rj.grade_answer(client, rj.RubricItem("rag|q9", "Per diem?", ANSWER, crit), guard_index=guard)
    assert llm_server.requests == []


def test_the_instructions_are_the_cached_prefix_and_long_enough_to_cache(llm_server):
    llm_server.script = [_reply([_g("amount", 1), _g("condition", 2), _g("no_invention", 1)])]
    rj.grade_answer(llm.LLMClient(max_retries=0), ITEM)
    system = llm_server.requests[0]["body"]["system"]
    assert system[0]["text"] == rj.INSTRUCTIONS and system[0]["cache_control"] == {"type": "ephemeral"}
    assert llm_cost.approx_tokens(len(rj.INSTRUCTIONS)) >= llm_cost.min_cacheable("claude-sonnet-4-5")
    user = llm_server.requests[0]["body"]["messages"][0]["content"]
    assert ANSWER not in rj.INSTRUCTIONS and ANSWER in user  # the item is the suffix, never in the prefix


def _judge(body: dict):
    """The scripted model: q013's answer is refused; every other answer gets full marks on
    amount, 1 on condition, nothing said about no_invention (null)."""
    text = body["messages"][0]["content"]
    if "Refuse me" in text:
        return 200, message("no", stop_reason="refusal")
    return 200, message(json.dumps({"grades": [_g("amount", 1), _g("condition", 1), _g("no_invention", None)]}))


def test_the_job_records_judge_grades_and_never_sends_held_out_answers(demo_store, tmp_path, llm_server):
    held_qid, held_text = demo_store.read_one(
        "SELECT query_id, text FROM queries WHERE held_out ORDER BY query_id LIMIT 1")
    demo_store.write(lambda cur: cur.execute("UPDATE query_revisions SET stratum = 'tabular' WHERE query_id = ?",
                                             [held_qid]))
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(demo_store, LOCAL_USER, scope="stratum", scope_id="tabular",
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))
    rows = [{"query_id": "q004", "answer": "EUR 58 for a full day."}, {"query_id": "q013", "answer": "Refuse me."},
            {"query_id": held_qid, "answer": "Held-out answer."}]
    p = tmp_path / "a.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    nuggets.import_answers(demo_store, LOCAL_USER, str(p), "rag")
    llm_server.default = _judge
    plan = rubric_grading.plan(demo_store, LOCAL_USER, "rag")
    assert plan.items == ["q004", "q013"] and plan.skipped[0][0] == held_qid and llm_server.requests == []
    summary = rubric_grading.run(demo_store, LOCAL_USER, "rag")
    assert (summary.graded, summary.refused, summary.marks) == (2, 1, 2)
    assert summary.unmarked == [("q004", "no_invention", summary.unmarked[0][2])]
    sent = json.dumps([r["body"] for r in llm_server.requests])
    assert held_text not in sent and "Held-out answer." not in sent and len(llm_server.requests) == 2
    grades = answer_grades.current_grades(demo_store, "rag", "judge")
    assert [(g["query_id"], g["criterion_id"], g["mark"]) for g in grades] == [("q004", "amount", 1),
                                                                               ("q004", "condition", 1)]
    assert {(g["grader"], g["prompt_sha"]) for g in grades} == {(llm.model_id(), rj.PROMPT_SHA)}
    calls = demo_store.read("SELECT outcome FROM llm_calls WHERE purpose = 'rubric_grading' ORDER BY item")
    assert sorted(c[0] for c in calls) == ["ok", "refusal"]
