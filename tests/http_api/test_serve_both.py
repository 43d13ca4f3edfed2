"""`golden serve` serves the app and the API from ONE process (a DuckDB file has one owner),
both on loopback when the store has no account; SIGTERM stops both. A real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.annotator.test_serve import GOLDEN, _descendants, _free_port, _listening

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc")


def _get(url: str) -> bytes | None:
    try:
        return urllib.request.urlopen(url, timeout=2).read()
    except OSError:
        return None


def test_golden_serve_answers_the_app_and_the_api_from_one_process(tmp_path):
    port, api_port = _free_port(), _free_port()
    proc = subprocess.Popen([str(GOLDEN), "serve", "--port", str(port), "--api-port", str(api_port),
                             "--host", "0.0.0.0"], env=dict(os.environ), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        app = api = None
        while time.monotonic() < deadline and proc.poll() is None and not (app and api):
            app = _get(f"http://127.0.0.1:{port}/_stcore/health")
            api = _get(f"http://127.0.0.1:{api_port}/api/v1/health")
            time.sleep(0.3)
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert app == b"ok"
        health = json.loads(api or b"{}")
        engine = "postgresql" if os.environ["GOLDEN_DB"].startswith("postgres") else "duckdb"
        assert health["status"] == "ok" and health["engine"] == engine
        # one process serves both (exec'd in place of golden serve: the same pid), loopback only
        assert not _descendants(proc.pid), "golden serve started a second process"
        assert _listening(port) == {"0100007F"} and _listening(api_port) == {"0100007F"}
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60  # generous bounds for a busy machine: the loop ends as soon as all is down
        while time.monotonic() < deadline and (_listening(port) or _listening(api_port)):
            time.sleep(0.2)
        assert not _listening(port) and not _listening(api_port)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_golden_api_serves_the_api_alone_until_stopped(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([str(GOLDEN), "api", "--port", str(port)], env=dict(os.environ), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        api = None
        while time.monotonic() < deadline and proc.poll() is None and not api:
            api = _get(f"http://127.0.0.1:{port}/api/v1/health")
            time.sleep(0.2)
        assert api is not None, proc.stdout.read() if proc.stdout and proc.poll() is not None else "no answer"
        assert json.loads(api)["status"] == "ok"
        assert _get(f"http://127.0.0.1:{port}/api/v1/openapi.json") is not None
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM  # uvicorn re-raises the signal once shut down
        assert not _listening(port)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_golden_api_stopped_by_sigterm_writes_the_audit_of_the_requests_it_answered(tmp_path):
    """Probe X1 (found re-running issue 37's probes): uvicorn re-raised SIGTERM under the
    default handler once shut down, which ended the process before `golden api` wrote the token
    audit's last batch (about a second of answered requests): three requests, SIGTERM at once,
    no audit row. Now every answered request is in the audit after the stop."""
    from annotator.people import api_tokens
    from annotator.people.identity import LOCAL_USER
    from golden_store.db.store import Store

    with Store.open(os.environ["GOLDEN_DB"]) as s:
        _, secret = api_tokens.create_token(s, LOCAL_USER, "x1", ["engineer"])
    port = _free_port()
    proc = subprocess.Popen([str(GOLDEN), "api", "--port", str(port)], env=dict(os.environ), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not _get(f"http://127.0.0.1:{port}/api/v1/health"):
            time.sleep(0.2)
        for _ in range(3):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/me", headers={"Authorization": f"Bearer {secret}"})
            assert json.loads(urllib.request.urlopen(req, timeout=30).read())["token"] == "x1"
        os.kill(proc.pid, signal.SIGTERM)  # at once: well inside the audit's one-second batch
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait(timeout=30)
    with Store.open(os.environ["GOLDEN_DB"]) as s:
        (n,) = s.read_one("SELECT count(*) FROM api_token_uses u JOIN api_tokens t ON t.token_id = u.token_id "
                          "WHERE t.name = 'x1' AND u.path LIKE '%/me'")
    assert n == 3


def _serve_argv(monkeypatch, *args: str) -> list[str]:
    """The command line `golden serve` would exec (the exec itself captured)."""
    from annotator import cli

    seen: list[list[str]] = []
    monkeypatch.setattr(os, "execve", lambda exe, argv, environ: seen.append(list(argv)))
    monkeypatch.setattr(cli.subprocess, "call", lambda argv, env=None: 0)  # what follows exec on non-POSIX
    assert cli.main(["--db", os.environ["GOLDEN_DB"], "serve", *args]) == 0
    return seen[0]


def test_serve_puts_the_api_beside_the_app_unless_told_not_to(monkeypatch):
    from annotator.cli import server_flags

    argv = _serve_argv(monkeypatch, "--port", "8700")
    assert argv[1:3] == ["-m", "http_api.serve_with_app"]
    ours, streamlit = argv[3:argv.index("--")], argv[argv.index("--") + 1:]
    assert ours == ["--api-host", "127.0.0.1", "--api-port", "8701", "--api-port-is-default"]
    assert streamlit[:2] == ["run", streamlit[1]] and streamlit[1].endswith("streamlit_app.py")
    assert streamlit[streamlit.index("--server.port") + 1] == "8700" and streamlit[-len(server_flags()):] == server_flags()
    argv = _serve_argv(monkeypatch, "--port", "8700", "--api-port", "9000")
    assert argv[argv.index("--api-port") + 1] == "9000" and "--api-port-is-default" not in argv
    monkeypatch.setenv("GOLDEN_API_PORT", "9100")
    assert _serve_argv(monkeypatch)[5:7] == ["--api-port", "9100"]
    argv = _serve_argv(monkeypatch, "--no-api")  # no API, but the command channel still opens in that process
    assert argv[1:4] == ["-m", "http_api.serve_with_app", "--no-api"] and "--api-port" not in argv


def test_an_api_port_asked_for_and_taken_is_an_error_naming_it(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        api_port = taken.getsockname()[1]
        out = subprocess.run([str(GOLDEN), "serve", "--port", str(_free_port()), "--api-port", str(api_port)],
                             env=dict(os.environ), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert f"the API could not listen on 127.0.0.1:{api_port}" in out.stderr and "--no-api" in out.stderr
