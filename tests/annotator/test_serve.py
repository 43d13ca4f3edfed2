"""Issue 18 items 10 and 12: a real `golden serve` on a free port. With no account it listens
on loopback only whatever --host says; a SIGTERM to the serve process stops the server
itself (no orphan left serving and holding the store lock)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc")

GOLDEN = Path(sys.executable).parent / "golden"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> set[str]:
    """Local addresses (hex, as /proc shows them) with a socket listening on ``port``."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.rsplit(":", 1)
            if state == "0A" and int(p, 16) == port:  # 0A: LISTEN
                out.add(addr)
    return out


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - found)
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


@contextmanager
def _serve(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen, int, set[int]]]:
    port = _free_port()
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    proc = subprocess.Popen([str(GOLDEN), "serve", "--port", str(port), *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    kids: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        assert proc.poll() is None, proc.stdout.read()
        kids = _descendants(proc.pid)
        yield proc, port, kids
    finally:
        for pid in kids | _descendants(proc.pid):  # never leave an orphan behind, whatever failed
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.wait(timeout=30)


def test_serve_with_no_account_listens_on_loopback_only(tmp_path):
    with _serve(tmp_path, "--host", "0.0.0.0") as (_, port, _kids):
        assert _listening(port) == {"0100007F"}  # 127.0.0.1 only, not 0.0.0.0


def test_sigterm_to_serve_stops_the_server(tmp_path):
    with _serve(tmp_path) as (proc, port, kids):
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 60  # generous bounds for a busy machine: the loop ends as soon as all is down
        while time.monotonic() < deadline and (_listening(port) or any(_alive(k) for k in kids)):
            time.sleep(0.2)
        assert not [k for k in kids if _alive(k)], "a child of golden serve outlived it"
        assert not _listening(port), "the port is still served after golden serve was stopped"


def test_serve_gives_the_app_the_postgresql_store_it_was_given(tmp_path, pg_url, monkeypatch):
    """`golden serve` on a team store (GOLDEN_DB a PostgreSQL URL): the URL reaches the app as
    it is. Before, it was resolved as a file path, so the app served a new, empty DuckDB store
    inside a ``postgresql:`` folder, in single-user admin mode, and the accounts of the team
    store were never seen (--host was forced to loopback)."""
    from annotator.people import identity
    from annotator.cli import _serve_location
    from golden_store.db.store import Store

    with Store.open(pg_url) as s:
        identity.create_user(s, None, "admin", ["admin"], password="admin-password-1")
    assert _serve_location(pg_url) == pg_url
    assert _serve_location(str(Path(pg_url))) == pg_url  # a URL that went through Path() once
    assert _serve_location("rel/golden.duckdb") == str((Path.cwd() / "rel/golden.duckdb").resolve())
    monkeypatch.setenv("GOLDEN_DB", pg_url)
    with _serve(tmp_path, "--host", "0.0.0.0") as (_, port, _kids):
        assert _listening(port) == {"00000000"}  # the team store's accounts were found: all addresses
    assert not (tmp_path / "postgresql:").exists()
