"""Correctness in three tiers, one worked example of our own computed by hand and reproduced
through the CLI: the deterministic tier (exact match and token F1 against the approved short
reference), the rubric judge (each criterion marked, the score combined in code with the fixed
weights), and people's grades of the same answers per criterion. Every expected number below is
worked out in the comments from the demo's references and its `tabular` rubric, not read back
from the studio.

The rubric (annotator/demo/data/criteria.json, stratum `tabular`):
    amount        weight 2, marked 0-1
    condition     weight 1, marked 0-2
    no_invention  weight 1, marked 0-1
score = (2 * amount/1 + 1 * condition/2 + 1 * no_invention/1) / (2 + 1 + 1)
"""

from __future__ import annotations

import json
import os

import pytest

from annotator import cli
from tests.annotator.test_answer_evaluation import frozen_demo  # noqa: F401  (the fixture)
from tests.llm_server import message

pytestmark = pytest.mark.slow

SYSTEM = "tiers-bot"
ANSWERS = {
    # reference "EUR 58" -> normalised "eur 58"; the answer normalises to "per diem is eur 58"
    # (lower case, "." dropped, the article "the" dropped): EM 0; 2 common tokens,
    # precision 2/5, recall 2/2, F1 = 2 * 0.4 * 1 / 1.4 = 4/7
    "q004": "The per diem is EUR 58.",
    # reference "EUR 240 per night" -> "eur 240 per night"; the answer "eur 200 per night":
    # EM 0; 3 common tokens of 4 each side, precision = recall = 3/4, F1 = 3/4
    "q013": "EUR 200 per night",
}
PEOPLE = {  # a person's marks, and the score they make by hand
    "q004": ({"amount": 1, "condition": 1, "no_invention": 1}, (2 * 1 + 1 * 0.5 + 1 * 1) / 4),  # 3.5/4 = 0.875
    "q013": ({"amount": 0, "condition": 2, "no_invention": 0}, (2 * 0 + 1 * 1.0 + 1 * 0) / 4),  # 1/4 = 0.25
}
JUDGE = {  # the judge's marks, and the score they make by hand
    "q004": ({"amount": 1, "condition": 2, "no_invention": 1}, (2 * 1 + 1 * 1.0 + 1 * 1) / 4),  # 4/4 = 1.0
    "q013": ({"amount": 0, "condition": 1, "no_invention": 1}, (2 * 0 + 1 * 0.5 + 1 * 1) / 4),  # 1.5/4 = 0.375
}


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _judge(body: dict):
    text = body["messages"][0]["content"]
    (qid,) = [q for q, a in ANSWERS.items() if a in text]
    marks = JUDGE[qid][0]
    return 200, message(json.dumps({"grades": [{"criterion": c, "reason": "worked example", "mark": m}
                                               for c, m in marks.items()]}))


def test_the_three_tiers_of_a_worked_example_through_the_cli(frozen_demo, capsys, tmp_path, llm_server):  # noqa: F811
    answers = tmp_path / "tiers.jsonl"
    answers.write_text("".join(json.dumps({"query_id": q, "answer": a}) + "\n" for q, a in ANSWERS.items()))
    rc, _, err = golden(capsys, "answers", "import", str(answers), "--system", SYSTEM)
    assert rc == 0, err

    # tier 1, deterministic: EM and F1 per question against the approved short reference
    rc, out, err = golden(capsys, "references", "match", "--system", SYSTEM, "--json")
    assert rc == 0, err
    got = json.loads(out)[SYSTEM]
    assert (got["n"], got["exact_match"]) == (2, 0) and got["token_f1"] == pytest.approx((4 / 7 + 3 / 4) / 2)
    per_q = {r["query_id"]: r for r in got["per_query"]}
    assert per_q["q004"]["em"] == 0 and per_q["q004"]["f1"] == pytest.approx(4 / 7)
    assert per_q["q013"]["em"] == 0 and per_q["q013"]["f1"] == pytest.approx(3 / 4)

    # tier 3, people: a person grades both answers per criterion
    rc, _, err = golden(capsys, "answers", "grade-sample", "--system", SYSTEM, "--n", "2")
    assert rc == 0, err
    for qid, (marks, _score) in PEOPLE.items():
        for criterion, mark in marks.items():
            rc, _, err = golden(capsys, "answers", "grade", qid, "--system", SYSTEM, "--criterion", criterion,
                                "--mark", str(mark))
            assert rc == 0, err

    # tier 2, the rubric judge: every criterion marked by the model, the score combined in code
    llm_server.default = _judge
    rc, out, err = golden(capsys, "answers", "judge-rubric", "--system", SYSTEM, "--yes")
    assert rc == 0, err
    assert len(llm_server.requests) == 2

    rc, out, err = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", SYSTEM,
                          "--record", "tiers", "--json")
    assert rc == 0, err
    ev = json.loads(out)
    means, n = ev["means"], ev["n"]
    assert n["answer_em"] == n["answer_f1"] == n["rubric_human"] == n["rubric_judge"] == 2
    assert means["answer_em"] == 0
    assert means["answer_f1"] == pytest.approx((4 / 7 + 3 / 4) / 2)  # 0.6607
    assert means["rubric_human"] == pytest.approx((0.875 + 0.25) / 2)  # 0.5625
    assert means["rubric_judge"] == pytest.approx((1.0 + 0.375) / 2)  # 0.6875
    # per question, as recorded for the comparison's pairing
    rows = dict(((q, m), v) for q, m, v in frozen_demo.read(
        "SELECT query_id, metric, value FROM eval_results WHERE evaluation_id = 'tiers'"))
    for qid in ANSWERS:
        assert rows[(qid, "rubric_human")] == pytest.approx(PEOPLE[qid][1])
        assert rows[(qid, "rubric_judge")] == pytest.approx(JUDGE[qid][1])
    assert rows[("q004", "answer_f1")] == pytest.approx(4 / 7)
    assert rows[("q013", "answer_f1")] == pytest.approx(3 / 4)
