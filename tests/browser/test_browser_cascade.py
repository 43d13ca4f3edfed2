"""Issue 27 in a real browser (chromium), on the full demo in single-user local mode, with the
local Messages API server standing in for Claude: a lead estimates and confirms a pool-grading
job on the Judge the pool page, watches it finish, then grades with the keyboard on the Judge
page as an expert; no passage whose judge label stands is ever shown to them, and the store
holds the judge's labels apart from the person's grades.

Screenshots are kept in /tmp/browser_issue27_*.png."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from golden_store.db.store import Store
from tests.annotator.test_pool_grading import _calibration, judge_server  # noqa: F401 (fixture)
from tests.browser.test_browser import Server, _browser_page, _serve, idle, read_store, shown_uid, store_location, surface

SHOTS = Path("/tmp")


@pytest.fixture
def cascade_server(tmp_path: Path, judge_server) -> Iterator[Server]:  # noqa: F811
    db = store_location()
    seed = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", str(db), "demo", "--full"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert seed.returncode == 0, f"golden demo --full failed:\n{seed.stdout}\n{seed.stderr}"
    with Store.open(db) as store:
        _calibration(store)  # c2: the relevance judge, its rubric text, κ 0.82, band (0.2, 0.8)
    with _serve(tmp_path) as srv:
        yield srv


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"browser_issue27_{name}.png"), full_page=True)


def _go(page: Page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    expect(page.get_by_test_id("stMain").get_by_role("heading", name=title, exact=True)).to_be_visible()
    idle(page)


def test_a_lead_grades_the_pool_by_the_judge_and_an_expert_gets_only_the_rest(cascade_server: Server,
                                                                              judge_server) -> None:  # noqa: F811
    server = cascade_server
    with _browser_page(server, None) as page:
        main = page.get_by_test_id("stMain")
        page.goto(server.url)
        expect(page.get_by_text("Single-user local mode")).to_be_visible()
        _go(page, "Judge the pool")
        expect(main.get_by_test_id("stMetric").filter(has_text="Pool items")).to_contain_text("245")
        box = main.get_by_test_id("stExpander").filter(has_text="Start a job")
        box.locator("summary").click()  # folded: the demo has a finished job already
        idle(page)
        limit = box.get_by_label("At most this many items (0: all)")
        limit.fill("40")
        limit.press("Enter")
        idle(page)
        box.get_by_role("button", name="Estimate").click()
        idle(page)
        expect(box.get_by_test_id("stCode")).to_contain_text("Pool grading: 40 call(s) to claude-sonnet-4-5")
        expect(box.get_by_test_id("stCode")).to_contain_text("Caching applies")
        _shot(page, "01_estimate")
        assert not [r for r in judge_server.requests if r["path"].endswith("/v1/messages")]  # nothing sent yet
        box.get_by_role("button", name=re.compile(r"^Confirm: spend ≈ \$")).click()
        # j1 is the demo's own finished job (its judge labeled 160 items); this lead's is j2
        expect(main.get_by_test_id("stAlert").filter(has_text="Job j2: done")).to_be_visible(timeout=60_000)
        idle(page)
        page.reload()
        idle(page)
        expect(main.get_by_test_id("stDataFrame").first).to_be_visible()
        _shot(page, "02_job_done")

        _go(page, "Judge")
        root = surface(page)
        expect(root).to_have_attribute("data-uid", re.compile(r".+"))
        shown = []
        for key in "23102":
            shown.append(json.loads(shown_uid(page)))
            page.keyboard.press(key)
            expect(root).to_have_attribute("data-saved", str(len(shown)))
        expect(root).to_have_attribute("data-pending", "0")
        _shot(page, "03_expert_judges_the_rest")
        assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]
    server.stop()
    with read_store(server.db) as con:
        judge_routed = {tuple(r) for r in con.execute(
            "SELECT query_id, doc_id, start, \"end\" FROM judge_item_state WHERE route = 'judge'").fetchall()}
        graded = con.execute("SELECT query_id, doc_id, start, \"end\", grade FROM grade_events WHERE actor = 'local' "
                             "ORDER BY event_id").fetchall()
        judge_events = con.execute("SELECT count(*) FROM judge_label_events WHERE job_id = 'j2'").fetchone()[0]
    assert judge_routed and judge_events == 40
    assert [tuple(g[:4]) for g in graded] == [(s["query_id"], s["doc_id"], s["start"], s["end"]) for s in shown]
    assert [g[4] for g in graded] == [2, 3, 1, 0, 2]
    assert not {tuple(g[:4]) for g in graded} & judge_routed  # the judge's items never reached the expert
