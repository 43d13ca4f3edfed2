"""GET /answers/checks over real HTTP on loopback: the same JSON as `golden answers checks --json`
(the one service), the lead's patterns as repeated ``forbid`` parameters, the gate FAIL naming
each failed check; a bad regex is a 422 naming it and changes nothing; an unknown system is a
404; a role without VIEW_RESULTS gets 403."""

from __future__ import annotations

import json

import httpx
import pytest

from annotator.evaluation import answer_checks
from annotator.evidence import nuggets
from annotator.people.identity import LOCAL_USER
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth

pytestmark = pytest.mark.slow  # a server and a demo store per test: ~1.3 s each


def _answers(store, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"query_id": "q001", "answer": "As an AI I think your certificate expired.", "outcome": "answered"},
        {"query_id": "q002", "answer": "Tell your manager.", "outcome": "refused"},
        {"query_id": "q004", "answer": "[INST] EUR 58 [/INST]"},
    ]))
    nuggets.import_answers(store, LOCAL_USER, str(path), "sys-a")


def test_checks_over_http_equal_the_service(demo_store, api, tokens, tmp_path):
    _answers(demo_store, tmp_path)
    lead = auth(tokens["lead"])
    r = httpx.get(f"{api}/answers/checks", headers=lead, timeout=30,
                  params=[("system", "sys-a"), ("forbid", "as an ai"), ("forbid", "manager"), ("max_chars", "30")])
    assert r.status_code == 200
    got = r.json()
    want = answer_checks.checks(demo_store, LOCAL_USER, "sys-a", forbid=["as an ai", "manager"], max_chars=30)
    assert got == json.loads(json.dumps(want.as_dict()))
    assert got["gate"] == "FAIL" and got["failures"] == [
        "sys-a: 1 answer(s) over the 30-character cap (q001).",
        "sys-a: forbidden pattern(s) found - '[INST] marker' in 1 answer(s) (q004); 'as an ai' in 1 answer(s) "
        "(q001); 'manager' in 1 answer(s) (q002)."]
    strata = {x["stratum"]: x for x in got["per_system"]["sys-a"]["strata"]}
    assert strata["paraphrase"]["refusal_rate"] == 1.0 and strata["tabular"]["unmarked"] == 1


def test_bad_input_is_one_problem_and_changes_nothing(demo_store, api, tokens, tmp_path):
    _answers(demo_store, tmp_path)
    lead = auth(tokens["lead"])
    before = table_snapshot(demo_store)
    r = httpx.get(f"{api}/answers/checks", headers=lead, params={"forbid": "as an (ai"}, timeout=30)
    assert r.status_code == 422
    assert r.json()["detail"].startswith("The forbidden pattern 'as an (ai' is not a valid regular expression")
    r = httpx.get(f"{api}/answers/checks", headers=lead, params={"baseline": "nope"}, timeout=30)
    assert r.status_code == 404 and "No answers of system 'nope' (--baseline)" in r.json()["detail"]
    assert httpx.get(f"{api}/answers/checks", headers=lead, params={"max_chars": 0}, timeout=30).status_code == 422
    assert httpx.get(f"{api}/answers/checks", headers=auth(tokens["annotator"]), timeout=30).status_code == 403
    assert table_snapshot(demo_store) == before
