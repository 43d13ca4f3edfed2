"""Issue 37 item 9: the API's freeze refusal names where the conflicts are fixed (the app's
Freeze conflicts page), in the same sentence as the CLI and the Versions page."""

from __future__ import annotations

import httpx

from golden_store.db.store import utcnow
from golden_store.live import grade_state
from tests.http_api.conftest import auth


def test_the_api_refusal_names_the_freeze_conflicts_page(demo_store, api, tokens):
    demo_store.write(lambda cur: grade_state.append_tx(
        cur, query_id="q005", doc_id="annual-leave", start=0, end=40, op="grade", grade=3, actor="ann",
        created_at=utcnow(), doc_sha256=None, rubric_version=1))
    r = httpx.post(f"{api}/versions", headers=auth(tokens["engineer"]), json={"name": "v1"}, timeout=60)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail.startswith("Freeze refused: 1 question(s) marked unanswerable")
    assert "the Freeze conflicts page (Review → Freeze conflicts in the app) lists each with its fixes" in detail
