"""Cost you can see (issue 27 item 4, METHODOLOGY §11.5 and §11.7): the estimate against the
worked numbers, the cache minimums, the drafting instructions long enough to cache, the
estimate made from the real inputs with nothing sent, and the API's real usage (cache reads
included) in llm_calls and in the job's summary."""

from __future__ import annotations

import json

import pytest

from annotator.evidence import nuggets, question_drafts
from annotator.judge import llm, llm_cost
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import Role
from golden_store.live.llm_log import usage_summary
from golden_store.scoring.cost import eval_run_cost
from tests.annotator.test_leaks import assert_nothing_held_out_sent
from tests.llm_server import message

ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))
Q1_QUOTE = "VPN-ERR-0417 means the device certificate on your laptop has expired"
CACHED = {"input_tokens": 90, "output_tokens": 120, "cache_creation_input_tokens": 0,
          "cache_read_input_tokens": 1400}
WRITTEN = {"input_tokens": 90, "output_tokens": 120, "cache_creation_input_tokens": 1400,
           "cache_read_input_tokens": 0}


# ---- the worked numbers of §11.7 --------------------------------------------------------------


def test_eval_run_cost_reproduces_methodology_11_7():
    assert eval_run_cost(5000, 1800, 150, 5.00, 25.00, batch=False) == pytest.approx(63.75)
    assert eval_run_cost(5000, 1800, 150, 5.00, 25.00, batch=True, cache_hit_frac=0.99,
                         cached_frac_of_input=0.78) == pytest.approx(16.28, abs=0.01)
    assert eval_run_cost(5000, 1800, 150, 1.00, 5.00, batch=True) == pytest.approx(6.375)


def test_estimate_of_the_5000_claim_run():
    """§11.7's run as the studio estimates it: 1,400 tokens of shared rubric, 400 per claim,
    150 out. Synchronous uncached ~$63.75; batch + cache ~$16.2 (every call after the first
    reads, so the hit rate is 4,999/5,000 rather than §11.7's 0.99); Haiku batch ~$6.37."""
    opus = llm_cost.estimate("judge", model="claude-opus-5", n_items=5000, prefix_chars=1400 * 3.5,
                             item_chars=400 * 3.5, out_tokens=150)
    assert (opus.prefix_tokens, opus.item_tokens, opus.input_tokens) == (1400, 400, 9_000_000)
    assert opus.caches  # 1,400 ≥ Opus 5's 512
    assert opus.usd[(False, False)] == pytest.approx(63.75)
    assert opus.usd[(True, False)] == pytest.approx(31.875)
    assert opus.usd[(True, True)] == pytest.approx(eval_run_cost(
        5000, 1800, 150, 5.00, 25.00, batch=True, cache_hit_frac=4999 / 5000, cached_frac_of_input=1400 / 1800))
    assert opus.usd[(True, True)] == pytest.approx(16.28, abs=0.2)  # ≈ $16.13
    assert llm_cost.expected_usd(opus, batch=True) == opus.usd[(True, True)]
    haiku = llm_cost.estimate("judge", model="claude-haiku-4-5", n_items=5000, prefix_chars=1400 * 3.5,
                              item_chars=400 * 3.5, out_tokens=150)
    assert haiku.usd[(True, False)] == pytest.approx(6.375)
    # Haiku 4.5 caches from 4,096 tokens: the 1,400-token rubric is not cached, and it says so
    assert not haiku.caches and llm_expected(haiku) == haiku.usd[(True, False)]
    assert "Caching will not apply" in haiku.cache_note and "4,096" in haiku.cache_note


def llm_expected(est: llm_cost.Estimate) -> float | None:
    return llm_cost.expected_usd(est, batch=True)


def test_cache_note_for_a_500_token_prefix_on_haiku_and_sonnet():
    """§11.5's trap: the minimum cacheable prefix. 500 tokens cache on neither Haiku 4.5
    (4,096) nor Sonnet 4.5 (1,024), and each note names its own minimum; 2,000 tokens cache on
    Sonnet only."""
    def est(model: str, tokens: int) -> llm_cost.Estimate:
        return llm_cost.estimate("x", model=model, n_items=10, prefix_chars=tokens * 3.5, item_chars=700,
                                 out_tokens=100)

    haiku, sonnet = est("claude-haiku-4-5", 500), est("claude-sonnet-4-5", 500)
    assert not haiku.caches and not sonnet.caches
    assert "≈500 tokens" in haiku.cache_note and "claude-haiku-4-5 caches prefixes of 4,096+" in haiku.cache_note
    assert "claude-sonnet-4-5 caches prefixes of 1,024+" in sonnet.cache_note
    assert haiku.cache_note in haiku.lines()
    assert est("claude-sonnet-4-5", 2000).caches and not est("claude-haiku-4-5", 2000).caches
    assert "Caching applies" in est("claude-sonnet-4-5", 2000).cache_note
    unknown = est("some-future-model", 5000)
    assert not unknown.caches and "unknown minimum" in unknown.cache_note
    assert llm_cost.confirm_label(unknown, batch=False) == "Confirm: spend (price unknown)"


