"""Running the API: uvicorn in this thread (``golden api``) or in a daemon thread beside the
Streamlit app (``golden serve``: one process owns the DuckDB file). Background work
(webhook delivery, :mod:`annotator.integration.background`) starts with the server and stops with it."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

import uvicorn

from annotator.integration import background
from annotator.people import api_tokens
from annotator.process import context
from golden_store.db.store import Store
from http_api.app import create_app
from http_api.server_thread import start_and_wait

DEFAULT_PORT = 8600


def config(store_location: str | None, host: str, port: int, store: Store | None = None) -> uvicorn.Config:
    # no proxy headers trusted by default: the audit's client address is the peer's
    return uvicorn.Config(create_app(store_location, store=store), host=host, port=port, log_level="warning",
                          access_log=False, lifespan="off")


class ThreadedServer:
    """uvicorn in a daemon thread; ``port`` is the bound one (useful with port 0)."""

    def __init__(self, store_location: str | None, host: str = "127.0.0.1", port: int = 0, *,
                 store: Store | None = None) -> None:
        self.server = uvicorn.Server(config(store_location, host, port, store))
        self.store = store
        self.thread = threading.Thread(target=self.server.run, name="golden-api", daemon=True)

    def start(self, timeout_s: float = 30.0) -> ThreadedServer:
        start_and_wait(self.server, self.thread, "the API server did not start (is the port in use?)", timeout_s)
        return self

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        """Stop serving and write the token audit buffered for the given store (waiting for a
        flush the audit thread has begun): the caller closes that store next, and closing a
        DuckDB connection a flush is still writing through fails with "connection is busy"."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if self.store is not None:
            api_tokens.flush_audit(self.store)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def run_api(store_location: str | None, host: str, port: int) -> int:
    """``golden api``: the API alone, in the foreground, until interrupted.

    Why the SIGTERM handler: uvicorn shuts down gracefully on SIGTERM and then raises the
    signal again under the handler it found. Under the default one the process ends there,
    before the ``finally`` below, so the token audit's last batch (up to a second of answered
    requests) was never written. Under this one the re-raised signal is a ``SystemExit``
    (status 143, as a SIGTERM'd process reports), the ``finally`` runs, and the batch is written
    before the store closes.

    On a DuckDB store the command channel opens too: ``golden`` commands run on this machine
    against the store are run by this process (:mod:`http_api.local_channel`)."""
    from http_api import local_channel

    store = context.get_store(store_location, create=True)
    workers = background.start(store)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    channel = local_channel.start_for(store_location, f"http://{host}:{port}/api/v1")
    try:
        uvicorn.Server(config(store_location, host, port)).run()
    finally:
        if channel is not None:
            channel.stop()
        background.stop(workers)
        context.close_all()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m http_api.serving --db DB --host H --port P`` (what ``golden api`` runs)."""
    p = argparse.ArgumentParser(prog="python -m http_api.serving")
    p.add_argument("--db", default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    a = p.parse_args(argv)
    print(f"golden api: listening on http://{a.host}:{a.port}/api/v1 (docs at /api/v1/docs)", file=sys.stderr)
    return run_api(a.db, a.host, a.port)


if __name__ == "__main__":
    raise SystemExit(main())
