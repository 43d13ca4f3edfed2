"""Issue 38 item 6: the LLM features can be tried without a key. ``golden llm-standin`` starts
the local Messages-API stand-in the tests use, in one command; pointed at it through
ANTHROPIC_BASE_URL, the studio's own client (the anthropic SDK) gets answers of the shape
each feature asks for. With the demo's judge as the studio's judge, the demo calibration
grades the rest of the pool through it: the cascade a newcomer can run."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotator.evidence import nuggets
from annotator.judge import llm, relevance_judge

GOLDEN = str(Path(sys.executable).with_name("golden"))


def _read_line(proc: subprocess.Popen, deadline_s: float = 60.0) -> str:
    """The process's next stdout line, waiting at most ``deadline_s``."""
    assert proc.stdout is not None
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))
        if ready:
            return proc.stdout.readline()
    raise AssertionError("the stand-in said nothing in time")


@pytest.fixture
def standin(tmp_path) -> Iterator[str]:
    """``golden llm-standin --port 0`` as a user starts it; its URL from its first line."""
    proc = subprocess.Popen([GOLDEN, "llm-standin", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    try:
        line = _read_line(proc)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        yield m.group(1)
    finally:
        proc.terminate()  # this test's own process, by its handle
        proc.wait(timeout=30)


@pytest.fixture
def pointed(standin, monkeypatch) -> str:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", standin)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "standin")
    monkeypatch.setenv("GOLDEN_BATCH_POLL_S", "0.05")
    return standin


def test_the_standin_answers_the_relevance_judge_and_other_schemas(pointed):
    client = llm.LLMClient()
    question = "What does VPN-ERR-0417 mean when I connect from home?"
    passage = ("Check your cable first. VPN-ERR-0417 means the device certificate has expired when you connect "
               "from home or abroad. Call the desk.")
    res = client.structured(item="i1", instructions="rubric", content=relevance_judge.content(question, passage),
                            output=relevance_judge.RelevanceVerdict, max_tokens=512)
    v = res.parsed
    assert res.outcome == "ok" and v is not None and v.grade is not None and v.grade >= 2
    assert relevance_judge.read(v, passage).quote_ok  # the quote is a sentence of the passage, verbatim
    assert v.supporting_quote is not None and v.supporting_quote.startswith("VPN-ERR-0417 means")
    off = client.structured(item="i2", instructions="rubric",
                            content=relevance_judge.content(question, "The canteen opens at noon."),
                            output=relevance_judge.RelevanceVerdict, max_tokens=512).parsed
    assert off is not None and off.grade == 0 and off.p_fail > 0.9 and off.supporting_quote is None

    other = client.structured(item="n1", instructions="draft nuggets", content="<passage>\nA. B.\n</passage>",
                              output=nuggets.NuggetProposal, max_tokens=512)
    assert other.outcome == "ok" and other.parsed is not None  # any schema comes back in its own shape

    batch = client.batch_structured(items=[("b1", relevance_judge.content(question, passage))], instructions="rubric",
                                    output=relevance_judge.RelevanceVerdict, max_tokens=512)
    assert isinstance(batch["b1"], llm.CallResult) and batch["b1"].parsed is not None


def test_the_help_says_how_to_point_the_studio_at_it():
    r = subprocess.run([GOLDEN, "llm-standin", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for words in ("ANTHROPIC_BASE_URL=http://127.0.0.1:PORT", "ANTHROPIC_API_KEY", "GOLDEN_LLM_MODEL",
                  "without a key", "--port"):
        assert words in text, words


def test_a_port_in_use_is_one_sentence_and_exit_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([GOLDEN, "llm-standin", "--port", str(port)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(f"golden: cannot listen on 127.0.0.1:{port}")
    assert "pick another --port" in r.stderr and r.stderr.count("\n") == 1


def test_a_newcomer_runs_the_cascade_on_the_demo_through_the_standin(pointed, tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDEN_LLM_MODEL", "demo-judge-1")  # the demo calibration's judge
    env = dict(os.environ)
    db = str(tmp_path / "demo.duckdb")

    def golden(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([GOLDEN, "--db", db, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=600)

    assert golden("demo").returncode == 0
    before = json.loads(golden("pool", "judge-status", "--json").stdout)
    left = before["plan"]["to_grade"]
    assert left > 0 and [j["status"] for j in before["jobs"]] == ["done"]
    r = golden("pool", "judge", "--calibration", "c1", "--mode", "direct", "--yes")
    assert r.returncode == 0, r.stderr
    assert f"Job j2: done. Sent {left}" in r.stdout
    after = json.loads(golden("pool", "judge-status", "--json").stdout)
    assert after["plan"]["to_grade"] == 0 and [j["status"] for j in after["jobs"]] == ["done", "done"]


def test_the_standin_never_runs_inside_a_serving_studio():
    """A studio serving the store in this folder runs store commands for the CLI; the stand-in
    needs no store and must start here, never inside the studio's process."""
    from annotator.cli import build_parser, channel

    assert not channel.needs_store(build_parser().parse_args(["llm-standin", "--port", "0"]))