def test_confirm_label_and_plan_lines_name_the_mode():
    e = llm_cost.estimate("x", model="claude-sonnet-4-5", n_items=100, prefix_chars=5000, item_chars=3500,
                          out_tokens=400)
    sync, batch = llm_cost.JobPlan(e, False, ["a"]), llm_cost.JobPlan(e, True, ["a"])
    assert sync.confirm_label == f"Confirm: spend ≈ ${e.usd[(False, True)]:.2f}"
    assert batch.usd == e.usd[(True, True)] and batch.usd < sync.usd
    assert "through the Message Batches API" in batch.lines()[-1] and "synchronously" in sync.lines()[-1]
    assert llm_cost.money(0.004) == "$0.0040" and llm_cost.money(None) == "unknown"


# ---- the drafting instructions are long enough to cache ---------------------------------------


@pytest.mark.parametrize("instructions", [nuggets.INSTRUCTIONS, question_drafts.INSTRUCTIONS],
                         ids=["nuggets", "questions"])
def test_instructions_are_a_cacheable_prefix_on_sonnet_and_say_why_not_on_haiku(instructions):
    assert llm_cost.approx_tokens(len(instructions)) >= 1024
    assert "Worked example" in instructions  # the guidance and its examples, not filler
    on = llm_cost.estimate("x", model="claude-sonnet-4-5", n_items=10, prefix_chars=len(instructions),
                           item_chars=2000, out_tokens=400)
    off = llm_cost.estimate("x", model="claude-haiku-4-5", n_items=10, prefix_chars=len(instructions),
                            item_chars=2000, out_tokens=400)
    assert on.caches and not off.caches and "4,096" in off.cache_note


def _system_blocks(server) -> list[dict]:
    blocks = []
    for r in server.requests:
        body = r["body"]
        if "system" in body:
            blocks += body["system"]
        for req in body.get("requests", []):
            blocks += req["params"]["system"]
    return blocks


def _assert_cached_prefix(blocks: list[dict], instructions: str) -> None:
    assert blocks
    for b in blocks:
        assert b["cache_control"] == {"type": "ephemeral"} and b["text"] == instructions
        assert llm_cost.approx_tokens(len(b["text"])) >= 1024


def test_nugget_requests_sync_and_batch_send_the_cacheable_prefix(demo_store, llm_server):
    llm_server.default = lambda body: (200, message(json.dumps({"insufficient_evidence": True, "nuggets": []})))
    nuggets.draft_many(demo_store, LOCAL_USER, ["q001", "q002", "q009"])
    nuggets.draft_many(demo_store, LOCAL_USER, ["q001", "q002", "q009"], batch=True)
    _assert_cached_prefix(_system_blocks(llm_server), nuggets.INSTRUCTIONS)
    assert_nothing_held_out_sent(llm_server, demo_store)


def test_question_request_sends_the_cacheable_prefix(demo_store, llm_server):
    llm_server.default = lambda body: (200, message(json.dumps({"questions": []})))
    question_drafts.propose(demo_store, ENGINEER, "pension")
    _assert_cached_prefix(_system_blocks(llm_server), question_drafts.INSTRUCTIONS)
    assert_nothing_held_out_sent(llm_server, demo_store)


# ---- the estimate comes from the real inputs and sends nothing --------------------------------


