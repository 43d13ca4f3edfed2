"""Finding one's way to a reference round (seen in a Chromium walkthrough): the page opens on
its write section, where an author was not told that round questions waited for them; and a
refresh (or the Back button) dropped the rounds section, the round and the question picked,
because none of them was in the page's address."""

from __future__ import annotations

from golden_store.live import reference_rounds as live_rounds
from tests.app_pages.test_app_roles import app_as, texts
from tests.app_pages.test_reference_rounds_page import ROUNDS, _accounts, _open_round, _rounds
from tests.conftest import plain


def test_the_write_section_tells_an_author_which_round_questions_wait_for_them(golden_db):
    store = _accounts()
    _open_round(store)
    at = app_as("annotator")
    at.switch_page("app_pages/references.py").run()
    assert not at.exception, at.exception
    assert ("1 question(s) of a reference round wait for your answer (q004): write them under Double-authoring "
            "rounds above.") in plain(texts(at))
    # nobody else is told: the lead is no author of this round
    at = app_as("lead")
    at.switch_page("app_pages/references.py").run()
    assert "wait for your answer" not in plain(texts(at))


def test_the_address_keeps_the_rounds_section_the_round_and_the_question(golden_db):
    store = _accounts()
    _open_round(store)
    at = _rounds("annotator")
    assert dict(at.query_params) == {"section": "rounds", "round": "ref1", "q": "q004"}
    # a new session (a refresh) opened on that address lands where the person was
    fresh = app_as("annotator")
    for k, v in (("section", "rounds"), ("round", "ref1"), ("q", "q004")):
        fresh.query_params[k] = v
    fresh.switch_page("app_pages/references.py").run()
    assert not fresh.exception, fresh.exception
    assert fresh.radio(key="ref_section").value == ROUNDS
    assert fresh.selectbox(key="rr_ref1_pick").value == "q004"
    # back on the write section, the address drops the round's keys
    at.radio(key="ref_section").set_value("Write and approve").run()
    assert not {"section", "round", "q"} & set(at.query_params)


def test_a_submit_from_a_second_tab_after_the_first_submitted_says_so(golden_db):
    """Seen in Chromium: the second tab's "Submit (final)" redrew the page without its form and
    said nothing, so what the author had typed there vanished without a word."""
    store = _accounts()
    _open_round(store)
    first, second = _rounds("annotator"), _rounds("annotator")  # two tabs: two sessions
    first.text_input(key="rr_ref1_q004_short").input("EUR 58")
    next(b for b in first.button if b.label == "Submit (final)").click().run()
    assert "Submitted q004" in plain(texts(first))
    second.text_input(key="rr_ref1_q004_short").input("58 euros a day")
    next(b for b in second.button if b.label == "Submit (final)").click().run()
    assert not second.exception, second.exception
    assert [plain(e.value) for e in second.error] == [
        "You already submitted your answer to q004 (in another tab or window); a submission is final, so what this "
        "form held was not stored."]
    (sub,) = live_rounds.entries(store, "ref1")
    assert sub["submission"]["short_answer"] == "EUR 58"
