"""Answer grading over real HTTP on loopback: an annotator's token reads the blind sample and
records marks by the answer's key (the system never in the answer); the lead's token reads the
judge's calibration; a reviewer's token may not grade; a bad mark is one problem that changes
nothing."""

from __future__ import annotations

import functools

import httpx

from golden_store.live import answer_grades
from tests.annotator.test_answer_grading import SYSTEM, _import
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth


def _setup(store, tmp_path) -> None:
    import json

    from annotator.demo import DEMO_DIR
    from annotator.evidence import reference_answers
    from annotator.people.identity import LOCAL_USER

    _import(store, tmp_path, {q: f"Answer of {q}" for q in ("q004", "q013")})
    rubric = json.loads((DEMO_DIR / "criteria.json").read_text("utf-8"))
    reference_answers.set_criteria(store, LOCAL_USER, scope="stratum", scope_id="tabular",
                                   criteria=reference_answers.criteria_drafts(rubric["criteria"], "criteria.json"))


def test_sample_grade_by_key_and_report(demo_store, api, tokens, tmp_path):
    _setup(demo_store, tmp_path)
    ann = auth(tokens["annotator"])
    r = httpx.get(f"{api}/answers/grading/sample", headers=ann, params={"system": SYSTEM, "n": 5}, timeout=30)
    assert r.status_code == 200, r.text
    cards = {c["query_id"]: c for c in r.json()}
    assert set(cards) == {"q004", "q013"} and SYSTEM not in r.text
    for qid, amount in (("q004", 1), ("q013", 0)):
        r = httpx.post(f"{api}/answers/grading/answers/{cards[qid]['key']}", headers=ann, timeout=30,
                       json={"marks": {"amount": amount, "condition": 2}})
        assert r.status_code == 201, r.text
        assert r.json()["query_id"] == qid and SYSTEM not in r.text and len(r.json()["grade_ids"]) == 2
    for qid, amount in (("q004", 1), ("q013", 1)):
        demo_store.write(functools.partial(
            answer_grades.record_judge_tx, system=SYSTEM, query_id=qid, answer=f"Answer of {qid}", model="j",
            prompt_sha="p", marks=[answer_grades.JudgeMark("amount", amount, None)]))
    r = httpx.get(f"{api}/answers/grading/report", headers=auth(tokens["lead"]), params={"system": SYSTEM},
                  timeout=30)
    assert r.status_code == 200, r.text
    (judge,) = r.json()["judges"]
    (amount,) = judge["criteria"]
    assert (amount["criterion_id"], amount["n"], amount["fail_caught"], amount["human_fail"]) == ("amount", 2, 0, 1)
    assert amount["verdict"] == "fail"


def test_refusals_and_bad_input_change_nothing(demo_store, api, tokens, tmp_path):
    _setup(demo_store, tmp_path)
    before = table_snapshot(demo_store)
    from annotator.labeling.answer_grading import answer_key

    url = f"{api}/answers/grading/answers/{answer_key(SYSTEM, 'q004')}"
    body = {"marks": {"amount": 1}}
    r = httpx.post(url, headers=auth(tokens["reviewer"]), json=body, timeout=30)
    assert r.status_code == 403
    r = httpx.get(f"{api}/answers/grading/report", headers=auth(tokens["annotator"]), timeout=30)
    assert r.status_code == 403
    r = httpx.post(url, headers=auth(tokens["annotator"]), json={"marks": {"amount": 4}}, timeout=30)
    assert r.status_code == 422 and "marked 0 to 1, not 4" in r.json()["detail"]
    r = httpx.post(f"{api}/answers/grading/answers/nope", headers=auth(tokens["annotator"]), json=body, timeout=30)
    assert r.status_code == 404 and "No answer with key 'nope'" in r.json()["detail"]
    r = httpx.post(url, headers=auth(tokens["annotator"]), json={"marks": {}}, timeout=30)
    assert r.status_code == 422 and "at least one" in r.json()["detail"]
    assert table_snapshot(demo_store) == before
