"""The judge figures corrected by people's samples over real HTTP on loopback (issue 40 item 7):
the hand-worked stores of tests/annotator/test_judge_corrected_retrieval.py and
test_judge_corrected_rubric.py, read through GET /pool/judge-corrected and
GET /answers/rubric/corrected, with the role a reader needs."""

from __future__ import annotations

import httpx
import pytest

from tests.annotator.test_judge_corrected_retrieval import _toy
from tests.annotator.test_judge_corrected_rubric import _graded
from tests.http_api.conftest import auth

pytestmark = pytest.mark.slow  # a server and a demo store per test: ~1.2 s each


def test_retrieval_corrected_by_the_standing_sample_over_http(demo_store, api, tokens):
    _toy(demo_store)
    r = httpx.get(f"{api}/pool/judge-corrected", headers=auth(tokens["engineer"]),
                  params={"system": "toy", "k": 20}, timeout=30)
    assert r.status_code == 200, r.text
    got = r.json()
    toy = got["systems"]["toy"]
    assert abs(toy["corrected"]["mean"] - 21 / 44) < 1e-12 and abs(toy["judge_only"]["mean"] - 8 / 11) < 1e-12
    assert (toy["items"], toy["sampled"], toy["sampled_waiting"]) == (11, 4, 1)
    assert "nDCG@10 is not corrected" in got["not_offered"]
    bad = httpx.get(f"{api}/pool/judge-corrected", headers=auth(tokens["engineer"]), params={"cut": 5}, timeout=30)
    assert bad.status_code == 422
    assert httpx.get(f"{api}/pool/judge-corrected", headers=auth(tokens["annotator"]), timeout=30).status_code == 403


def test_rubric_corrected_by_people_grades_over_http(demo_store, tmp_path, api, tokens):
    _graded(demo_store, tmp_path)
    r = httpx.get(f"{api}/answers/rubric/corrected", headers=auth(tokens["lead"]), timeout=30)
    assert r.status_code == 200, r.text
    got = r.json()["rag-toy"]
    assert abs(got["corrected"]["mean"] - (3 * (2.5 / 3 - 0.0625) + 2 * 0.6875 + 2 * 0.5625) / 7) < 1e-12 and (got["answers"], got["graded"]) == (7, 6)
    assert got["note"] is None and got["judges"] == ["judge-x @ pppppppppppp"]
    assert httpx.get(f"{api}/answers/rubric/corrected", headers=auth(tokens["annotator"]),
                     timeout=30).status_code == 403
