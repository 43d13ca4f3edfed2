"""The answer layer as a lead and a reviewer use it in Chromium (issue 40): a reference answer
written and approved, claims reviewed with fast keys, an undo and a reload; then the store,
read with the server stopped, holds exactly what the pages said they saved."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.db.store import Store
from tests.browser.test_browser import Server, _browser_page, _serve, idle, read_store
from tests.conftest import module_store


@pytest.fixture(scope="module")
def studio(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("answers")
    with module_store(request, tmp) as db:
        with Store.open(db) as s:
            load_demo(s, cli_user(), workflows=True, pool_job=False)
        with _serve(tmp, db=db) as srv:
            yield srv


@pytest.fixture(scope="module")
def page(studio: Server) -> Iterator[Page]:
    with _browser_page(studio, None) as pg:
        pg.goto(studio.url)
        expect(pg.get_by_text("Single-user local mode")).to_be_visible()
        yield pg
        assert not pg.errors, f"JavaScript errors in the page: {pg.errors}"  # type: ignore[attr-defined]


def _go(page: Page, title: str) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    expect(page.get_by_test_id("stMain").get_by_role("heading", level=1).first).to_have_text(title)
    idle(page)


def test_a_reference_answer_is_written_then_approved_on_the_same_question(studio: Server, page: Page) -> None:
    """Fails on the page whose picker labels carried the reference's state: after "Save
    revision" the label changed, the browser took the picker for a new widget, snapped it back to
    the first question and dropped the click on "Approve" (q003 stayed unapproved)."""
    main = page.get_by_test_id("stMain")
    _go(page, "Reference answers")
    combo = main.get_by_role("combobox", name="Question")
    combo.click()
    page.get_by_role("option", name=re.compile(r"^q003 - ")).click()
    expect(main.get_by_text("No reference answer yet.")).to_be_visible()
    idle(page)
    main.get_by_role("textbox", name="Short answer").fill("one month")
    main.get_by_role("textbox", name="Full answer").fill("One month of notice after probation, and the laptop back "
                                                         "within five working days.")
    main.get_by_role("button", name="Save revision").click()
    expect(main.get_by_test_id("stAlert").filter(has_text=re.compile(r"Saved revision \d+ of q003"))).to_be_visible()
    expect(combo).to_have_value(re.compile(r"^q003 - "))
    main.get_by_role("button", name=re.compile(r"^Approve revision \d+")).click()
    expect(main.get_by_test_id("stAlert").filter(has_text="Approved the reference answer of q003")).to_be_visible()
    expect(combo).to_have_value(re.compile(r"^q003 - "))
    expect(main.get_by_text(re.compile(r"^Revision \d+ by local, approved\."))).to_be_visible()


def test_claims_are_reviewed_with_fast_keys_an_undo_survives_a_reload(studio: Server, page: Page) -> None:
    """Three keys pressed at once save three reviews (none lost, none doubled); Backspace
    withdraws the last; a reload shows the two that stand."""
    main = page.get_by_test_id("stMain")
    _go(page, "Claim review")
    root = main.locator(".gs-root")
    expect(root).to_have_attribute("data-uid", re.compile(".+"))
    expect(main.get_by_text(re.compile(r"^0 of \d+ claims reviewed in this sample"))).to_be_visible()
    for key in ("1", "2", "3"):
        page.keyboard.press(key)
    expect(root).to_have_attribute("data-saved", "3")
    expect(root).to_have_attribute("data-pending", "0")
    page.keyboard.press("Backspace")
    expect(root.locator(".gs-counter")).to_contain_text("2 labeled")
    page.reload()
    idle(page)
    expect(main.get_by_text(re.compile(r"^2 of \d+ claims reviewed in this sample"))).to_be_visible()


def test_the_store_holds_what_the_pages_said(studio: Server, page: Page) -> None:
    studio.stop()
    with read_store(studio.db) as con:
        assert con.execute("SELECT short_answer, approved FROM current_reference_answers WHERE query_id = 'q003'"
                           ).fetchall() == [("one month", True)]
        rows = con.execute(
            "SELECT verdict FROM (SELECT verdict, row_number() OVER (PARTITION BY check_id, claim_no ORDER BY "
            "review_id DESC) AS rn FROM claim_reviews WHERE reviewer = 'local') t WHERE rn = 1 ORDER BY 1").fetchall()
        assert sorted(v for (v,) in rows) == ["contradicted", "supported", "withdrawn"]
