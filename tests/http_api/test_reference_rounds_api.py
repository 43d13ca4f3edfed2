"""Reference-answer rounds over real HTTP on loopback: a lead's token opens a round for two
annotators' tokens (a token acts as ``token:NAME#ID``); each drafts and submits, blind to the
other until they submit; the round's agreement; the lead adjudicates a merged answer into the
question's approved reference. Roles answer 403, bad input one 4xx problem each, store unchanged."""

from __future__ import annotations

import httpx

from annotator.people import api_tokens
from annotator.people.identity import LOCAL_USER
from golden_store.live import reference_answers as live_refs
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth


def _token(store, name: str, role: str) -> tuple[str, dict[str, str]]:
    info, secret = api_tokens.create_token(store, LOCAL_USER, name, [role])
    return api_tokens.actor_of(info), auth(secret)


def test_open_draft_submit_blind_agreement_and_a_merged_adjudication(demo_store, api):
    doc_id, start, end = demo_store.read_one(
        "SELECT doc_id, start, \"end\" FROM current_evidence WHERE query_id = 'q004' ORDER BY start LIMIT 1")
    span = {"doc_id": doc_id, "start": int(start), "end": int(end)}
    _, lead = _token(demo_store, "lead", "lead")
    ann, ann_h = _token(demo_store, "ann", "annotator")
    ben, ben_h = _token(demo_store, "ben", "annotator")
    _, eng = _token(demo_store, "eng", "engineer")
    with httpx.Client(base_url=api, timeout=60) as c:
        assert c.post("/reference-rounds", headers=ann_h, json={"authors": [ann, ben], "query_ids": ["q004"]}
                      ).status_code == 403
        r = c.post("/reference-rounds", headers=lead, json={"authors": [ann, ben], "query_ids": ["q004"]})
        assert r.status_code == 201 and r.json() == {"round_id": "ref1"}
        base = "/reference-rounds/ref1/questions/q004"
        assert c.put(f"{base}/draft", headers=ann_h, json={"short_answer": "EUR 58", "evidence": [span]}
                     ).status_code == 200
        assert c.post(f"{base}/submit", headers=ann_h, json={}).status_code == 200  # her draft
        mine = c.get("/reference-rounds", headers=ben_h).json()["waiting_for_you"]
        assert [(m["round_id"], m["query_id"], m["state"]) for m in mine] == [("ref1", "q004", "to write")]
        q = c.get("/reference-rounds/ref1", headers=ben_h).json()["questions"][0]
        assert q["authors"][ann] == {"state": "submitted", "submission": None, "draft": None}
        assert c.post(f"{base}/submit", headers=eng, json={"answer": {"short_answer": "x"}}).status_code == 403
        r = c.post(f"{base}/submit", headers=ben_h,
                   json={"answer": {"short_answer": "EUR 58 a day", "evidence": [span],
                                    "criteria": [{"id": "amount", "text": "States it", "example": "EUR 58"}]}})
        assert r.status_code == 200 and r.json()["submitted"] is True
        got = c.get("/reference-rounds/ref1", headers=ben_h).json()
        a = got["questions"][0]["agreement"]
        # "eur 58" (2 tokens) / "eur 58 day" ("a" dropped; 3 tokens): 2 shared, P 2/3 R 1 -> F1 4/5
        assert (a["short_em"], a["short_f1"], a["span_jaccard"]) == (0.0, 0.8, 1.0)
        assert got["agreement"]["short_f1"] == {"value": 0.8, "n": 1} and got["agreement"]["n_disagreeing"] == 1
        assert "short_f1" in got["agreement"]["definitions"]
        assert c.post(f"{base}/adjudicate", headers=ben_h, json={"accept": ann}).status_code == 403
        r = c.post(f"{base}/adjudicate", headers=lead,
                   json={"merged": {"short_answer": "EUR 58", "full_answer": "EUR 58 for a full day.",
                                    "evidence": [span]}, "note": "ann's short form"})
        assert r.status_code == 200 and r.json()["approved"] is True
    (now,) = live_refs.current(demo_store, "q004")
    assert (now["revision"], now["full_answer"], now["approved"]) == (r.json()["revision"], "EUR 58 for a full day.",
                                                                        True)


def test_bad_input_is_one_problem_and_changes_nothing(demo_store, api):
    _, lead = _token(demo_store, "lead", "lead")
    ann, ann_h = _token(demo_store, "ann", "annotator")
    with httpx.Client(base_url=api, timeout=60) as c:
        assert c.post("/reference-rounds", headers=lead, json={"authors": [ann, "ben"], "query_ids": ["q004"]}
                      ).status_code == 201
        before = table_snapshot(demo_store)
        for method, path, body, status, words in (
                ("post", "/reference-rounds", {"authors": [ann, "ben"], "query_ids": ["q-nope"]}, 404,
                 "No live question 'q-nope'"),
                ("post", "/reference-rounds/ref1/questions/q004/submit", {"answer": {"short_answer": " "}}, 422,
                 "needs a short answer, a full answer or both"),
                ("post", "/reference-rounds/ref1/questions/q001/submit", {"answer": {"short_answer": "x"}}, 404,
                 "q001 is not a question of reference round ref1"),
                ("post", "/reference-rounds/ref1/questions/q004/adjudicate", {"accept": "ben"}, 422,
                 "ben has not submitted"),
                ("get", "/reference-rounds/ref9", None, 404, "No reference round 'ref9'")):
            who = ann_h if "submit" in path else lead
            r = c.request(method.upper(), path, headers=who, json=body)
            assert r.status_code == status and words in r.json()["detail"], (path, r.text)
        # someone who is not an author
        r = c.post("/reference-rounds/ref1/questions/q004/submit", headers=lead, json={"answer": {"short_answer": "x"}})
        assert r.status_code == 422 and "is not an author of reference round ref1" in r.json()["detail"]
        assert table_snapshot(demo_store) == before
