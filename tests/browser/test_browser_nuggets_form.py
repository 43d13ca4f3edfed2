"""Issue 29 in a real browser (Chromium, `golden serve`'s app on the demo):

* M8: three nuggets added in a row on the Nuggets page: after each save the form shows empty
  fields and a Position at the end of the list, so they are stored in the order written
  (the old form kept the previous text and quote, and Position 2 put the third nugget second);
  the form stays open between saves.
* M7: the History shows its events, counted in words above the table.
* M12: Versions -> Diff lists the nuggets approved since the first version.

Screenshots: /tmp/browser_issue29_nuggets_*.png."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_browser import (Server, _browser_page, _serve, fill_committed, idle, pick_option, read_store,
                                 store_location)

Q3 = [("Under five years: one month", "must give one month of notice"),
      ("Five years or more: two months", "must give two months"),
      ("Notice applies after probation", "After probation")]


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[Server]:
    db = store_location()
    for args in (["demo", "--small"], ["freeze", "first"]):
        r = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", str(db), *args], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"golden {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def demo_page(demo_server: Server) -> Iterator[Page]:
    with _browser_page(demo_server, None) as pg:
        pg.set_viewport_size({"width": 1400, "height": 2400})  # Streamlit's main container scrolls
        yield pg


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=f"/tmp/browser_issue29_nuggets_{name}.png", full_page=True)


def test_nuggets_added_in_a_row_keep_their_order_history_and_diff(demo_server: Server, demo_page: Page) -> None:
    page, main = demo_page, demo_page.get_by_test_id("stMain")
    page.goto(f"{demo_server.url}/nuggets")
    idle(page)
    pick_option(page, main.get_by_role("combobox", name=re.compile("^Question")), "q003", name=re.compile(r"^q003 "))
    box = main.get_by_test_id("stExpander").filter(has_text="Edit one nugget, or add one")
    text = box.get_by_label("Nugget (1-12 words)")
    quote = box.get_by_label("Supporting quote (verbatim from the evidence; optional)")
    position = box.get_by_test_id("stNumberInputField")
    for k, (nugget, supporting) in enumerate(Q3, 1):
        idle(page)
        # empty, and appended at the end of the list, whatever the last save held
        expect(text).to_have_value("")
        expect(quote).to_have_value("")
        expect(position).to_have_value(str(k))
        fill_committed(page, text, nugget)
        fill_committed(page, quote, supporting)
        box.get_by_role("button", name="Add nugget").click()
        expect(page.get_by_test_id("stAlert").filter(has_text="Saved: 1 added, 0 edited.")).to_be_visible()
    idle(page)
    expect(text).to_have_value("")
    expect(position).to_have_value("4")
    _shot(page, "added")
    main.get_by_role("button", name="Approve the list").click()
    expect(page.get_by_test_id("stAlert").filter(has_text="Approved 3 nugget(s) of q003")).to_be_visible()
    idle(page)
    history = main.get_by_test_id("stExpander").filter(has_text="History (what the model proposed")
    history.locator("summary").first.click()
    expect(history.get_by_text("6 event(s) on q003: 3 add, 3 approve.")).to_be_visible()
    expect(history.get_by_test_id("stDataFrame")).to_be_visible()
    expect(history.get_by_text("No nugget events yet.")).to_have_count(0)
    _shot(page, "history")

    # M12: freeze after the approval, then Versions -> Diff from the first version
    page.goto(f"{demo_server.url}/versions")
    idle(page)
    main.get_by_label("Version name").fill("second")
    main.get_by_role("button", name="Freeze").click()
    expect(page.get_by_test_id("stAlert").filter(has_text="Frozen second")).to_be_visible()
    idle(page)
    main.get_by_role("tab", name="Diff").click()
    pick_option(page, main.get_by_role("combobox", name="From"), "first")
    pick_option(page, main.get_by_role("combobox", name="To"), "second")
    main.get_by_role("button", name="Diff", exact=True).click()
    idle(page)
    code = main.get_by_test_id("stCode").filter(has_text="nuggets (approved)")
    expect(code).to_contain_text("nuggets (approved): +3 -0 ~0")
    expect(code).to_contain_text("+ q003 n1 [vital] 'Under five years: one month' "
                                 "(quote: 'must give one month of notice')")
    expect(main.get_by_text("Nuggets (approved): 3 change(s) from first to second.")).to_be_visible()
    _shot(page, "diff")
    assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]

    demo_server.stop()
    with read_store(demo_server.db) as con:
        rows = con.execute("SELECT position, text, quote, approved FROM current_nuggets WHERE query_id = 'q003' "
                           "ORDER BY position").fetchall()
    assert rows == [(k, nugget, supporting, True) for k, (nugget, supporting) in enumerate(Q3, 1)]
