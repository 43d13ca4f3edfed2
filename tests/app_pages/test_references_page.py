"""The Reference answers page in the real app (AppTest): an annotator writes a question's short
and full answer anchored to its evidence, approves it, edits it (approval gone) and reads the
history; an empty answer is one error and saves nothing; a lead sets the question's criteria."""

from __future__ import annotations

from annotator import demo
from annotator.people import identity
from annotator.process import context
from golden_store.live import reference_answers as live_refs
from tests.app_pages.test_app_roles import app_as, texts
from tests.conftest import plain, table_snapshot

PASSWORD = "0123456789"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "annotator", ["annotator"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def _open(who: str, qid: str = "q004"):
    at = app_as(who)
    at.switch_page("app_pages/references.py").run()
    assert not at.exception
    at.selectbox(key="ref_q").set_value(qid).run()
    assert not at.exception
    return at


def _save(at):
    """The form's submit button (the page's first button is "Draft with Claude" now)."""
    return next(b for b in at.button if b.label == "Save revision")


def test_write_anchor_approve_edit_and_history(golden_db):
    store = _accounts()
    at = _open("annotator")
    evidence = at.multiselect(key="ref_ev_q004")
    assert evidence.options, "the question's evidence spans are offered"
    at.text_input(key="ref_short_q004").input("EUR 58")
    at.text_area(key="ref_full_q004").input("The per diem for a full day in Berlin is EUR 58.")
    evidence.select(evidence.options[0])
    _save(at).click().run()  # the form's submit button
    assert not at.exception and not at.error
    assert "Saved revision" in plain(texts(at)) and "not approved yet" in plain(texts(at))
    (row,) = live_refs.current(store, "q004")
    assert (row["short_answer"], row["approved"], row["actor"]) == ("EUR 58", False, "annotator")
    assert len(row["evidence"]) == 1

    at.button(key="ref_approve").click().run()
    assert not at.exception and "Approved the reference answer of q004" in plain(texts(at))
    assert live_refs.short_references(store) == {"q004": "EUR 58"}

    at.text_input(key="ref_short_q004").input("58 euros")
    _save(at).click().run()
    assert not at.exception
    assert live_refs.current(store, "q004")[0]["approved"] is False and live_refs.short_references(store) == {}
    assert [h["op"] for h in live_refs.history(store, "q004")] == ["write", "approve", "write"]


def test_an_empty_answer_is_one_error_and_saves_nothing(golden_db):
    store = _accounts()
    at = _open("annotator")
    before = table_snapshot(store)
    _save(at).click().run()
    assert not at.exception
    assert [e.value for e in at.error] and "needs a short answer, a full answer or both" in plain(at.error[0].value)
    assert "Saved" not in plain(texts(at))
    assert table_snapshot(store) == before


def test_a_lead_sets_the_questions_criteria_and_an_annotator_cannot(golden_db):
    store = _accounts()
    at = _open("annotator")
    assert not [b for b in at.button if b.key == "ref_crit_save"]
    at = _open("lead")
    at.session_state["ref_crit_q004"] = {  # the table's edits, as the browser sends them
        "edited_rows": {0: {"criterion_id": "amount", "text": "States the amount", "example": "EUR 58",
                            "weight": 2.0}},
        "added_rows": [{"criterion_id": "city", "text": "Names the city rate", "example": "Berlin", "weight": 1.0,
                        "scale_max": 2}],
        "deleted_rows": []}
    at.button(key="ref_crit_save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    source, rows = live_refs.criteria_for_query(store, "q004")
    assert source == "query" and [(r["criterion_id"], r["weight"], r["scale_max"]) for r in rows] == [
        ("amount", 2.0, 1), ("city", 1.0, 2)]


def test_draft_with_claude_shows_the_estimate_then_drafts_an_unapproved_revision(golden_db, llm_server):
    import json

    from tests.annotator.test_reference_drafting import PROPOSAL, _reply

    store = _accounts()
    llm_server.script = [_reply(PROPOSAL)]
    at = _open("annotator", "q003")
    at.button(key="ref_draft").click().run()
    assert not at.exception and llm_server.requests == []  # the estimate first, nothing sent
    assert "Before anything is sent" in plain(" ".join(i.value for i in at.info))
    at.button(key="ref_plan_confirm").click().run()
    assert not at.exception and len(llm_server.requests) == 1
    assert "drafted revision" in plain(texts(at)) and "not approved yet" in plain(texts(at))
    (row,) = live_refs.current(store, "q003")
    assert (row["short_answer"], row["approved"], row["source"]) == ("one month", False, "llm")
    assert json.loads(json.dumps(row["evidence"]))[0]["doc_id"] == "notice-periods"
