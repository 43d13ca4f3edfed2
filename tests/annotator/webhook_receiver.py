"""A real webhook receiver on loopback for the webhook tests: a ThreadingHTTPServer in a
thread that records every request (headers and body), answers with what ``answer`` says
(a status, or "hold": block on ``release`` first, or "trickle": write a 200 answer one byte
every ``trickle_every`` seconds, from its status line on, until it is all sent or the client
hangs up), and counts 2xx answers per webhook-id and the requests of each webhook-id in
progress at once (``most_at_once``)."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Receiver:
    def __init__(self, port: int = 0, answer: Callable[[int], int | str] | None = None) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.successes: Counter[str] = Counter()
        self.answered: list[tuple[int, str]] = []  # (request number, webhook-id) of each 2xx answer
        self.answer = answer or (lambda n: 200)
        self.release = threading.Event()  # what a "hold" answer waits for
        self.holding = threading.Event()  # set while a request is held
        self.changed = threading.Condition()
        self.trickle_every = 0.5
        self.trickle_answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"  # 38 bytes: 19 s at 0.5 s
        self.trickling = threading.Event()  # set once a trickled answer has begun
        self.trickled: list[tuple[int, bool]] = []  # per trickled answer: (bytes written, all of it sent)
        self.in_progress: Counter[str] = Counter()
        self.most_at_once: Counter[str] = Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                wid = headers.get("webhook-id", "")
                with outer.changed:
                    outer.requests.append((headers, body))
                    n = len(outer.requests)
                    outer.in_progress[wid] += 1
                    outer.most_at_once[wid] = max(outer.most_at_once[wid], outer.in_progress[wid])
                try:
                    self._answer(n, headers, outer.answer(n))
                finally:
                    with outer.changed:
                        outer.in_progress[wid] -= 1
                        outer.changed.notify_all()

            def _answer(self, n: int, headers: dict[str, str], what: int | str) -> None:
                if what == "trickle":
                    self.close_connection = True
                    written = 0
                    stopped = threading.Event()  # never set: its wait is the pace between bytes
                    outer.trickling.set()
                    try:
                        for byte in outer.trickle_answer:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            written += 1
                            stopped.wait(outer.trickle_every)
                    except OSError:  # the client hung up
                        pass
                    with outer.changed:
                        outer.trickled.append((written, written == len(outer.trickle_answer)))
                        outer.changed.notify_all()
                    return
                if what == "hold":
                    outer.holding.set()
                    outer.release.wait(30)
                    what = 200
                status = int(what)
                if 200 <= status < 300:  # counted before the answer leaves: a sender that has read the
                    with outer.changed:  # 200 (and a test that asserts right after it) sees the count
                        outer.successes[headers.get("webhook-id", "")] += 1
                        outer.answered.append((n, headers.get("webhook-id", "")))
                        outer.changed.notify_all()
                if status in (301, 302, 307, 308):
                    self.send_response(status)
                    self.send_header("location", f"http://127.0.0.1:{outer.port}/elsewhere")
                else:
                    self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "Receiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, pred: Callable[[], bool], timeout: float = 60) -> bool:
        """Wait until ``pred()`` holds (checked whenever a success is counted)."""
        with self.changed:
            return self.changed.wait_for(pred, timeout)
