"""Issue 37 item 9, in the app (AppTest): the freeze refusal on the Versions page names the
Freeze conflicts page and links to it; there a lead drives each fix (re-grade, retract the
grade, retract the quote, mark the question answerable), each with a reason, the list follows
every fix and, once empty, says the freeze can proceed, and the engineer's freeze then goes
through. A fix without a reason is refused with a sentence and leaves the store unchanged; an
engineer is told which fixes need a lead."""

from __future__ import annotations

from annotator.process import context
from annotator.versions import freeze_conflicts as fc
from annotator.people.identity import get_user
from golden_store.core.paths import versions_dir_for
from golden_store.db.store import utcnow
from golden_store.live import grade_state
from golden_store.live.evidence import EvidenceSpan, append_evidence
from golden_store.live.queries import get_query
from tests.app_pages.test_app_roles import accounts, app_as  # noqa: F401  (fixture)
from tests.conftest import plain, table_snapshot

PAGE = "app_pages/freeze_conflicts.py"
VERSIONS = "app_pages/versions.py"


def _grade(store, qid, doc, start, end, grade, actor):
    store.write(lambda cur: grade_state.append_tx(cur, query_id=qid, doc_id=doc, start=start, end=end, op="grade",
                                                  grade=grade, actor=actor, created_at=utcnow(), doc_sha256=None,
                                                  rubric_version=1))


def _conflicts(store) -> None:
    """Answers to questions marked unanswerable: q005's passages graded 3 (ann) and 2 (ann and
    bob), a quote on q012, and q019 graded 3 (its corpus does answer it, say)."""
    _grade(store, "q005", "annual-leave", 0, 40, 3, "ann")
    _grade(store, "q005", "health-insurance", 5, 50, 2, "ann")
    _grade(store, "q005", "health-insurance", 5, 50, 2, "bob")
    _grade(store, "q019", "pension", 0, 60, 3, "ann")
    quote, doc, start, end, cs, ce = store.read_one(
        "SELECT quote, doc_id, start, \"end\", canonical_start, canonical_end FROM current_evidence "
        "WHERE match_kind = 'exact' ORDER BY query_id, evidence_id")
    append_evidence(store, [EvidenceSpan("q012", "e-on-q012", quote, doc, start, end, cs, ce, "exact", 100.0)],
                    actor="ann")


def _texts(at) -> str:
    parts = [e.value for e in [*at.markdown, *at.caption, *at.success, *at.error, *at.warning, *at.info]]
    return plain("\n".join(str(p) for p in parts))


def _fix(at, store, qid: str, doc: str | None, fix: str, reason: str, grade: int | None = None):
    """Fill and submit one conflict's fix form on the page (its keys are the conflict's)."""
    lead = get_user(store, "lead")
    c = next(c for c in fc.conflicts(store, lead) if c.query_id == qid and (doc is None or c.doc_id == doc))
    form = f"fc_{c.key}_{fix}"
    if grade is not None:
        at.radio(key=f"{form}_grade").set_value(grade)
    at.text_input(key=f"{form}_reason").input(reason)
    next(b for b in at.button if b.form_id == form).click().run()
    assert not at.exception
    return at


def test_the_freeze_refusal_names_the_place_and_links_to_it(accounts):  # noqa: F811
    store = context.get_store()
    _conflicts(store)
    at = app_as("engineer").switch_page(VERSIONS).run()
    assert not at.exception
    assert "4 conflict(s) refuse a freeze now. See Review → Freeze conflicts" in _texts(at)
    assert [p.value for p in at.get("page_link")] == ["Open Freeze conflicts"]
    next(w for w in at.text_input if w.label == "Version name").input("golden.v1")
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception
    (err,) = [plain(e.value) for e in at.error]
    assert err.startswith("Freeze refused: 3 question(s) marked unanswerable")
    assert "the Freeze conflicts page (Review → Freeze conflicts in the app) lists each with its fixes" in err
    links = at.get("page_link")
    assert [p.value for p in links] == ["Open Freeze conflicts", "Open Freeze conflicts (4 to fix)"]
    assert all(p.proto.page.endswith("freeze_conflicts.py") or "freeze_conflicts" in p.proto.page for p in links)
    assert not (versions_dir_for(store.path) / "golden.v1").exists()


def test_an_engineer_sees_every_conflict_and_which_fixes_need_a_lead(accounts):  # noqa: F811
    store = context.get_store()
    _conflicts(store)
    at = app_as("engineer").switch_page(PAGE).run()
    assert not at.exception
    text = _texts(at)
    assert "4 conflict(s) refuse a freeze" in text
    assert "ann graded 3 (fully answers)" in text and "bob graded 2 (partly answers)" in text
    assert "Re-grade the passage: needs the admin or lead role" in text
    assert "Retract the quote: needs the admin or lead role" in text
    # marking answerable is an engineer's (EDIT_QUERIES): its form is there, the lead's fixes are not
    forms = {b.form_id for b in at.button if b.form_id}  # (the sidebar's Refresh is in no form)
    assert forms == {"fc_answerable_q005", "fc_answerable_q012", "fc_answerable_q019"}


