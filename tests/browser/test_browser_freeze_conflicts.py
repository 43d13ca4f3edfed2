"""Real-browser test of issue 37 item 9: no dead end before a freeze.

The CLI loads the demo; before the server starts, the store gets an annotator's grade 3 on a
passage of q005 (marked unanswerable, negative stratum) and a quote on q012 (also unanswerable).
Then, in chromium, in single-user local mode (the local user holds every role):

1. Versions: the freeze of ``golden.v1`` is refused, and the refusal names the Freeze conflicts
   page; the link under it opens that page;
2. Freeze conflicts lists both conflicts with who labelled what; the lead re-grades q005's
   passage to 1 with a reason (the list now holds one conflict), then marks q012 answerable
   with a stratum and a reason; the page says the freeze can proceed;
3. Versions: ``golden.v1`` freezes;
4. after the server stops, the store holds the lead's ``adjudicate`` event with the reason and
   q012's revision with its reason, and no JavaScript error occurred.

Screenshots: the Freeze conflicts page with its two conflicts
(``/tmp/browser_freeze_conflicts.png``), once cleared (``..._cleared.png``), and the Versions
page after the freeze (``..._done.png``), each taken while the server runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from golden_store.db.store import Store, utcnow
from golden_store.live import grade_state
from golden_store.live.evidence import EvidenceSpan, append_evidence
from tests.browser.test_browser import Server, _browser_page, _cli, _nav, _serve, idle, pick_option, read_store, store_location

SHOT = Path("/tmp/browser_freeze_conflicts.png")
SHOT_CLEARED = Path("/tmp/browser_freeze_conflicts_cleared.png")
SHOT_DONE = Path("/tmp/browser_freeze_conflicts_done.png")
REGRADE_REASON = "The passage is about annual leave, not the CEO's salary."
ANSWERABLE_REASON = "The quoted sentence does answer it: the question was mislabelled."


@pytest.fixture
def conflict_server(tmp_path: Path) -> Iterator[Server]:
    _cli(tmp_path, "demo", "--small")
    with Store.open(store_location()) as s:
        s.write(lambda cur: grade_state.append_tx(
            cur, query_id="q005", doc_id="annual-leave", start=0, end=40, op="grade", grade=3, actor="ann",
            created_at=utcnow(), doc_sha256=None, rubric_version=1))
        quote, doc, start, end, cs, ce = s.read_one(
            "SELECT quote, doc_id, start, \"end\", canonical_start, canonical_end FROM current_evidence "
            "WHERE match_kind = 'exact' ORDER BY query_id, evidence_id")
        append_evidence(s, [EvidenceSpan("q012", "e-on-q012", quote, doc, start, end, cs, ce, "exact", 100.0)],
                        actor="ann")
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def conflict_page(conflict_server: Server) -> Iterator[Page]:
    with _browser_page(conflict_server, None) as pg:
        yield pg


def _form(page: Page, button: str):
    return page.get_by_test_id("stMain").get_by_test_id("stForm").filter(
        has=page.get_by_role("button", name=button, exact=True))


def test_a_refused_freeze_is_cleared_from_the_app(conflict_server: Server, conflict_page: Page) -> None:
    page = conflict_page
    main = page.get_by_test_id("stMain")
    page.goto(conflict_server.url)
    idle(page)

    # 1. the freeze is refused, the refusal names the page, and the link opens it
    _nav(page, "Versions")
    page.get_by_label("Version name").fill("golden.v1")
    page.get_by_role("button", name="Freeze", exact=True).click()
    refusal = main.get_by_test_id("stAlert").filter(has_text="Freeze refused")
    expect(refusal).to_contain_text("Freeze conflicts page")
    link = main.get_by_role("link", name=re.compile(r"Open Freeze conflicts \(2 to fix\)"))
    expect(link).to_be_visible()
    link.click()
    expect(main.get_by_role("heading", level=1, name="Freeze conflicts")).to_be_visible()
    idle(page)

    # 2. both conflicts, with who graded or quoted; then the fixes
    expect(main.get_by_text("2 conflict(s) refuse a freeze")).to_be_visible()
    expect(main.get_by_text(re.compile(r"ann graded 3 \(fully answers\)"))).to_be_visible()
    expect(main.get_by_text(re.compile(r"ann quoted it as evidence"))).to_be_visible()
    page.screenshot(path=str(SHOT), full_page=True)

    regrade = _form(page, "Re-grade")
    expect(regrade).to_have_count(1)
    regrade.get_by_text("1: related, does not answer").click()
    regrade.get_by_label("Reason (required; recorded with the change)").fill(REGRADE_REASON)
    regrade.get_by_role("button", name="Re-grade").click()
    expect(main.get_by_test_id("stAlert").filter(has_text="Re-graded q005 · annual-leave [0:40]")).to_be_visible()
    expect(main.get_by_text("1 conflict(s) refuse a freeze")).to_be_visible()
    idle(page)

    answerable = _form(page, "Mark answerable")
    expect(answerable).to_have_count(1)  # q005's conflict is gone: only q012's form is left
    pick_option(page, answerable.get_by_role("combobox"), "lexical")
    answerable.get_by_label("Reason (required; recorded with the revision)").fill(ANSWERABLE_REASON)
    answerable.get_by_role("button", name="Mark answerable").click()
    expect(main.get_by_text("Nothing refuses a freeze: the freeze can proceed.")).to_be_visible()
    idle(page)
    page.screenshot(path=str(SHOT_CLEARED))

    # 3. the freeze goes through
    _nav(page, "Versions")
    page.get_by_label("Version name").fill("golden.v1")
    page.get_by_role("button", name="Freeze", exact=True).click()
    expect(main.get_by_test_id("stAlert").filter(has_text="Frozen golden.v1")).to_be_visible()
    assert (conflict_server.tmp / "versions" / "golden.v1" / "manifest.json").is_file()
    assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]
    idle(page)
    page.screenshot(path=str(SHOT_DONE))

    # 4. what the store holds: each fix with its author and reason
    conflict_server.stop()
    with read_store(conflict_server.db) as cur:
        assert cur.execute("SELECT query_id, doc_id, grade, actor, note FROM grade_events WHERE op = 'adjudicate'"
                           ).fetchall() == [("q005", "annual-leave", 1, "local", REGRADE_REASON)]
        assert cur.execute("SELECT answerable, stratum, actor, change_reason FROM query_revisions WHERE query_id = "
                           "'q012' ORDER BY event_id DESC LIMIT 1").fetchone() == (
            True, "lexical", "local", ANSWERABLE_REASON)
