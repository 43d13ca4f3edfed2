"""A ``golden`` command on a DuckDB store that a running studio holds: sent to that studio
(issue 38, item 1).

DuckDB lets one process open a store file. While ``golden serve`` runs, the serving process
leaves a note beside the store (``STORE.serving``, see :mod:`http_api.local_channel`) naming a
Unix socket only this OS user can open. A command that needs the store finds the note, sends its
command line there, and prints what the command printed in the studio, exiting with its
status. Nobody has to stop the app their colleagues are labeling in to record an evaluation.

A note whose process is gone (killed, machine rebooted) is ignored: the command then opens the
store itself, as when nothing serves it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from annotator.cli import channel
from golden_store.core.errors import GoldenError


@dataclass(frozen=True)
class Serving:
    """A running studio's note: where its command socket is, its PID, its API's address."""

    socket: Path
    pid: int
    api: str | None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's (its socket will refuse us anyway)
        return True
    return True


def find(store_location: str | None) -> Serving | None:
    """The studio serving the DuckDB store at ``store_location``, or None when none does
    (a PostgreSQL store needs none: every process may connect to it)."""
    from golden_store.core.paths import default_db_path, is_postgres_url

    location = store_location or str(default_db_path())
    if is_postgres_url(location):
        return None
    store_file = Path(location).resolve()
    note = store_file.with_name(store_file.name + ".serving")
    try:
        data = json.loads(note.read_text("utf-8"))
        serving = Serving(Path(data["socket"]), int(data["pid"]), data.get("api"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if serving.pid == os.getpid() or not _alive(serving.pid) or not serving.socket.exists():
        return None
    return serving


def _absolute(argv: list[str], paths: list[str]) -> list[str]:
    """``argv`` with each of ``paths`` (as typed: relative to this shell's folder, or ``~``)
    made absolute, because the studio's process runs in a folder of its own."""
    return channel.substitute_paths(argv, {p: str(Path(p).expanduser().resolve()) for p in paths if p and p != "-"})


def _stdin_for(args: argparse.Namespace) -> str:
    """What the command would read from stdin here, read here and sent along (a password given
    with --password-stdin; a confirmation is never asked in the studio: pass --yes)."""
    if getattr(args, "password_stdin", False):
        return sys.stdin.readline()
    return ""


def run(argv: list[str], args: argparse.Namespace, serving: Serving) -> int:
    """Send the command line to the serving studio, print its output, return its exit status."""
    import httpx

    inputs, outputs = channel.file_arguments(args)
    body = {"argv": _absolute(argv, inputs + outputs), "stdin": _stdin_for(args), "cwd": os.getcwd()}
    transport = httpx.HTTPTransport(uds=str(serving.socket))
    try:
        with httpx.Client(transport=transport, base_url="http://golden-studio", timeout=None) as client:
            r = client.post("/commands", json=body)
    except httpx.TransportError as exc:
        raise GoldenError(f"The studio serving this store (PID {serving.pid}) did not answer on {serving.socket} "
                          f"({exc}); if it is stuck, stop it and run the command again.") from None
    if r.status_code != 200:
        raise GoldenError(f"The studio serving this store (PID {serving.pid}) could not run the command "
                          f"(HTTP {r.status_code}): {r.text[:300]}")
    result = r.json()
    sys.stdout.write(result["stdout"])
    sys.stderr.write(result["stderr"])
    return int(result["exit_code"])
