"""The Evidence page in a real browser (chromium) on the demo (`golden demo`), single-user
local mode: issue 29's review findings M1, M3, M4, M5 and L8.

* M3: with unsent text in the quote box (typed, focus still in it), one click on "Judge" in
  the sidebar lands on Judge;
* M4: the question is in the URL (``?q=q003``): Back after leaving, a refresh and a pasted
  link reopen it; an unknown id says so and falls back to the first question;
* M1 + M5 + L8: searching ``manager before 10:00`` lists sick-leave (which holds the phrase)
  first; the review's misspelt quote resolves fuzzily to the whole sentence with its period,
  the differences show without Markdown tildes, and the saved quote is the document's text
  with what was typed kept beside it; the document viewer spans the page's width.

Screenshots: /tmp/browser_evidence_*.png."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.test_browser import Server, _nav, demo_page, demo_server, idle, pick_option, read_store  # noqa: F401

SHOTS = Path("/tmp")
QUOTE_LABEL = "Paste or type the exact passage that answers the question"
TYPO_QUOTE = ("A mesage in the team channel alone is not enough, because you manager may be on leave and the "
              "absence would go unrecorded.")
CORPUS_SENTENCE = ("A message in the team channel alone is not enough, because your manager may be on leave and the "
                   "absence would go unrecorded.")
Q003 = "I'm resigning after three years here."


def _heading(page: Page, name: str | re.Pattern):
    return page.get_by_test_id("stMain").get_by_role("heading", level=1, name=name, exact=isinstance(name, str))


def _question(page: Page, text: str):
    return page.get_by_test_id("stMain").get_by_role("heading", name=re.compile("^" + re.escape(text)))


def test_a_sidebar_click_leaves_evidence_while_a_box_has_unsent_text(demo_server: Server, demo_page: Page) -> None:
    page, server = demo_page, demo_server
    page.goto(server.url)
    for label in (QUOTE_LABEL, "Search the corpus"):
        _nav(page, "Evidence")
        idle(page)
        box = page.get_by_label(label)
        box.click()
        page.keyboard.type("the first morning of absence")  # still focused: nothing sent yet
        expect(box).to_be_focused()
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Judge", exact=True).click()
        expect(_heading(page, "Judge")).to_be_visible()
        idle(page)
        # and it stays there (the review saw the URL flip to /judge and back to /evidence)
        expect(_heading(page, "Judge")).to_be_visible()
        expect(_heading(page, "Evidence")).to_have_count(0)
        assert re.search(r"/judge$", page.url), (label, page.url)
    page.screenshot(path=str(SHOTS / "browser_evidence_sidebar_click.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_the_question_is_in_the_url_for_back_refresh_and_links(demo_server: Server, demo_page: Page) -> None:
    page, server = demo_page, demo_server
    page.goto(server.url)
    _nav(page, "Evidence")
    combo = page.get_by_test_id("stSelectbox").filter(has_text="Question (those without quotes first)") \
        .get_by_role("combobox")
    pick_option(page, combo, "q003", re.compile(r"^. q003 · "))
    expect(_question(page, Q003)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/evidence\?q=q003$"))

    # leave for Judge, then the browser's Back: q003 again
    _nav(page, "Judge")
    page.go_back()
    expect(_heading(page, "Evidence")).to_be_visible()
    expect(_question(page, Q003)).to_be_visible()
    idle(page)
    expect(combo).to_have_value(re.compile(r"q003"))

    # a refresh keeps it
    page.reload()
    expect(_question(page, Q003)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/evidence\?q=q003$"))

    # a link pasted into a fresh tab opens it
    other = page.context.new_page()
    other.goto(f"{server.url}/evidence?q=q003")
    expect(_question(other, Q003)).to_be_visible()
    other.close()

    # an unknown id: said, and the first question of the queue instead
    page.goto(f"{server.url}/evidence?q=q999")
    expect(page.get_by_test_id("stAlert").filter(
        has_text="There is no answerable question q999 (from the link)")).to_be_visible()
    idle(page)
    expect(page).to_have_url(re.compile(r"/evidence\?q=q0\d\d$"))
    page.screenshot(path=str(SHOTS / "browser_evidence_url.png"))
    assert not page.errors, page.errors  # type: ignore[attr-defined]


def test_phrase_search_fuzzy_quote_saved_as_the_document_text_and_a_wide_viewer(demo_server: Server,
                                                                               demo_page: Page) -> None:
    page, server = demo_page, demo_server
    main = page.get_by_test_id("stMain")
    page.goto(f"{server.url}/evidence?q=q002")
    expect(_question(page, "Woke up feeling awful")).to_be_visible()
    idle(page)

    # M5: the document holding the phrase comes first
    search = page.get_by_label("Search the corpus")
    search.fill("manager before 10:00")
    search.press("Enter")
    first = main.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"· \d+ hits · score")).first
    expect(first).to_contain_text("sick-leave · exact phrase")

    # M1: the review's misspelt quote
    page.get_by_label(QUOTE_LABEL).fill(TYPO_QUOTE)
    page.get_by_role("button", name="Find quote").click()
    expect(page.get_by_test_id("stAlert").filter(has_text=re.compile(r"Fuzzy match .* in sick-leave \[307:431\]"))) \
        .to_be_visible()
    idle(page)
    assert "~~" not in main.inner_text()
    diff = main.get_by_test_id("stMarkdownContainer").filter(has_text=re.compile(r"^A me.?s.?sage in the team"))
    expect(diff.locator("span.stMarkdownColoredBackground")).to_have_count(2)  # the "s" and the "r"
    expect(main.get_by_test_id("stText").filter(has_text=CORPUS_SENTENCE)).to_have_count(1)
    expect(main.get_by_text(f"You typed: {TYPO_QUOTE}")).to_be_visible()
    page.screenshot(path=str(SHOTS / "browser_evidence_fuzzy.png"), full_page=True)
    page.get_by_role("button", name=re.compile(r"^Save (quote|anyway)$")).click()
    expect(page.get_by_test_id("stAlert").filter(has_text=re.compile(r"Saved quote \S+ for q002"))).to_be_visible()
    expect(main.get_by_text(f"Typed as: {TYPO_QUOTE}")).to_be_visible()

    # L8: a document read here spans the page's width
    _select_hint(page, "sick-leave")
    page.get_by_text("Selecting it in the document").click()
    viewer = main.locator(".gdv-text")
    expect(viewer).to_contain_text("go unrecorded.")
    expect(viewer).to_be_in_viewport()  # brought into view below the search results
    box, page_box = viewer.bounding_box(), main.get_by_test_id("stHorizontalBlock").first.bounding_box()
    assert box is not None and page_box is not None
    assert box["width"] >= 0.95 * page_box["width"], (box, page_box)
    page.screenshot(path=str(SHOTS / "browser_evidence_viewer.png"), full_page=True)
    assert not page.errors, page.errors  # type: ignore[attr-defined]

    server.stop()
    with read_store(server.db) as con:
        quote, start, end, kind, note = con.execute(
            "SELECT quote, start, \"end\", match_kind, note FROM current_evidence WHERE query_id = 'q002' "
            "AND actor = 'local'").fetchone()
    assert (quote, start, end, kind) == (CORPUS_SENTENCE, 307, 431, "fuzzy")
    assert note == "typed: " + json.dumps(TYPO_QUOTE)


def _select_hint(page: Page, doc_id: str) -> None:
    combo = page.get_by_test_id("stSelectbox").filter(has_text="Look for the quote in").get_by_role("combobox")
    pick_option(page, combo, doc_id)
