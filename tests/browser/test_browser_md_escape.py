"""Issue 18 item 13 in a real browser: ``st.markdown(md_escape(x))`` shows ``x`` literally,
Streamlit's own syntax included (colours, badges, :material/ icons, :emoji: shortcodes, the
:streamlit: logo, $math$, arrows), with no element Markdown would make (link, image, icon,
bold, code, heading, list, table). Needs chromium on PATH, as the other browser tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.browser.test_browser import CHROMIUM_ARGS, REPO, _free_port

CASES = [
    ":red[alert]", ":blue-background[x] :red-badge[b] :small[tiny] :shimmer[s] :help[h]",
    ":material/home: and :material_home:", ":smile: :+1: a:b:c: :streamlit:",
    "$x^2$ and $$y$$", "a -> b <-> c -- d >= 1 <= 2 ~= 3",
    "**bold** _it_ `code` ~~gone~~", "[link](http://x.y) www.example.com http://a.b a@b.co",
    "<b>x</b> &amp; &copy;", "# heading", "1. item", "> quote", "- item", "| a | b |\n|---|---|",
    ":orange-background[**x**] :violet[:material/bolt:]", "\\:red[x] \\$y\\$",
    # issue 29, L6: a URL inside markup is not linked to `https://example.org">anchor</a`
    '<a href="https://example.org">anchor</a> <img src=\'www.example.org/x.png\'>',
    # probe I2: a tracking pixel's URL and an address in a corpus document stay text
    "see http://127.0.0.1:8629/track.png or HTTPS://Example.org/a?b=c, ftp://f.example/x, mail ops@corp.example",
]
SCRIPT = """
import json, sys
import streamlit as st
from app_pages._shared import md_escape
for i, x in enumerate(json.load(open(sys.argv[1]))):
    with st.container(key=f"case{i}"):
        st.markdown(md_escape(x))
"""
# What Markdown or Streamlit would have made of a directive, link, shortcode or formula: any
# link at all, bare URLs and e-mail addresses included (probe I2, issue 37).
MADE = ("a, img, svg, [role=img], .katex, .stMarkdownColoredText, .stMarkdownColoredBackground, "
        ".stMarkdownBadge, .stMarkdownShimmer, strong, em, del, code, h1, h2, ol, ul, blockquote, table, "
        "streamlit-help-icon, span[style]")


def test_escaped_markdown_renders_literally(tmp_path: Path):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium not found on PATH: apt-get install chromium")
    (tmp_path / "cases.json").write_text(json.dumps(CASES))
    (tmp_path / "page.py").write_text(SCRIPT)
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(tmp_path / "page.py"), "--server.port",
                             str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--", str(tmp_path / "cases.json")],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.25)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            last = page.locator(f".st-key-case{len(CASES) - 1} [data-testid=stMarkdownContainer]")
            last.wait_for(timeout=30_000)
            page.wait_for_timeout(1500)  # lazily loaded plugins (emoji, KaTeX) would have run by now
            problems = []
            for i, x in enumerate(CASES):
                box = page.locator(f".st-key-case{i} [data-testid=stMarkdownContainer]")
                shown = box.inner_text().replace("\u2060", "")
                made = box.locator(MADE).count()
                if " ".join(shown.split()) != " ".join(x.split()) or made:
                    problems.append((x, shown, made))
            browser.close()
        assert not problems, problems
    finally:
        proc.terminate()
        proc.wait(timeout=20)
