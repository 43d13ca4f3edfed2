"""A local HTTP server that speaks the Anthropic Messages API (``POST /v1/messages`` and the
Message Batches subset), so the studio's Claude features can be tried, and are tested,
without a key or the network: the real SDK code path runs against ``ANTHROPIC_BASE_URL``.

Tests script its answers (``script``, ``default``, ``batch_result``). Started on its own
(``golden llm-standin``), it answers every request with :func:`standin_answer`: a reply of
the shape the request's output schema asks for, made from the request's own text, so every
LLM feature runs end to end and shows what it would do with a model's answer. It is no
model: its relevance judge grades by the words a passage shares with the question, and a
quote it gives is always a sentence of the passage itself.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict], tuple[int, dict]]

STANDIN_MODEL = "claude-sonnet-4-5"  # what a reply names when the request named no model


def message(text: str, *, stop_reason: str = "end_turn", model: str = STANDIN_MODEL,
            usage: dict | None = None) -> dict:
    """One Messages API reply carrying ``text``."""
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


# ---- the stand-in's answers ------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("a an and are as at be by can do does for from how i if in is it its me my of on or so that "
                  "the this to was what when where which who why will with you your".split())


def _tagged(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return m.group(1) if m else None


def _words(text: str) -> set[str]:
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1}


def _sentences(text: str) -> list[str]:
    """The passage's sentences as they stand in it (so a quote of one is verbatim)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.strip()) > 1]


def _user_text(body: dict) -> str:
    parts: list[str] = []
    for m in body.get("messages") or []:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\n".join(parts)


def _best_sentence(question: str, passage: str) -> tuple[str | None, float]:
    """The passage sentence sharing most content words with the question, and the share of
    the question's content words it holds (0 to 1)."""
    q = _words(question)
    best, score = None, 0.0
    for s in _sentences(passage):
        share = len(q & _words(s)) / len(q) if q else 0.0
        if share > score:
            best, score = s, share
    return best, score


def _relevance(question: str, passage: str) -> dict[str, Any]:
    """A relevance verdict by word overlap: the grade from the share of the question's words
    the passage's best sentence holds; p(FAIL) falls as that share grows."""
    quote, share = _best_sentence(question, passage)
    grade = 3 if share >= 0.6 else 2 if share >= 0.4 else 1 if share >= 0.2 else 0
    return {"justification": (f"Stand-in judge (no model): the passage's closest sentence holds {share:.0%} of the "
                              "question's words."),
            "grade": grade, "supporting_quote": quote if grade >= 2 else None,
            "p_fail": round(max(0.02, min(0.98, 1.0 - share)), 3)}


def _instance(schema: dict, defs: dict, name: str, text: str) -> Any:
    """A value of this JSON schema: the first choice of an anyOf that is not null, the first
    enum value, a sentence of the request for a string named like a quote."""
    if "$ref" in schema:
        return _instance(defs.get(schema["$ref"].split("/")[-1], {}), defs, name, text)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return _instance(options[0], defs, name, text)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _instance(v, defs, k, text) for k, v in props.items()}
    if kind == "array":
        return [_instance(schema.get("items") or {}, defs, name, text)
                for _ in range(max(1, int(schema.get("minItems") or 1)))]
    if kind == "integer":
        return int(schema.get("minimum") or 0)
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    if "quote" in name.lower():
        sentences = _sentences(text)
        return sentences[0] if sentences else ""
    return "Stand-in answer (no model was called)."


def standin_answer(body: dict) -> tuple[int, dict]:
    """The stand-in's reply to one Messages request: JSON of the requested output schema
    (a relevance verdict by word overlap; any other schema filled from the request's text),
    or a short text when no schema was asked for."""
    schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
    model = str(body.get("model") or STANDIN_MODEL)
    text = _user_text(body)
    if not schema:
        return 200, message("Stand-in answer (no model was called).", model=model)
    question, passage = _tagged(text, "question"), _tagged(text, "passage")
    props = set(schema.get("properties") or {})
    if question is not None and passage is not None and {"grade", "p_fail"} <= props:
        answer = _relevance(question, passage)
    else:
        answer = _instance(schema, schema.get("$defs") or {}, "", passage if passage is not None else text)
    return 200, message(json.dumps(answer), model=model)


# ---- the server ------------------------------------------------------------------------------------


class MessagesServer:
    """POST /v1/messages answers from ``script`` (then ``default``); the Message Batches
    subset (create, retrieve, results) answers each request of a batch with
    ``batch_result(custom_id, params)``, reports "in_progress" on the first
    ``batch_polls`` retrievals, and streams the results in reverse order (the API does not
    promise any order). Listens on loopback; port 0 picks a free one (``url`` says which)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
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

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self.url = f"http://{host}:{self._httpd.server_address[1]}"
        # a short poll: shutdown() waits for serve_forever's next poll, 0.5 s by default, per server
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def standalone(self) -> "MessagesServer":
        """Answer every request with :func:`standin_answer` (direct calls and batches alike)
        and keep no log of requests (a long-running stand-in would grow it forever)."""
        self.default = standin_answer
        self.batch_result = lambda cid, params: {"type": "succeeded", "message": standin_answer(params)[1]}
        self.batch_polls = 0
        self.requests = _Discard()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the ``golden llm-standin`` command)."""
        try:
            self._httpd.serve_forever()
        finally:
            self._httpd.server_close()

    def __enter__(self) -> "MessagesServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Discard(list[dict]):
    """A request log that keeps nothing."""

    def append(self, item: Any) -> None:
        pass
