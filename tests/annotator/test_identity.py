"""Identity and roles: scrypt passwords, local mode, and role checks in the annotator layer."""

from __future__ import annotations

from datetime import date

import pytest

from annotator import demo
from annotator.evidence import query_editing
from annotator.integration import corpus_import
from annotator.people import identity
from annotator.versions import versioning
from annotator.people.identity import User
from annotator.people.roles import ROLE_PERMISSIONS, Permission, PermissionDenied, Role
from golden_store.core.errors import ValidationError
from golden_store.live.queries import QueryRecord


def _user(*roles: Role) -> User:
    return User("u", "U", frozenset(roles))


def test_scrypt_hash_round_trip_and_salting():
    h1, h2 = identity.hash_password("correct horse"), identity.hash_password("correct horse")
    assert h1 != h2 and h1.startswith("scrypt$16384$8$1$")
    assert identity.verify_password("correct horse", h1)
    assert not identity.verify_password("wrong horse", h1)
    assert not identity.verify_password("x", None) and not identity.verify_password("x", "garbage")


def test_modes_first_admin_and_authentication(store):
    assert identity.auth_mode(store, oidc_configured=False) == "local"
    assert identity.auth_mode(store, oidc_configured=True) == "oidc"
    with pytest.raises(ValidationError, match="first account must have the admin role"):
        identity.create_user(store, None, "ann", ["annotator"], password="0123456789")
    admin = identity.create_user(store, None, "root", ["admin"], password="0123456789")
    assert identity.auth_mode(store, oidc_configured=False) == "accounts"
    with pytest.raises(PermissionDenied):
        identity.create_user(store, _user(Role.LEAD), "x", ["annotator"], password="0123456789")
    identity.create_user(store, admin, "Ann@Example.com", ["annotator", "reviewer"], password="annpassword1")
    assert identity.authenticate(store, "ann@example.com", "annpassword1").roles == {Role.ANNOTATOR, Role.REVIEWER}
    assert identity.authenticate(store, "ann@example.com", "nope") is None
    assert identity.authenticate(store, "ghost", "annpassword1") is None
    assert identity.user_for_oidc(store, "ANN@example.com").username == "ann@example.com"
    assert identity.user_for_oidc(store, "stranger@example.com") is None
    # an address the provider has not verified claims nobody's account
    assert identity.user_for_oidc(store, "ann@example.com", email_verified=False) is None
    assert identity.user_for_oidc(store, "ann@example.com", email_verified=True).username == "ann@example.com"
    with pytest.raises(ValidationError, match="at least"):
        identity.create_user(store, admin, "short", ["annotator"], password="123")


def test_password_hash_is_what_is_stored(store):
    identity.create_user(store, None, "root", ["admin"], password="0123456789")
    stored = store.read_one("SELECT password_hash FROM users WHERE username = 'root'")[0]
    assert "0123456789" not in stored and stored.startswith("scrypt$")


def test_role_change_and_disable_take_effect_immediately(store):
    admin = identity.create_user(store, None, "root", ["admin"], password="0123456789")
    identity.create_user(store, admin, "eng", ["engineer"], password="0123456789")
    identity.set_roles(store, admin, "eng", ["annotator"])
    assert identity.get_user(store, "eng").roles == {Role.ANNOTATOR}
    identity.set_disabled(store, admin, "eng", True)
    assert identity.get_user(store, "eng") is None
    assert identity.authenticate(store, "eng", "0123456789") is None
    with pytest.raises(ValidationError):
        identity.set_roles(store, admin, "root", ["lead"])  # cannot lock yourself out
    with pytest.raises(ValidationError):
        identity.set_disabled(store, admin, "root", True)


