"""Real-browser end-to-end test of the main flow.

Starts the app exactly as a user would (``streamlit run app.py`` on a fresh store in a
temporary folder), drives it with Debian's chromium through Playwright, and checks:

1. the empty store offers the demo, and loading it shows 20 documents and 40 queries;
2. freezing ``demo.v1`` on the Versions page writes ``versions/demo.v1/manifest.json``;
3. corpus text is shown as plain text: an uploaded ``xss.txt`` holding HTML and Markdown
   is displayed literally, never rendered, and its ``onerror`` handler never runs.

A screenshot of the last page is kept at ``<tmp>/final.png`` and copied to
``/tmp/browser_final.png``. Needs ``chromium`` on PATH (``apt-get install chromium``);
without it the test fails rather than skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

REPO = Path(__file__).resolve().parent.parent
APP = REPO / "app.py"
TIMEOUT_MS = 30_000
SERVER_START_S = 60
SCREENSHOT_COPY = Path("/tmp/browser_final.png")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]
XSS_TEXT = '<img src=x onerror="window.__xss=1"><b>bold</b> **md**'


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log_tail(log: Path, n: int = 4000) -> str:
    try:
        return log.read_text(errors="replace")[-n:]
    except OSError:
        return "(no server log)"


class Server:
    def __init__(self, url: str, tmp: Path, log: Path) -> None:
        self.url, self.tmp, self.log = url, tmp, log


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """The app on a fresh store under ``tmp_path``, started as ``golden serve`` would."""
    port = _free_port()
    env = dict(os.environ, GOLDEN_DB=str(tmp_path / "golden.duckdb"))
    env.pop("GOLDEN_VERSIONS", None)  # versions go next to the store: <tmp>/versions
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.port", str(port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    log = tmp_path / "server.log"
    log_fh = log.open("wb")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log_fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with status {proc.returncode} before it was healthy:\n"
                            f"{_log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy on {url} after {SERVER_START_S} s:\n{_log_tail(log)}")
            time.sleep(0.25)
        yield Server(url, tmp_path, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log_fh.close()


@pytest.fixture
def page(server: Server) -> Iterator[Page]:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium not found on PATH: install Debian's chromium: apt-get install chromium")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = ctx.new_page()
            pg.set_default_timeout(TIMEOUT_MS)
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.errors = errors  # type: ignore[attr-defined]
            try:
                yield pg
            finally:
                # Keep a picture of wherever the page ended up, pass or fail.
                shot = server.tmp / "final.png"
                try:
                    pg.screenshot(path=str(shot))
                    shutil.copyfile(shot, SCREENSHOT_COPY)
                except Exception as exc:  # noqa: BLE001 - a failed screenshot must not hide the real failure
                    print(f"screenshot failed: {exc}", file=sys.stderr)
        finally:
            browser.close()


def _metric(page: Page, label: str):
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def _nav(page: Page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()


def _select(page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label`` (a combobox input)."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label)
    combo = box.get_by_role("combobox")
    combo.click()
    # Typing filters the (virtualised) list, so the option is rendered however long it is.
    page.keyboard.type(option)
    page.get_by_role("option", name=option, exact=True).click()
    expect(combo).to_have_value(option)


def test_demo_freeze_and_escaped_corpus(server: Server, page: Page) -> None:
    main = page.get_by_test_id("stMain")

    # 1. Empty store: the demo button loads 20 documents and 40 queries.
    page.goto(server.url)
    expect(page.get_by_text("This store is empty")).to_be_visible()
    page.get_by_role("button", name="Load the demo project").click()
    expect(_metric(page, "Documents")).to_have_text("20")
    expect(_metric(page, "Queries")).to_have_text("40")

    # 2. Freeze demo.v1 on the Versions page.
    _nav(page, "Versions")
    expect(main.get_by_role("heading", name="Versions")).to_be_visible()
    page.get_by_label("Version name").fill("demo.v1")
    page.get_by_role("button", name="Freeze").click()
    expect(page.get_by_test_id("stAlert").filter(has_text="Frozen demo.v1")).to_be_visible()
    manifest_path = server.tmp / "versions" / "demo.v1" / "manifest.json"
    assert manifest_path.is_file(), f"{manifest_path} missing; server log:\n{_log_tail(server.log)}"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["n_queries"] == 40
    assert manifest["dataset_version"] == "demo.v1"

    # 3. Corpus: upload a hostile .txt and check it is shown as plain text.
    _nav(page, "Corpus")
    expect(main.get_by_role("heading", name="Corpus")).to_be_visible()
    expect(main.get_by_text(re.compile(r"^20 documents"))).to_be_visible()
    page.get_by_test_id("stExpander").filter(has_text="Import documents").locator("summary").click()
    upload = server.tmp / "upload"
    upload.mkdir()
    (upload / "xss.txt").write_text(XSS_TEXT, encoding="utf-8")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(upload / "xss.txt"))
    expect(page.get_by_role("button", name="Remove xss.txt")).to_be_visible()  # upload finished
    import_btn = page.get_by_role("button", name="Import", exact=True)
    expect(import_btn).to_be_enabled()
    import_btn.click()
    expect(page.get_by_test_id("stAlert").filter(has_text="Imported")).to_be_visible()
    # (The page's "N documents" caption is computed before the import runs, so it only
    # catches up on the next rerun, e.g. the selectbox pick below.)

    _select(page, "Read a document", "xss")
    expect(main.get_by_text(re.compile(r"^21 documents"))).to_be_visible()
    expect(main.get_by_role("heading", name="xss")).to_be_visible()
    shown = main.get_by_test_id("stText")
    expect(shown).to_have_count(1)
    expect(shown).to_contain_text("<b>bold</b>")
    expect(shown).to_contain_text("**md**")
    expect(shown).to_contain_text('<img src=x onerror="window.__xss=1">')
    # Nothing from the document became markup: no <img>, no <b>bold</b>, no <strong>md</strong>.
    expect(main.locator("b", has_text="bold")).to_have_count(0)
    expect(main.locator("strong", has_text="md")).to_have_count(0)
    expect(page.locator('img[src="x"]')).to_have_count(0)
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]
    shown.scroll_into_view_if_needed()  # so the final screenshot shows the literal text
