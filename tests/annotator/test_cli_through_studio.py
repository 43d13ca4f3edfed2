"""Every command works while `golden serve` runs (issue 38, item 1).

A real `golden serve` process holds the store. On DuckDB it owns the file, so each command
below, run as a person would in a second terminal, goes through the studio's command channel;
the same commands run on an unserved twin of the store (a byte copy made before the studio
started) must print the same thing and exit the same way. On PostgreSQL nothing owns the store:
the same commands simply run beside the studio. Commands that need only version folders (diff,
export, verify NAME, score without --record) never touch the store and run while it is held.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from annotator import cli
from annotator.process import context
from tests.annotator.test_serve import GOLDEN, _free_port
from tests.conftest import ENGINE

DEMO_RUNS = Path(cli.__file__).resolve().parents[1] / "demo" / "data" / "runs"

pytestmark = pytest.mark.slow


def _get(url: str) -> bytes | None:
    try:
        return urllib.request.urlopen(url, timeout=2).read()
    except OSError:
        return None


def _serve(db: str, cwd: Path) -> tuple[subprocess.Popen, int]:
    """`golden serve` on ``db``, returned once its API answers and, on DuckDB, its note is
    beside the store."""
    port, api_port = _free_port(), _free_port()
    proc = subprocess.Popen([str(GOLDEN), "--db", db, "serve", "--port", str(port), "--api-port", str(api_port)],
                            env=dict(os.environ), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    deadline = time.monotonic() + 90
    note = Path(db + ".serving") if ENGINE == "duckdb" else None
    while time.monotonic() < deadline and proc.poll() is None:
        if _get(f"http://127.0.0.1:{api_port}/api/v1/health") and (note is None or note.exists()):
            return proc, api_port
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"golden serve did not start: {proc.stdout.read() if proc.stdout else ''}")


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def _golden(capsys, db: str, *argv: str) -> tuple[int, str, str]:
    """One command as `golden --db DB ...` runs it, in this process (so a second terminal's
    process, not the studio's)."""
    code = cli.main(["--db", db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _same(text: str, db: str, twin: str) -> str:
    """Output with the store's own folder named alike for the served store and its twin."""
    text = text.replace(str(Path(twin).parent), "<DIR>").replace(str(Path(db).parent), "<DIR>")
    text = re.sub(r"(\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", "<TIME>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<SHA>", text)  # a version's content digest covers its freeze time
    return re.sub(r" +", " ", text)  # a table's columns are as wide as their widest time


# Each command group, in the order a person's afternoon might run them. Output that names a
# clock or a random value is compared after _same(); tokens print a fresh secret, so only their
# exit status and shape are compared.
COMMANDS: list[tuple[str, ...]] = [
    ("strata", "add", "s_new", "--description", "added while the studio runs"),
    ("strata", "list"),
    ("queries", "import", "{queries}"),
    ("runs", "import", "{run}", "--system", "bm25-again"),
    ("runs", "list"),
    ("runs", "retire", "bm25-again", "--reason", "a duplicate of bm25"),
    ("runs", "restore", "bm25-again"),
    ("runs", "retire", "no-such-system", "--reason", "typo"),
    ("pool", "build", "--depth", "5"),
    ("pool", "status"),
    ("pool", "judge-status"),
    ("judgments", "list"),
    ("rounds", "list"),
    ("agreement",),
    ("nuggets", "scores"),
    ("transcripts", "summary"),
    ("users", "add", "admin1", "--role", "admin", "--no-password"),
    ("users", "add", "lead1", "--role", "lead", "--no-password"),
    ("users", "list"),
    ("webhooks", "list"),
    ("tokens", "list"),
    ("freeze", "v-live", "--note", "frozen while the studio runs"),
    ("--json", "verify"),
    ("score", "--version", "v-live", "--run", "{run}", "-m", "R@10", "--record", "e-bm25", "--system", "bm25"),
    ("score", "--version", "v-live", "--run", "{run2}", "-m", "R@10", "--record", "e-hybrid", "--system", "hybrid"),
    ("compare", "e-bm25", "e-hybrid", "-m", "R@10", "--min-n", "2"),
    ("compare", "e-bm25", "e-hybrid", "-m", "bogus"),
    ("evaluations",),
    ("results", "export", "--out", "{out}"),
    ("demo",),
]


def _meant_to_fail(cmd: tuple[str, ...]) -> bool:
    """The commands above that a person gets wrong on purpose: a typo, a demo on a full store."""
    return cmd[:3] == ("runs", "retire", "no-such-system") or "bogus" in cmd or cmd == ("demo",)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    q = tmp_path / "more_queries.jsonl"
    q.write_text(json.dumps({"id": "q-live-1", "text": "added while the studio runs: how long is the notice period?",
                             "stratum": "s_new", "answerable": True}) + "\n", "utf-8")
    return {"queries": str(q), "run": str(DEMO_RUNS / "bm25.trec"), "run2": str(DEMO_RUNS / "hybrid.trec")}


def _argv(cmd: tuple[str, ...], files: dict[str, str], out: str) -> list[str]:
    return [a.format(**files, out=out) for a in cmd]


@pytest.mark.skipif(ENGINE != "duckdb", reason="the DuckDB pass: a served file is owned by the studio")
def test_every_command_group_runs_through_the_studio_holding_the_store(demo_store, golden_db, tmp_path, files,
                                                                       capsys, monkeypatch):
    demo_store.close()
    context.close_all()
    twin = str(tmp_path / "twin" / "golden.duckdb")
    Path(twin).parent.mkdir()
    shutil.copyfile(golden_db, twin)
    proc, _ = _serve(golden_db, tmp_path)
    try:
        for cmd in COMMANDS:  # before the channel, each of these said the store was in use
            served = _golden(capsys, golden_db, *_argv(cmd, files, str(Path(golden_db).parent / "out.parquet")))
            alone = _golden(capsys, twin, *_argv(cmd, files, str(Path(twin).parent / "out.parquet")))
            assert "in use by another process" not in served[2], (cmd, served)
            assert served[0] == alone[0], (cmd, served, alone)
            assert (served[0] != 0) == _meant_to_fail(cmd), (cmd, served)
            assert _same(served[1], golden_db, twin) == _same(alone[1], golden_db, twin), cmd
            assert _same(served[2], golden_db, twin) == _same(alone[2], golden_db, twin), cmd
        # the output file came to the path the person named, with what the twin wrote
        assert (Path(golden_db).parent / "out.parquet").read_bytes()[:4] == b"PAR1"
        # a password read from the caller's stdin reaches the studio (and is never on a command line)
        monkeypatch.setattr(sys, "stdin", io.StringIO("a-long-password-123\n"))
        assert _golden(capsys, golden_db, "users", "add", "pw1", "--role", "annotator", "--password-stdin")[0] == 0
        # a token's secret is new each time: same shape and status
        made = _golden(capsys, golden_db, "tokens", "create", "ci", "--role", "engineer")
        assert made[0] == 0 and re.search(r"gst_[\w-]{20,}", made[1])
        # commands on version folders need no lock at all
        versions = tmp_path / "versions"
        assert _golden(capsys, golden_db, "verify", "v-live")[0] == 0
        assert _golden(capsys, golden_db, "diff", "v-live", "v-live")[0] == 0
        assert _golden(capsys, golden_db, "export", "v-live", "--format", "trec",
                       "--out", str(tmp_path / "export"))[0] == 0
        assert _golden(capsys, golden_db, "score", "--version", "v-live", "--run", files["run"], "-m", "R@10")[0] == 0
        assert (versions / "v-live" / "manifest.json").exists()
    finally:
        _stop(proc)
    assert not Path(golden_db + ".serving").exists(), "the note outlived the studio"
    code, out, _ = _golden(capsys, golden_db, "users", "list")
    assert code == 0 and "lead1" in out
    from annotator.people import identity
    from golden_store.db.store import Store

    with contextlib.closing(Store.open(golden_db)) as s:
        assert identity.authenticate(s, "pw1", "a-long-password-123") is not None


@pytest.mark.skipif(ENGINE != "duckdb", reason="the DuckDB pass")
def test_a_note_left_by_a_studio_that_died_is_ignored(store, golden_db, capsys):
    """A studio killed outright leaves its note; the next command opens the store itself."""
    store.close()
    context.close_all()
    dead = subprocess.Popen(["true"])
    dead.wait()
    Path(golden_db + ".serving").write_text(json.dumps({"socket": "/nonexistent.sock", "pid": dead.pid}), "utf-8")
    code, out, err = _golden(capsys, golden_db, "strata", "list")
    assert code == 0 and not err


@pytest.mark.skipif(ENGINE != "postgresql", reason="the PostgreSQL pass: nothing owns the store")
def test_every_command_group_runs_beside_a_studio_on_postgresql(demo_store, golden_db, tmp_path, files, capsys):
    proc, _ = _serve(golden_db, tmp_path)
    try:
        for cmd in COMMANDS:
            code, out, err = _golden(capsys, golden_db, *_argv(cmd, files, str(tmp_path / "out.parquet")))
            assert (code != 0) == _meant_to_fail(cmd), (cmd, code, out, err)
    finally:
        _stop(proc)