def test_nugget_plan_uses_the_real_inputs_skips_held_out_and_sends_nothing(demo_store, llm_server):
    plan = nuggets.plan(demo_store, LOCAL_USER, ["q001", "q002", "q009"], batch=True)
    assert llm_server.requests == []
    assert plan.items == ["q001", "q002"] and [q for q, _ in plan.skipped] == ["q009"]
    assert "held out" in plan.skipped[0][1]
    e = plan.estimate
    assert e.model == llm.model_id() and e.n_items == 2 and e.out_tokens == nuggets.OUT_TOKENS
    assert e.prefix_tokens == llm_cost.approx_tokens(len(nuggets.INSTRUCTIONS))
    contents = [nuggets.prompt_content(q.text, ps) for q, ps in
                (nuggets.eligible(demo_store, qid, True) for qid in ("q001", "q002"))]
    assert e.item_tokens == llm_cost.approx_tokens(sum(map(len, contents)) / 2)
    assert e.caches and plan.usd == e.usd[(True, True)]
    assert any("1 item(s) will be skipped and never sent: q009 (held out" in line for line in plan.lines())
    nothing = nuggets.plan(demo_store, LOCAL_USER, ["q009"])
    assert nothing.items == [] and nothing.lines()[0] == "Nugget drafting: nothing will be sent, so nothing is spent."
    haiku = nuggets.plan(demo_store, LOCAL_USER, ["q001", "q002"], model="claude-haiku-4-5")
    assert not haiku.estimate.caches and "Caching will not apply" in " ".join(haiku.lines())
    assert llm_server.requests == []


def test_question_plan_refuses_a_document_holding_held_out_text(demo_store, llm_server, tmp_path):
    from annotator.integration import corpus_import

    plan = question_drafts.plan(demo_store, ENGINEER, "pension", n=4)
    assert plan.items == ["pension"] and plan.estimate.out_tokens == 20 + 130 * 4
    assert plan.estimate.caches
    faq = tmp_path / "faq.md"
    faq.write_text("# FAQ\n\nHow long does the company keep paying a new mum her full wages while she's off?\n")
    corpus_import.import_paths(demo_store, LOCAL_USER, [faq])
    with pytest.raises(llm.LLMRefused, match="held-out"):
        question_drafts.plan(demo_store, ENGINEER, "faq")
    assert llm_server.requests == []


# ---- after the job: the API's figures ---------------------------------------------------------


def test_cache_reads_land_in_llm_calls_and_in_the_jobs_summary(demo_store, llm_server):
    """The first call writes the prefix, the next ones read it (scripted as the API reports it);
    llm_calls keeps each call's figures and the summary adds them up."""
    body = json.dumps({"insufficient_evidence": False, "nuggets": [
        {"text": "Expired device certificate", "importance": "vital", "quote": Q1_QUOTE}]})
    llm_server.script += [lambda b: (200, message(body, usage=WRITTEN)),
                          lambda b: (200, message(body, usage=CACHED))]
    outs = nuggets.draft_many(demo_store, LOCAL_USER, ["q001", "q002"])
    rows = demo_store.read("SELECT item, cache_creation_input_tokens, cache_read_input_tokens FROM llm_calls "
                           "WHERE purpose = ? ORDER BY item", [nuggets.PURPOSE])
    assert rows == [("q001", 1400, 0), ("q002", 0, 1400)]
    used = nuggets.job_usage(outs)
    assert (used.calls, used.cache_write_tokens, used.cache_read_tokens) == (2, 1400, 1400)
    assert used.cache_hit_rate == pytest.approx(0.5)
    i, o, cw, cr = next(p for k, p in llm.PRICES.items() if llm.model_id().startswith(k))
    expect = (180 * i + 240 * o + 1400 * cw + 1400 * cr) / 1e6
    assert used.usd == pytest.approx(expect)
    assert usage_summary(demo_store, nuggets.PURPOSE)["cost_usd"] == pytest.approx(expect)
    summary = nuggets.summarize(outs)
    assert summary["usage"]["cache_read_tokens"] == 1400 and summary["usage"]["cache_hit_rate"] == 0.5
    assert "Cache hit rate 50% of the cached prefix's tokens." in summary["usage_lines"]


def test_a_failed_call_is_in_the_jobs_usage(demo_store, llm_server):
    llm_server.script.append(lambda b: (200, message("{", stop_reason="max_tokens", usage=CACHED)))
    outs = nuggets.draft_many(demo_store, LOCAL_USER, ["q001"])
    assert outs[0].outcome == "error"
    used = nuggets.job_usage(outs)
    assert used.calls == 1 and used.cache_read_tokens == 1400 and used.outcomes == {"error:truncated": 1}


def test_question_drafts_report_the_calls_cache_reads(demo_store, llm_server):
    llm_server.script.append(lambda b: (200, message(json.dumps({"questions": []}), usage=CACHED)))
    res = question_drafts.propose(demo_store, ENGINEER, "pension")
    lines = res.job_usage().lines()
    assert "1,400 cache-read tokens" in lines[0] and "Cache hit rate 100%" in lines[1]
    assert usage_summary(demo_store, question_drafts.PURPOSE)["cache_read_tokens"] == 1400
