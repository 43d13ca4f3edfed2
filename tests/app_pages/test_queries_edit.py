"""Issue 37 item 8: Queries -> Edit never says "Saved" for what it did not save. Ticking
"Answerable" on a question of the negative stratum was stored unanswerable under "Saved a
new revision"; it is now refused with a sentence saying how (choose its stratum in the same
edit), and moving it out of the negative stratum in that edit stores it answerable. A save
that changes nothing writes no revision and says so; an edit keeps a synthetic question's
generator provenance."""

from __future__ import annotations

from dataclasses import replace

from annotator.process import context
from golden_store.live.queries import get_query, query_history, save_query
from tests.app_pages.test_app_roles import accounts, app_as  # noqa: F401  (fixture)
from tests.conftest import plain

PAGE = "app_pages/queries.py"


def _edit(qid: str):
    at = app_as("lead").switch_page(PAGE).run()
    assert not at.exception
    at.selectbox(key="q_edit_pick").set_value(qid).run()
    return at


def _in_edit_form(elements, label: str):
    found = [e for e in elements if e.label.startswith(label)]
    assert len(found) == 2, [e.label for e in elements]  # the Add form's, then the Edit form's
    return found[1]


def _negative_id(store) -> str:
    (qid,) = store.read_one("SELECT min(query_id) FROM queries WHERE stratum = 'negative'")
    assert qid is not None
    return qid


def test_answerable_on_a_negative_question_is_refused_with_how_and_done_by_choosing_its_stratum(accounts):  # noqa: F811
    store = context.get_store()
    qid = _negative_id(store)
    revisions = len(query_history(store, qid))
    at = _edit(qid)
    _in_edit_form(at.checkbox, "Answerable from the corpus").check()
    _in_edit_form(at.text_input, "Notes").input("checked again: the corpus answers it")
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception
    assert not any("Saved" in plain(s.value) for s in at.success)
    (err,) = [plain(e.value) for e in at.error]
    assert "negative stratum" in err and "choose the stratum it belongs in" in err
    assert len(query_history(store, qid)) == revisions and get_query(store, qid).answerable is False
    # the way the sentence gives: choose its stratum in the same edit; then it is stored answerable
    other = next(o for o in _in_edit_form(at.selectbox, "Stratum").options if o != "negative")
    _in_edit_form(at.selectbox, "Stratum").set_value(other)
    _in_edit_form(at.checkbox, "Answerable from the corpus").check()
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception and not at.error
    assert any(f"Saved a new revision of {qid}" in plain(s.value) for s in at.success)
    rec = get_query(store, qid)
    assert rec.answerable is True and rec.stratum == other


def test_a_save_that_changes_nothing_writes_no_revision_and_says_so(accounts):  # noqa: F811
    store = context.get_store()
    qid = "q001"
    revisions = len(query_history(store, qid))
    at = _edit(qid)
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception and not at.error
    assert [plain(s.value) for s in at.success] == [f"Nothing changed in {qid}: no new revision was written."]
    assert len(query_history(store, qid)) == revisions


def test_an_edit_keeps_a_synthetic_questions_generator_provenance(accounts):  # noqa: F811
    store = context.get_store()
    rec = replace(get_query(store, "q001"), source="synthetic", generator_model="claude-x", generator_prompt_sha="abc123")
    save_query(store, rec, actor="drafting", must_exist=True)
    at = _edit("q001")
    _in_edit_form(at.text_input, "Notes").input("wording checked")
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception and not at.error
    assert any("Saved a new revision of q001" in plain(s.value) for s in at.success)
    got = get_query(store, "q001")
    assert got.notes == "wording checked"
    assert (got.generator_model, got.generator_prompt_sha) == ("claude-x", "abc123")


def _held_out_id(store) -> str:
    (qid,) = store.read_one("SELECT min(query_id) FROM queries WHERE held_out")
    assert qid is not None
    return qid


def test_unticking_held_out_needs_a_leads_reason_and_records_it(accounts):  # noqa: F811
    """Issue 37, item 3 on the page: Queries -> Edit cleared a question's held-out flag with
    no reason and said "Saved". Now it is refused (nothing saved) until a reason is given, only
    a lead may give one, and the reason is recorded with the revision."""
    store = context.get_store()
    qid = _held_out_id(store)
    revisions = len(query_history(store, qid))
    at = _edit(qid)
    _in_edit_form(at.checkbox, "Held out").uncheck()
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception and not any("Saved" in plain(s.value) for s in at.success)
    (err,) = [plain(e.value) for e in at.error]
    assert f"{qid} is held out" in err and "Reason to take it out of the held-out set" in err
    assert len(query_history(store, qid)) == revisions and get_query(store, qid).held_out is True
    # an engineer may edit questions but not un-hold them, even with a reason
    eng = app_as("engineer").switch_page(PAGE).run()
    eng.selectbox(key="q_edit_pick").set_value(qid).run()
    [c for c in eng.checkbox if c.label.startswith("Held out")][-1].uncheck()
    eng.text_input(key=f"q_edit_{qid}_unhold").input("the engineer thinks so")
    [b for b in eng.button if b.label == "Save"][-1].click().run()
    assert get_query(store, qid).held_out is True and not any("Saved" in plain(s.value) for s in eng.success)
    # the lead, with a reason: saved, and the reason is in the history
    at = _edit(qid)
    _in_edit_form(at.checkbox, "Held out").uncheck()
    at.text_input(key=f"q_edit_{qid}_unhold").input("leaked in a blog post; replaced by q901")
    _in_edit_form(at.button, "Save").click().run()
    assert not at.exception and not at.error
    assert get_query(store, qid).held_out is False
    (reason,) = store.read_one("SELECT change_reason FROM query_revisions WHERE query_id = ? ORDER BY event_id DESC "
                               "LIMIT 1", [qid])
    assert reason == "leaked in a blog post; replaced by q901"
