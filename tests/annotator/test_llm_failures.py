"""Issue 18 item 14: failed LLM calls are recorded in llm_calls with the tokens they used; a
timeout, a refused connection and an overloaded API are told apart; one call has an overall
deadline, so a hanging API cannot hold a draft for attempts x timeout."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from annotator.evidence import nuggets
from annotator.judge import llm
from annotator.people.identity import LOCAL_USER
from golden_store.live import llm_log
from tests.llm_server import message

Q1_QUOTE = "VPN-ERR-0417 means the device certificate on your laptop has expired"


def _calls(store) -> list[dict]:
    return store.read_dicts("SELECT item, outcome, input_tokens, output_tokens, cost_usd FROM llm_calls "
                            "WHERE purpose = 'draft_nuggets' ORDER BY call_id")


def test_a_truncated_answer_is_recorded_with_its_tokens(demo_store, llm_server):
    usage = {"input_tokens": 1000, "output_tokens": 4096, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    llm_server.script.append(lambda body: (200, message('{"nuggets": [', stop_reason="max_tokens", usage=usage)))
    with pytest.raises(llm.LLMOutputError, match="q001.*max_tokens") as e:
        nuggets.draft(demo_store, LOCAL_USER, "q001")
    assert e.value.kind == "truncated"
    [call] = _calls(demo_store)
    assert (call["item"], call["outcome"], call["input_tokens"], call["output_tokens"]) == (
        "q001", "error:truncated", 1000, 4096)
    assert call["cost_usd"] > 0  # paid for, so it counts
    summary = llm_log.usage_summary(demo_store, nuggets.PURPOSE)
    assert summary["calls"] == 1 and summary["errors"] == 1 and summary["output_tokens"] == 4096


def test_overloaded_is_said_so_retried_and_recorded(demo_store, llm_server):
    overloaded = lambda body: (529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})  # noqa: E731
    llm_server.default = overloaded
    client = llm.LLMClient(max_retries=2, sleep=lambda s: None)
    with pytest.raises(llm.LLMOutputError, match=r"q001: the API is overloaded \(529\); gave up after 3") as e:
        nuggets.draft(demo_store, LOCAL_USER, "q001", client=client)
    assert e.value.kind == "overloaded" and len(llm_server.requests) == 3
    assert [c["outcome"] for c in _calls(demo_store)] == ["error:overloaded"]


def test_refused_connection_is_not_called_a_timeout(demo_store, llm_server, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    client = llm.LLMClient(max_retries=1, sleep=lambda s: None)
    with pytest.raises(llm.LLMOutputError, match="q001: connection refused by http://127.0.0.1") as e:
        nuggets.draft(demo_store, LOCAL_USER, "q001", client=client)
    assert e.value.kind == "connection_refused" and "timeout" not in str(e.value)
    assert [c["outcome"] for c in _calls(demo_store)] == ["error:connection_refused"]


def test_a_hanging_api_hits_the_deadline_and_is_called_a_timeout(demo_store, llm_server):
    """The server answers only once the test is over (60 s at most). Each attempt's timeout
    is real; the backoff sleeps are not slept but added to the client's clock, so the count
    of attempts does not depend on how busy the machine is: the 1.5 s deadline leaves room for
    two 0.4 s attempts and their backoff, never for the 11 that max_retries would allow."""
    release = threading.Event()

    def hang(body):
        release.wait(60)
        return 200, message(json.dumps({"insufficient_evidence": False, "nuggets": []}))

    llm_server.default = hang
    slept: list[float] = []
    client = llm.LLMClient(timeout=0.4, deadline_s=1.5, max_retries=10, sleep=slept.append,
                           clock=lambda: time.monotonic() + sum(slept))
    t0 = time.monotonic()
    try:
        with pytest.raises(llm.LLMOutputError) as e:
            nuggets.draft(demo_store, LOCAL_USER, "q001", client=client)
        elapsed = time.monotonic() - t0
    finally:
        release.set()
    assert elapsed < 30  # given up long before the server would answer (a generous bound, not a timing test)
    assert len(llm_server.requests) <= 2 and len(slept) <= 1  # the deadline, not max_retries, ended it
    assert e.value.kind == "timeout"
    assert "did not answer within" in str(e.value) and "deadline" in str(e.value)
    assert "cannot reach" not in str(e.value)
    assert [c["outcome"] for c in _calls(demo_store)] == ["error:timeout"]


def test_batch_item_failures_are_recorded(demo_store, llm_server):
    usage = {"input_tokens": 800, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    llm_server.batch_result = lambda cid, params: {"type": "succeeded", "message": message("not json", usage=usage)}
    out = nuggets.draft_many(demo_store, LOCAL_USER, ["q001"], batch=True)
    assert [o.outcome for o in out] == ["error"]
    [call] = _calls(demo_store)
    assert call["outcome"] == "error:invalid_output" and call["input_tokens"] == 800
