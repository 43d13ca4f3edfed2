"""Issue 29 (newcomer walkthrough 2026-12-04) on the Nuggets page, in the real app (AppTest):

* M6: graders never see the Scores view (it names each answer's system and whether it is
  complete, which tells them whose answer they are assigning); the annotator layer refuses them
  the reads that name systems; leads and reviewers keep their views.
* M7: the History shows the question's nugget events (with a count by kind above the table).
* M8: after a save the add-nugget form is empty and its Position is the end of the list, so
  three nuggets added in a row are stored in the order they were written."""

from __future__ import annotations

import json

import pytest

from annotator import demo
from annotator.evidence import nuggets
from annotator.people import identity
from annotator.process import context
from annotator.people.roles import PermissionDenied
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain

PASSWORD = "0123456789"
Q3_ONE = "must give one month of notice"
Q3_TWO = "must give two months"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    identity.create_user(store, admin, "lena", ["lead"], password=PASSWORD)
    identity.create_user(store, admin, "rita", ["reviewer"], password=PASSWORD)
    demo.load_demo(store, admin)
    return store, admin


def _answers(store, admin, tmp_path) -> None:
    """q003 with two approved nuggets; rag-a's answer fully assigned, rag-d's half: the state
    in which the review's Scores view said which q003 answer was left (rag-d)."""
    lena = identity.get_user(store, "lena")
    nuggets.edit_one(store, lena, "q003", None, text="Under five years: one month", quote=Q3_ONE)
    nuggets.edit_one(store, lena, "q003", None, text="Five years or more: two months", quote=Q3_TWO)
    nuggets.approve(store, lena, "q003")
    for system in ("rag-a", "rag-d"):
        f = tmp_path / f"{system}.jsonl"
        f.write_text(json.dumps({"query_id": "q003", "answer": f"The answer of {system}."}) + "\n")
        nuggets.import_answers(store, admin, str(f), system)
    for system, nid in (("rag-a", "n1"), ("rag-a", "n2"), ("rag-d", "n1")):
        nuggets.assign(store, lena, system, "q003", nid, "support")


def test_graders_do_not_see_scores_and_the_annotator_layer_refuses_them(tmp_path):
    store, admin = _accounts()
    _answers(store, admin, tmp_path)
    ann = identity.get_user(store, "ann")

    at = app_as("ann")
    at.switch_page("app_pages/nuggets.py").run()
    assert not at.exception
    assert at.radio(key="nug_mode").options == ["Author", "Assign to answers"]
    at.radio(key="nug_mode").set_value("Assign to answers").run()
    assert not at.exception
    shown = " ".join(str(x.value) for x in [*at.markdown, *at.caption, *at.info, *at.text])
    assert "rag-a" not in shown and "rag-d" not in shown

    for read in (lambda: nuggets.scores(store, ann), lambda: nuggets.abstention(store, ann, n_boot=10),
                 lambda: nuggets.answers(store, ann), lambda: nuggets.assignments(store, ann),
                 lambda: nuggets.answer_outcomes(store, ann),
                 lambda: nuggets.outcome_history(store, ann, "rag-d", "q003")):
        with pytest.raises(PermissionDenied, match="ann .roles: annotator. may not see .* graders assign nuggets blind"
                                                   "|ann .roles: annotator. may not see and compare"):
            read()
    assert nuggets.has_answers(store, ann)  # what a grader may know: that there are answers, not whose

    # a lead sees the scores, rag-d's answer incomplete (2 nuggets, 1 assigned)
    lena = identity.get_user(store, "lena")
    per_answer, _ = nuggets.scores(store, lena)
    row = per_answer.set_index("system").loc["rag-d"]
    assert (row["nuggets"], row["assigned"], bool(row["complete"])) == (2, 1, False)
    at = app_as("lena")
    at.switch_page("app_pages/nuggets.py").run()
    assert at.radio(key="nug_mode").options == ["Author", "Assign to answers", "Scores"]
    at.radio(key="nug_mode").set_value("Scores").run()
    assert not at.exception
    assert "rag-d" in set(at.dataframe[1].value["system"])

    # a reviewer: Scores only (abstention and marking), not the nugget scores table
    at = app_as("rita")
    at.switch_page("app_pages/nuggets.py").run()
    assert not at.exception and at.radio(key="nug_mode").options == ["Scores"]
    assert not any("assigned" in d.value.columns for d in at.dataframe)
    with pytest.raises(PermissionDenied):
        nuggets.scores(store, identity.get_user(store, "rita"))


