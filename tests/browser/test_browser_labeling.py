"""Real-browser tests of the labeling loop: every key lands on the item on screen, at once,
and is never lost or doubled (issue: "The labeling loop").

The CLI prepares a store in accounts mode before the server starts (DuckDB lets one process
open the file): the demo, accounts admin / lead / ann / bob (annotators) / rev (reviewer),
a run over every demo question with 3 passages each (a pool of 120 items) and 6 failed
transcripts. Then, in Debian's chromium through Playwright:

* Repro A, two tabs: ann opens Judge in two tabs (the second tab is signed in by the session
  cookie: no second sign-in); both paint the same passage; "3" in tab 2, then "0" in tab 1:
  both grades land on that passage, never on another one.
* Repro B, a round started meanwhile: ann looks at a passage; the lead (another browser)
  starts a calibration round for ann and bob; ann's "2" grades the passage she looked at
  (never a round item she did not see); her next passages are the round's.
* Transcripts, a double press: the reviewer draws a sample and presses "1" twice; each
  verdict lands on the transcript painted when its key was pressed; no earlier verdict is
  overwritten.
* A burst: 10 keys 50 ms apart record exactly 10 grades on 10 distinct passages, in the
  order they were painted.
* A server killed (SIGKILL) mid-burst and restarted on the same port: the keys pressed while
  it was down are painted from the queue, kept, re-sent after the reconnect; the store then
  holds each grade exactly once.
* Refresh, deep links and undo: a refresh keeps ann signed in on Judge; a new tab opened on
  /judge lands there; a browser without the cookie is asked to sign in and then lands on
  /judge; "z" undoes the last grade (a retract event) and paints that passage again.

Needs ``chromium`` on PATH (installed by ``make test``).
"""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from golden_store.live.transcripts import parse_item_key
from tests.browser.test_browser import read_store, store_location, sign_in, Server, _browser_page, _cli, _nav, _serve, idle, pick_option, shown_uid, surface

PASSWORDS = {"admin": "admin-password-1", "lead": "lead-password-1", "ann": "ann-password-1",
             "bob": "bob-password-1", "rev": "rev-password-1"}
ROLES = {"admin": "admin", "lead": "lead", "ann": "annotator", "bob": "annotator", "rev": "reviewer"}
DOCS = ("vpn-troubleshooting", "sick-leave", "pension")


def _add_user(tmp_path: Path, name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "annotator.cli", "--db", store_location(), "users", "add", name,
         "--role", ROLES[name], "--password-stdin"],
        input=PASSWORDS[name] + "\n", cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"golden users add {name} failed:\n{done.stdout}\n{done.stderr}"


def _transcript(qid: str) -> dict:
    return {"evaluation_id": "run-1", "query_id": qid, "trial": 0, "passed": False, "source": "eval_run",
            "metrics": {"recall@10": 0.0},
            "transcript": {"question": f"Transcript question for {qid}",
                           "retrieved": [{"doc_id": "pension", "text": f"A retrieved passage for {qid}."}],
                           "answer": f"An answer about {qid}.", "judge": {"verdict": "fail", "justification": "no"}}}


def _prepare(tmp_path: Path) -> None:
    _cli(tmp_path, "demo", "--small")
    for name in ("admin", "lead", "ann", "bob", "rev"):
        _add_user(tmp_path, name)
    qids = [f"q{i:03d}" for i in range(1, 41)]
    run = tmp_path / "sys.run"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {3 - i} sys\n" for q in qids for i, d in enumerate(DOCS)))
    _cli(tmp_path, "runs", "import", str(run), "--system", "sys")
    _cli(tmp_path, "pool", "build", "--depth", "3")
    tr = tmp_path / "transcripts.jsonl"
    tr.write_text("".join(json.dumps(_transcript(q)) + "\n" for q in qids[:6]))
    _cli(tmp_path, "transcripts", "import", str(tr))


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[Server]:
    _prepare(tmp_path)
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def team_page(team_server: Server) -> Iterator[Page]:
    with _browser_page(team_server, Path("/tmp/browser_labeling.png")) as pg:
        yield pg


