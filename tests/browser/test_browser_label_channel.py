"""Real-browser tests of the direct label channel (issue 29 item 1: a label costs its write,
not a Streamlit rerun): ``golden serve`` itself (the app and the API in one process), the
store of test_browser_labeling (accounts, a 120-item pool), Debian's chromium.

* Judge under ``golden serve`` labels through the channel (``data-channel="direct"``): a
  burst of keys goes out as POSTs to ``/surface/v1/batch`` and not one message on Streamlit's
  websocket; the store holds each grade once, on the passage painted when its key went down;
  a rerun of the page (Refresh) keeps the channel's "N left" and the passage on screen.
* The server killed (SIGKILL) mid-session and restarted on the same ports: keys pressed while
  it is down stay pending; the channel's failure hands them to the page path, the page
  reloads after the reconnect and labels through the channel again; every grade is stored
  exactly once.
* A channel that refuses every pass (``GOLDEN_SURFACE_URL`` at a stand-in answering 401, as
  another server's process would): each refused batch goes through the page, the page's new
  pass is tried again, and after three refusals the page keeps the labels for this page
  load; every grade is stored once.
* Under ``streamlit run`` (no API in the process) the surface uses the page path
  (``data-channel="page"``): every other browser test of the surface runs that way.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_browser import Server, _browser_page, _serve, idle, shown_uid, surface
from tests.browser.test_browser_labeling import _grades, _item, _open_judge, _prepare, _press_burst, _sign_in


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    """``golden serve`` on the team store."""
    _prepare(tmp_path)
    with _serve(tmp_path, golden_serve=True) as srv:
        yield srv


@pytest.fixture
def served_page(served: Server) -> Iterator[Page]:
    with _browser_page(served, None) as pg:
        yield pg


def _ws_frames(page: Page) -> list[object]:
    """Messages the page sends on Streamlit's websocket (attach before the page loads)."""
    frames: list[object] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: frames.append(f)))
    return frames


def _judge_as_ann(page: Page, server: Server, channel: str):
    """ann signed in on Judge; the surface's root, once it says which path its labels take."""
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    root = surface(page)
    expect(root).to_have_attribute("data-channel", channel)
    return root


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def test_judge_labels_through_the_channel_not_a_rerun(served: Server, served_page: Page) -> None:
    page, server = served_page, served
    frames = _ws_frames(page)
    root = _judge_as_ann(page, server, "direct")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.method) if "/surface/v1/batch" in r.url else None)
    idle(page)
    sent = len(frames)
    assert sent > 0  # the page did talk to Streamlit on its websocket (the count below means something)
    painted = _press_burst(page, "0123012301", gap_s=0.12)
    expect(root).to_have_attribute("data-pending", "0")
    expect(root).to_have_attribute("data-saved", "10")
    assert len(set(painted)) == 10
    assert posts and set(posts) == {"POST"}
    assert len(frames) == sent, "a label went through Streamlit's websocket (a rerun per batch)"
    assert page.errors == []  # type: ignore[attr-defined]
    expect(root).to_have_attribute("data-channel", "direct")
    # a rerun of the page for another reason keeps the channel's count and queue (not the page's older copy)
    counter = root.locator(".gs-counter")
    left = re.search(r"(\d+) left of", counter.inner_text()).group(1)
    uid_before = shown_uid(page)
    runs = int(root.get_attribute("data-updates"))
    page.get_by_role("button", name="Refresh").click()
    expect(root).to_have_attribute("data-updates", str(runs + 1))  # the page's rerun reached the surface
    idle(page)
    expect(counter).to_contain_text(f"{left} left of")
    assert shown_uid(page) == uid_before
    assert _grades(server, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, "0123012301")]


def test_a_restart_hands_pending_labels_to_the_page_and_back(served: Server, served_page: Page,
                                                             tmp_path: Path) -> None:
    page, server = served_page, served
    root = _judge_as_ann(page, server, "direct")
    before = _press_burst(page, "32", gap_s=0.2)
    expect(root).to_have_attribute("data-saved", "2")
    os.kill(server._proc.pid, signal.SIGKILL)
    server._proc.wait(timeout=10)
    during = _press_burst(page, "102", gap_s=0.2)
    expect(root).to_have_attribute("data-channel", "page")  # the channel is unreachable: the page path
    expect(root).to_have_attribute("data-pending", "3")
    with _serve(tmp_path, _port(server), golden_serve=True) as again:
        expect(root).to_have_attribute("data-pending", "0", timeout=60_000)
        root = surface(page)  # the page reloaded itself after the reconnect
        expect(root).to_have_attribute("data-channel", "direct", timeout=30_000)
        expect(root).to_have_attribute("data-uid", re.compile(r".+"))
        after = [shown_uid(page)]
        page.keyboard.press("1")
        expect(root).to_have_attribute("data-saved", re.compile(r"[1-9]"))
        expect(root).to_have_attribute("data-pending", "0")
        painted, keys = before + during + after, "32" + "102" + "1"
        assert len(set(painted)) == len(painted)
        assert _grades(again, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, keys)]


class _Refusing(BaseHTTPRequestHandler):
    """Refuses every batch as a server that did not issue the pass does (401, readable cross-origin)."""

    hits: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Refusing.hits.append(self.path)
        body = json.dumps({"refused": "The label pass was not issued by this server"}).encode()
        self.send_response(401)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_channel_refusing_every_pass_is_left_and_nothing_is_lost(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    _Refusing.hits = []
    monkeypatch.setenv("GOLDEN_SURFACE_URL", f"http://127.0.0.1:{stand_in.server_address[1]}")
    _prepare(tmp_path)
    try:
        with _serve(tmp_path, golden_serve=True) as server, _browser_page(server, None) as page:
            root = _judge_as_ann(page, server, "direct")
            painted = []
            for k in "01230":
                painted.append(shown_uid(page))
                page.keyboard.press(k)
                expect(root).to_have_attribute("data-pending", "0")
            expect(root).to_have_attribute("data-channel", "page")
            expect(root).to_have_attribute("data-saved", "5")
            assert _Refusing.hits == ["/surface/v1/batch"] * 3  # tried with each new pass, then left
            assert len(set(painted)) == 5
            assert _grades(server, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, "01230")]
    finally:
        stand_in.shutdown()


def test_streamlit_run_alone_uses_the_page_path(tmp_path: Path) -> None:
    _prepare(tmp_path)
    with _serve(tmp_path) as server, _browser_page(server, None) as page:
        frames = _ws_frames(page)
        root = _judge_as_ann(page, server, "page")
        idle(page)
        sent = len(frames)
        page.keyboard.press("2")
        expect(root).to_have_attribute("data-saved", "1")
        assert len(frames) > sent  # the label went as a websocket message (the other test's check bites)
