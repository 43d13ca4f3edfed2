"""Issue 37 item 6 (probe A4): a token never holds more than its creator does now. Over real
HTTP on loopback: disabling the admin who made a token makes it answer 401, and a role taken
from the creator is taken from the token (403 on what needed it; a token left with no role
is revoked). The account change does it in its own transaction, so the very next request
sees it."""

from __future__ import annotations

import httpx

from annotator.people import api_tokens, identity
from tests.http_api.conftest import auth

PW = "pw-admin2-123456"


def _people(store):
    root = identity.create_user(store, None, "root", ["admin"], password=PW)
    boss = identity.create_user(store, root, "boss", ["admin", "engineer"], password=PW)
    return root, boss


def test_a_token_made_by_an_admin_stops_authenticating_once_the_admin_is_disabled(store, api):
    root, boss = _people(store)
    _, secret = api_tokens.create_token(store, boss, "adm-made", ["admin"])
    with httpx.Client(base_url=api, headers=auth(secret), timeout=60) as c:
        assert c.get("/me").json()["roles"] == ["admin"]
        followed = identity.set_disabled(store, root, "boss", True)
        assert (followed.revoked, followed.narrowed) == (1, 0)
        r = c.get("/me")
        assert r.status_code == 401 and "revoked" in r.json()["detail"]
        assert c.post("/versions", json={"name": "by-disabled-admin"}).status_code == 401
    (row,) = [t for t in api_tokens.list_tokens(store, root) if t.name == "adm-made"]
    assert row.state == "revoked"


def test_a_role_taken_from_the_creator_is_taken_from_its_tokens(store, api):
    root, boss = _people(store)
    _, both = api_tokens.create_token(store, boss, "pipe", ["admin", "engineer"])
    _, admin_only = api_tokens.create_token(store, boss, "adm", ["admin"])
    _, others = api_tokens.create_token(store, root, "roots", ["admin"])  # another creator's: untouched
    with httpx.Client(base_url=api, timeout=60) as c:
        assert c.get("/agreement", headers=auth(both)).status_code == 200
        followed = identity.set_roles(store, root, "boss", ["engineer"])
        assert (followed.revoked, followed.narrowed) == (1, 1)
        assert c.get("/me", headers=auth(both)).json()["roles"] == ["engineer"]
        assert c.get("/agreement", headers=auth(both)).status_code == 403  # needed admin (or lead)
        assert c.get("/versions", headers=auth(both)).status_code == 200   # engineer may still
        assert c.get("/me", headers=auth(admin_only)).status_code == 401   # left with no role: revoked
        assert c.get("/agreement", headers=auth(others)).status_code == 200


def test_a_token_from_before_the_rule_is_held_to_its_creators_account_on_every_request(store, api):
    """An account disabled or narrowed before tokens followed it (here: by SQL, as the old
    code left it) still limits them: each request reads the creator's account now."""
    root, boss = _people(store)
    _, both = api_tokens.create_token(store, boss, "old-pipe", ["admin", "engineer"])
    store.write(lambda cur: cur.execute("UPDATE users SET roles = ? WHERE username = 'boss'", [["engineer"]]))
    with httpx.Client(base_url=api, headers=auth(both), timeout=60) as c:
        assert c.get("/me").json()["roles"] == ["engineer"]
        assert c.get("/agreement").status_code == 403
        store.write(lambda cur: cur.execute("UPDATE users SET disabled = TRUE WHERE username = 'boss'"))
        r = c.get("/me")
        assert r.status_code == 401 and "account that made it is disabled" in r.json()["detail"]


def test_stopping_the_server_writes_its_buffered_token_audit_before_the_store_is_closed(store):
    """The CI failure of 2026-12-07: the audit thread was still writing a batch through the
    server's store when the caller closed it ("connection is busy"). ``stop`` now leaves
    nothing waiting for that store, so closing it next races nothing."""
    import os

    from golden_store.db.store import Store
    from http_api.serving import ThreadedServer

    root, boss = _people(store)
    _, secret = api_tokens.create_token(store, boss, "audited", ["engineer"])
    own = Store.open(os.environ["GOLDEN_DB"])
    server = ThreadedServer(os.environ["GOLDEN_DB"], store=own).start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}/api/v1", headers=auth(secret), timeout=60) as c:
            for _ in range(3):
                assert c.get("/me").status_code == 200
    finally:
        server.stop()
    assert api_tokens.AUDIT.waiting(own) == 0
    own.close()
    assert len(api_tokens.token_uses(store, root, "audited")) == 3