def _sign_in(page: Page, name: str) -> None:
    sign_in(page, name, PASSWORDS[name], ROLES[name])


def _open_judge(page: Page, url: str) -> None:
    page.goto(f"{url}/judge")
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Judge")).to_be_visible()
    expect(surface(page)).to_have_attribute("data-uid", re.compile(r".+"))


def _item(uid: str) -> tuple:
    d = json.loads(uid)
    return d["query_id"], d["doc_id"], d["start"], d["end"]


def _grades(server: Server, actor: str) -> list[tuple]:
    """The actor's judging events, read after the server has let go of the store."""
    server.stop()
    with read_store(server.db) as con:
        return con.execute("SELECT query_id, doc_id, start, \"end\", op, grade FROM grade_events WHERE actor = ? "
                           "ORDER BY event_id", [actor]).fetchall()


def _press_burst(page: Page, keys: str, gap_s: float = 0.05) -> list[str]:
    """Press ``keys`` ``gap_s`` apart; returns the item painted when each key went down."""
    painted = []
    for k in keys:
        t0 = time.monotonic()
        painted.append(shown_uid(page))
        page.keyboard.press(k)
        time.sleep(max(0.0, gap_s - (time.monotonic() - t0)))
    return painted


def test_repro_a_two_tabs_grade_the_passage_each_shows(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    tab2 = page.context.new_page()  # same browser: the session cookie signs it in
    _open_judge(tab2, server.url)
    shown = shown_uid(page)
    assert shown_uid(tab2) == shown
    tab2.keyboard.press("3")
    expect(surface(tab2)).to_have_attribute("data-saved", "1")
    page.keyboard.press("0")
    expect(surface(page)).to_have_attribute("data-saved", "1")
    assert not page.errors  # type: ignore[attr-defined]
    assert _grades(server, "ann") == [(*_item(shown), "grade", 3), (*_item(shown), "grade", 0)]


def test_a_second_tab_drops_what_the_first_labeled_and_never_swaps_its_item(team_server: Server,
                                                                           team_page: Page) -> None:
    """Two tabs of one person: what tab 1 grades leaves tab 2's queue at once (no waiting for
    the server), but the item tab 2 shows stays on screen, saying it was graded in the other
    tab; a key there grades that item again, and tab 2 then paints none of tab 1's items."""
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    tab2 = page.context.new_page()
    _open_judge(tab2, server.url)
    first = shown_uid(tab2)
    assert shown_uid(page) == first
    graded_in_1 = _press_burst(page, "210", gap_s=0.2)
    expect(surface(page)).to_have_attribute("data-saved", "3")
    assert graded_in_1[0] == first and len(set(graded_in_1)) == 3

    tab2.bring_to_front()
    expect(surface(tab2).locator(".gs-banner")).to_have_text(re.compile(r"labeled this item in another tab"))
    assert shown_uid(tab2) == first  # never swapped under the person's finger
    tab2.keyboard.press("3")
    expect(surface(tab2)).not_to_have_attribute("data-uid", first)
    expect(surface(tab2)).to_have_attribute("data-saved", "1")
    assert shown_uid(tab2) not in graded_in_1  # tab 1's items left tab 2's queue
    assert not page.errors  # type: ignore[attr-defined]
    expected = [(*_item(u), "grade", int(k)) for u, k in zip(graded_in_1, "210")] + [(*_item(first), "grade", 3)]
    assert _grades(server, "ann") == expected


def test_repro_b_a_round_started_meanwhile_never_takes_the_key(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    looked_at = shown_uid(page)

    lead_ctx = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    lead = lead_ctx.new_page()
    lead.goto(server.url)
    _sign_in(lead, "lead")
    _nav(lead, "Agreement")
    main = lead.get_by_test_id("stMain")
    main.get_by_role("tab", name="Rounds").click()
    idle(lead)
    form = main.get_by_test_id("stForm").filter(has_text="Start a calibration round")
    form.get_by_role("combobox").first.click()
    lead.get_by_role("option", name="ann").click()
    form.get_by_role("combobox").first.click()
    lead.get_by_role("option", name="bob").click()
    lead.keyboard.press("Escape")  # close the option list
    form.get_by_role("button", name="Start calibration round").click()
    expect(main.get_by_text("Round")).not_to_have_count(0)
    idle(lead)
    lead_ctx.close()

    # ann has not reloaded: her key grades the passage on her screen
    assert shown_uid(page) == looked_at
    page.keyboard.press("2")
    root = surface(page)
    expect(root).to_have_attribute("data-pending", "0")
    expect(root).to_have_attribute("data-saved", "1")
    # and what comes next is the round's (the queue was topped up with her round items)
    expect(root.locator(".gs-counter")).to_contain_text("left of")
    server.stop()
    with read_store(server.db) as con:
        rows = con.execute("SELECT query_id, doc_id, start, \"end\", op, grade FROM grade_events "
                           "WHERE actor = 'ann'").fetchall()
        round_items = set(con.execute("SELECT query_id, doc_id, start, \"end\" FROM round_assignments "
                                      "WHERE annotator = 'ann'").fetchall())
    assert round_items, "the lead's round gave ann no item"
    assert rows == [(*_item(looked_at), "grade", 2)]


def test_transcript_double_press_lands_on_each_painted_transcript(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "rev")
    _nav(page, "Transcripts")
    main = page.get_by_test_id("stMain")
    main.get_by_role("button", name="Draw failures to review").click()
    root = surface(page)
    expect(root).to_have_attribute("data-uid", re.compile(r".+"))
    painted = _press_burst(page, "11", gap_s=0.15)
    assert painted[0] != painted[1]
    expect(root).to_have_attribute("data-saved", "2")
    server.stop()
    with read_store(server.db) as con:
        rows = con.execute("SELECT evaluation_id, query_id, trial, verdict, failure_class, actor FROM transcript_review_events "
                           "ORDER BY event_id").fetchall()
    assert rows == [(*parse_item_key(json.loads(u)["item_id"]), "system_failure", "retrieval_miss", "rev")
                    for u in painted]


def test_a_burst_of_ten_keys_records_ten_grades_in_order(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    keys = "0123012301"
    painted = _press_burst(page, keys)
    assert len(set(painted)) == 10
    root = surface(page)
    expect(root).to_have_attribute("data-saved", "10")
    expect(root).to_have_attribute("data-pending", "0")
    assert not page.errors  # type: ignore[attr-defined]
    assert _grades(server, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, keys)]


def test_a_server_killed_mid_burst_loses_and_doubles_nothing(team_server: Server, team_page: Page,
                                                             tmp_path: Path) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    before = _press_burst(page, "123")
    os.kill(server._proc.pid, signal.SIGKILL)  # mid-burst: some of these may be in flight
    server._proc.wait(timeout=10)
    during = _press_burst(page, "0312")  # painted from the queue while the server is down
    assert len(set(before + during)) == 7
    expect(surface(page)).not_to_have_attribute("data-pending", "0")
    port = int(server.url.rsplit(":", 1)[1])
    with _serve(tmp_path, port) as again:
        root = surface(page)
        expect(root).to_have_attribute("data-pending", "0", timeout=60_000)
        assert _grades(again, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(before + during, "1230312")]


def test_refresh_deep_links_and_undo(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    root = surface(page)
    first = shown_uid(page)
    page.keyboard.press("2")
    expect(root).to_have_attribute("data-saved", "1")
    page.keyboard.press("z")  # undo: the passage comes back
    expect(root).to_have_attribute("data-uid", first)
    expect(root).to_have_attribute("data-saved", "2")
    expect(root.locator(".gs-status")).to_contain_text("Undone")

    page.reload()  # still signed in, still on Judge
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Judge")).to_be_visible()
    expect(page.get_by_test_id("stSidebar").get_by_text("Roles: annotator", exact=True)).to_be_visible()
    assert page.url.rstrip("/").endswith("/judge")

    # a browser without the cookie signs in first and then lands on the page it asked for
    other = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    fresh = other.new_page()
    fresh.goto(f"{server.url}/judge")
    _sign_in(fresh, "bob")
    expect(fresh.get_by_test_id("stMain").get_by_role("heading", name="Judge")).to_be_visible()
    other.close()

    # '?' shows the keys; Escape hides them
    page.keyboard.press("?")
    expect(root.locator(".gs-overlay")).to_be_visible()
    expect(root.locator(".gs-overlay")).to_contain_text("undo your last label")
    page.keyboard.press("Escape")
    expect(root.locator(".gs-overlay")).to_be_hidden()
    assert _grades(server, "ann") == [(*_item(first), "grade", 2), (*_item(first), "retract", None)]


_CHAR_BOX_JS = """([needle, which]) => {
  // the screen position of the first (or last) character of needle in the viewer; the
  // viewer is first scrolled so the needle's start is in view (as a person scrolls to it)
  const box = document.querySelector('.gdv-text');
  const node = box.firstChild;
  const i = node.textContent.indexOf(needle);
  if (i < 0) return null;
  const rect = (at) => { const r = document.createRange(); r.setStart(node, at); r.setEnd(node, at + 1);
                         return r.getBoundingClientRect(); };
  if (which === 'start') {
    box.scrollTop += rect(i).top - box.getBoundingClientRect().top - 40;
  }
  const b = rect(which === 'start' ? i : i + needle.length - 1);
  return {x: which === 'start' ? b.left + 1 : b.right - 1, y: b.top + b.height / 2};
}"""


def test_quoting_by_selecting_text_in_the_document(team_server: Server, team_page: Page) -> None:
    """Evidence by selection: ann drags the mouse over a passage of a document; it becomes the
    quote (raw offsets), the resolver confirms it as an exact match, and it is saved."""
    page, server = team_page, team_server
    main = page.get_by_test_id("stMain")
    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    page.goto(server.url)
    _sign_in(page, "ann")
    _nav(page, "Evidence")
    search = page.get_by_label("Search the corpus")
    search.fill("per diem Berlin")
    search.press("Enter")
    idle(page)
    hint = page.get_by_test_id("stSelectbox").filter(has_text="Look for the quote in").get_by_role("combobox")
    pick_option(page, hint, "expenses-per-diem")
    main.get_by_text("Selecting it in the document").click()
    viewer = main.locator(".gdv-text")
    expect(viewer).to_contain_text(quote)
    # the viewer scrolls itself into view one animation frame after it is drawn (and a rerun
    # draws it again): measure only once the page is idle and two frames have passed, or a
    # busy machine moves the text after the positions were taken (a flake of the full suite)
    idle(page)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
    start = page.evaluate(_CHAR_BOX_JS, [quote, "start"])  # scrolls the passage into view
    end = page.evaluate(_CHAR_BOX_JS, [quote, "end"])
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(end["x"], end["y"], steps=8)
    page.mouse.up()
    expect(page.get_by_test_id("stAlert").filter(has_text="Exact match in expenses-per-diem")).to_be_visible()
    page.get_by_role("button", name="Save quote").click()
    expect(page.get_by_test_id("stAlert").filter(has_text=re.compile(r"Saved quote \S+ for "))).to_be_visible()
    assert not page.errors  # type: ignore[attr-defined]
    server.stop()
    with read_store(server.db) as con:
        rows = con.execute("SELECT actor, doc_id, match_kind, quote, score FROM current_evidence "
                           "WHERE actor = 'ann'").fetchall()
    assert rows == [("ann", "expenses-per-diem", "exact", quote, 100.0)]