def test_every_role_change_is_an_event_and_current_roles_read_the_same(store):
    """Issue 16: creating an account grants its roles, a change grants and revokes the
    difference, each an event with who and when; a refused change writes none; replaying the
    trail gives the roles the account has now."""
    admin = identity.create_user(store, None, "root", ["admin"], password="0123456789")
    lead = identity.create_user(store, admin, "lea", ["lead"], password="0123456789")
    identity.create_user(store, admin, "eng", ["engineer", "reviewer"], password="0123456789")
    identity.set_roles(store, admin, "eng", ["annotator", "reviewer"])
    identity.set_password(store, admin, "eng", "abcdefghijkl")  # not a role change: no event
    identity.set_disabled(store, admin, "eng", True)
    identity.set_disabled(store, admin, "eng", False)
    with pytest.raises(ValidationError):
        identity.set_roles(store, admin, "root", ["lead"])  # refused: nothing written
    with pytest.raises(PermissionDenied):
        identity.set_roles(store, lead, "eng", ["admin"])
    with pytest.raises(PermissionDenied):
        identity.role_history(store, lead)
    trail = identity.role_history(store, admin, "eng")
    assert [(e["op"], e["role"], e["actor"]) for e in trail] == [
        ("grant", "engineer", "root"), ("grant", "reviewer", "root"),
        ("grant", "annotator", "root"), ("revoke", "engineer", "root")]
    assert trail[0]["created_at"] <= trail[-1]["created_at"]
    assert [(e["username"], e["op"], e["role"], e["actor"]) for e in identity.role_history(store, admin)][:2] == [
        ("root", "grant", "admin", "setup"), ("lea", "grant", "lead", "root")]
    assert identity.get_user(store, "eng").roles == {Role.ANNOTATOR, Role.REVIEWER}
    for row in identity.list_users(store, admin):
        held: set[str] = set()
        for e in identity.role_history(store, admin, row["username"]):
            (held.add if e["op"] == "grant" else held.discard)(e["role"])
        assert held == set(row["roles"]), row["username"]


def test_permission_matrix_matches_the_design():
    assert ROLE_PERMISSIONS[Role.ADMIN] == frozenset(Permission)
    assert Permission.LABEL in ROLE_PERMISSIONS[Role.ANNOTATOR]
    assert Permission.FREEZE not in ROLE_PERMISSIONS[Role.ANNOTATOR]
    assert Permission.ADJUDICATE in ROLE_PERMISSIONS[Role.LEAD]
    assert Permission.FREEZE in ROLE_PERMISSIONS[Role.ENGINEER]
    assert Permission.REVIEW in ROLE_PERMISSIONS[Role.REVIEWER]
    assert Permission.MANAGE_USERS not in ROLE_PERMISSIONS[Role.LEAD] | ROLE_PERMISSIONS[Role.ENGINEER]


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER, Role.LEAD])
def test_writes_are_refused_in_the_annotator_layer(demo_store, tmp_path, role):
    """Not only hidden pages: the functions the pages call refuse on their own."""
    u = _user(role)
    (tmp_path / "d.txt").write_text("text")
    with pytest.raises(PermissionDenied):
        corpus_import.import_paths(demo_store, u, [tmp_path / "d.txt"])
    with pytest.raises(PermissionDenied):
        versioning.freeze(demo_store, u, "v1")
    with pytest.raises(PermissionDenied):
        demo.load_demo(demo_store, u)
    with pytest.raises(PermissionDenied):
        identity.list_users(demo_store, u)
    rec = QueryRecord("new1", "Q?", "lexical", True, "expert", date(2026, 1, 1))
    if role is Role.LEAD:
        query_editing.add_query(demo_store, u, rec)  # leads curate questions
    else:
        with pytest.raises(PermissionDenied, match="may not add, edit or import queries"):
            query_editing.add_query(demo_store, u, rec)
    assert not (demo_store.path.parent / "versions" / "v1").exists()


def test_engineer_can_freeze_and_export_but_not_manage_users(demo_store, tmp_path):
    eng = _user(Role.ENGINEER)
    versioning.freeze(demo_store, eng, "v1")
    versioning.export_version(eng, versioning.versions_dir(demo_store), "v1", "trec", tmp_path / "out")
    assert (tmp_path / "out" / "qrels.txt").exists()
    with pytest.raises(PermissionDenied):
        identity.list_users(demo_store, eng)
    admin = identity.create_user(demo_store, None, "root", ["admin"], password="0123456789")
    assert admin.can(Permission.MANAGE_USERS)
    with pytest.raises(PermissionDenied):
        identity.create_user(demo_store, eng, "x", ["annotator"], password="0123456789")


def test_passwordless_accounts_only_when_asked_and_email_case(store):
    with pytest.raises(ValidationError, match="Set a password"):
        identity.create_user(store, None, "boss", ["admin"])
    admin = identity.create_user(store, None, "boss", ["admin"], password="0123456789")
    identity.create_user(store, admin, "sso@example.com", ["lead"], passwordless=True)
    assert identity.authenticate(store, "sso@example.com", "") is None
    identity.create_user(store, admin, "Bob@Example.com", ["annotator"], password="bobpassword")
    assert identity.authenticate(store, "BOB@example.COM", "bobpassword").username == "bob@example.com"
