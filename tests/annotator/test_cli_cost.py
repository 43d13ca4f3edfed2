"""The CLI's LLM jobs show their estimate and ask before spending (issue 27 item 4): without a
terminal they refuse unless --yes; on a terminal y/N; afterwards the real usage."""

from __future__ import annotations

import io
import json

from annotator.cli import main
from tests.annotator.test_cli import run
from tests.annotator.test_leaks import assert_nothing_held_out_sent
from tests.llm_server import message

CACHED = {"input_tokens": 700, "output_tokens": 300, "cache_creation_input_tokens": 0,
          "cache_read_input_tokens": 1150}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_queries_draft_refused_without_yes_then_run_with_it(tmp_path, llm_server):
    assert run(tmp_path, "demo", "--small").returncode == 0
    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    llm_server.default = lambda body: (200, message(json.dumps({"questions": [
        {"question": "Berlin per diem for a full day?", "excerpts": [quote], "stratum": "tabular",
         "is_compound": False},
        {"question": "What is the rate and who approves it?", "excerpts": [quote], "stratum": "tabular",
         "is_compound": True}]}), usage=CACHED))
    refused = run(tmp_path, "queries", "draft", "expenses-per-diem", "--n", "2")
    assert refused.returncode == 2
    assert refused.stderr.strip().startswith("golden: Not run:") and "pass --yes" in refused.stderr
    assert "Question drafting: 1 call(s) to claude-sonnet-4-5" in refused.stdout
    assert "Caching applies" in refused.stdout and "This job runs synchronously" in refused.stdout
    assert llm_server.requests == []
    r = run(tmp_path, "queries", "draft", "expenses-per-diem", "--n", "2", "--accept", "--yes")
    assert r.returncode == 0, r.stderr
    assert "1. [tabular] Berlin per diem for a full day?" in r.stdout and "[compound" in r.stdout
    assert "Added 1 synthetic query" in r.stdout
    assert "1,150 cache-read tokens" in r.stdout and "Cache hit rate 100%" in r.stdout
    system = llm_server.requests[0]["body"]["system"][0]
    assert system["cache_control"] == {"type": "ephemeral"}
    j = run(tmp_path, "queries", "draft", "expenses-per-diem", "--json", "--yes")
    out = json.loads(j.stdout)
    assert out["usage"]["cache_read_tokens"] == 1150 and out["estimate"]["caches"] is True
    assert "Question drafting:" in j.stderr  # the estimate beside the data, not in it


def test_nuggets_draft_asks_on_a_terminal(tmp_path, llm_server, monkeypatch, capsys):
    assert run(tmp_path, "demo", "--small").returncode == 0
    llm_server.default = lambda body: (200, message(json.dumps({"insufficient_evidence": True, "nuggets": []}),
                                                    usage=CACHED))
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    assert main(["nuggets", "draft", "--query", "q001", "q009"]) == 2
    said = capsys.readouterr().out
    assert "Nugget drafting: 1 call(s)" in said and "Confirm: spend ≈ $" in said and "nothing was sent" in said
    assert llm_server.requests == []
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    assert main(["nuggets", "draft", "--query", "q001", "q009"]) == 0
    said = capsys.readouterr().out
    assert "q009: skipped" in said and "Used: 1 call(s)" in said and "1,150 cache-read tokens" in said
    assert len(llm_server.requests) == 1
    from annotator.process import context

    assert_nothing_held_out_sent(llm_server, context.get_store())
