"""Issue 29's newcomer findings that are browser behaviour, in Debian's chromium:

* **M10** Agreement is live: a lead watching Agreement → Labels for a round sees the figures
  appear while two annotators grade (written by the annotator layer from another process,
  on a PostgreSQL store a second process can write to), without pressing anything.
* **L1** A deep link to a page the person's roles do not open says which roles it needs,
  not "Page not found". **L3** Signed out, the sign-in page has no sidebar (it held a lone
  Refresh), and signing out still clears the sign-in cookie.
* **L6** Copying escaped corpus text out of the app leaves out the word joiners that the
  escaping puts in (what is shown is unchanged).

Needs ``chromium`` on PATH, as the other browser tests, and PostgreSQL for the first test.
"""

from __future__ import annotations

import re

from pathlib import Path

from playwright.sync_api import Page, expect

from annotator.labeling import judging, rounds
from annotator.people import identity
from golden_store.db.store import Store
from tests.browser.test_browser import _browser_page, _cli, _serve, idle, sign_in

PASSWORD = "a-password-1"
LENA_SHOWN = ":smile: Lena -> lead"  # a display name with a shortcode and an arrow: md_escape puts word joiners in
DOCS = ("vpn-troubleshooting", "sick-leave", "pension")

# the Agreement tab before two people graded an item (it names the round since issue 36, 7c)
NO_PAIR_YET = re.compile("No item has been graded by two annotators")


def _main(page: Page):
    return page.get_by_test_id("stMain")


def test_agreement_updates_while_annotators_grade_and_a_forbidden_link_names_the_role(tmp_path: Path,
                                                                                         pg_url: str) -> None:
    db = pg_url
    _cli(tmp_path, "demo", "--small", db=db)
    _cli(tmp_path, "users", "add", "admin", "--role", "admin", "--password-stdin", db=db, stdin=PASSWORD + "\n")
    for name, role in (("lena", "lead"), ("ann", "annotator"), ("bob", "annotator")):
        shown_as = ("--name", LENA_SHOWN) if name == "lena" else ()
        _cli(tmp_path, "users", "add", name, "--role", role, "--password-stdin", *shown_as, db=db,
             stdin=PASSWORD + "\n")
    run = tmp_path / "sys.run"
    run.write_text("".join(f"q{i:03d} Q0 {d} {r + 1} {3 - r} sys\n" for i in range(1, 3) for r, d in enumerate(DOCS)))
    _cli(tmp_path, "runs", "import", str(run), "--system", "sys", db=db)
    _cli(tmp_path, "pool", "build", "--depth", "3", db=db)
    with Store.open(db) as s:
        lena, ann, bob = (identity.get_user(s, n) for n in ("lena", "ann", "bob"))
        rid = rounds.start_calibration(s, lena, ["ann", "bob"], 4, 0)

    with _serve(tmp_path, db=db) as srv, _browser_page(srv, Path("/tmp/browser_newcomer.png")) as page:
        page.goto(f"{srv.url}/agreement")
        sign_in(page, "lena", PASSWORD, "lead")
        expect(_main(page).get_by_role("heading", name="Agreement")).to_be_visible()
        combo = _main(page).get_by_role("combobox", name="Labels")
        combo.click()
        page.get_by_role("option", name=re.compile(rf"^Round {rid}\b")).click()
        expect(_main(page).get_by_text(NO_PAIR_YET)).to_be_visible()

        # L6: the sidebar shows the name literally (word joiners keep Streamlit from making an
        # emoji and an arrow of it); copied out of the page it carries none of them
        name = page.get_by_test_id("stSidebar").get_by_test_id("stMarkdownContainer").filter(has_text="Lena")
        shown = name.inner_text()
        assert "\u2060" in shown and shown.replace("\u2060", "").strip() == LENA_SHOWN
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=srv.url)
        name.evaluate("el => { const r = document.createRange(); r.selectNodeContents(el); "
                      "const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }")
        page.keyboard.press("Control+c")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.strip() == LENA_SHOWN and "\u2060" not in copied

        # ann and bob grade the round's items (the annotator layer, another process); the lead
        # presses nothing
        with Store.open(db) as s:
            for who, grade in ((ann, 2), (bob, 2), (ann, 1), (bob, 0), (ann, 3), (bob, 3), (ann, 0), (bob, 1)):
                item = judging.next_item(s, who)
                assert item is not None
                judging.judge(s, who, item, "grade", grade)
        # 4 items: (2,2) (1,0) (3,3) (0,1) in some order per annotator; the figures follow
        expect(_main(page).get_by_text("items graded by two or more of 2 annotators")).to_be_visible(timeout=20_000)
        expect(_main(page).get_by_text(NO_PAIR_YET)).to_have_count(0)

        # L1: an annotator's deep link to Agreement names the roles it needs
        other = page.context.browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
        other.goto(f"{srv.url}/agreement")
        sign_in(other, "ann", PASSWORD, "annotator")
        expect(_main(other).get_by_text("The Agreement page needs the admin or lead role")).to_be_visible()
        expect(other.get_by_text("Page not found")).to_have_count(0)
        other.screenshot(path="/tmp/browser_newcomer_forbidden.png", full_page=True)
        # signing out clears the cookie (its element now sits in the page, not the sidebar): a
        # reload stays signed out, and the sign-in page has no sidebar (L3: a lone Refresh there)
        other.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
        expect(_main(other).get_by_role("heading", name="Sign in")).to_be_visible()
        idle(other)
        other.reload()
        expect(_main(other).get_by_role("heading", name="Sign in")).to_be_visible()
        idle(other)
        expect(other.get_by_test_id("stSidebar")).to_have_count(0)
        expect(other.get_by_role("button", name="Refresh")).to_have_count(0)
        other.context.close()
        idle(page)
        assert not page.errors  # type: ignore[attr-defined]
