"""``golden answers grade-sample / grade / judge-rubric / rubric-report`` in-process, on a real
store and the local Messages-API server: the sample blind to the system, a person's grade and a
bad one (one sentence, nothing written), the judge estimated first and refused without --yes
off a terminal, then run; the calibration report as text and JSON."""

from __future__ import annotations

import json

from annotator.cli import main
from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets, reference_answers
from annotator.people.identity import LOCAL_USER
from tests.conftest import table_snapshot
from tests.llm_server import message

SYSTEM = "cli-sys"


def golden(golden_db, capsys, *argv):
    capsys.readouterr()
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _setup(store, tmp_path) -> None:
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(store, LOCAL_USER, scope="stratum", scope_id="tabular",
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))
    p = tmp_path / "a.jsonl"
    p.write_text("".join(json.dumps({"query_id": q, "answer": f"EUR 58 ({q})"}) + "\n" for q in ("q004", "q013")))
    nuggets.import_answers(store, LOCAL_USER, str(p), SYSTEM)


def _judge(body: dict):
    text = body["messages"][0]["content"]
    amount = 0 if "(q013)" in text else 1
    return 200, message(json.dumps({"grades": [
        {"criterion": "amount", "reason": "r", "mark": amount}, {"criterion": "condition", "reason": "r", "mark": 2},
        {"criterion": "no_invention", "reason": "r", "mark": 1}]}))


def test_grade_sample_grade_judge_and_report(demo_store, golden_db, capsys, tmp_path, llm_server):
    _setup(demo_store, tmp_path)
    code, out, err = golden(golden_db, capsys, "answers", "grade-sample", "--system", SYSTEM, "--n", "2", "--json")
    assert code == 0, err
    cards = json.loads(out)
    assert {c["query_id"] for c in cards} == {"q004", "q013"} and SYSTEM not in out
    code, out, _ = golden(golden_db, capsys, "answers", "grade-sample", "--n", "2")
    assert code == 0 and cards[0]["key"] in out and SYSTEM not in out

    for qid, amount in (("q004", 1), ("q013", 0)):
        code, out, err = golden(golden_db, capsys, "answers", "grade", qid, "--system", SYSTEM, "--criterion",
                                "amount", "--mark", str(amount))
        assert code == 0 and f"amount = {amount}" in out, err
    before = table_snapshot(demo_store)
    code, out, err = golden(golden_db, capsys, "answers", "grade", "q004", "--system", SYSTEM, "--criterion",
                            "amount", "--mark", "3")
    assert code == 2 and "Criterion 'amount' is marked 0 to 1, not 3." in err and out == ""
    assert table_snapshot(demo_store) == before

    llm_server.default = _judge
    code, out, err = golden(golden_db, capsys, "answers", "judge-rubric", "--system", SYSTEM)  # no terminal, no --yes
    assert code != 0 and "Rubric grading" in out and llm_server.requests == []
    code, out, err = golden(golden_db, capsys, "answers", "judge-rubric", "--system", SYSTEM, "--yes")
    assert code == 0, err
    assert "2 answer(s) graded (0 refused by the model" in out and "6 criterion mark(s)" in out
    assert len(llm_server.requests) == 2
    # again: both answers are already graded by this judge and prompt, so nothing is sent
    code, out, err = golden(golden_db, capsys, "answers", "judge-rubric", "--system", SYSTEM, "--yes")
    assert code == 0 and "skipped q004: already graded by" in out and "nothing will be sent" in out
    assert len(llm_server.requests) == 2
    code, out, err = golden(golden_db, capsys, "answers", "judge-rubric", "--system", SYSTEM, "--yes", "--redo")
    assert code == 0 and "2 answer(s) graded" in out and len(llm_server.requests) == 4

    code, out, err = golden(golden_db, capsys, "answers", "rubric-report", "--system", SYSTEM)
    assert code == 0, err
    assert "amount (0-1): PASS; 2 item(s); Cohen's kappa 1.000" in out
    assert "the judge gave 0 to 1 of the 1 mark(s) people gave 0" in out
    code, out, _ = golden(golden_db, capsys, "answers", "rubric-report", "--system", SYSTEM, "--json")
    (judge,) = json.loads(out)["judges"]
    assert judge["verdict"] == "pass" and [c["criterion_id"] for c in judge["criteria"]] == ["amount"]


def test_the_report_says_what_to_do_when_nothing_is_paired(demo_store, golden_db, capsys):
    code, out, _ = golden(golden_db, capsys, "answers", "rubric-report")
    assert code == 0 and "No answer criterion graded by both people and the judge yet" in out
