"""Double authoring of reference answers in Chromium, as the people of a round do it: a lead opens
a round over two questions for two annotators; ann drafts, refreshes (the page comes back on the
round with her draft), and submits an answer holding markup; bob, in a browser of his own, sees
that she submitted but never what, and submits a different answer; a second tab of ann's, left
open on her form, cannot submit twice; the lead sees their agreement and both answers side by
side (markup as literal text, nothing run), accepts bob's answer for one question and writes a
merged one with a note for the other; the approved references then show on the page and in
``golden references show``. Each person has their own browser context (own cookies).

Reuses tests/browser/test_browser.py's server and page helpers; needs ``chromium`` on PATH."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from annotator.demo import load_demo
from annotator.people import identity
from golden_store.db.store import Store
from tests.browser.test_browser import (CHROMIUM_ARGS, Server, _nav, _serve, all_text, idle, read_store,
                                        sign_in)
from tests.conftest import module_store

TIMEOUT_MS = 90_000  # a loaded machine: two browsers and a server on two shared cores
PASSWORD = "0123456789-pw"
ROLES = {"admin": "admin", "lead": "lead", "ann": "annotator", "bob": "annotator"}
ROUNDS = "Double-authoring rounds"
MARKUP = "<script>window.__xss=1</script> **bold** <img src=x onerror=\"window.__xss=2\">"
ANN_SHORT, ANN_FULL = "one month", f"One month of notice; the laptop back within five working days. {MARKUP}"
BOB_SHORT, BOB_FULL = "one month's notice", "Give one month; IT needs the laptop in five working days."
ANN_Q015, BOB_Q015, MERGED_Q015 = "30 minutes", "half an hour", "30 minutes after the fifth rejected push"
MERGE_NOTE = "the minutes as the policy writes them, and when they start"


@pytest.fixture(scope="module")
def studio(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("reference-rounds")
    with module_store(request, tmp) as db:
        with Store.open(db) as s:
            admin = identity.create_user(s, None, "admin", ["admin"], password=PASSWORD)
            for name in ("lead", "ann", "bob"):
                identity.create_user(s, admin, name, [ROLES[name]], password=PASSWORD)
            load_demo(s, admin)
        with _serve(tmp, db=db) as srv:
            yield srv


@pytest.fixture(scope="module")
def browser(studio: Server) -> Iterator[Browser]:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium not found on PATH: install Debian's chromium: apt-get install chromium")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


_pages: dict[str, Page] = {}


def _person(browser: Browser, studio: Server, name: str) -> Page:
    """``name``'s tab (a browser context of their own, signed in), on the rounds section."""
    if name not in _pages:
        ctx = browser.new_context(viewport={"width": 1400, "height": 2400})  # tall: the forms' dropdowns open on screen
        pg = ctx.new_page()
        pg.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        pg.errors = errors  # type: ignore[attr-defined]
        pg.goto(studio.url)
        sign_in(pg, name, PASSWORD, ROLES[name])
        _pages[name] = pg
    else:  # the tab as the person comes back to it: reloaded (its address keeps the section)
        _pages[name].reload()
    pg = _pages[name]
    pg.bring_to_front()
    _rounds(pg)
    return pg


def _rounds(pg: Page) -> None:
    main = pg.get_by_test_id("stMain")
    if not main.get_by_role("heading", name="Reference answers", level=1).count():
        _nav(pg, "Reference answers")
    idle(pg)
    main.get_by_role("radiogroup", name="Section").get_by_text(ROUNDS, exact=True).click()
    expect(main.get_by_role("heading", name=ROUNDS)).to_be_visible()
    idle(pg)


def _shot(pg: Page, studio: Server, name: str) -> None:
    pg.screenshot(path=str(studio.tmp / name))


def _flash(pg: Page, pattern: str) -> None:
    expect(pg.get_by_test_id("stMain").get_by_test_id("stAlert").filter(has_text=re.compile(pattern))).to_be_visible()
    idle(pg)


def _pick_question(pg: Page, qid: str) -> None:
    pg.bring_to_front()  # a dropdown opens in the focused window only
    main = pg.get_by_test_id("stMain")
    combo = main.get_by_test_id("stSelectbox").filter(has_text="Question").get_by_role("combobox")
    combo.click()
    pg.get_by_role("option", name=re.compile(rf"^{qid} · ")).click()
    expect(main.get_by_text(re.compile(rf"^{qid} · (waiting|agree|DISAGREE|adjudicated)"))).to_be_visible()
    idle(pg)


def _write(pg: Page, short: str, full: str) -> None:
    main = pg.get_by_test_id("stMain")
    main.get_by_role("textbox", name="Short answer").fill(short)
    main.get_by_role("textbox", name="Full answer").fill(full)
    evidence = main.get_by_test_id("stMultiSelect").filter(has_text="Evidence it rests on")
    evidence.get_by_role("combobox").click()
    pg.get_by_role("option").filter(has_not_text="Select all").first.click()
    pg.keyboard.press("Escape")
    expect(evidence.get_by_role("button", name=re.compile(r"^Remove "))).to_have_count(1)


