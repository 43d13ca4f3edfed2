"""Real-browser test of double annotation and adjudication with local accounts.

The CLI prepares the store before the server starts (DuckDB lets only one process open the
file): the demo, four accounts (``admin`` first, as the first account must be an admin, then
``lead`` with role lead and ``ann`` and ``bob`` with role annotator), a 5-line TREC run over
q001-q005, a pool of depth 5 (exactly those 5 items) and a calibration round that gives the
same 5 items to ann and bob. Then, in chromium through Playwright:

1. ann signs in and grades her 5 items (keys 0-3, reading each item's caption to know which
   item it is; she writes a note on the first one) and signs out;
2. the lead sees on the Agreement page that no item is graded by two annotators yet (κ has
   nothing to be computed on);
3. bob signs in and grades the same 5 items, disagreeing with ann on exactly 2 of them, both
   across the binary threshold (grade ≥ 2), so binary κ is defined; ann's note never shows
   on his page (blind labelling);
4. the lead's Agreement page now shows κ binary equal to sklearn's ``cohen_kappa_score`` on
   the two annotators' binary labels, and the table "Each annotator against the gold" counts
   3 (unanimous) items per annotator, none adjudicated;
5. the Adjudication page says "2 disagreement(s) waiting" and its progress bar stands at 0 %,
   then 50 % and 100 % as the two are decided; its labeling surface paints those 2 items one
   after the other, each showing the passage with the question's words marked (every mark a
   word of the question, the passage's marks text only) and both annotators' grades (and
   ann's note: the lead, unlike bob, sees it); a key pressed before the rationale decides
   nothing and says why; the lead writes a rationale, Esc, the final grade key, deciding the first with a
   rubric clarification (rubric v2 shows, with the clarification), then the second, and sees
   "No disagreement waiting."; the "Decided items" table lists both with their rationales;
6. back on Agreement, κ stays what it was (it is computed on the annotators' labels, which
   adjudication does not change: what "κ updates" means here is that it appears once two
   annotators' labels overlap) while the gold table now counts 5 items and 2 adjudicated ones
   per annotator, agreed with by ann (whom the lead sided with) and not by bob;
7. no JavaScript error occurred, and after stopping the server the store holds exactly 2
   ``adjudicate`` events by the lead with the typed rationales and the chosen grades (the
   second recorded under rubric v2), rubric v2 = v1 plus the clarification, no pending
   disagreement, and the annotators' 10 grades unchanged, ann's note with hers; each passage
   shown marked exactly the question's evidence quotes in that document as evidence.

Streamlit draws dataframes on a canvas; their cells are read from the accessibility table
the grid keeps in the DOM. Sidebar links past the tenth are folded under "View N more":
this file's ``_nav`` unfolds them.

A screenshot of the last page goes to ``/tmp/browser_adjudication.png``. Needs ``chromium``
on PATH, like tests/browser/test_browser.py, whose server and browser helpers this file reuses.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect
from sklearn.metrics import cohen_kappa_score

from golden_store.corpus.search import question_terms

from tests.browser.test_browser import read_store, store_location, sign_in, Server, _browser_page, _cli, _metric, _nav, _serve, all_text, surface

SCREENSHOT_COPY = Path("/tmp/browser_adjudication.png")
PASSWORDS = {"admin": "admin-password-1", "lead": "lead-password-1", "ann": "ann-password-1",
             "bob": "bob-password-1"}
ROLES = {"admin": "admin", "lead": "lead", "ann": "annotator", "bob": "annotator"}
# One passage per query, over demo documents: the pool of depth 5 is exactly these 5 items.
RUN = (
    "q001 Q0 vpn-troubleshooting 1 3.0 sysa\n"
    "q002 Q0 sick-leave 1 3.0 sysa\n"
    "q003 Q0 notice-periods 1 3.0 sysa\n"
    "q004 Q0 expenses-per-diem 1 3.0 sysa\n"
    "q005 Q0 pension 1 3.0 sysa\n"
)
# ann's grades in the order her queue shows the items: both binary classes are used.
ANN_GRADES = [3, 3, 3, 0, 0]
ANN_NOTE = "ann-private-note-7Q2X: unsure about the second paragraph"
RATIONALES = ["Rationale one: the passage states the answer outright.",
              "Rationale two: the passage is about something else entirely."]
CLARIFICATION = "A passage that quotes the exact error code and its fix fully answers."
KAPPA_BINARY = "κ binary (grade ≥ 2)"
PASSAGE_HEADING = "Passage (question words and known evidence marked)"
CAPTION_RE = re.compile(r"^(q\d+) · passage from (\S+) \[(\d+):(\d+)\]")

Item = tuple[str, str, int, int]  # query_id, doc_id, start, end

# the Agreement tab before two people graded an item (it names the round since issue 36, 7c)
NO_PAIR_YET = re.compile("No item has been graded by two annotators")


def _add_user(tmp_path: Path, name: str) -> None:
    """``golden users add NAME --role R --password-stdin`` (``_cli`` feeds no stdin)."""
    db = store_location()
    done = subprocess.run(
        [sys.executable, "-m", "annotator.cli", "--db", str(db), "users", "add", name, "--role", ROLES[name],
         "--password-stdin"],
        input=PASSWORDS[name] + "\n", cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"golden users add {name} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture
def round_server(tmp_path: Path) -> Iterator[Server]:
    """The app in accounts mode on a store with the demo, a 5-item pool and a calibration
    round giving those 5 items to ann and bob, all prepared by the CLI first."""
    _cli(tmp_path, "demo", "--small")
    for name in ("admin", "lead", "ann", "bob"):  # the first account must be an admin
        _add_user(tmp_path, name)
    run = tmp_path / "sysa.run"
    run.write_text(RUN, encoding="utf-8")
    _cli(tmp_path, "runs", "import", str(run), "--system", "sysa")
    _cli(tmp_path, "pool", "build", "--depth", "5")
    _cli(tmp_path, "rounds", "start", "--annotators", "ann,bob", "--n", "5")
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def round_page(round_server: Server) -> Iterator[Page]:
    with _browser_page(round_server, SCREENSHOT_COPY) as pg:
        yield pg


def _idle(page: Page) -> None:
    """Wait until the script run is over (the page shows its final elements)."""
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def _sign_in(page: Page, name: str) -> None:
    sign_in(page, name, PASSWORDS[name], ROLES[name])


def _sign_out(page: Page) -> None:
    page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out")).to_have_count(0)
    _idle(page)


def _item_of(caption_text: str) -> Item:
    m = CAPTION_RE.match(caption_text)
    assert m, caption_text
    # the page escapes Markdown in document ids, and the escape can show (see test_browser.py)
    return m.group(1), m.group(2).replace("\\", ""), int(m.group(3)), int(m.group(4))


def _open_judge(page: Page) -> Locator:
    main = page.get_by_test_id("stMain")
    _nav(page, "Judge")
    expect(main.get_by_role("heading", name="Judge")).to_be_visible()
    root = surface(page)
    expect(root.locator(".gs-counter")).to_contain_text("5 left of 5")
    return root


def _grade_all(page: Page, grade_for, note_first: str | None, *, keys: bool,
               forbidden: str | None = None) -> list[Item]:
    """Grade the 5 items of the signed-in annotator's queue, ``grade_for(i, item)`` each, with
    the keys 0-3 (``keys``) or by clicking the surface's key buttons; returns the items in the
    order shown. ``forbidden`` must never appear in the page (another annotator's note)."""
    root = _open_judge(page)
    meta = root.locator(".gs-meta")
    seen: list[Item] = []
    shown = ""
    for i in range(5):
        expect(meta).to_contain_text(" · passage from ")
        if shown:
            expect(meta).not_to_have_text(shown)  # the next item, not the one just graded
        shown = meta.inner_text()
        item = _item_of(shown)
        assert item not in seen, (item, seen)
        seen.append(item)
        if forbidden is not None:
            assert forbidden not in all_text(page), "another annotator's note reached the page"
        if i == 0 and note_first:
            root.locator(".gs-note input").fill(note_first)
            page.keyboard.press("3")  # typed into the note, not a grade
            expect(root.locator(".gs-note input")).to_have_value(note_first + "3")
            page.keyboard.press("Backspace")
            page.keyboard.press("Escape")  # leave the field: keys grade again
        g = grade_for(i, item)
        if keys:
            page.keyboard.press(str(g))
        else:
            root.locator(f'button.gs-key[title="Key {g}"]').click()
    expect(root).to_have_attribute("data-saved", "5")
    expect(root.locator(".gs-title")).to_have_text("Nothing left in your queue.")
    return seen


def _grid(frame: Locator) -> list[dict[str, str]]:
    """The rows of a Streamlit dataframe as {column: text}, read from the grid's
    accessibility table (the grid itself is drawn on a canvas; the table is rendered once
    the grid is on screen, and holds the columns in view)."""
    expect(frame).to_have_count(1)
    frame.scroll_into_view_if_needed()
    expect(frame.locator("td[role=gridcell]").first).to_be_attached()
    headers = [t.strip() for t in frame.locator("th[role=columnheader]").all_text_contents()]
    rows = frame.locator("tbody tr[role=row]").evaluate_all(
        "rows => rows.map(r => Array.from(r.querySelectorAll('td[role=gridcell]')).map(c => c.textContent.trim()))")
    return [dict(zip(headers, cells)) for cells in rows]


def _drift_table(page: Page) -> dict[str, dict[str, str]]:
    """The Agreement page's table "Each annotator against the gold", by annotator: the
    dataframe right after the caption "Gold is the adjudicated label, ..."."""
    frame = page.get_by_test_id("stMain").locator(
        '[data-testid="stElementContainer"]:has([data-testid="stCaptionContainer"]'
        ':has-text("Gold is the adjudicated label")) + [data-testid="stElementContainer"] [data-testid="stDataFrame"]')
    return {r["annotator"]: r for r in _grid(frame)}


def test_two_annotators_disagree_and_the_lead_adjudicates(round_server: Server, round_page: Page) -> None:
    page, server = round_page, round_server
    main = page.get_by_test_id("stMain")
    page.goto(server.url)

    # 1. ann grades her 5 items, with a note on the first (grade 3, so it becomes disputed).
    _sign_in(page, "ann")
    ann_items = _grade_all(page, lambda i, item: ANN_GRADES[i], ANN_NOTE, keys=True)
    ann = dict(zip(ann_items, ANN_GRADES))
    _sign_out(page)

    # 2. The lead: one annotator's labels give no agreement figure yet.
    _sign_in(page, "lead")
    _nav(page, "Agreement")
    expect(main.get_by_role("heading", name="Agreement")).to_be_visible()
    expect(main.get_by_text(NO_PAIR_YET)).to_be_visible()
    expect(_metric(page, KAPPA_BINARY)).to_have_count(0)
    _sign_out(page)

    # 3. bob grades the same 5 items (in his own order), disagreeing on exactly 2: the one ann
    # noted and graded 3 he grades 0, one ann graded 0 he grades 3 (both cross the binary
    # bar, and each of the two uses both binary classes, so κ binary is defined). Blind:
    # ann's note never reaches his page.
    up = ann_items[0]
    down = next(it for it in ann_items if ann[it] == 0)
    assert ann[up] == 3
    flips = {up: 0, down: 3}
    _sign_in(page, "bob")
    bob_items = _grade_all(page, lambda i, item: flips.get(item, ann[item]), None, keys=False, forbidden=ANN_NOTE)
    assert sorted(bob_items) == sorted(ann_items), (bob_items, ann_items)
    bob = {it: flips.get(it, ann[it]) for it in ann_items}
    assert {it for it in ann_items if ann[it] != bob[it]} == set(flips)
    assert ANN_NOTE not in page.content()
    _sign_out(page)

    # 4. The lead: κ binary now stands, equal to sklearn's on the two annotators' binary
    # labels; the gold so far is the 3 unanimous items, none adjudicated.
    units = sorted(ann_items)
    expected = cohen_kappa_score([int(ann[u] >= 2) for u in units], [int(bob[u] >= 2) for u in units])
    assert -1 < expected < 1, expected
    kappa_text = f"{expected:.3f}"
    _sign_in(page, "lead")
    _nav(page, "Agreement")
    expect(main.get_by_role("heading", name="Agreement")).to_be_visible()
    expect(_metric(page, KAPPA_BINARY)).to_have_text(kappa_text)
    expect(main.get_by_text("5 items graded by two or more of 2 annotators")).to_be_visible()
    expect(main.get_by_text(NO_PAIR_YET)).to_have_count(0)
    _idle(page)
    before = _drift_table(page)
    assert {a: (r["n_units"], r["n_adjudicated"]) for a, r in before.items()} == {
        "ann": ("3", "0"), "bob": ("3", "0")}, before

    # 5. Adjudication: exactly the 2 disagreements wait, on the labeling surface.
    _nav(page, "Adjudication")
    expect(main.get_by_role("heading", name="Adjudication")).to_be_visible()
    expect(main.get_by_text("2 disagreement(s) waiting · 0 decided")).to_be_visible()
    _idle(page)
    bar = main.get_by_test_id("stProgress").locator("[role=progressbar]")
    expect(bar).to_have_attribute("aria-valuenow", "0")
    root = surface(page)
    meta = root.locator(".gs-meta")
    passage = root.locator(".gs-block").filter(has_text=PASSAGE_HEADING).locator(".gs-text")
    marks: dict[Item, list[tuple[str, str]]] = {}  # per item: (kind, text) of each marked piece
    rationale = root.get_by_label("Rationale (required)")
    clarification = root.get_by_label("Also add to the rubric as a clarification (optional: a new rubric version)")

    # Decide each, the one shown first with a rubric clarification; the lead sides with ann.
    decided: dict[Item, tuple[int, str]] = {}
    shown = ""
    for n, why in enumerate(RATIONALES):
        expect(meta).to_contain_text(" · passage from ")
        if shown:
            expect(meta).not_to_have_text(shown)
        shown = meta.inner_text()
        m = re.match(r"^(q\d+) · \S+ · passage from (\S+) \[(\d+):(\d+)\]", shown)
        assert m, shown
        item = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
        assert item in flips and item not in decided, (item, decided)
        # The passage is highlighted: the question's words (and its known evidence) marked,
        # every piece of it a text-only span (corpus text is never markup).
        expect(passage.locator("span.gs-term").first).to_be_attached()
        assert passage.evaluate("t => Array.from(t.children).every(c => c.tagName === 'SPAN' && !c.children.length)")
        marks[item] = [(k.removeprefix("gs-"), txt) for k, txt in passage.locator("span.gs-term, span.gs-evidence")
                       .evaluate_all("els => els.map(e => [e.className, e.textContent])")]
        words = question_terms(root.locator(".gs-title").inner_text())  # whole tokens (issue 29, L8)
        terms = [txt for k, txt in marks[item] if k == "term"]
        assert terms and all(txt.lower() in words for txt in terms), (words, marks[item])
        if any(k == "evidence" for k, _ in marks[item]):
            expect(passage.locator("span.gs-evidence").first).to_be_in_viewport()  # scrolled to it
        # The lead (unlike bob) sees each annotator's grade and note.
        labels = root.locator(".gs-block").filter(has_text="The annotators' labels").inner_text()
        assert f"ann: {ann[item]} " in labels and f"bob: {bob[item]} " in labels, labels
        assert (ANN_NOTE in labels) == (item == up), labels
        final = ann[item]
        if n == 0:  # a key before the rationale decides nothing and says why
            page.keyboard.press(str(final))
            expect(root.locator(".gs-status")).to_contain_text("write the rationale first")
            expect(rationale).to_be_focused()
        rationale.fill(why)
        if n == 0:
            clarification.fill(CLARIFICATION)
        page.keyboard.press("Escape")  # leave the field: keys decide again
        page.keyboard.press(str(final))
        expect(root).to_have_attribute("data-saved", str(n + 1))
        expect(root).to_have_attribute("data-pending", "0")
        if n == 0:
            expect(main.get_by_text("Rubric v2", exact=True)).to_be_visible()
            # the rubric is rendered (escaped Markdown): the clarification is a list item of it
            expect(main.get_by_test_id("stMarkdownContainer").locator("li", has_text=CLARIFICATION)).to_have_count(1)
        expect(main.get_by_text(f"{1 - n} disagreement(s) waiting · {n + 1} decided")).to_be_visible()
        expect(bar).to_have_attribute("aria-valuenow", str(50 * (n + 1)))  # the bar moves with each decision
        decided[item] = (final, why)
    expect(root.locator(".gs-title")).to_have_text("No disagreement waiting.")
    history = main.get_by_test_id("stExpander").filter(has_text="Decided items")
    history.locator("summary").click()
    rows = _grid(history.get_by_test_id("stDataFrame"))
    assert {((r["query_id"], r["doc_id"], int(r["start"]), int(r["end"])), (int(r["final_grade"]), r["rationale"]),
             r["decided_by"]) for r in rows} == {(it, d, "lead") for it, d in decided.items()}, rows

    # 6. Agreement again: κ is computed on the annotators' labels, which adjudication leaves
    # alone, so it stays; what updates is the gold: all 5 items now, 2 of them adjudicated,
    # where ann (whom the lead sided with) agrees and bob does not.
    _nav(page, "Agreement")
    expect(main.get_by_role("heading", name="Agreement")).to_be_visible()
    _idle(page)
    expect(_metric(page, KAPPA_BINARY)).to_have_text(kappa_text)
    after = _drift_table(page)
    assert {a: (r["n_units"], r["n_adjudicated"], r["raw_on_adjudicated"]) for a, r in after.items()} == {
        "ann": ("5", "2", "1"), "bob": ("5", "2", "0")}, after
    assert not page.errors, f"JavaScript errors in the page: {page.errors}"  # type: ignore[attr-defined]

    # 7. The store, read after the server lets go of it.
    server.stop()
    with read_store(server.db) as con:
        adj = con.execute("SELECT query_id, doc_id, start, \"end\", grade, actor, note, rubric_version "
                          "FROM grade_events WHERE op = 'adjudicate' ORDER BY event_id").fetchall()
        rubrics = con.execute("SELECT version, text, changelog FROM rubric_versions ORDER BY version").fetchall()
        grades = con.execute("SELECT actor, query_id, doc_id, start, \"end\", grade, note FROM grade_events "
                             "WHERE op = 'grade'").fetchall()
        pending = con.execute("SELECT count(*) FROM pending_grades").fetchone()[0]
        evidence = con.execute("SELECT query_id, doc_id, start, \"end\" FROM current_evidence").fetchall()
        raw = dict(con.execute("SELECT doc_id, raw_text FROM documents").fetchall())
    # exactly 2 decisions by the lead, with the typed rationales; the first under rubric v1,
    # the second under v2 (the clarification the first one added)
    assert [(r[:4], (r[4], r[6]), r[5]) for r in adj] == [(it, d, "lead") for it, d in decided.items()], adj
    assert [r[7] for r in adj] == [1, 2], adj
    assert pending == 0
    assert [r[0] for r in rubrics] == [1, 2], rubrics
    v1, v2 = rubrics[0][1], rubrics[1][1]
    assert v2.startswith(v1.rstrip()) and v2.rstrip().endswith(f"- {CLARIFICATION}"), v2[len(v1) - 40:]
    first = next(iter(decided))
    assert f"{first[0]} · {first[1]} [{first[2]}:{first[3]}]" in rubrics[1][2], rubrics[1][2]
    assert CLARIFICATION in rubrics[1][2]
    # each passage marked exactly its question's evidence quotes in that document (in order)
    for (q, d, s, e), got in marks.items():
        quotes = [raw[d][max(es, s):min(ee, e)] for eq, ed, es, ee in sorted(evidence, key=lambda r: r[2])
                  if (eq, ed) == (q, d) and ee > s and es < e]
        assert [txt for k, txt in got if k == "evidence"] == quotes, (q, d, got, quotes)
    # the annotators' own labels, unchanged by adjudication; ann's note kept with her grade
    assert sorted(grades) == sorted(
        [("ann", *it, ann[it], ANN_NOTE if it == up else None) for it in ann_items]
        + [("bob", *it, bob[it], None) for it in ann_items]), grades
