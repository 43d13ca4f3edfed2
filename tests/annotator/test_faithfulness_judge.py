"""Faithfulness by claim decomposition against the local Messages-API server with the real
SDK: the worked example (5 claims, 4 supported: 0.8) through both structured calls; the
verbatim backstop; a claim without a check; refusals counted, never a crash; held-out text in
no request; both prompts cached (long enough to cache, sent as the cached system block)."""

from __future__ import annotations

import json

import pytest

from annotator.judge import faithfulness_judge as fj
from annotator.judge import llm, llm_cost
from annotator.judge.held_out import HeldOut
from tests.llm_server import message

QUESTION = "How many unused leave days can I take with me into next year?"
ANSWER = ("You can carry over up to 5 unused days with your manager's approval; they lapse on 31 March, "
          "the request goes through the HR portal, and part-timers get a pro-rata share.")
PASSAGES = [
    "Unused leave of up to 5 days may be carried over to the next calendar year. Carried-over days lapse on 31 March.",
    "Carry-over requests are made in the HR portal before 15 January. Part-time staff carry over a pro-rata share.",
]
CLAIMS = [
    "Up to 5 unused vacation days can be carried over into the next year.",
    "Carrying over vacation days requires the manager's approval.",
    "Carried-over vacation days lapse on 31 March.",
    "Carry-over requests go through the HR portal.",
    "Part-time staff carry over a pro-rata share.",
]
SUPPORT = {1: "Unused leave of up to 5 days may be carried over to the next calendar year.",
           3: "Carried-over days lapse on 31 March.",
           4: "Carry-over requests are made in the HR portal",
           5: "Part-time staff carry over a pro-rata share."}


def _checks(quotes: dict[int, str], n: int = 5, skip: frozenset[int] = frozenset()) -> dict:
    return {"checks": [
        {"claim": i, "justification": "see the context",
         "verdict": "supported" if i in quotes else "insufficient", "supporting_quote": quotes.get(i)}
        for i in range(1, n + 1) if i not in skip]}


def _reply(obj: dict, **kw):
    return lambda body: (200, message(json.dumps(obj), **kw))


def test_five_claims_four_supported_is_0_8(llm_server):
    llm_server.script = [_reply({"claims": CLAIMS}), _reply(_checks(SUPPORT))]
    result = fj.check_answer(llm.LLMClient(max_retries=0), item="q1|bm25", question=QUESTION, answer=ANSWER,
                             passages=PASSAGES)
    assert result.outcome == "ok"
    assert [c.verdict for c in result.claims] == ["supported", "insufficient", "supported", "supported", "supported"]
    assert (result.faithfulness.claims, result.faithfulness.supported, result.faithfulness.share) == (5, 4, 0.8)
    # per-claim output, with the provenance of both prompts
    assert result.claims[1].claim == CLAIMS[1] and result.claims[1].judge_verdict == "insufficient"
    assert result.decompose_sha == fj.DECOMPOSE_SHA and result.check_sha == fj.CHECK_SHA
    assert result.usage.input_tokens == 2 * 1200 and result.usage.cache_creation_input_tokens == 2 * 900
    split, check = (r["body"] for r in llm_server.requests)
    assert split["output_config"]["format"]["type"] == "json_schema"
    assert "claims" in split["output_config"]["format"]["schema"]["properties"]
    assert f"<answer>\n{ANSWER}\n</answer>" in split["messages"][0]["content"]
    assert all(p in check["messages"][0]["content"] for p in PASSAGES)
    assert "5. Part-time staff carry over a pro-rata share." in check["messages"][0]["content"]


def test_a_supported_verdict_without_a_verbatim_quote_is_insufficient(llm_server):
    paraphrase = {**SUPPORT, 3: "Carried over days expire at the end of March."}
    llm_server.script = [_reply({"claims": CLAIMS}), _reply(_checks(paraphrase))]
    result = fj.check_answer(llm.LLMClient(max_retries=0), item="q1|bm25", question=QUESTION, answer=ANSWER,
                             passages=PASSAGES)
    third = result.claims[2]
    assert (third.judge_verdict, third.verdict, third.quote_ok) == ("supported", "insufficient", False)
    assert result.faithfulness.share == pytest.approx(3 / 5)


