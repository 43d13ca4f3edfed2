"""A request with no token is answered 401 ("no token") even while its address is throttled
(found by schemathesis's auth checks against the running API, and the ecosystem review: after
ten made-up tokens a pipeline that forgot its header was told "too many refused API tokens").
Guesses are still answered 429 and a live token still passes. Real HTTP on loopback."""

from __future__ import annotations

import httpx

from annotator.people import api_tokens
from tests.http_api.conftest import auth


def test_a_missing_token_is_401_while_guesses_from_the_same_address_are_429(demo_store, api, tokens):
    for i in range(api_tokens.REFUSALS_BEFORE_THROTTLE):
        assert httpx.get(f"{api}/versions", headers=auth(f"gst_guess{i}"), timeout=60).status_code == 401
    guess = httpx.get(f"{api}/versions", headers=auth("gst_one_more"), timeout=60)
    assert guess.status_code == 429 and int(guess.headers["retry-after"]) > 0

    missing = httpx.get(f"{api}/versions", timeout=60)
    assert missing.status_code == 401, missing.text
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["type"] == "/api/v1/problems/token-refused"
    assert "too many" not in missing.json()["detail"].lower()

    assert httpx.get(f"{api}/versions", headers=auth(tokens["engineer"]), timeout=60).status_code == 200
