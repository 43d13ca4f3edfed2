"""A local HTTP server that speaks the Anthropic Messages API, so tests run the real SDK
code path (base_url) without the network. Tests script its answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Responder = Callable[[dict], tuple[int, dict]]


def message(text: str, *, stop_reason: str = "end_turn", model: str = "claude-sonnet-4-5",
            usage: dict | None = None) -> dict:
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": stop_reason, "stop_sequence": None,
        "usage": usage or {"input_tokens": 1200, "output_tokens": 300, "cache_creation_input_tokens": 900,
                           "cache_read_input_tokens": 0},
    }


class MessagesServer:
    def __init__(self) -> None:
        self.requests: list[dict] = []   # bodies (and header names) of every request received
        self.script: list[Responder] = []
        self.default: Responder = lambda body: (200, message("{}"))
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "has_key": bool(self.headers.get("x-api-key") or self.headers.get("authorization")),
                                        "header_names": sorted(k.lower() for k in self.headers.keys())})
                responder = server.script.pop(0) if server.script else server.default
                status, payload = responder(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "MessagesServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
