"""Answer grading as an annotator uses it in Chromium (issue 40): on the demo, the first answer of
the sample is graded with the keyboard alone (a digit per criterion, Tab between them, Enter
saves), the next answer comes, and the store, read with the server stopped, holds the marks
typed, by the local user, blind to nothing but what the page showed."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from annotator.demo import load_demo
from annotator.people.identity import LOCAL_USER, cli_user
from golden_store.db.store import Store
from tests.browser.test_browser import Server, _browser_page, _serve, idle, read_store
from tests.conftest import module_store

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def studio(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("grading")
    with module_store(request, tmp) as db:
        with Store.open(db) as s:
            load_demo(s, cli_user(), workflows=True, pool_job=False)
        with _serve(tmp, db=db) as srv:
            yield srv


def test_an_answer_is_graded_with_the_keyboard(studio: Server, tmp_path) -> None:
    with _browser_page(studio, None) as page:
        page.goto(studio.url)
        expect(page.get_by_text("Single-user local mode")).to_be_visible()
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Answer grading", exact=True).click()
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", level=1).first).to_have_text("Answer grading")
        idle(page)
        expect(main.get_by_text("0 of 14 answers graded in this sample")).to_be_visible()
        expect(main.get_by_text("rag-bm25")).to_have_count(0)  # blind
        expect(main.get_by_text("rag-hybrid")).to_have_count(0)
        first = main.get_by_text(re.compile(r"^Answer [0-9a-f]{16} · question q\d+")).inner_text()
        query_id = re.search(r"question (q\d+)", first).group(1)  # type: ignore[union-attr]
        boxes = main.get_by_role("spinbutton")
        # the form's mark boxes come after the run that draws them: wait for all of them (a read
        # right after the heading found none on PostgreSQL, where the page draws a little later)
        expect(boxes).to_have_count(5)
        marks = boxes.all()[2:]  # after sample size and seed
        assert len(marks) == 3
        marks[0].click()
        page.keyboard.type("1")
        for box in marks[1:]:
            page.keyboard.press("Tab")
            if box.evaluate("e => document.activeElement !== e"):
                box.focus()  # a step button between boxes may take the Tab
            page.keyboard.type("0")
        page.keyboard.press("Enter")
        expect(main.get_by_text("1 of 14 answers graded in this sample")).to_be_visible()
        idle(page)
        page.screenshot(path=str(tmp_path / "answer_grading.png"), full_page=True)
        assert not page.errors, page.errors  # type: ignore[attr-defined]
    studio.stop()
    with read_store(studio.db) as cur:
        rows = cur.execute("SELECT query_id, criterion_id, mark FROM answer_grades WHERE kind = 'human' AND grader = ? "
                           "ORDER BY criterion_id", [LOCAL_USER.username]).fetchall()
    assert [r[0] for r in rows] == [query_id] * 3
    assert sorted(r[2] for r in rows) == [0, 0, 1]
