"""The labeling surface's direct channel over real HTTP (http_api/routes/surface.py): a batch
posted as text/plain JSON (a CORS simple request, as the browser sends it) is written and
answered with its acknowledgements and the next cards, readable from the app's origin; a
bad pass is a 401 with the reason (the browser then uses the page path); the channel is not
part of the token API (no bearer token needed or taken, not in the schema)."""

from __future__ import annotations

import json
import select
import socket
import uuid

import httpx

from annotator.labeling import judging, label_channel
from annotator.people import sessions
from tests.annotator.test_labeling import _events, _key, pooled  # noqa: F401  (fixture)
from tests.http_api.conftest import api  # noqa: F401  (fixture)

HEADERS = {"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://127.0.0.1:8501"}


def _url(api: str) -> str:
    return api.removesuffix("/api/v1") + "/surface/v1/batch"


def _post(api: str, body: object) -> httpx.Response:
    return httpx.post(_url(api), content=json.dumps(body) if not isinstance(body, bytes) else body,
                      headers=HEADERS, timeout=30)


def test_a_batch_over_http_is_written_and_answered_to_the_apps_origin(pooled, api):
    s, u = pooled
    token = sessions.start(s, u["ann"])
    p = label_channel.issue(u["ann"], mode="accounts", session=token, surface=judging.SURFACE, scope="random",
                            page="t1")
    first = _post(api, {"pass": p, "labels": [], "left": 0})
    assert first.status_code == 200, first.text
    assert first.headers["access-control-allow-origin"] == "*"  # readable by the app's page (another port)
    card = first.json()["items"][0]
    label = {"id": uuid.uuid4().hex, "by": "ann", "item": card["item"], "digest": card["digest"], "action": "grade",
             "value": 3, "note": "exact"}
    answer = _post(api, {"pass": p, "labels": [label], "left": 11})
    assert answer.status_code == 200 and answer.json()["acks"] == [
        {"label_id": label["id"], "status": "saved", "message": ""}]
    assert _events(s, "ann") == [(*_key(card), "grade", 3)]


def test_a_bad_pass_or_body_is_refused_with_the_reason_and_writes_nothing(pooled, api):
    s, u = pooled
    forged = label_channel.issue(u["ann"], mode="accounts", session="x", surface=judging.SURFACE, scope="random",
                                 page="t1")[:-4] + "AAAA"
    r = _post(api, {"pass": forged, "labels": [], "left": 0})
    assert r.status_code == 401 and "not issued by this server" in r.json()["refused"]
    assert r.headers["access-control-allow-origin"] == "*"  # the page reads the refusal and falls back
    assert _post(api, b"{not json").status_code == 400
    big = _post(api, b"x" * (5 * 1024 * 1024))
    assert big.status_code == 413
    # an API token is neither needed nor a pass
    assert _post(api, {"labels": []}).json()["refused"].startswith("No label pass")
    assert _events(s, "ann") == []
    schema = httpx.get(f"{api}/openapi.json", timeout=30).json()
    assert not any(path.startswith("/surface") for path in schema["paths"])


def _stream_until_answered(api: str, total: int, *, length: int | None = None) -> tuple[int, bytes]:
    """POST ``total`` bytes of junk to the channel over a raw socket, chunked (or only a
    ``Content-Length: length`` header and no body), sending a piece whenever the socket takes
    one and stopping as soon as the server answers: (bytes of body sent by then, the answer)."""
    host, port = api.removeprefix("http://").removesuffix("/api/v1").split(":")
    head = f"POST /surface/v1/batch HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: text/plain\r\n"
    head += f"Content-Length: {length}\r\n\r\n" if length is not None else "Transfer-Encoding: chunked\r\n\r\n"
    piece = b"%x\r\n%s\r\n" % (64 * 1024, b"x" * 64 * 1024)
    sent = 0
    answer = b""
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head.encode())
        sock.setblocking(False)
        pending = b"" if length is not None else piece
        while True:
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 60)
            if readable or not (readable or writable):
                break  # the answer (or nothing for a minute: the answer stays empty)
            try:
                n = sock.send(pending)
            except OSError:
                break  # the server closed its side: read what it answered
            pending = pending[n:]
            if not pending:
                sent += 64 * 1024
                pending = piece if sent < total else (b"0\r\n\r\n" if sent == total else b"")
                sent += 1 if sent == total else 0  # the last chunk is queued once
        sock.setblocking(True)
        sock.settimeout(60)
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            try:
                got = sock.recv(65536)
            except (TimeoutError, OSError):
                break
            if not got:
                break
            answer += got
    return min(sent, total), answer


def test_a_body_over_the_cap_is_refused_before_it_is_read(pooled, api):
    """Probe L8 (issue 37): no pass is needed to reach the channel, and it used to read any body
    whole before its 4 MB check (three 500 MB bodies took the server to 2.2 GB). A 50 MB chunked
    body is now answered 413 once a little over 4 MB has arrived: the server answered while
    most of the body was still unsent (socket buffers hold a few MB more; the old code answered
    only after the last byte). A Content-Length over the cap is answered at once, without a body
    byte sent. A batch sent chunked under the cap still works."""
    total = 50 * 1024 * 1024
    sent, answer = _stream_until_answered(api, total)
    assert sent < total - 20 * 1024 * 1024, f"{sent} of {total} bytes sent before the answer"
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"at most 4 MB" in answer and b"access-control-allow-origin: *" in answer.lower()
    sent, answer = _stream_until_answered(api, 0, length=500 * 1024 * 1024)
    assert sent == 0 and answer.startswith(b"HTTP/1.1 413"), answer[:200]
    s, u = pooled
    p = label_channel.issue(u["ann"], mode="accounts", session=sessions.start(s, u["ann"]), surface=judging.SURFACE,
                            scope="random", page="t1")
    body = json.dumps({"pass": p, "labels": [], "left": 0}).encode()
    chunked = httpx.post(_url(api), content=iter([body[:10], body[10:]]), headers=HEADERS, timeout=30)
    assert chunked.request.headers.get("transfer-encoding") == "chunked"
    assert chunked.status_code == 200 and chunked.json()["items"], chunked.text
