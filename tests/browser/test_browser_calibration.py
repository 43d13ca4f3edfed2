"""Issue 29, H2 in a real browser (Chromium against `golden serve`'s app on the demo, single-
user local mode): a lead uploads the walkthrough's calibration file, whose judge_p is P(pass);
the page says which way judge_p must point, refuses the file with the column and its AUC
named and shows nothing green; ticking 'flip' gives the report, where a target missed on
the report split is a red box with its measured share. Screenshots: /tmp/browser_h2_*.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from sklearn.metrics import roc_auc_score

from tests.inverted_calibration import review_csv, review_frame
from tests.browser.test_browser import Server, _browser_page, _nav, demo_server, idle  # noqa: F401 (fixture)


@pytest.fixture
def tall_page(demo_server: Server) -> Iterator[Page]:  # noqa: F811
    with _browser_page(demo_server, None) as pg:
        pg.set_viewport_size({"width": 1400, "height": 2400})  # Streamlit's main container scrolls
        yield pg


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=f"/tmp/browser_h2_{name}.png", full_page=True)


def test_an_inverted_judge_p_is_refused_then_flipped_with_consent(demo_server: Server, tall_page: Page,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    page, main = tall_page, tall_page.get_by_test_id("stMain")
    raw = review_frame()
    auc = roc_auc_score(raw["human_label"] == "fail", raw["judge_p"])
    path = tmp_path / "review.csv"
    path.write_bytes(review_csv())
    page.goto(demo_server.url)
    expect(page.get_by_text("Single-user local mode")).to_be_visible()
    _nav(page, "Judge calibration")
    idle(page)
    expect(main.get_by_text("judge_p is read as the judge's probability that an item FAILS")).to_be_visible()
    main.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    refusal = (f"judge_p decreases with FAIL (AUC {auc:.2f} < 0.5): is it P(pass)? "
               "Tick 'flip' to use 1 − judge_p.")
    expect(main.get_by_test_id("stAlertContainer").filter(has_text=refusal)).to_be_visible()
    idle(page)
    expect(main.get_by_role("heading", name="2. Judge outputs (judge_p = probability the item FAILS: high = bad)")
           ).to_be_visible()
    expect(main.get_by_test_id("stAlertContentSuccess")).to_have_count(0)  # nothing green
    expect(main.get_by_test_id("stMetric")).to_have_count(0)  # no report from a column read backwards
    expect(main.get_by_role("button", name="Save this calibration")).to_have_count(0)
    expect(main.get_by_text("flip: use 1 − judge_p")).to_be_visible()  # the way out, offered, unticked
    expect(main.get_by_role("checkbox", name="flip: use 1 − judge_p", exact=False)).not_to_be_checked()
    _shot(page, "01_refused")

    main.get_by_text("flip: use 1 − judge_p").click()
    expect(main.get_by_text("judge_p flipped with your consent")).to_be_visible()
    idle(page)
    expect(main.get_by_test_id("stMetric").filter(has_text="ECE raw")).to_be_visible()
    expect(main.get_by_text("Band fitted on the fit split")).to_be_visible()
    # the default 2% target is missed on this report split: a red box with the measured share
    red = main.get_by_test_id("stAlertContentError").filter(has_text="against the target 0.02")
    expect(red.first).to_contain_text("Share of bad items auto-passed on the report split: ")
    expect(main.get_by_test_id("stAlertContentSuccess").filter(has_text="Rule 1")).to_have_count(0)
    _shot(page, "02_flipped_report")
    red.first.scroll_into_view_if_needed()
    page.screenshot(path="/tmp/browser_h2_03_missed_target.png")
    assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]
