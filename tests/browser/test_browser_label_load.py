"""Real-browser tests of the labeling surface under load and after a click elsewhere (issue 29:
item 1's never-dry queue and durable outbox, H3, M2, L4, L5).

The store is test_browser_labeling's (the demo, accounts, a 120-item pool); the server is a
real ``streamlit run app.py``, the browser Debian's chromium through Playwright.

* A dry queue: with the server killed, ann presses keys until the surface's queue runs out;
  it then says the next passages are loading (``data-state="loading"``), and a key pressed
  then labels nothing and says so. After the restart exactly the keys pressed on a painted
  passage are stored, each on that passage, and new passages arrive.
* A closed tab: with the server down, three grades are pending; closing the tab asks first
  (beforeunload); the next visit (a new tab of the same browser, the server back) sends them,
  and the store holds each exactly once.
* H3: right after a click on Judge's "Grouped by question" radio (focus stays in the radio),
  grade keys label the passages shown; the mode is in the URL and survives a refresh (L4).
  On Nuggets, right after the "Assign to answers" radio, assignment keys work.
* M2 / L5: "Undone…" goes with the next label; the session counter says "N labeled · M
  skipped".
* M2 on Adjudication: the red "Not labeled: write the rationale first" goes once a decision
  is made.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_browser import Server, _browser_page, _cli, _nav, _serve, read_store, shown_uid, store_location, surface
from tests.browser.test_browser_labeling import (  # noqa: F401  (fixtures)
    _add_user, _grades, _item, _open_judge, _press_burst, _sign_in, team_page, team_server)


def _kill(server: Server) -> None:
    os.kill(server._proc.pid, signal.SIGKILL)
    server._proc.wait(timeout=10)


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def test_a_dry_queue_says_loading_and_a_key_then_labels_nothing(team_server: Server, team_page: Page,
                                                                tmp_path: Path) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    root = surface(page)
    expect(root).to_have_attribute("data-state", "labeling")
    _kill(server)  # nothing reaches the browser now: its queue only shrinks
    painted, keys = [], ""
    for i in range(20):
        if root.get_attribute("data-state") == "loading":
            break
        painted.append(shown_uid(page))
        key = "0123"[i % 4]
        page.keyboard.press(key)
        keys += key
    assert root.get_attribute("data-state") == "loading", "the queue never ran dry"
    assert len(painted) >= 2 and len(set(painted)) == len(painted)
    expect(root.locator(".gs-title")).to_have_text("Loading the next passages\u2026")
    page.keyboard.press("2")  # nothing on screen: this key labels nothing, and says so
    expect(root.locator(".gs-status")).to_contain_text("Key 2 not used: the next passages are loading")
    expect(root).to_have_attribute("data-unused", "1")
    expect(root).to_have_attribute("data-pending", str(len(painted)))
    with _serve(tmp_path, _port(server)) as again:
        expect(root).to_have_attribute("data-pending", "0", timeout=60_000)
        expect(root).to_have_attribute("data-state", "labeling")  # the queue filled again
        assert shown_uid(page) not in painted
        assert _grades(again, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, keys)]


def test_pending_labels_survive_closing_the_tab(team_server: Server, team_page: Page, tmp_path: Path) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    _kill(server)
    painted = _press_burst(page, "123", gap_s=0.1)
    assert len(set(painted)) == 3
    expect(surface(page)).to_have_attribute("data-pending", "3")
    dialogs: list[str] = []

    def on_dialog(d) -> None:
        dialogs.append(d.type)
        d.accept()

    page.on("dialog", on_dialog)
    page.close(run_before_unload=True)  # the page asks before it goes: labels are pending
    page.wait_for_event("close")
    assert dialogs == ["beforeunload"]
    with _serve(tmp_path, _port(server)) as again:
        tab = page.context.new_page()  # the next visit, same browser
        tab.goto(f"{again.url}/judge")
        expect(tab.get_by_test_id("stMain").get_by_role("heading", name="Judge")).to_be_visible()
        root = surface(tab)
        expect(root).to_have_attribute("data-saved", "3", timeout=60_000)
        expect(root).to_have_attribute("data-pending", "0")
        assert shown_uid(tab) not in painted
        left = tab.evaluate("() => Object.keys(localStorage).filter((k) => k.startsWith('golden-outbox:'))")
        assert left == []
        assert _grades(again, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, "123")]


def test_keys_work_right_after_the_grouped_radio_and_grouped_survives_a_refresh(team_server: Server,
                                                                                 team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    main = page.get_by_test_id("stMain")
    main.get_by_text("Grouped by question (TREC)", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]order=by_query"))
    assert page.evaluate("() => document.activeElement && document.activeElement.type") == "radio"
    painted = _press_burst(page, "12", gap_s=0.2)  # focus is still in the radio
    root = surface(page)
    expect(root).to_have_attribute("data-saved", "2")
    assert len(set(painted)) == 2
    page.reload()  # L4: the mode is in the URL
    expect(main.get_by_role("radio", name="Grouped by question (TREC)")).to_be_checked()
    expect(root).to_have_attribute("data-uid", re.compile(r".+"))
    assert not page.errors  # type: ignore[attr-defined]
    assert _grades(server, "ann") == [(*_item(u), "grade", int(k)) for u, k in zip(painted, "12")]


def test_status_line_and_counter_say_what_the_last_action_did(team_server: Server, team_page: Page) -> None:
    page, server = team_page, team_server
    page.goto(server.url)
    _sign_in(page, "ann")
    _open_judge(page, server.url)
    root = surface(page)
    status, counter = root.locator(".gs-status"), root.locator(".gs-counter")
    first = shown_uid(page)
    page.keyboard.press("2")
    page.keyboard.press("Backspace")  # before the grade's ack: the undo still stands in the counter
    expect(status).to_contain_text("Undone: partially answers on the item shown again.")
    expect(root).to_have_attribute("data-uid", first)
    expect(root).to_have_attribute("data-saved", "2")
    painted = _press_burst(page, "3ss", gap_s=0.2)
    expect(root).to_have_attribute("data-saved", "5")
    expect(status).not_to_contain_text("Undone")
    expect(counter).to_contain_text("This session: 1 labeled \u00b7 2 skipped")
    assert painted[0] == first
    rows = _grades(server, "ann")
    assert rows == [(*_item(first), "grade", 2), (*_item(first), "retract", None), (*_item(first), "grade", 3),
                    (*_item(painted[1]), "skip", None), (*_item(painted[2]), "skip", None)]


@pytest.fixture
def assign_server(tmp_path: Path) -> Iterator[Server]:
    """The full demo (single-user) plus a new system's answers to the questions the demo
    answered, so nugget assignment has pairs left to label."""
    db = store_location()
    seed = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", str(db), "demo", "--full"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert seed.returncode == 0, f"golden demo --full failed:\n{seed.stdout}\n{seed.stderr}"
    with read_store(db) as con:
        qids = [r[0] for r in con.execute("SELECT DISTINCT query_id FROM answers ORDER BY 1").fetchall()]
    assert qids
    answers = tmp_path / "new.jsonl"
    answers.write_text("".join(json.dumps({"query_id": q, "answer": f"A new answer to {q}."}) + "\n" for q in qids))
    _cli(tmp_path, "answers", "import", str(answers), "--system", "sys-new")
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def assign_page(assign_server: Server) -> Iterator[Page]:
    with _browser_page(assign_server, None) as pg:
        yield pg


def test_keys_work_right_after_the_nuggets_assign_radio(assign_server: Server, assign_page: Page) -> None:
    page, server = assign_page, assign_server
    page.goto(server.url)
    _nav(page, "Nuggets")
    main = page.get_by_test_id("stMain")
    main.get_by_text("Assign to answers", exact=True).click()
    root = surface(page)
    expect(root).to_have_attribute("data-uid", re.compile(r".+"))
    assert page.evaluate("() => document.activeElement && document.activeElement.type") == "radio"
    painted = _press_burst(page, "12", gap_s=0.3)
    expect(root).to_have_attribute("data-saved", "2")
    assert len(set(painted)) == 2
    server.stop()
    with read_store(server.db) as con:
        rows = con.execute("SELECT item, action FROM label_receipts WHERE surface = 'nugget_assignment' "
                           "ORDER BY event_id").fetchall()
    assert [(json.loads(item), action) for item, action in rows] == [(json.loads(u), "assign") for u in painted]


# ---- M2 on Adjudication: a disagreement prepared before the server starts ----

_RUN = "q001 Q0 pension 1 3.0 sysa\nq001 Q0 sick-leave 2 2.0 sysa\n"


@pytest.fixture
def dispute_server(tmp_path: Path) -> Iterator[Server]:
    """The demo in accounts mode with one pooled passage that ann graded 0 and bob 3."""
    _cli(tmp_path, "demo", "--small")
    for name in ("admin", "lead", "ann", "bob"):
        _add_user(tmp_path, name)
    run = tmp_path / "sysa.run"
    run.write_text(_RUN, encoding="utf-8")
    _cli(tmp_path, "runs", "import", str(run), "--system", "sysa")
    _cli(tmp_path, "pool", "build", "--depth", "1")
    script = ("import sys\n"
              "from annotator.labeling import judging\n"
              "from annotator.people.identity import get_user\n"
              "from golden_store.db.store import Store\n"
              "with Store.open(sys.argv[1]) as s:\n"
              "    for name, g in (('ann', 0), ('bob', 3)):\n"
              "        u = get_user(s, name)\n"
              "        judging.judge(s, u, judging.next_items(s, u, 1)[0], 'grade', g)\n")
    done = subprocess.run([sys.executable, "-c", script, str(store_location())], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def dispute_page(dispute_server: Server) -> Iterator[Page]:
    with _browser_page(dispute_server, None) as pg:
        yield pg


def test_the_red_not_labeled_line_goes_once_a_decision_is_saved(dispute_server: Server, dispute_page: Page) -> None:
    page, server = dispute_page, dispute_server
    page.goto(server.url)
    _sign_in(page, "lead")
    _nav(page, "Adjudication")
    root = surface(page)
    expect(root).to_have_attribute("data-uid", re.compile(r".+"))
    status = root.locator(".gs-status")
    page.get_by_test_id("stMain").get_by_role("heading", name="Adjudication").click()  # focus off any field
    page.keyboard.press("1")  # no rationale yet: nothing decided, said in red
    expect(status).to_contain_text("Not labeled: write the rationale first")
    expect(status).to_have_class(re.compile(r"gs-warn"))
    root.get_by_label("Rationale (required)").fill("Partly on topic.")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    expect(root).to_have_attribute("data-saved", "1")
    expect(status).not_to_contain_text("Not labeled")
    expect(status).not_to_have_class(re.compile(r"gs-warn"))
    server.stop()
    with read_store(server.db) as con:
        assert con.execute("SELECT actor, grade, note FROM grade_events WHERE op = 'adjudicate'").fetchall() == [
            ("lead", 1, "Partly on topic.")]