def test_a_claim_the_judge_skipped_is_insufficient_and_a_quote_may_differ_in_spacing(llm_server):
    spaced = {**SUPPORT, 1: "Unused  leave of up to 5 days\nmay be carried over"}
    llm_server.script = [_reply({"claims": CLAIMS}), _reply(_checks(spaced, skip=frozenset({5})))]
    result = fj.check_answer(llm.LLMClient(max_retries=0), item="q1|bm25", question=QUESTION, answer=ANSWER,
                             passages=PASSAGES)
    assert result.claims[0].verdict == "supported" and result.claims[0].quote_ok
    assert result.claims[4].judge_verdict is None and result.claims[4].verdict == "insufficient"
    assert result.faithfulness.share == pytest.approx(3 / 5)


def test_an_abstention_makes_no_claim_and_needs_no_check(llm_server):
    llm_server.script = [_reply({"claims": []})]
    result = fj.check_answer(llm.LLMClient(max_retries=0), item="q9|bm25", question="What is the CEO's salary?",
                             answer="The documents do not say.", passages=PASSAGES)
    assert result.outcome == "ok" and result.claims == [] and result.faithfulness.share is None
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("which", ["decomposition", "check"])
def test_a_refusal_is_counted_never_read_and_never_a_crash(llm_server, which):
    refusal = _reply({"claims": []}, stop_reason="refusal") if which == "decomposition" else \
        lambda body: (200, message("I can't help with that.", stop_reason="refusal"))
    llm_server.script = [refusal] if which == "decomposition" else [_reply({"claims": CLAIMS}), refusal]
    result = fj.check_answer(llm.LLMClient(max_retries=0), item="q1|bm25", question=QUESTION, answer=ANSWER,
                             passages=PASSAGES)
    assert result.outcome == "refusal" and result.faithfulness is None
    assert len(llm_server.requests) == (1 if which == "decomposition" else 2)


def test_held_out_text_is_in_no_request(llm_server):
    guard = HeldOut.build([("q7", QUESTION)])
    client = llm.LLMClient(max_retries=0)
    with pytest.raises(llm.LLMRefused, match="held out"):
        fj.check_answer(client, item="q7|bm25", question=QUESTION, answer=ANSWER, passages=PASSAGES, held_out=True)
    with pytest.raises(llm.LLMRefused, match="q7"):  # the same question under another id
        fj.check_answer(client, item="q8|bm25", question=QUESTION.rstrip("?") + " please", answer=ANSWER,
                        passages=PASSAGES, guard_index=guard)
    with pytest.raises(llm.LLMRefused, match="q7"):  # quoted inside a passage
        fj.check_answer(client, item="q8|bm25", question="Carry-over?", answer=ANSWER,
                        passages=[PASSAGES[0], f"FAQ: {QUESTION} See above."], guard_index=guard)
    assert llm_server.requests == []


def test_both_prompts_are_the_cached_prefix_and_long_enough_to_cache(llm_server):
    llm_server.script = [_reply({"claims": CLAIMS}), _reply(_checks(SUPPORT))]
    fj.check_answer(llm.LLMClient(max_retries=0), item="q1|bm25", question=QUESTION, answer=ANSWER, passages=PASSAGES)
    for request, instructions in zip(llm_server.requests, (fj.DECOMPOSE_INSTRUCTIONS, fj.CHECK_INSTRUCTIONS)):
        system = request["body"]["system"]
        assert system[0]["text"] == instructions and system[0]["cache_control"] == {"type": "ephemeral"}
        assert llm_cost.approx_tokens(len(instructions)) >= llm_cost.min_cacheable("claude-sonnet-4-5")
        assert QUESTION not in instructions  # the item is never in the cached prefix