def test_a_lead_opens_a_round_for_two_annotators(browser: Browser, studio: Server) -> None:
    pg = _person(browser, studio, "lead")
    main = pg.get_by_test_id("stMain")
    main.get_by_text("Open a round", exact=True).click()
    expect(main.get_by_role("button", name="Open the round")).to_be_visible()
    _shot(pg, studio, "lead_open_form.png")
    for label, options in (("Authors", ("ann", "bob")), ("Questions", ("q003", "q015"))):
        box = main.get_by_test_id("stMultiSelect").filter(has_text=label)
        for o in options:
            box.get_by_role("combobox").click()  # its input: the middle of the box may be a chip
            pg.keyboard.type(o)  # the list is virtualised: typing filters it down to the option
            pg.get_by_role("option", name=re.compile(rf"^{o}( - |$)")).click()
            pg.keyboard.press("Escape")  # closed, so the next click opens it again
            expect(box.get_by_role("button", name=re.compile(rf"^Remove {o}"))).to_be_visible()
    main.get_by_role("button", name="Open the round").click()
    _flash(pg, r"Opened reference round ref\d+: 2 question\(s\) for ann, bob\.")
    expect(main.get_by_text("ann: not started · bob: not started")).to_be_visible()


def test_a_draft_survives_a_refresh_and_an_empty_submit_says_why(browser: Browser, studio: Server) -> None:
    """Fails without the section, round and question in the page's address: the refresh
    landed on the write section and the draft looked lost."""
    pg = _person(browser, studio, "ann")
    main = pg.get_by_test_id("stMain")
    expect(main.get_by_text(re.compile(r"2 question\(s\) wait for your answer: q003 \(ref\d+\), q015"))).to_be_visible()
    _pick_question(pg, "q003")
    main.get_by_role("button", name="Submit (final)").click()
    expect(main.get_by_test_id("stAlert").filter(
        has_text="q003: a reference answer needs a short answer, a full answer or both.")).to_be_visible()
    expect(main.get_by_text("ann: not started · bob: not started")).to_be_visible()  # nothing stored
    _write(pg, ANN_SHORT, ANN_FULL)
    main.get_by_role("button", name="Save draft").click()
    _flash(pg, "Saved your draft of q003")
    pg.reload()
    expect(main.get_by_role("heading", name=ROUNDS)).to_be_visible()
    idle(pg)
    expect(main.get_by_text(re.compile(r"^q003 · waiting"))).to_be_visible()
    expect(main.get_by_role("textbox", name="Short answer")).to_have_value(ANN_SHORT)
    expect(main.get_by_role("textbox", name="Full answer")).to_have_value(ANN_FULL)
    _shot(pg, studio, "ann_draft_after_refresh.png")


def test_the_authors_are_blind_to_each_other_until_they_submit(browser: Browser, studio: Server) -> None:
    ann = _person(browser, studio, "ann")
    ann_main = ann.get_by_test_id("stMain")
    # a second tab of ann's, open on the same form
    tab = ann.context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(ann.url)
    expect(tab.get_by_test_id("stMain").get_by_role("textbox", name="Short answer")).to_have_value(ANN_SHORT)
    idle(tab)
    ann_main.get_by_role("button", name="Submit (final)").click()
    _flash(ann, "Submitted q003: the other authors' answers are shown once they submit.")
    # the stale tab cannot submit a second time
    tab.get_by_test_id("stMain").get_by_role("button", name="Submit (final)").click()
    expect(tab.get_by_test_id("stMain").get_by_test_id("stAlert").filter(
        has_text="You already submitted your answer to q003")).to_be_visible()
    tab.close()

    bob = _person(browser, studio, "bob")
    main = bob.get_by_test_id("stMain")
    _pick_question(bob, "q003")
    expect(main.get_by_text("ann: submitted · bob: not started")).to_be_visible()
    expect(main.get_by_text("1 submitted; their answers are not shown to you yet.")).to_be_visible()
    shown = all_text(bob)
    assert "laptop back within five working days" not in shown and ANN_SHORT not in shown.replace(BOB_SHORT, "")
    _shot(bob, studio, "bob_blind.png")
    _write(bob, BOB_SHORT, BOB_FULL)
    main.get_by_role("button", name="Submit (final)").click()
    _flash(bob, "Submitted q003")
    # now he reads hers, as literal text: nothing of the markup ran or rendered
    expect(main.get_by_text(ANN_FULL, exact=True)).to_be_visible()
    assert bob.evaluate("() => window.__xss") is None
    assert main.locator("strong", has_text="bold").count() == 0
    assert not bob.errors, bob.errors  # type: ignore[attr-defined]
    # q015: both submit, for the lead's merge
    for who, short in ((ann, ANN_Q015), (bob, BOB_Q015)):
        _pick_question(who, "q015")
        _write(who, short, f"{short}, then log in again.")
        who.get_by_test_id("stMain").get_by_role("button", name="Submit (final)").click()
        _flash(who, "Submitted q015")


