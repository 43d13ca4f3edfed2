"""Issue 37 item 7 (probe A9) over real HTTP: requests anyone can make (no token, guessed
tokens, then 429s) leave at most GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS audit rows, while every
request of a real token stays audited. On DuckDB and PostgreSQL."""

from __future__ import annotations

import httpx

from annotator.people import api_tokens, identity
from tests.http_api.conftest import auth


def test_an_anonymous_flood_leaves_at_most_the_cap_and_the_pipelines_requests(store, api, monkeypatch):
    monkeypatch.setenv("GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS", "30")  # read at each write of the audit
    root = identity.create_user(store, None, "root", ["admin", "engineer"], password="pw-admin-123456789")
    info, secret = api_tokens.create_token(store, root, "ci", ["engineer"])
    with httpx.Client(base_url=api, timeout=60) as c:
        for i in range(8):
            assert c.get("/me", headers=auth(secret)).status_code == 200
            for _ in range(25):
                assert c.get("/versions").status_code in (401, 429)  # no token (429 once the address is throttled)
            for g in range(5):  # guesses: 401, then 429 once the address is throttled
                assert c.get("/versions", headers=auth(f"gst_guess{i}-{g}")).status_code in (401, 429)
    api_tokens.flush_audit()
    (refused,) = store.read_one("SELECT count(*) FROM api_token_uses WHERE outcome NOT IN ('ok', 'denied')")
    assert 0 < refused <= 30  # 240 refusals were made; the newest 30 at most are kept
    assert [u["status"] for u in api_tokens.token_uses(store, root, "ci")] == [200] * 8  # every one of the pipeline's
