"""Unchecked gold (issue 17 item 7) in the real app: a short or repeated quote is saved only
after "Save anyway"; "No answer in corpus" asks for a second click, and its author can undo it."""

from __future__ import annotations

from datetime import date

from golden_store.live import queries
from golden_store.live.queries import get_query
from tests.app_pages.test_app_roles import accounts, app_as  # noqa: F401 (fixture)
from tests.conftest import plain


def _find(at, text):
    at.text_area(key="ev_quote").input(text)
    at.button(key="ev_resolve").click().run()
    assert not at.exception


def _quote_count(store, qid):
    return store.read_one("SELECT count(*) FROM current_evidence WHERE query_id = ?", [qid])[0]


def test_a_short_quote_is_saved_only_after_save_anyway(accounts):
    at = app_as("annotator")
    at.switch_page("app_pages/evidence.py").run()
    at.selectbox(key="ev_query").set_value("q030").run()
    n = _quote_count(accounts, "q030")
    _find(at, "half day EUR 29")
    assert any("The quote is short" in plain(w.value) for w in at.warning)
    assert "ev_save" not in [b.key for b in at.button]
    assert _quote_count(accounts, "q030") == n
    at.button(key="ev_save_anyway").click().run()
    assert not at.exception
    assert any("Saved quote" in plain(m.value) for m in at.success)
    assert _quote_count(accounts, "q030") == n + 1


def test_a_long_unique_quote_saves_at_once(accounts):
    at = app_as("annotator")
    at.switch_page("app_pages/evidence.py").run()
    at.selectbox(key="ev_query").set_value("q030").run()
    _find(at, "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night")
    assert "ev_save_anyway" not in [b.key for b in at.button]
    at.button(key="ev_save").click().run()
    assert any("Saved quote" in plain(m.value) for m in at.success)


def test_no_answer_asks_first_and_can_be_undone(accounts):
    queries.save_query(accounts, queries.QueryRecord("u1", "Is there a canteen on the roof?", "paraphrase", True,
                                                     "expert", date(2026, 3, 1)), actor="t", must_exist=False)
    at = app_as("annotator")
    at.switch_page("app_pages/evidence.py").run()
    at.selectbox(key="ev_query").set_value("u1").run()
    at.button(key="ev_no_answer").click().run()
    assert get_query(accounts, "u1").answerable  # one click records nothing
    at.button(key="ev_no_answer_cancel").click().run()
    assert "ev_no_answer_confirm" not in [b.key for b in at.button]
    at.button(key="ev_no_answer").click().run()
    at.button(key="ev_no_answer_confirm").click().run()
    assert not at.exception
    rec = get_query(accounts, "u1")
    assert not rec.answerable and rec.stratum == "negative"
    assert any("marked as unanswerable" in plain(m.value) for m in at.success)
    at.button(key="ev_undo_no_answer_u1").click().run()
    assert not at.exception
    rec = get_query(accounts, "u1")
    assert rec.answerable and rec.stratum == "paraphrase"
    assert any("Undone: u1" in plain(m.value) for m in at.success)
    assert "ev_undo_no_answer_u1" not in [b.key for b in at.button]