def test_a_fix_without_a_reason_is_refused_and_leaves_the_store_unchanged(accounts):  # noqa: F811
    store = context.get_store()
    _conflicts(store)
    at = app_as("lead").switch_page(PAGE).run()
    before = table_snapshot(store)
    _fix(at, store, "q005", "annual-leave", "regrade", "", grade=1)
    (err,) = [plain(e.value) for e in at.error[1:]]  # after the page's own count of conflicts
    assert "was not re-graded: write the reason" in err and "nothing was saved" in err
    next(b for b in at.button if b.form_id == "fc_answerable_q019").click().run()  # no stratum, no reason
    assert "was not marked answerable: write the reason" in plain(at.error[-1].value)
    assert table_snapshot(store) == before
    assert "4 conflict(s) refuse a freeze" in _texts(at)


def test_each_fix_on_the_page_then_the_freeze_goes_through(accounts):  # noqa: F811
    store = context.get_store()
    _conflicts(store)
    at = app_as("lead").switch_page(PAGE).run()
    assert not at.exception
    assert "4 conflict(s) refuse a freeze" in _texts(at)

    _fix(at, store, "q005", "annual-leave", "regrade", "about leave, not the CEO's salary", grade=1)
    assert "Re-graded q005 · annual-leave [0:40]: final grade 1" in _texts(at)
    assert "3 conflict(s) refuse a freeze" in _texts(at)

    _fix(at, store, "q005", "health-insurance", "retract_grade", "graded in a hurry; nothing on salaries here")
    assert "by your decision as lead: final grade 0" in _texts(at)
    assert "2 conflict(s) refuse a freeze" in _texts(at)

    _fix(at, store, "q012", None, "retract_quote", "copied from another question by mistake")
    assert "Retracted the quote e-on-q012 of q012, with the reason." in _texts(at)

    at.selectbox(key="fc_answerable_q019_stratum").set_value("lexical")
    at.text_input(key="fc_answerable_q019_reason").input("the pension rules do state it")
    next(b for b in at.button if b.form_id == "fc_answerable_q019").click().run()
    assert not at.exception and not at.error
    text = _texts(at)
    assert "Marked q019 answerable (stratum lexical)" in text
    assert "Nothing refuses a freeze: the freeze can proceed." in text
    assert "settled meanwhile" not in text  # every one of them was settled here, by this page's own fixes
    rec = get_query(store, "q019")
    assert rec.answerable and rec.stratum == "lexical"
    assert store.read_one("SELECT actor, change_reason FROM query_revisions WHERE query_id = 'q019' "
                          "ORDER BY event_id DESC LIMIT 1") == ("lead", "the pension rules do state it")
    assert store.read("SELECT doc_id, grade, actor, note FROM grade_events WHERE op = 'adjudicate' ORDER BY event_id") == [
        ("annual-leave", 1, "lead", "about leave, not the CEO's salary"),
        ("health-insurance", 0, "lead", "retracted: graded in a hurry; nothing on salaries here")]

    at = app_as("engineer").switch_page(VERSIONS).run()
    assert "refuse a freeze" not in _texts(at)
    next(w for w in at.text_input if w.label == "Version name").input("golden.v1")
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception and not at.error
    assert any("Frozen golden.v1" in plain(s.value) for s in at.success)
    assert (versions_dir_for(store.path) / "golden.v1" / "manifest.json").exists()


def test_a_conflict_settled_in_another_tab_is_said_not_dropped_in_silence(accounts):  # noqa: F811
    """Two tabs (found in Chromium): a lead settles a conflict in one; the other, still showing
    its form, is told on its next run that it was settled meanwhile and that a fix pressed on
    it was not applied, instead of the click vanishing with the form."""
    store = context.get_store()
    _conflicts(store)
    tab = app_as("lead").switch_page(PAGE).run()
    assert "4 conflict(s) refuse a freeze" in _texts(tab) and "settled meanwhile" not in _texts(tab)
    lead = get_user(store, "lead")
    other = next(c for c in fc.conflicts(store, lead) if c.query_id == "q005" and c.doc_id == "annual-leave")
    fc.regrade(store, lead, other, 1, "settled in the other tab")
    tab.run()
    assert not tab.exception
    text = _texts(tab)
    assert "1 conflict(s) shown here before were settled meanwhile" in text and "was not applied" in text
    assert "3 conflict(s) refuse a freeze" in text
    tab.run()  # said once: the tab has seen the list as it stands now
    assert "settled meanwhile" not in _texts(tab)
