"""The LLM client and question drafts, through the real anthropic SDK against a local
Messages-API server."""

from __future__ import annotations

import json

import pydantic
import pytest

from annotator.evidence import question_drafts
from annotator.judge import llm
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.freezing import freeze
from golden_store.live.llm_log import usage_summary
from golden_store.live.queries import get_query
from golden_store.versions import load_version
from tests.llm_server import message

ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))
ANNOTATOR = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
VERBATIM = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"


def proposals(*items: dict) -> str:
    return json.dumps({"questions": list(items)})


def test_proposals_are_verified_flagged_and_accepted(demo_store, llm_server):
    llm_server.script.append(lambda body: (200, message(proposals(
        {"question": "What is the Berlin per diem for a full day?", "excerpts": [VERBATIM],
         "stratum": "tabular", "is_compound": False},
        {"question": "How much is the hotel cap and what is the half-day rate?",
         "excerpts": ["Full day EUR 58, half day EUR 29"], "stratum": "tabular", "is_compound": False},
        {"question": "Is there a per diem for Mars?", "excerpts": ["Travel to Mars is paid at EUR 999 per day"],
         "stratum": "paraphrase", "is_compound": False},
    ))))
    res = question_drafts.propose(demo_store, ENGINEER, "expenses-per-diem", n=3)
    assert res.outcome == "ok" and len(res.proposals) == 3
    first, second, third = res.proposals
    assert first.usable and not first.compound and first.accepted[0][1].doc_id == "expenses-per-diem"
    assert second.compound  # flagged by the check even though the model said otherwise
    assert not third.usable and "not verbatim" in third.rejected[0][1]
    # the request: cached instructions first, the document in the user turn, a JSON schema
    req = llm_server.requests[0]["body"]
    assert req["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "VERBATIM" in req["system"][0]["text"]
    assert "expenses-per-diem" in req["messages"][0]["content"]
    assert req["output_config"]["format"]["type"] == "json_schema"
    assert llm_server.requests[0]["has_key"]
    summary = usage_summary(demo_store, question_drafts.PURPOSE)
    assert summary["calls"] == 1 and summary["input_tokens"] == 1200 and summary["cache_write_tokens"] == 900
    assert summary["cost_usd"] == pytest.approx((1200 * 3 + 300 * 15 + 900 * 3.75) / 1e6)

    with pytest.raises(Exception, match="without any verbatim excerpt"):
        question_drafts.accept(demo_store, ENGINEER, res, [2])
    ids = question_drafts.accept(demo_store, ENGINEER, res, [0, 1])
    q = get_query(demo_store, ids[0])
    assert q.source == "synthetic" and q.generator_model == "claude-sonnet-4-5" and len(q.generator_prompt_sha) == 64
    assert "FLAGGED: compound" in get_query(demo_store, ids[1]).notes
    spans = demo_store.read("SELECT actor, match_kind FROM current_evidence WHERE query_id = ?", [ids[0]])
    assert spans == [("llm:claude-sonnet-4-5", "exact")]
    assert question_drafts.accept(demo_store, ENGINEER, res, [0]) == []  # no duplicates
    freeze(demo_store, "v1", actor="eng")
    gen = load_version("v1").manifest["generator"]
    assert gen["kind"] == "human+llm" and gen["model"] == "claude-sonnet-4-5"


def test_refusal_is_its_own_outcome(demo_store, llm_server):
    llm_server.script.append(lambda body: (200, message("I can't help with that.", stop_reason="refusal")))
    res = question_drafts.propose(demo_store, ENGINEER, "pension")
    assert res.outcome == "refusal" and res.proposals == []
    assert usage_summary(demo_store)["refusals"] == 1


def test_truncation_and_invalid_output_name_the_item(demo_store, llm_server):
    llm_server.script.append(lambda body: (200, message('{"questions": [{"quest', stop_reason="max_tokens")))
    with pytest.raises(llm.LLMOutputError, match="document pension: the answer was cut at max_tokens"):
        question_drafts.propose(demo_store, ENGINEER, "pension")
    llm_server.script.append(lambda body: (200, message('{"questions": [{"question": 3}]}')))
    with pytest.raises(llm.LLMOutputError, match="document pension: the model's answer does not match"):
        question_drafts.propose(demo_store, ENGINEER, "pension")


def test_rate_limits_and_server_errors_are_retried(demo_store, llm_server):
    llm_server.script += [lambda body: (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
                          lambda body: (529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
                          lambda body: (200, message(proposals()))]
    res = question_drafts.propose(demo_store, ENGINEER, "pension")
    assert res.outcome == "ok" and len(llm_server.requests) == 3


def test_no_key_explains_and_makes_no_request(demo_store, monkeypatch, llm_server):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(llm.LLMUnavailable, match="ANTHROPIC_API_KEY"):
        question_drafts.propose(demo_store, ENGINEER, "pension")
    assert llm_server.requests == []


def test_roles_and_held_out_guard(demo_store, llm_server):
    with pytest.raises(PermissionDenied):
        question_drafts.propose(demo_store, ANNOTATOR, "pension")
    with pytest.raises(llm.LLMRefused, match="never sent to a hosted model"):
        llm.refuse_held_out(True, "q009")
    assert llm_server.requests == []


def test_usage_cost_for_unknown_models_is_unknown():
    assert llm.Usage(1000, 100).cost_usd("some-future-model") is None
    assert llm.Usage(1_000_000, 0, 0, 1_000_000).cost_usd("claude-haiku-4-5") == pytest.approx(1.0 + 0.10)


class _Out(pydantic.BaseModel):
    answer: str


def test_key_is_not_in_what_the_studio_records(demo_store, llm_server):
    llm_server.script.append(lambda body: (200, message(proposals())))
    question_drafts.propose(demo_store, ENGINEER, "pension")
    dump = repr(demo_store.read("SELECT * FROM llm_calls"))
    assert "test-key-never-logged" not in dump
