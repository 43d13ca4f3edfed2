"""GET /pool over real HTTP (issue 36 item 5): AP and Bpref are pytrec_eval's (relevance
level 2) on the final human grades of the answerable questions, the figures the CLI and the
Runs & pool page show; the body says the level and which unanswerable questions were left out
(the demo's q005, judged 0 on a pooled passage, used to be averaged in as a 0: bm25 0.9167)."""

from __future__ import annotations

import pytest

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from tests.golden_store.test_pool_status_sql import pytrec_pool_reference
from tests.http_api.conftest import auth, httpx


def test_pool_ap_and_bpref_leave_unanswerable_questions_out(store, api, tokens):
    load_demo(store, cli_user(), workflows=True, pool_job=False)  # the people's grades as loaded, before the judge
    r = httpx.get(f"{api}/pool", headers=auth(tokens["engineer"]), timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["relevance_level"] == 2 and body["left_out"] == {"unanswerable": ["q005"]}
    assert sorted(body["runs"]) == ["bm25", "dense", "hybrid"]
    for system, entry in body["runs"].items():
        ap, bpref, over = pytrec_pool_reference(store, system)
        assert body["ap_queries"] == len(over) == 11
        assert entry["ap"] == pytest.approx(ap, abs=1e-12), system
        assert entry["bpref"] == pytest.approx(bpref, abs=1e-12), system
    assert body["runs"]["bm25"]["ap"] == pytest.approx(1.0) and body["runs"]["bm25"]["bpref"] == pytest.approx(1.0)
