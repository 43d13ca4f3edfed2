"""An acknowledged label is durable (issue 41 item 1: the channel writes the labels that arrive
together in one transaction, and acknowledges each only after that commit).

``golden serve`` on a real DuckDB file; Chromium signs ann and bob in and opens Judge, and each
surface's first POST to ``/surface/v1/batch`` gives the test the pass its page was issued.
Then two threads, ann's and bob's, post one-label batches through that endpoint as the surface
does, both at once (so labels meet in one group); right after the last acknowledgement the
server is killed (SIGKILL: no shutdown, no checkpoint). After a restart on the same file every
acknowledged label is there, once, by its annotator, on its item, with its grade."""

from __future__ import annotations

import json
import os
import signal
import threading
import urllib.request
import uuid
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.test_browser import Server, _serve, surface
from tests.browser.test_browser_label_channel import _port, served, served_page  # noqa: F401  (fixtures)
from tests.browser.test_browser_labeling import _grades, _open_judge, _sign_in


def _pass_of(page: Page, server: Server, name: str) -> tuple[str, str]:
    """(the channel's URL, the pass ``name``'s Judge page was given), from the surface's first
    POST (one grade key, acknowledged)."""
    posts: list[tuple[str, str]] = []
    page.on("request", lambda r: posts.append((r.url, r.post_data or "")) if "/surface/v1/batch" in r.url else None)
    page.goto(server.url)
    _sign_in(page, name)
    _open_judge(page, server.url)
    root = surface(page)
    expect(root).to_have_attribute("data-channel", "direct")
    page.keyboard.press("1")
    expect(root).to_have_attribute("data-saved", "1")
    url, body = posts[0]
    return url, json.loads(body)["pass"]


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "text/plain;charset=UTF-8"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def test_an_acknowledged_label_survives_a_kill_right_after_its_ack(served: Server, served_page: Page,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    server = served
    url, ann_pass = _pass_of(served_page, server, "ann")
    served_page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
    _, bob_pass = _pass_of(served_page, server, "bob")
    saved: dict[str, list[tuple]] = {"ann": [], "bob": []}

    def annotate(name: str, pass_: str) -> None:
        cards = _post(url, {"pass": pass_, "labels": [], "left": 0})["items"]
        for k in range(6):
            card = cards.pop(0)
            label = {"id": uuid.uuid4().hex, "by": name, "uid": card["uid"], "item": card["item"],
                     "digest": card["digest"], "action": "grade", "value": k % 4, "note": ""}
            answer = _post(url, {"pass": pass_, "labels": [label], "left": len(cards)})
            assert [a["status"] for a in answer["acks"]] == ["saved"], answer["acks"]
            it = card["item"]
            saved[name].append((it["query_id"], it["doc_id"], it["start"], it["end"], "grade", k % 4))
            if answer["items"] is not None:
                cards = [c for c in answer["items"] if c["uid"] != card["uid"]]

    threads = [threading.Thread(target=annotate, args=a) for a in (("ann", ann_pass), ("bob", bob_pass))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    os.kill(server._proc.pid, signal.SIGKILL)  # right after the last acknowledgement
    server._proc.wait(timeout=10)
    assert len(saved["ann"]) == len(saved["bob"]) == 6
    with _serve(tmp_path, _port(server), golden_serve=True) as again:
        ann = _grades(again, "ann")
    for item in saved["ann"]:
        assert ann.count(item) == 1, item
    assert len(ann) == 1 + 6  # the key pressed in the browser, then the six posted
    with _serve(tmp_path, _port(server), golden_serve=True) as again:
        bob = _grades(again, "bob")
    assert sorted(bob) == sorted([*saved["bob"], bob[0]]) and len(bob) == 7
