"""Claim reviews over real HTTP on loopback: a reviewer's token records a verdict on a claim and
hears the judge's only in the answer; the agreement report follows; an annotator's token is
refused, and a bad claim or verdict is one problem that changes nothing."""

from __future__ import annotations

import httpx

from annotator.labeling import claim_review
from annotator.people.identity import LOCAL_USER
from tests.annotator.test_claim_review import make_checks
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth


def test_record_a_review_and_read_the_agreement(demo_store, api, tokens, tmp_path):
    checks = make_checks(demo_store, tmp_path)
    rev = auth(tokens["reviewer"])
    # q004's claims, by the judge: supported, supported, contradicted, insufficient
    for no, verdict in ((1, "supported"), (2, "contradicted"), (3, "contradicted"), (4, "supported")):
        r = httpx.post(f"{api}/answers/claim-reviews", headers=rev, timeout=30,
                       json={"check_id": checks["q004"], "claim_no": no, "verdict": verdict})
        assert r.status_code == 201, r.text
    got = r.json()
    assert got["judge"] == "insufficient" and got["agrees"] is False and got["reviewer"].startswith("token:t-reviewer")

    rep = httpx.get(f"{api}/answers/claim-reviews/agreement", headers=auth(tokens["engineer"]),
                    params={"system": "s1"}, timeout=30)
    assert rep.status_code == 200
    o = rep.json()["overall"]
    # people S,C,C,S against the judge S,S,C,I: 2 of 4 agree; people fail 2, the judge caught 1
    assert o["n"] == 4 and o["raw_agreement"] == 0.5
    assert (o["fail_recall"]["caught"], o["fail_recall"]["human_fail"]) == (1, 2)
    assert o["confusion"] == [[1, 0, 1], [1, 1, 0], [0, 0, 0]]


def test_refusals_and_bad_input_change_nothing(demo_store, api, tokens, tmp_path):
    checks = make_checks(demo_store, tmp_path)
    claim_review.record(demo_store, LOCAL_USER, checks["q005"], 1, "supported")
    before = table_snapshot(demo_store)
    url = f"{api}/answers/claim-reviews"
    body = {"check_id": checks["q005"], "claim_no": 1, "verdict": "supported"}
    r = httpx.post(url, headers=auth(tokens["annotator"]), json=body, timeout=30)
    assert r.status_code == 403 and "may not review the judge's claim verdicts" in r.json()["detail"]
    r = httpx.get(f"{api}/answers/claim-reviews/agreement", headers=auth(tokens["annotator"]), timeout=30)
    assert r.status_code == 403
    r = httpx.post(url, headers=auth(tokens["reviewer"]), json={**body, "claim_no": 99}, timeout=30)
    assert r.status_code == 404 and f"There is no claim 99 of check {checks['q005']}" in r.json()["detail"]
    r = httpx.post(url, headers=auth(tokens["reviewer"]), json={**body, "verdict": "yes"}, timeout=30)
    assert r.status_code == 422
    assert table_snapshot(demo_store) == before
