"""The labeling surface's direct channel over real HTTP (http_api/routes/surface.py): a batch
posted as text/plain JSON (a CORS simple request, as the browser sends it) is written and
answered with its acknowledgements and the next cards, readable from the app's origin; a
bad pass is a 401 with the reason (the browser then uses the page path); the channel is not
part of the token API (no bearer token needed or taken, not in the schema)."""

from __future__ import annotations

import json
import uuid

import httpx

from annotator import judging, label_channel, sessions
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
