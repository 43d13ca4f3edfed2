"""Issue 37 item 7 (probe A8): a revoked token's name given to a new token must not make the
two one actor. Over real HTTP on loopback, on DuckDB and PostgreSQL: "rev" freezes a version,
is revoked, a new "rev" freezes another; each version's ``frozen_by`` names its own token
(``token:rev#<id>``), /me says which, and the audit lists each use under its token's id."""

from __future__ import annotations

import httpx

from annotator.people import api_tokens, identity
from tests.http_api.conftest import auth

PW = "pw-admin-123456789"


def test_two_tokens_of_one_name_are_two_actors_in_frozen_by_me_and_the_audit(demo_store, api):
    store = demo_store
    root = identity.create_user(store, None, "root", ["admin", "engineer"], password=PW)
    first, old_secret = api_tokens.create_token(store, root, "rev", ["engineer"])
    with httpx.Client(base_url=api, timeout=120) as c:
        me = c.get("/me", headers=auth(old_secret)).json()
        assert me == {"token": "rev", "token_id": first.token_id, "username": f"token:rev#{first.token_id}",
                      "roles": ["engineer"]}
        r = c.post("/versions", json={"name": "by-first-rev"}, headers=auth(old_secret))
        assert r.status_code == 201, r.text
        api_tokens.revoke_token(store, root, "rev")
        second, new_secret = api_tokens.create_token(store, root, "rev", ["engineer"])
        assert second.token_id != first.token_id
        assert c.get("/me", headers=auth(old_secret)).status_code == 401
        r = c.post("/versions", json={"name": "by-second-rev"}, headers=auth(new_secret))
        assert r.status_code == 201, r.text
        frozen_by = {name: c.get(f"/versions/{name}", headers=auth(new_secret)).json()["frozen_by"]
                     for name in ("by-first-rev", "by-second-rev")}
    assert frozen_by == {"by-first-rev": f"token:rev#{first.token_id}", "by-second-rev": f"token:rev#{second.token_id}"}
    assert {api_tokens.parse_actor(a) for a in frozen_by.values()} == {("rev", first.token_id), ("rev", second.token_id)}
    # the audit: both tokens' uses under the name "rev", each with its own id
    api_tokens.flush_audit()  # the server's handle buffers its answered requests
    uses = api_tokens.token_uses(store, root, "rev", limit=50)
    by_id = {(u["token_id"], u["path"], u["status"]) for u in uses}
    assert (first.token_id, "/api/v1/versions", 201) in by_id and (second.token_id, "/api/v1/versions", 201) in by_id
    assert (first.token_id, "/api/v1/me", 401) in by_id  # the revoked one, refused, still named by its id
