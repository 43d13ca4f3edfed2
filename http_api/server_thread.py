"""A uvicorn server in a daemon thread of this process: the API beside the Streamlit app
(:mod:`http_api.serving`) and the command channel beside both (:mod:`http_api.local_channel`).
Both start it the same way, here: the caller goes on only once the server listens."""

from __future__ import annotations

import threading
import time

import uvicorn


def start_and_wait(server: uvicorn.Server, thread: threading.Thread, failure: str, timeout_s: float) -> None:
    """Start ``thread`` (running ``server``) and return once the server listens. Raises
    ``RuntimeError(failure)`` if the thread ends first (the port or socket could not be
    bound) or ``timeout_s`` passes."""
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(failure)
        time.sleep(0.01)
