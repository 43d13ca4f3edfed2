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


def batch_object(batch_id: str, n: int, *, ended: bool, results_url: str | None) -> dict:
    counts = {"processing": 0 if ended else n, "succeeded": n if ended else 0, "errored": 0, "canceled": 0,
              "expired": 0}
    return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": "2026-12-02T00:00:00Z", "expires_at": "2026-12-03T00:00:00Z",
            "ended_at": "2026-12-02T00:05:00Z" if ended else None, "cancel_initiated_at": None,
            "archived_at": None, "results_url": results_url}


class MessagesServer:
    """POST /v1/messages answers from ``script`` (then ``default``); the Message Batches
    subset (create, retrieve, results) answers each request of a batch with
    ``batch_result(custom_id, params)``, reports "in_progress" on the first
    ``batch_polls`` retrievals, and streams the results in reverse order (the API does not
    promise any order)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []   # bodies (and header names) of every request received
        self.script: list[Responder] = []
        self.default: Responder = lambda body: (200, message("{}"))
        self.batch_result: Callable[[str, dict], dict] = lambda cid, params: {
            "type": "succeeded", "message": message("{}")}
        self.batch_polls = 1
        self.batches: dict[str, dict] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, data: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _log(self, body: dict) -> None:
                server.requests.append({"path": self.path, "body": body, "method": self.command,
                                        "has_key": bool(self.headers.get("x-api-key") or self.headers.get("authorization")),
                                        "header_names": sorted(k.lower() for k in self.headers.keys())})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                self._log(body)
                if self.path.startswith("/v1/messages/batches"):
                    bid = f"msgbatch_{len(server.batches) + 1:04d}"
                    server.batches[bid] = {"requests": body["requests"], "polls": 0}
                    obj = batch_object(bid, len(body["requests"]), ended=False, results_url=None)
                    return self._send(200, json.dumps(obj).encode())
                responder = server.script.pop(0) if server.script else server.default
                status, payload = responder(body)
                self._send(status, json.dumps(payload).encode())

            def do_GET(self) -> None:  # noqa: N802
                self._log({})
                parts = self.path.split("?")[0].strip("/").split("/")  # v1 messages batches ID [results]
                if len(parts) < 4 or parts[:3] != ["v1", "messages", "batches"] or parts[3] not in server.batches:
                    return self._send(404, json.dumps({"type": "error", "error": {
                        "type": "not_found_error", "message": self.path}}).encode())
                b = server.batches[parts[3]]
                if len(parts) == 5 and parts[4] == "results":
                    lines = [json.dumps({"custom_id": r["custom_id"],
                                         "result": server.batch_result(r["custom_id"], r["params"])})
                             for r in reversed(b["requests"])]
                    return self._send(200, ("\n".join(lines) + "\n").encode(), "application/binary")
                b["polls"] += 1
                ended = b["polls"] > server.batch_polls
                obj = batch_object(parts[3], len(b["requests"]), ended=ended,
                                   results_url=f"{server.url}/v1/messages/batches/{parts[3]}/results" if ended else None)
                self._send(200, json.dumps(obj).encode())

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
