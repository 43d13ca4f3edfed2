"""The serving studio's door for ``golden`` commands from the same machine (issue 38, item 1).

While ``golden serve`` or ``golden api`` holds a DuckDB store, no other process can open the
file. So the serving process also listens on a Unix socket only its own OS user can open, and
leaves a note beside the store (``STORE.serving``: the socket's path, its PID, the API's
address). A ``golden`` command run against that store finds the note and sends its command line
through the socket (:mod:`annotator.cli.through_studio`); the command runs here, on the open
store, as it would have run in the caller's process, and its output and exit status go back.

Why a Unix socket: its file permissions are the credential (0600, in a 0700 folder of this
user's), the same boundary as the store file itself, so no secret is written anywhere and
nothing listens on the network. The note holds nothing secret either.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, Field

from annotator.process import context
from annotator.cli import channel
from golden_store.core.errors import GoldenError
from http_api.server_thread import start_and_wait


class CommandLine(BaseModel):
    argv: list[str] = Field(description="The command's arguments after `golden`, paths made absolute")
    stdin: str = Field(default="", description="What the command may read from its standard input")
    cwd: str | None = Field(default=None, description="The folder the command was run in (its git checkout)")


class CommandResult(BaseModel):
    exit_code: int
    stdout: str
    stderr: str


def note_path(store_file: Path) -> Path:
    """Where a serving process leaves its note: beside the store, ``STORE.serving``."""
    return store_file.with_name(store_file.name + ".serving")


def _socket_folder() -> Path:
    """A folder only this user can enter (``$XDG_RUNTIME_DIR`` when set): socket paths must be
    short (about 100 bytes), so not beside a store that may sit deep in a tree. A folder that is
    not ours or that others can enter is refused rather than used."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"golden-studio-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise GoldenError(f"{folder} is not a private folder of this user's (owner or mode is wrong), so the "
                          f"studio will not put its command socket there; remove it or set XDG_RUNTIME_DIR.")
    return folder


def socket_path(store_file: Path) -> Path:
    digest = hashlib.sha256(str(store_file).encode("utf-8")).hexdigest()[:20]
    return _socket_folder() / f"{digest}.sock"


def create_app(store_location: str) -> FastAPI:
    """The socket's app: one route, the command line in, its output and status out."""
    app = FastAPI(title="golden-studio local command channel", openapi_url=None, docs_url=None, redoc_url=None)

    @app.post("/commands", response_model=CommandResult)
    def run_command(line: CommandLine) -> CommandResult:
        out = channel.run_here(line.argv, store=context.get_store(store_location), stdin=line.stdin, cwd=line.cwd)
        return CommandResult(exit_code=out.exit_code, stdout=out.stdout, stderr=out.stderr)

    return app


class LocalChannel:
    """The socket server in a daemon thread, and the note beside the store while it runs."""

    def __init__(self, store_file: Path, api_url: str | None) -> None:
        self.store_file = store_file.resolve()
        self.socket = socket_path(self.store_file)
        self.note = note_path(self.store_file)
        self.api_url = api_url
        if self.socket.exists():  # a socket left by a process that died: ours now (the store lock says so)
            self.socket.unlink()
        config = uvicorn.Config(create_app(str(self.store_file)), uds=str(self.socket), log_level="warning",
                                access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="golden-command-channel", daemon=True)

    def start(self, timeout_s: float = 30.0) -> LocalChannel:
        start_and_wait(self.server, self.thread, f"the command channel could not listen on {self.socket}", timeout_s)
        os.chmod(self.socket, 0o600)
        note = {"socket": str(self.socket), "pid": os.getpid(), "api": self.api_url, "store": str(self.store_file)}
        tmp = self.note.with_name(self.note.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(note), "utf-8")
        os.replace(tmp, self.note)  # a reader sees the old note or the whole new one
        return self

    def stop(self) -> None:
        """Stop listening and take the note away (only if it is still this process's)."""
        try:
            if json.loads(self.note.read_text("utf-8")).get("pid") == os.getpid():
                self.note.unlink()
        except (OSError, ValueError):
            pass
        self.server.should_exit = True
        self.thread.join(timeout=10)
        try:
            self.socket.unlink()
        except OSError:
            pass


def start_for(store_location: str | None, api_url: str | None) -> LocalChannel | None:
    """Open the channel for a DuckDB store (a PostgreSQL store needs none: any process may
    connect to it). A channel that cannot start is said on stderr and the studio serves on:
    commands then answer that the store is in use, as before."""
    import sys

    from golden_store.core.paths import default_db_path, is_postgres_url

    location = store_location or str(default_db_path())
    if is_postgres_url(location):
        return None
    try:
        return LocalChannel(Path(location), api_url).start()
    except (GoldenError, RuntimeError, OSError) as exc:
        print(f"golden: warning: commands from this machine cannot reach this studio ({exc}); they will find "
              f"the store in use.", file=sys.stderr)
        return None