def _open_q003(who: str):
    at = app_as(who)
    at.switch_page("app_pages/nuggets.py").run()
    at.selectbox(key="nug_q").set_value("q003").run()
    assert not at.exception
    return at


def test_three_nuggets_added_in_a_row_keep_their_order_and_the_form_empties():
    store, _ = _accounts()
    at = _open_q003("ann")
    rows = [("Under five years: one month", "vital", Q3_ONE), ("Five years or more: two months", "okay", Q3_TWO),
            ("Notice applies after probation", "okay", "")]
    for k, (text, imp, quote) in enumerate(rows, 1):
        # the form is empty and the position is the end of the list (append)
        assert at.text_input(key="nug_t_q003_None").value == ""
        assert at.text_input(key="nug_qt_q003_None").value == ""
        assert at.radio(key="nug_i_q003_None").value == "vital"
        assert at.number_input(key="nug_p_q003_None").value == k
        at.text_input(key="nug_t_q003_None").input(text)
        at.radio(key="nug_i_q003_None").set_value(imp)
        at.text_input(key="nug_qt_q003_None").input(quote)
        at.button(key="nug_one_save").click().run()
        assert not at.exception
        assert any("Saved: 1 added, 0 edited." in plain(m.value) for m in at.success)
    assert at.text_input(key="nug_t_q003_None").value == "" and at.number_input(key="nug_p_q003_None").value == 4
    current = nuggets.current(store, identity.get_user(store, "ann"), "q003")
    assert [(n["position"], n["text"], n["importance"], n["quote"]) for n in current] == [
        (1, rows[0][0], "vital", Q3_ONE), (2, rows[1][0], "okay", Q3_TWO), (3, rows[2][0], "okay", None)]

    # editing one shows what is stored, and after its save what is stored again
    at.selectbox(key="nug_one_q003").set_value("n2").run()
    assert at.text_input(key="nug_t_q003_n2").value == rows[1][0] and at.number_input(key="nug_p_q003_n2").value == 2
    at.text_input(key="nug_t_q003_n2").input("  Five or more years: two months  ")
    at.button(key="nug_one_save").click().run()
    assert not at.exception and at.text_input(key="nug_t_q003_n2").value == "Five or more years: two months"
    # deleting the last one: the new-nugget form's position follows the shorter list
    at.selectbox(key="nug_one_q003").set_value("n3").run()
    at.button(key="nug_one_delete").click().run()
    assert not at.exception
    at.selectbox(key="nug_one_q003").set_value(None).run()
    assert at.number_input(key="nug_p_q003_None").value == 3


def test_history_lists_the_questions_nugget_events():
    store, _ = _accounts()
    ann = identity.get_user(store, "ann")
    for text, quote in (("Under five years: one month", Q3_ONE), ("Five years or more: two months", Q3_TWO),
                        ("Notice applies after probation", "")):
        nuggets.edit_one(store, ann, "q003", None, text=text, quote=quote)
    nuggets.edit_one(store, ann, "q003", "n3", text="Notice starts after probation", importance="okay")
    nuggets.approve(store, ann, "q003")
    events = store.read("SELECT op FROM nugget_events WHERE query_id = 'q003' ORDER BY event_id")
    assert [r[0] for r in events] == ["add", "add", "add", "edit", "approve", "approve", "approve"]

    at = _open_q003("ann")
    box = next(e for e in at.expander if e.label.startswith("History"))
    assert "No nugget events yet." not in [c.value for c in box.caption]
    assert "7 event(s) on q003: 3 add, 1 edit, 3 approve." in [plain(c.value) for c in box.caption]
    hist = box.dataframe[0].value
    assert list(hist["op"]) == ["add", "add", "add", "edit", "approve", "approve", "approve"]
    assert list(hist["nugget_id"]) == ["n1", "n2", "n3", "n3", "n1", "n2", "n3"]
    # a question without events says so
    at.selectbox(key="nug_q").set_value("q005").run()
    box = next(e for e in at.expander if e.label.startswith("History"))
    assert [plain(c.value) for c in box.caption] == ["No nugget events yet."]
