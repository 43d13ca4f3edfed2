"""The Answer grading page in the real app (AppTest): an annotator sees "n of N", one answer at a
time with its question, reference and criteria (each with its worked example), blind to the
system, its HTML shown as text; a form missing a mark saves nothing; a full form saves and
the next answer comes; a lead reads the judge's calibration below; a reviewer cannot open it."""

from __future__ import annotations

import functools
import json

import pytest

from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets, reference_answers
from annotator.people import identity
from annotator.people.identity import LOCAL_USER
from annotator.process import context
from app_pages._shared import md_escape
from golden_store.live import answer_grades
from tests.app_pages.test_app_roles import app_as

pytestmark = pytest.mark.slow

PASSWORD = "0123456789"
SYSTEM = "page-system-name"


def _setup(tmp_path):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("annotator", "lead"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(store, LOCAL_USER, scope="stratum", scope_id="tabular",
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))
    reference_answers.write(store, LOCAL_USER, "q004", short_answer="EUR 58 <i>ref</i>", full_answer=None)
    reference_answers.approve(store, LOCAL_USER, "q004")
    p = tmp_path / "a.jsonl"
    p.write_text("".join(json.dumps({"query_id": q, "answer": f"EUR 58 <b>bold</b> ({q})"}) + "\n"
                         for q in ("q004", "q013")))
    nuggets.import_answers(store, LOCAL_USER, str(p), SYSTEM)
    return store


def _everything(at) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.caption] + [e.value for e in at.info]
    return "\n".join(str(p) for p in parts)


def test_grade_one_answer_at_a_time_blind_and_escaped(demo_store, tmp_path):
    store = _setup(tmp_path)
    at = app_as("annotator")
    at.switch_page("app_pages/answer_grading.py").run()
    assert not at.exception and not at.error
    assert at.get("progress")[0].proto.text == "0 of 2 answers graded in this sample"
    shown = _everything(at)
    assert SYSTEM not in shown and "page\\-system" not in shown  # blind
    assert md_escape("<b>bold</b>") in shown and "<b>" not in shown  # the answer's HTML is text
    assert "Worked example" in shown and "amount" in shown
    assert [n.label for n in at.number_input][2:] == ["amount: mark 0-1", "condition: mark 0-2",
                                                      "no_invention: mark 0-1"]
    assert not at.dataframe  # an annotator does not see the calibration

    marks = at.number_input[2:]
    marks[0].set_value(1)
    marks[1].set_value(2)
    at.button[0].click().run()  # no_invention unmarked: nothing saved
    assert at.error and "no_invention has no mark yet" in at.error[0].value
    assert answer_grades.current_grades(store, SYSTEM, "human") == []
    at.number_input[4].set_value(0)
    at.button[0].click().run()
    assert not at.exception and not at.error
    grades = answer_grades.current_grades(store, SYSTEM, "human")
    assert sorted((g["criterion_id"], g["mark"]) for g in grades) == [("amount", 1), ("condition", 2),
                                                                       ("no_invention", 0)]
    assert {g["grader"] for g in grades} == {"annotator"}
    assert at.get("progress")[0].proto.text == "1 of 2 answers graded in this sample"

    for q, m in (("q004", 1), ("q013", 1)):
        store.write(functools.partial(answer_grades.record_judge_tx, system=SYSTEM, query_id=q,
                                      answer=f"EUR 58 <b>bold</b> ({q})", model="judge-m", prompt_sha="p",
                                      marks=[answer_grades.JudgeMark("amount", m, None)]))
    lead = app_as("lead")
    lead.switch_page("app_pages/answer_grading.py").run()
    assert not lead.exception and not lead.error
    (table,) = [d.value for d in lead.dataframe]
    assert table.to_dict("records")[0]["criterion"] == "amount" and table.to_dict("records")[0]["items"] == 1


def test_a_reviewer_cannot_open_it(demo_store):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "reviewer", ["reviewer"], password=PASSWORD)
    at = app_as("reviewer")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("app_pages/answer_grading.py")
