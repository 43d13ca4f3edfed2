"""The Reference answers page's rounds section in the real app (AppTest): a lead opens a round for
two annotators; the first writes and submits; the second sees that she submitted, not what; he
submits; the lead reads both side by side (as plain text: markup in an answer stays literal) with
their agreement and accepts one, which becomes the question's approved reference answer. An
empty answer is one error and writes nothing."""

from __future__ import annotations

from annotator import demo
from annotator.people import identity
from annotator.process import context
from golden_store.live import evidence as live_evidence
from golden_store.live import reference_answers as live_refs
from tests.app_pages.test_app_roles import app_as, texts
from tests.conftest import plain, table_snapshot

PASSWORD = "0123456789"
ROUNDS = "Double-authoring rounds"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for name, role in (("annotator", "annotator"), ("annotator2", "annotator"), ("lead", "lead")):
        identity.create_user(store, admin, name, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def _rounds(who: str):
    at = app_as(who)
    at.switch_page("app_pages/references.py").run()
    at.radio(key="ref_section").set_value(ROUNDS).run()
    assert not at.exception, at.exception
    return at


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def _open_round(store) -> None:
    at = _rounds("lead")
    at.multiselect(key="rr_open_authors").set_value(["annotator", "annotator2"])
    at.multiselect(key="rr_open_questions").set_value(["q004"])
    _button(at, "Open the round").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Opened reference round ref1" in plain(texts(at))


def test_open_write_blind_submit_and_adjudicate_side_by_side(golden_db):
    store = _accounts()
    _open_round(store)

    at = _rounds("annotator")
    assert "1 question(s) wait for your answer: q004 (ref1)" in plain(texts(at))
    at.text_input(key="rr_ref1_q004_short").input("EUR 58 <b>bold</b>")
    evidence = at.multiselect(key="rr_ref1_q004_ev")
    evidence.select(evidence.options[0])
    _button(at, "Submit (final)").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Submitted q004" in plain(texts(at))

    at = _rounds("annotator2")
    shown = plain(texts(at))
    assert "annotator: submitted" in shown and "1 submitted; their answers are not shown to you yet" in shown
    assert "EUR 58" not in shown
    at.text_input(key="rr_ref1_q004_short").input("58 euros")
    _button(at, "Submit (final)").click().run()
    assert not at.exception and not at.error
    assert "EUR 58 <b>bold</b>" in [t.value for t in at.text]  # now his to read, as plain text

    at = _rounds("lead")
    assert "EUR 58 <b>bold</b>" in [t.value for t in at.text] and "58 euros" in [t.value for t in at.text]
    assert "Short answer EM 0.000" in plain(texts(at))
    # each cited span is shown with its quote (from the question's evidence), not offsets alone
    quotes = [e["quote"] for e in live_evidence.list_evidence(store, "q004") if e["quote"]]
    assert any(("\u201c" + q[:40]) in t.value for q in quotes for t in at.text)
    # no decision is preselected: Adjudicate pressed before choosing accepts nobody and stores nothing
    before = table_snapshot(store)
    _button(at, "Adjudicate").click().run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == [
        "Choose a decision for q004 first (accept one author's answer or write a merged one); nothing was adjudicated."]
    assert table_snapshot(store) == before
    at.radio(key="rr_ref1_q004_adj_how").set_value("accept annotator2").run()
    at.text_input(key="rr_ref1_q004_adj_note").input("the wording people search for")
    _button(at, "Adjudicate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (now,) = live_refs.current(store, "q004")
    assert (now["short_answer"], now["approved"], now["actor"]) == ("58 euros", True, "lead")
    assert "Adjudicated by lead: accepted annotator2's answer" in plain(texts(at))


def test_an_empty_answer_is_one_error_and_writes_nothing(golden_db):
    store = _accounts()
    _open_round(store)
    at = _rounds("annotator")
    before = table_snapshot(store)
    _button(at, "Save draft").click().run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == ["q004: a reference answer needs a short answer, a full answer or both."]
    assert table_snapshot(store) == before
    # an annotator opens no round
    assert not [b for b in at.button if b.label == "Open the round"]


def test_a_question_waiting_in_a_round_says_so_and_its_author_writes_there(golden_db):
    store = _accounts()
    _open_round(store)
    at = app_as("annotator")
    at.switch_page("app_pages/references.py").run()
    at.selectbox(key="ref_q").set_value("q004").run()
    assert "q004 is in reference round ref1" in plain(texts(at))
    before = table_snapshot(store)
    at.text_input(key="ref_short_q004").input("EUR 58")
    next(b for b in at.button if b.label == "Save revision").click().run()
    assert not at.exception and "q004 is in reference round ref1: write your answer in the round" in plain(
        at.error[0].value)
    assert table_snapshot(store) == before
