"""Reference answers over real HTTP: write, approve what was read, score a system's answers
against the approved short references; a span off its document and a bad import line are one
problem each (naming the span, the uploaded file's own name) and change nothing."""

from __future__ import annotations

import httpx

from annotator.demo import DEMO_DIR
from annotator.evidence import nuggets
from annotator.people.identity import LOCAL_USER
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth


def test_write_approve_and_match(demo_store, api, tokens):
    nuggets.import_answers(demo_store, LOCAL_USER, str(DEMO_DIR / "answers" / "rag-hybrid.jsonl"), "rag-hybrid")
    lead = auth(tokens["lead"])
    r = httpx.put(f"{api}/references/q004", headers=lead, json={"short_answer": "EUR 58"}, timeout=30)
    assert r.status_code == 200 and r.json()["approved"] is False
    revision = r.json()["revision"]
    stale = httpx.post(f"{api}/references/q004/approve", headers=lead, json={"revision": revision - 1}, timeout=30)
    assert stale.status_code == 422 and "changed since you read it" in stale.json()["detail"]
    assert httpx.post(f"{api}/references/q004/approve", headers=lead, json={"revision": revision},
                      timeout=30).status_code == 200
    m = httpx.get(f"{api}/answers/match", headers=lead, params={"system": "rag-hybrid"}, timeout=30).json()
    (row,) = m["rag-hybrid"]["per_query"]
    # "EUR 58 for a full day in Berlin (EUR 29 for a half day)." -> "eur 58 for full day in berlin eur 29 for
    # half day": 12 tokens ("a" dropped twice); "eur 58": common 2 -> P 2/12, R 1, F1 = (1/3) / (7/6) = 2/7
    assert row["em"] == 0.0 and abs(row["f1"] - 2 / 7) < 1e-12
    got = httpx.get(f"{api}/references/q004", headers=lead, timeout=30).json()
    assert got["current"]["approved"] is True and [h["op"] for h in got["history"]] == ["write", "approve"]


def test_bad_input_is_one_problem_and_changes_nothing(demo_store, api, tokens, tmp_path):
    lead = auth(tokens["lead"])
    before = table_snapshot(demo_store)
    r = httpx.put(f"{api}/references/q004", headers=lead, timeout=30,
                  json={"short_answer": "x", "evidence": [{"doc_id": "annual-leave", "start": 5, "end": 99_999_999}]})
    assert r.status_code == 422 and "annual-leave:5-99999999 is outside the document" in r.json()["detail"]
    bad = tmp_path / "mine.jsonl"
    bad.write_text('{"query_id": "q004", "short_answer": "EUR 58"}\nnot json\n')
    r = httpx.post(f"{api}/references", headers=lead, files={"file": ("mine.jsonl", bad.read_bytes())}, timeout=30)
    assert r.status_code == 422 and r.json()["detail"].startswith("mine.jsonl, line 2: not JSON")
    assert table_snapshot(demo_store) == before
