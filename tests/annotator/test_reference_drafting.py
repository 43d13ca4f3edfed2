"""Claude drafts reference answers from the evidence (issue 40, item 1), against the local
Messages-API server: a draft is an unapproved revision anchored only to quotes found verbatim,
held-out questions are never in a request, a refusal is counted and writes nothing, and the CLI
shows the estimate before anything is sent."""

from __future__ import annotations

import json
import os

from annotator import cli
from annotator.evidence import reference_answers, reference_drafting
from annotator.judge import llm
from annotator.evidence import reference_rounds
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import Role
from tests.annotator.test_leaks import assert_nothing_held_out_sent
from tests.llm_server import message

NOTICE = ("After probation, employees with less than five years of service must give one month of notice, "
          "and those with five years or more must give two months.")


def _reply(obj: dict, **kw):
    return lambda body: (200, message(json.dumps(obj), **kw))


PROPOSAL = {"insufficient_evidence": False, "short_answer": "one month",
            "full_answer": "One month of notice after probation, and the laptop back within five working days.",
            "evidence_quotes": [NOTICE, "employees must hand in laptops within ten days"]}  # the second: not verbatim


def test_a_draft_is_an_unapproved_revision_anchored_to_verbatim_quotes(demo_store, llm_server):
    llm_server.script = [_reply(PROPOSAL)]
    (out,) = reference_drafting.draft_many(demo_store, LOCAL_USER, ["q003"], client=llm.LLMClient(max_retries=0))
    assert out.outcome == "ok" and out.anchored == 1
    assert out.dropped_quotes == ["employees must hand in laptops within ten days"]
    (cur,) = reference_answers.current(demo_store, LOCAL_USER, "q003")
    assert (cur["short_answer"], cur["approved"], cur["source"]) == ("one month", False, "llm")
    assert [e["doc_id"] for e in cur["evidence"]] == ["notice-periods"]
    (req,) = llm_server.requests
    body = req["body"]
    assert body["output_config"]["format"]["type"] == "json_schema"
    (system,) = body["system"]  # the instructions, marked as the cached prefix
    assert system["text"] == reference_drafting.INSTRUCTIONS and system["cache_control"] == {"type": "ephemeral"}
    assert "I'm resigning after three years here" in json.dumps(body["messages"])


def test_held_out_questions_are_never_sent_and_a_refusal_writes_nothing(demo_store, llm_server):
    llm_server.script = [lambda body: (200, message("I can't help with that.", stop_reason="refusal"))]
    outs = {o.query_id: o for o in reference_drafting.draft_many(demo_store, LOCAL_USER, ["q009", "q003"],
                                                                  client=llm.LLMClient(max_retries=0))}
    assert outs["q009"].outcome == "skipped" and "held-out" in outs["q009"].message
    assert outs["q003"].outcome == "refusal" and outs["q003"].revision is None
    assert reference_answers.current(demo_store, LOCAL_USER, "q003") == []
    assert len(llm_server.requests) == 1
    assert_nothing_held_out_sent(llm_server, demo_store)


def test_an_author_cannot_have_claude_draft_a_question_waiting_in_a_reference_round(demo_store, llm_server):
    """A draft is a revision outside the round: the round closes that door to its authors (a lead
    may still write directly), and nothing is sent for the refused question."""
    lead = User("lena", "Lena", frozenset({Role.LEAD}))
    ann = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
    before = reference_answers.current(demo_store, lead, "q004")
    reference_rounds.open_round(demo_store, lead, ["ann", "ben"], ["q004"])
    llm_server.script = [_reply(PROPOSAL)]
    plan = reference_drafting.plan(demo_store, ann, ["q004", "q003"])
    assert plan.items == ["q003"] and plan.skipped[0][0] == "q004" and "reference round" in plan.skipped[0][1]
    outs = {o.query_id: o for o in reference_drafting.draft_many(demo_store, ann, ["q004", "q003"],
                                                                  client=llm.LLMClient(max_retries=0))}
    assert outs["q004"].outcome == "skipped" and outs["q004"].revision is None
    assert "round-submit" in outs["q004"].message
    assert outs["q003"].outcome == "ok"
    assert len(llm_server.requests) == 1  # only q003's
    assert reference_answers.current(demo_store, lead, "q004") == before


def test_the_instructions_are_a_prefix_long_enough_to_cache():
    """Sonnet-class models cache a prefix of 1,024 tokens or more; ~4 characters a token."""
    assert len(reference_drafting.INSTRUCTIONS) / 4 >= 700


def test_the_cli_estimates_first_and_sends_nothing_without_yes(demo_store, llm_server, capsys):
    llm_server.script = [_reply(PROPOSAL)]
    db = os.environ["GOLDEN_DB"]
    rc = cli.main(["--db", db, "references", "draft", "--query", "q003"])
    captured = capsys.readouterr()
    assert rc != 0 and llm_server.requests == []
    assert "Reference answer drafting" in captured.out + captured.err
    rc = cli.main(["--db", db, "references", "draft", "--query", "q003", "--yes", "--json"])
    got = capsys.readouterr().out
    assert rc == 0 and len(llm_server.requests) == 1
    start = got.index("[")
    assert json.loads(got[start:got.rindex("]") + 1])[0]["outcome"] == "ok"
