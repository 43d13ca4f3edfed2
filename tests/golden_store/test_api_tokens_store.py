"""The SQL of API tokens and their audit (golden_store/live/api_tokens.py), on DuckDB and
PostgreSQL: a live name is unique, revoking picks the live token by id or name and keeps it
listed, the audit moves ``last_used_at`` only forward and only for answered requests, and the
uses list reads newest first, by token id or name."""

from __future__ import annotations

from datetime import timedelta

import pytest

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import api_tokens as rows
from tests.conftest import table_snapshot


def _add(store: Store, token_id: str, name: str, **kw) -> None:
    rows.insert_token(store, token_id=token_id, name=name, token_hash=f"hash-{token_id}", roles=["lead", "engineer"],
                      created_by="boss", expires_at=kw.get("expires_at"))


def test_insert_lists_sorted_roles_and_no_hash(any_store):
    _add(any_store, "tok_a", "ci")
    (row,) = rows.list_token_rows(any_store)
    assert row["roles"] == "engineer,lead" and "token_hash" not in row
    assert rows.token_by_hash(any_store, "hash-tok_a")["token_id"] == "tok_a"
    assert rows.token_by_hash(any_store, "hash-other") is None


def test_a_second_live_token_of_one_name_is_refused_and_changes_nothing(any_store):
    _add(any_store, "tok_a", "ci")
    before = table_snapshot(any_store)
    with pytest.raises(ValidationError, match="A token named 'ci' already exists"):
        _add(any_store, "tok_b", "ci")
    assert table_snapshot(any_store) == before


def test_revoke_by_name_or_id_picks_the_live_token(any_store):
    _add(any_store, "tok_a", "ci")
    assert rows.revoke(any_store, "ci", actor="boss")["revoked_by"] == "boss"
    _add(any_store, "tok_b", "ci")
    with pytest.raises(NotFoundError, match="No live API token 'tok_a'"):
        rows.revoke(any_store, "tok_a", actor="boss")  # already revoked
    revoked = rows.revoke(any_store, "tok_b", actor="root")
    assert revoked["token_id"] == "tok_b" and revoked["revoked_at"] is not None
    assert [r["token_id"] for r in rows.list_token_rows(any_store)] == ["tok_a", "tok_b"]


def test_last_used_moves_forward_only_and_only_for_answered_requests(any_store):
    _add(any_store, "tok_a", "ci")
    t0 = utcnow()
    rows.record_uses(any_store, [("tok_a", "c", "GET", "/1", 200, "ok", t0),
                                 ("tok_a", "c", "GET", "/2", 200, "ok", t0 + timedelta(seconds=5)),
                                 ("tok_a", "c", "GET", "/3", 200, "ok", t0 + timedelta(seconds=2))])
    assert rows.list_token_rows(any_store)[0]["last_used_at"] == t0 + timedelta(seconds=5)
    rows.record_uses(any_store, [("tok_a", "c", "GET", "/4", 200, "ok", t0 + timedelta(seconds=1))])  # late batch
    rows.record_uses(any_store, [("tok_a", "c", "POST", "/5", 403, "denied", t0 + timedelta(seconds=9))])
    assert rows.list_token_rows(any_store)[0]["last_used_at"] == t0 + timedelta(seconds=5)
    rows.record_uses(any_store, [])  # nothing to write: no transaction, no error


def test_recent_uses_newest_first_by_id_or_name_with_refusals_unnamed(any_store):
    _add(any_store, "tok_a", "ci")
    _add(any_store, "tok_b", "other")
    t0 = utcnow()
    rows.record_uses(any_store, [("tok_a", "c", "GET", "/a1", 200, "ok", t0),
                                 (None, "evil", "GET", "/x", 401, "unknown", t0 + timedelta(seconds=1)),
                                 ("tok_b", "c", "GET", "/b1", 200, "ok", t0 + timedelta(seconds=2)),
                                 ("tok_a", "c", "GET", "/a2", 200, "ok", t0 + timedelta(seconds=3))])
    assert [(u["name"], u["path"]) for u in rows.recent_uses(any_store)] == [
        ("ci", "/a2"), ("other", "/b1"), (None, "/x"), ("ci", "/a1")]
    assert [u["path"] for u in rows.recent_uses(any_store, token="ci")] == ["/a2", "/a1"]
    assert [u["path"] for u in rows.recent_uses(any_store, token="tok_b")] == ["/b1"]
    assert [u["path"] for u in rows.recent_uses(any_store, limit=1)] == ["/a2"]


def test_an_unknown_outcome_is_refused_by_the_schema(store):
    with pytest.raises(Exception, match="(?i)check|constraint"):  # the engine's own error: a bug, not input
        rows.record_uses(store, [(None, "c", "GET", "/", 200, "fine", utcnow())])
    assert store.read("SELECT * FROM api_token_uses") == []


def test_an_account_change_revokes_or_narrows_its_tokens_in_the_same_transaction(any_store):
    """Issue 37 A4: disabling or taking roles makes the account's live tokens follow, in the
    transaction of the account change; a refused change (the last admin) leaves them as
    they were, and another creator's tokens are never touched."""
    from golden_store.live import users

    users.insert_user(any_store, "root", "Root", ["admin"], None, "setup")
    users.insert_user(any_store, "boss", "Boss", ["admin", "engineer", "lead"], None, "root")
    _add(any_store, "tok_a", "both")  # lead, engineer
    rows.insert_token(any_store, token_id="tok_b", name="adm", token_hash="hash-tok_b", roles=["admin"],
                      created_by="boss", expires_at=None)
    rows.insert_token(any_store, token_id="tok_c", name="roots", token_hash="hash-tok_c", roles=["admin"],
                      created_by="root", expires_at=None)
    assert users.update_user(any_store, "boss", actor="root", roles=["engineer"]) == (1, 1)
    by_id = {r["token_id"]: r for r in rows.list_token_rows(any_store)}
    assert by_id["tok_a"]["roles"] == "engineer" and by_id["tok_a"]["revoked_at"] is None
    assert by_id["tok_b"]["revoked_at"] is not None and by_id["tok_b"]["revoked_by"] == "root"
    assert by_id["tok_c"]["revoked_at"] is None and by_id["tok_c"]["roles"] == "admin"
    before = table_snapshot(any_store)
    with pytest.raises(ValidationError):
        users.update_user(any_store, "root", actor="boss", disabled=True, keep_admin="no admin left")
    assert table_snapshot(any_store) == before
    assert users.update_user(any_store, "boss", actor="root", disabled=True) == (1, 0)
    assert all(r["revoked_at"] is not None for r in rows.list_token_rows(any_store) if r["token_id"] != "tok_c")
