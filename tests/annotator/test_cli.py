"""The installed `golden` command, run as a user runs it (a real subprocess, a real file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(sys.executable).parent / "golden"


def run(tmp_path: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    env.pop("GOLDEN_VERSIONS", None)
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, env=env, input=input,
                          cwd=tmp_path, timeout=120)


def test_console_script_is_installed():
    assert GOLDEN.exists(), "pip install -e . must install the `golden` console script"


def test_demo_freeze_verify_export_diff_flow(tmp_path):
    assert run(tmp_path, "init").returncode == 0
    r = run(tmp_path, "demo", "--small", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["queries"] == 40
    r = run(tmp_path, "demo", "--small")
    assert r.returncode == 2 and "only into an empty store" in r.stderr
    r = run(tmp_path, "freeze", "demo.v1", "--note", "first cut")
    assert r.returncode == 0 and "data_digest sha256:" in r.stdout
    assert run(tmp_path, "freeze", "demo.v1").returncode == 2
    listed = json.loads(run(tmp_path, "versions", "--json").stdout)
    assert [v["name"] for v in listed] == ["demo.v1"] and listed[0]["note"] == "first cut"
    r = run(tmp_path, "verify", "demo.v1")
    assert r.returncode == 0 and "OK" in r.stdout
    for fmt in ("trec", "beir", "jsonl"):
        r = run(tmp_path, "export", "demo.v1", "--format", fmt, "--out", f"out-{fmt}")
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "out-trec" / "qrels.txt").read_text().count("\n") == 39
    assert (tmp_path / "out-beir" / "qrels" / "test.tsv").exists()
    assert (tmp_path / "out-jsonl" / "golden.jsonl").exists()

    (tmp_path / "more.csv").write_text("id,text,stratum\nq900,Is parking free?,negative\n")
    r = run(tmp_path, "queries", "import", "more.csv")
    assert r.returncode == 0 and "1 added" in r.stdout
    assert run(tmp_path, "freeze", "demo.v2").returncode == 0
    d = json.loads(run(tmp_path, "diff", "demo.v1", "demo.v2", "--json").stdout)
    assert d["queries"]["added"] == ["q900"]
    assert "+ q900" in run(tmp_path, "diff", "demo.v1", "demo.v2").stdout

    # tamper: verify fails, names the file, exits non-zero
    pq = tmp_path / "versions" / "demo.v1" / "spans.parquet"
    data = bytearray(pq.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pq.write_bytes(bytes(data))
    r = run(tmp_path, "verify", "demo.v1")
    assert r.returncode == 1 and "spans.parquet" in r.stderr and "FAILED" in r.stderr


def test_errors_are_one_message_on_stderr_and_leave_the_store_alone(tmp_path):
    assert run(tmp_path, "init").returncode == 0
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.txt").write_text("fine")
    (d / "b.txt").write_text("fine too")
    (d / "c.txt").write_bytes(b"\xff\xfe bad")
    r = run(tmp_path, "corpus", "import", str(d))
    assert r.returncode == 2
    assert "c.txt" in r.stderr and "not valid UTF-8" in r.stderr and "Traceback" not in r.stderr
    strata = json.loads(run(tmp_path, "strata", "list", "--json").stdout)
    assert {s["name"] for s in strata} >= {"negative", "temporal"}
    r = run(tmp_path, "versions", "--json")
    assert json.loads(r.stdout) == []
    r = run(tmp_path, "corpus", "import", str(d / "a.txt"), "--json")
    assert json.loads(r.stdout)["added"] == ["a"]  # nothing of the failed import stayed behind
    r = run(tmp_path, "verify", "nope")  # verify gates: 2 = could not verify
    assert r.returncode == 2 and "No frozen version 'nope'" in r.stderr
    r = run(tmp_path, "export", "nope", "--format", "xml", "--out", "x")
    assert r.returncode == 2  # argparse usage error


@pytest.mark.duckdb_only("DuckDB's file lock: on PostgreSQL several processes share the store")
def test_second_process_is_told_the_store_is_in_use(tmp_path):
    assert run(tmp_path, "init").returncode == 0
    assert run(tmp_path, "demo", "--small").returncode == 0
    assert run(tmp_path, "freeze", "v1").returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, duckdb, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(600)",
         os.environ["GOLDEN_DB"]],
        stdout=subprocess.PIPE, text=True,
    )  # holds the lock until killed below (600 s only bounds a leak): the commands may take long on a busy machine
    try:
        assert holder.stdout.readline().strip() == "ready"
        r = run(tmp_path, "strata", "list")
        assert r.returncode == 2
        assert "is in use by another process" in r.stderr and "Traceback" not in r.stderr
        assert r.stderr.strip().count("\n") == 0
        # frozen versions are plain files: reading them does not need the live store
        assert run(tmp_path, "versions").returncode == 0
        r = run(tmp_path, "verify", "v1")
        assert r.returncode == 0 and "live corpus not compared" in r.stderr
        assert run(tmp_path, "export", "v1", "--format", "trec", "--out", "t").returncode == 0
    finally:
        holder.kill()
        holder.wait()


def test_mistyped_db_is_not_silently_created(tmp_path):
    r = run(tmp_path, "--db", str(tmp_path / "typo.duckdb"), "freeze", "v1")
    assert r.returncode == 2 and "No store at" in r.stderr
    assert not (tmp_path / "typo.duckdb").exists()


def test_users_add_and_list(tmp_path):
    r = run(tmp_path, "users", "add", "root", "--role", "admin", "--password-stdin", input="0123456789\n")
    assert r.returncode == 0, r.stderr
    r = run(tmp_path, "users", "add", "ann", "--role", "annotator", "--role", "reviewer", "--password-stdin", input="short\n")
    assert r.returncode == 2 and "at least" in r.stderr
    rows = json.loads(run(tmp_path, "users", "list", "--json").stdout)
    assert [(u["username"], u["roles"]) for u in rows] == [("root", ["admin"])]


@pytest.mark.parametrize("args", [["--help"], ["corpus", "import", "--help"], ["export", "--help"]])
def test_help(tmp_path, args):
    r = run(tmp_path, *args)
    assert r.returncode == 0 and "usage: golden" in r.stdout


def test_serve_starts_the_app_on_localhost(tmp_path):
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    proc = subprocess.Popen([str(GOLDEN), "serve", "--port", str(port)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        assert body == b"ok", proc.stdout.read() if proc.poll() is not None else "no answer"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_resolve_batch_from_a_folder(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    raw = "Intro.\r\n\r\nClaims are reim-\nbursed within 30 days of the \u201cexpense report\u201d.\n"
    (corpus / "claims.md").write_bytes(raw.encode("utf-8"))
    (corpus / "dup1.txt").write_text("Visitors collect badges at reception.")
    (corpus / "dup2.txt").write_text("Visitors collect badges at reception.")
    lines = [
        {"quote_id": "exact", "quote": 'reimbursed within 30 days of the "expense report"'},
        {"quote_id": "fuzzy", "quote": "claims are reimbursed within 30 dais of the expense report"},
        {"quote_id": "amb", "quote": "collect badges at reception"},
        {"quote_id": "hinted", "quote": "collect badges at reception", "doc_id": "dup2"},
        {"quote_id": "none", "quote": "Parking is free on Sundays"},
    ]
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = run(tmp_path, "resolve", "--corpus", str(corpus), "--quotes", "q.jsonl", "--out", "out.jsonl")
    assert r.returncode == 0, r.stderr
    assert "5 quotes: 2 exact, 1 fuzzy, 1 ambiguous, 1 unresolved" in r.stderr
    out = {o["quote_id"]: o for o in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert list(out) == [x["quote_id"] for x in lines]
    e = out["exact"]
    assert e["status"] == "exact" and e["doc_id"] == "claims"
    assert raw[e["start"]:e["end"]] == "reim-\nbursed within 30 days of the \u201cexpense report\u201d"
    assert out["fuzzy"]["status"] == "fuzzy" and out["fuzzy"]["score"] >= 90
    assert out["amb"]["status"] == "ambiguous" and len(out["amb"]["candidates"]) == 2 and out["amb"]["doc_id"] is None
    assert out["hinted"]["status"] == "exact" and out["hinted"]["doc_id"] == "dup2"
    assert out["none"]["status"] == "unresolved" and out["none"]["doc_id"] is None

    (tmp_path / "bad.jsonl").write_text('{"quote_id": "a", "quote": ""}\n{"quote": "x"}\n'
                                        '{"quote_id": "b", "quote": "x", "doc_id": "nope"}\n')
    r = run(tmp_path, "resolve", "--corpus", str(corpus), "--quotes", "bad.jsonl", "--out", "o2.jsonl")
    assert r.returncode == 2 and not (tmp_path / "o2.jsonl").exists()
    assert "line 1: field 'quote' is missing or empty" in r.stderr
    assert "line 2: field 'quote_id' is missing" in r.stderr and "line 3: doc_id 'nope'" in r.stderr


def test_survival_and_live_verify(tmp_path):
    assert run(tmp_path, "demo", "--small").returncode == 0
    assert run(tmp_path, "freeze", "v1").returncode == 0
    assert run(tmp_path, "verify").returncode == 0
    from annotator.demo import DEMO_DIR

    parsed = tmp_path / "parsed"
    parsed.mkdir()
    for f in [*(DEMO_DIR / "corpus").glob("*.md"), *(DEMO_DIR / "corpus").glob("*.txt")]:
        text = f.read_text()
        if f.stem == "expenses-per-diem":  # a parser that loses the table
            text = "\n".join(line for line in text.splitlines() if "|" not in line)
        (parsed / f.name).write_text(text)
    r = run(tmp_path, "survival", "--version", "v1", "--parsed", str(parsed), "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["strata"]["tabular"]["lost"] > 0 and rep["strata"]["lexical"]["exact"] == 1.0
    assert 0 < rep["overall"]["lost"] < 0.5
    assert rep["documents_missing_from_parse"] == ["health-insurance"]  # the .html one was not "parsed"

    # change a document under a quote: `golden verify` lists it, freeze refuses
    (tmp_path / "vpn-troubleshooting.md").write_text("Rewritten: nothing about certificates any more.\n")
    r = run(tmp_path, "corpus", "import", "vpn-troubleshooting.md", "--replace")
    assert r.returncode == 0 and "BROKEN" in r.stdout
    r = run(tmp_path, "verify")
    assert r.returncode == 1 and "query q001 evidence e1" in r.stderr
    r = run(tmp_path, "freeze", "v2")
    assert r.returncode == 2 and "query q001 evidence e1" in r.stderr


def test_rounds_and_agreement_from_the_cli(tmp_path):
    """A calibration round, grades from two people, `golden agreement --json` = scikit-learn."""
    from sklearn.metrics import cohen_kappa_score

    assert run(tmp_path, "demo", "--small").returncode == 0
    (tmp_path / "r.txt").write_text("".join(f"q00{q} Q0 {d} {i + 1} {9 - i} x\n" for q in (1, 2, 3)
                                            for i, d in enumerate(["pension", "sick-leave", "annual-leave"])))
    assert run(tmp_path, "runs", "import", "r.txt", "--system", "s").returncode == 0
    assert run(tmp_path, "pool", "build", "--depth", "3").returncode == 0
    r = run(tmp_path, "rounds", "start", "--annotators", "ann,bob", "--n", "6", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"round_id": "r1"}
    bad = run(tmp_path, "rounds", "start", "--annotators", "ann", "--n", "3")
    assert bad.returncode == 2 and "at least two annotators" in bad.stderr
    # the two annotators grade the round's items (through the store API the Judge page uses)
    from golden_store.live import judging
    from golden_store.db.store import Store

    a_grades = [3, 2, 0, 1, 3, 2]
    b_grades = [3, 1, 0, 1, 2, 2]
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        items = s.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments WHERE annotator = 'ann' "
                       "ORDER BY 1, 2, 3")
        for (q, d, st, en), ga, gb in zip(items, a_grades, b_grades):
            judging.record(s, "ann", q, d, st, en, op="grade", grade=ga)
            judging.record(s, "bob", q, d, st, en, op="grade", grade=gb)
    r = run(tmp_path, "agreement", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["n_units"] == 6 and out["annotators"] == ["ann", "bob"]
    assert out["kappa_binary"] == pytest.approx(
        cohen_kappa_score([g >= 2 for g in a_grades], [g >= 2 for g in b_grades]), abs=1e-4)
    assert out["kappa_linear"] == pytest.approx(
        cohen_kappa_score(a_grades, b_grades, weights="linear", labels=[0, 1, 2, 3]), abs=1e-4)
    assert out["per_round"][0]["round_id"] == "r1"
    text = run(tmp_path, "agreement")
    assert "ann x bob: n=6" in text.stdout
    listed = run(tmp_path, "rounds", "list")
    assert "r1  calibration ann,bob  6 items, 12/12 assignments done" in listed.stdout


def test_nuggets_draft_export_and_answers_from_the_cli(tmp_path, llm_server, monkeypatch):
    """`golden nuggets draft --batch` against the local server (held-out skipped, no request
    for it), `golden nuggets export`, `golden answers import` with a bad line refused."""
    monkeypatch.setenv("GOLDEN_BATCH_POLL_S", "0.05")
    assert run(tmp_path, "demo", "--small").returncode == 0
    quote = "VPN-ERR-0417 means the device certificate on your laptop has expired"
    from tests.llm_server import message

    llm_server.batch_result = lambda cid, params: {"type": "succeeded", "message": message(json.dumps(
        {"insufficient_evidence": False, "nuggets": [{"text": "Expired device certificate", "importance": "vital",
                                                      "quote": quote}]}))}
    # the estimate first; without a terminal and without --yes nothing is sent
    refused = run(tmp_path, "nuggets", "draft", "--query", "q001", "q009", "--batch")
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert "Nugget drafting: 1 call(s)" in refused.stdout and "Batch API" in refused.stdout
    assert llm_server.requests == []
    r = run(tmp_path, "nuggets", "draft", "--query", "q001", "q009", "--batch", "--json", "--yes")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "Nugget drafting: 1 call(s)" in r.stderr and out["estimate"]["caches"] is True  # Sonnet: ≥ 1024
    assert out["usage"]["calls"] == 1 and out["usage"]["cache_write_tokens"] == 900  # the server's figures
    assert out["outcomes"] == {"ok": 1, "skipped": 1} and out["nuggets_added"] == 1
    assert "held out" in next(p["message"] for p in out["per_question"] if p["query_id"] == "q009")
    created = [q for q in llm_server.requests if q["path"] == "/v1/messages/batches"]
    assert len(created) == 1 and len(created[0]["body"]["requests"]) == 1  # q009 never sent
    assert "test-key-never-logged" not in r.stdout + r.stderr
    # unapproved nuggets are not exported
    assert run(tmp_path, "nuggets", "export", "--out", "n.jsonl").returncode == 0
    assert (tmp_path / "n.jsonl").read_text() == ""
    (tmp_path / "a.jsonl").write_text('{"query_id": "q001", "answer": "ok"}\n{"query_id": "zzz", "answer": "x"}\n')
    bad = run(tmp_path, "answers", "import", "a.jsonl", "--system", "rag")
    assert bad.returncode == 2 and "a.jsonl line 2: unknown query_id 'zzz'" in bad.stderr
    (tmp_path / "a.jsonl").write_text('{"query_id": "q001", "answer": "ok"}\n')
    assert run(tmp_path, "answers", "import", "a.jsonl", "--system", "rag").returncode == 0
    assert "No fully assigned answer yet" in run(tmp_path, "nuggets", "scores").stdout


def test_answers_score_reproduces_start_here_step_8(tmp_path):
    """Start here step 8 through the CLI: on 30 unanswerable questions the bot declines 9 times
    and invents 21 (abstention recall 9/30 = 0.30); on 20 answerable ones it declines 4 and
    answers 16 (precision 9/13, over-refusal 4/20). A refusal is counted apart; a bad outcome
    is refused with file, line, field and allowed values, and the store is unchanged."""
    assert run(tmp_path, "init").returncode == 0
    (tmp_path / "q.csv").write_text("id,text,stratum\n"
                                    + "".join(f"u{i:02d},What is the CEO salary {i}?,negative\n" for i in range(30))
                                    + "".join(f"a{i:02d},How many vacation days {i}?,paraphrase\n" for i in range(20))
                                    + "r01,Spare question?,paraphrase\n")
    assert run(tmp_path, "queries", "import", "q.csv").returncode == 0
    lines = ([{"query_id": f"u{i:02d}", "answer": "The policies do not say." if i < 9 else "It is 1.2 M.",
               "outcome": "abstained" if i < 9 else "answered"} for i in range(30)]
             + [{"query_id": f"a{i:02d}", "answer": "I cannot tell." if i < 4 else "Five days.",
                 "outcome": "abstained" if i < 4 else "answered"} for i in range(20)])
    (tmp_path / "bot.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run(tmp_path, "answers", "import", "bot.jsonl", "--system", "hr-bot")
    assert r.returncode == 0, r.stderr

    def score(*extra: str) -> dict:
        out = run(tmp_path, "answers", "score", "--json", "--n-boot", "2000", *extra)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    got = score()
    assert (got["n_boot"], got["seed"]) == (2000, 0)
    bot = got["per_system"]["hr-bot"]
    rec = bot["rates"]["abstention_recall"]
    assert rec["value"] == pytest.approx(0.30) and (rec["numerator"], rec["denominator"]) == (9, 30)
    assert rec["ci"][0] < 0.30 < rec["ci"][1]
    assert bot["rates"]["abstention_precision"]["value"] == pytest.approx(9 / 13)
    assert bot["rates"]["over_refusal_rate"]["value"] == pytest.approx(4 / 20)
    assert (bot["n_answerable"], bot["n_unanswerable"], bot["fabricated"], bot["refused"]) == (20, 30, 21, 0)
    human = run(tmp_path, "answers", "score", "--n-boot", "500").stdout
    assert "abstention recall     0.30 [" in human and "9/30  unanswerable questions it declined" in human
    assert "21 fabricated" in human and "Left out: refused answers" in human and "n_boot 500, seed 0" in human

    # a refusal (a second system) is its own category: not a decline, not a fabrication
    (tmp_path / "safe.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines)
                                         + json.dumps({"query_id": "r01", "answer": "(refused)", "outcome": "refused"})
                                         + "\n")
    assert run(tmp_path, "answers", "import", "safe.jsonl", "--system", "safe-bot").returncode == 0
    assert run(tmp_path, "answers", "mark", "u20", "--system", "safe-bot", "--outcome", "refused").returncode == 0
    safe = score("--system", "safe-bot")["per_system"]
    assert list(safe) == ["safe-bot"]
    s = safe["safe-bot"]
    assert (s["refused"], s["refused_answerable"], s["refused_unanswerable"]) == (2, 1, 1)
    assert s["rates"]["abstention_recall"]["value"] == pytest.approx(9 / 29)  # u20 no longer a fabrication
    assert s["rates"]["over_refusal_rate"]["value"] == pytest.approx(4 / 20)  # r01 not an over-refusal
    assert s["rates"]["refusal_rate"]["value"] == pytest.approx(2 / 51)

    # a bad outcome: one message naming file, line, field and the allowed values; nothing changed
    before = score()
    (tmp_path / "bad.jsonl").write_text(json.dumps({"query_id": "u00", "answer": "x", "outcome": "answered"}) + "\n"
                                        + json.dumps({"query_id": "u01", "answer": "y", "outcome": "idk"}) + "\n")
    bad = run(tmp_path, "answers", "import", "bad.jsonl", "--system", "hr-bot", "--replace")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert ("bad.jsonl line 2: field 'outcome' must be one of answered, abstained, refused (or left out when "
            "not known), not 'idk'") in bad.stderr
    assert score() == before
    # an unknown system is an error, not an empty report
    nope = run(tmp_path, "answers", "score", "--system", "nope")
    assert nope.returncode == 2 and "nope" in nope.stderr


def test_golden_version_prints_the_packages_version(capsys):
    """Issue 38 item 4: `golden --version`, as every CLI has; the number is pyproject's (the
    one source of the version), read here with tomllib, not through the studio's code."""
    import tomllib

    from annotator.cli import main

    want = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"golden-studio {want}"