def test_the_lead_sees_agreement_side_by_side_and_adjudicates(browser: Browser, studio: Server) -> None:
    pg = _person(browser, studio, "lead")
    main = pg.get_by_test_id("stMain")
    expect(main.locator("p").filter(has_text=re.compile(
        r"^Agreement over 2 question\(s\) with two or more submissions you may read, 2 of them disagreeing\.$"))
    ).to_be_visible()
    _pick_question(pg, "q003")
    expect(main.get_by_text(re.compile(r"^q003 · DISAGREE"))).to_be_visible()
    expect(main.get_by_text(re.compile(r"^Short answer EM 0\.000, token F1 0\.\d+"))).to_be_visible()
    for text in (ANN_FULL, BOB_FULL, ANN_SHORT, BOB_SHORT):  # both answers, as literal text
        expect(main.get_by_text(text, exact=True)).to_be_visible()
    assert pg.evaluate("() => window.__xss") is None
    _shot(pg, studio, "lead_side_by_side.png")
    main.get_by_role("radiogroup", name="Decision").get_by_text("accept bob", exact=True).click()
    idle(pg)
    main.get_by_role("textbox", name="Why (kept with the decision)").fill("the words people search for")
    main.get_by_role("button", name="Adjudicate").click()
    _flash(pg, r"Adjudicated q003: revision \d+ is its approved reference answer\.")
    expect(main.get_by_text(re.compile(r"Adjudicated by lead: accepted bob's answer"))).to_be_visible()

    _pick_question(pg, "q015")
    main.get_by_role("radiogroup", name="Decision").get_by_text("write a merged answer", exact=True).click()
    idle(pg)
    form = main.get_by_test_id("stForm").filter(has_text="Why (kept with the decision)")
    form.get_by_role("textbox", name="Short answer").fill(MERGED_Q015)
    form.get_by_role("textbox", name="Why (kept with the decision)").fill(MERGE_NOTE)
    form.get_by_role("button", name="Adjudicate").click()
    _flash(pg, r"Adjudicated q015: revision \d+")
    expect(main.get_by_text(re.compile(rf"merged answer \(revision \d+\)\. Why: {MERGE_NOTE}"))).to_be_visible()
    _shot(pg, studio, "lead_adjudicated.png")

    # the write section shows the approved reference of each
    main.get_by_role("radiogroup", name="Section").get_by_text("Write and approve", exact=True).click()
    expect(main.get_by_role("heading", name=ROUNDS)).to_have_count(0)  # the rounds section's pickers gone
    idle(pg)
    for qid, short in (("q003", BOB_SHORT), ("q015", MERGED_Q015)):
        combo = main.get_by_role("combobox", name="Question")
        combo.click()
        pg.keyboard.type(qid)
        pg.get_by_role("option", name=re.compile(rf"^{qid} - ")).click()
        expect(main.get_by_text(re.compile(r"^Revision \d+ by lead, approved\."))).to_be_visible()
        expect(main.get_by_role("textbox", name="Short answer")).to_have_value(short)
        idle(pg)
    assert not pg.errors, pg.errors  # type: ignore[attr-defined]


def test_the_cli_and_the_store_hold_the_adjudicated_references(studio: Server) -> None:
    for pg in _pages.values():
        pg.context.close()
    _pages.clear()
    studio.stop()
    shown = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", str(studio.db), "references", "show",
                            "q003"], cwd=studio.tmp, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert BOB_SHORT in shown.stdout and "approved" in shown.stdout, shown.stdout
    with read_store(studio.db) as con:
        rows = con.execute("SELECT query_id, short_answer, approved, actor FROM current_reference_answers "
                           "WHERE query_id IN ('q003', 'q015') ORDER BY 1").fetchall()
        assert rows == [("q003", BOB_SHORT, True, "lead"), ("q015", MERGED_Q015, True, "lead")]
        decided = con.execute("SELECT query_id, decision, accepted_author, note FROM reference_round_adjudications "
                              "WHERE query_id IN ('q003', 'q015') ORDER BY 1").fetchall()
        assert decided == [("q003", "accept", "bob", "the words people search for"),
                           ("q015", "merge", None, MERGE_NOTE)]
        subs = con.execute("SELECT author, count(*) FROM reference_round_events WHERE op = 'submit' AND query_id = "
                           "'q003' GROUP BY 1 ORDER BY 1").fetchall()
        assert subs == [("ann", 1), ("bob", 1)]  # the second tab's submit wrote nothing
    for name in ("ann_draft_after_refresh.png", "bob_blind.png", "lead_side_by_side.png", "lead_adjudicated.png"):
        if (studio.tmp / name).exists():
            shutil.copyfile(studio.tmp / name, Path("/tmp") / f"refrounds_{name}")
