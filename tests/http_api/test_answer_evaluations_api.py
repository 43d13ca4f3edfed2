"""Answer evaluations over real HTTP (issue 40, item 6): a pipeline scores and records two
systems' answers, then gates them with /evaluations/compare as it gates runs; a grader may not
record, and a bad version name is one problem that records nothing."""

from __future__ import annotations

import httpx

from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets, reference_answers
from annotator.people.identity import LOCAL_USER
from tests.http_api.conftest import auth, freeze

REFS = {"q004": "EUR 58", "q013": "EUR 240 per night", "q015": "30 minutes", "q006": "up to 8 unused days",
        "q009": "the first 18 weeks", "q008": "in Pulse on your first day back at work"}


def _answers_and_references(store) -> None:
    for system in ("rag-bm25", "rag-hybrid"):
        nuggets.import_answers(store, LOCAL_USER, str(DEMO_DIR / "answers" / f"{system}.jsonl"), system)
    for qid, short in REFS.items():
        reference_answers.write(store, LOCAL_USER, qid, short_answer=short, full_answer=None)
        reference_answers.approve(store, LOCAL_USER, qid)
    freeze(store, "ans.v1")


def test_record_two_systems_and_gate_them(demo_store, api, tokens):
    _answers_and_references(demo_store)
    eng = auth(tokens["engineer"])
    scored = httpx.get(f"{api}/answers/evaluate", headers=eng, params={"version": "ans.v1", "system": "rag-hybrid"},
                       timeout=60)
    assert scored.status_code == 200, scored.text
    # rag-hybrid matches q013 "EUR 240 per night", q015 "30 minutes" and q008 "In Pulse, on your first
    # day back at work." (comma and full stop go) exactly: 3 of the 6
    assert scored.json()["n"]["answer_em"] == 6 and abs(scored.json()["means"]["answer_em"] - 3 / 6) < 1e-12
    assert scored.json()["means"]["faithfulness"] is None  # no claim checked: not applicable, never 0
    for system in ("rag-bm25", "rag-hybrid"):
        r = httpx.post(f"{api}/answers/evaluations", headers=eng, timeout=60,
                       json={"evaluation_id": f"ans-{system}", "version": "ans.v1", "system": system})
        assert r.status_code == 201, r.text
    c = httpx.get(f"{api}/evaluations/compare", headers=eng, timeout=60,
                  params={"baseline": "ans-rag-bm25", "candidate": "ans-rag-hybrid", "measure": ["answer_f1"]})
    assert c.status_code == 200, c.text
    assert c.json()["gate"] in ("PASS", "WARN") and c.json()["metrics"]["answer_f1"]["n"] == 6
    listed = httpx.get(f"{api}/evaluations", headers=eng, timeout=30).json()
    assert {"ans-rag-bm25", "ans-rag-hybrid"} <= {e["evaluation"] for e in listed}


def test_a_grader_cannot_record_and_a_bad_version_records_nothing(demo_store, api, tokens):
    _answers_and_references(demo_store)
    body = {"evaluation_id": "x", "version": "ans.v1", "system": "rag-bm25"}
    r = httpx.post(f"{api}/answers/evaluations", headers=auth(tokens["annotator"]), json=body, timeout=30)
    assert r.status_code == 403
    r = httpx.post(f"{api}/answers/evaluations", headers=auth(tokens["engineer"]), timeout=30,
                   json={**body, "version": "s3://elsewhere/v1"})
    assert r.status_code == 422 and "not a path or URL" in r.text
    assert demo_store.read("SELECT count(*) FROM eval_results") == [(0,)]


def test_faithfulness_corrected_by_reviews_over_http(demo_store, api, tokens):
    """The figures of tests/annotator/test_judge_corrected.py's hand-worked store, over HTTP."""
    from tests.annotator.test_judge_corrected import _checked_and_reviewed

    _checked_and_reviewed(demo_store)
    r = httpx.get(f"{api}/answers/faithfulness/corrected", headers=auth(tokens["lead"]), timeout=30)
    assert r.status_code == 200, r.text
    got = r.json()["rag-bm25"]
    assert abs(got["corrected"]["mean"] - 0.7) < 1e-12 and got["reviewed"] == 6
    assert httpx.get(f"{api}/answers/faithfulness/corrected", headers=auth(tokens["annotator"]),
                     timeout=30).status_code == 403
