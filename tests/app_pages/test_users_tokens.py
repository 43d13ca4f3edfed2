"""Issue 28 item 2: the "API tokens" section of the Users page (AppTest, a signed-in admin).
The secret is shown once and gone after a rerun; roles offered are the creator's own; revoking
takes a confirm and the token is then listed as revoked; recent uses are listed. A non-admin
never sees the section, and the annotator layer refuses them whatever the page shows."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import pytest
from streamlit.testing.v1 import AppTest

from annotator.people import api_tokens, identity
from annotator.process import context
from annotator.people.roles import PermissionDenied
from tests.app_pages.test_app_roles import APP, PASSWORD, app_as, signed_in
from tests.conftest import plain

PAGE = "app_pages/users.py"


@pytest.fixture
def people():
    store = context.get_store()
    admin = identity.create_user(store, None, "root", ["admin", "engineer"], password=PASSWORD)
    for role in ("lead", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    return store, admin


def _page(who: str):
    at = app_as(who).switch_page(PAGE).run()
    assert not at.exception
    return at


def _by_label(elements, start: str):
    (found,) = [e for e in elements if e.label.startswith(start)]
    return found


def _secrets_shown(at) -> list[str]:
    shown = [c.value for c in at.code] + [m.value for m in at.markdown] + [w.value for w in at.warning]
    return [word for text in shown for word in str(text).replace("=", " ").split() if word.startswith("gst_")]


def test_a_created_tokens_secret_is_shown_once_and_not_after_a_rerun(people):
    store, _ = people
    at = _page("root")
    assert "API tokens" in [h.value for h in at.subheader]
    roles = _by_label(at.multiselect, "Token roles")  # an admin may give any role (issue 37, item 10)
    assert roles.options == ["annotator", "lead", "engineer", "reviewer", "admin"] and roles.value == ["engineer"]
    _by_label(at.text_input, "Token name").input("ci-nightly")
    _by_label(at.selectbox, "Expires after").set_value("30 days")
    _by_label(at.button, "Create token").click().run()
    assert not at.exception and not at.error
    (secret,) = _secrets_shown(at)
    assert [c.value for c in at.code] == [f"export GOLDEN_TOKEN={secret}"]
    assert any("will not be shown again" in plain(w.value) for w in at.warning)
    info, user = api_tokens.authenticate(store, secret)
    assert info.name == "ci-nightly" and user.username == f"token:ci-nightly#{info.token_id}"
    assert info.expires_at is not None
    listed = at.dataframe[1].value.set_index("name")  # [0]: the accounts
    assert listed.loc["ci-nightly", "state"] == "live" and listed.loc["ci-nightly", "roles"] == "engineer"
    at.run()
    assert not at.exception and _secrets_shown(at) == [] and "tok_created" not in at.session_state
    assert "ci-nightly" in at.dataframe[1].value["name"].tolist()


def test_a_bad_name_is_said_on_the_page_and_no_secret_is_made(people):
    store, _ = people
    at = _page("root")
    _by_label(at.text_input, "Token name").input("has space")
    _by_label(at.button, "Create token").click().run()
    assert any("use letters, digits" in plain(e.value) for e in at.error)
    assert _secrets_shown(at) == [] and store.read("SELECT * FROM api_tokens") == []


def test_revoking_takes_a_confirm_and_the_token_is_then_shown_as_revoked(people):
    store, admin = people
    _, secret = api_tokens.create_token(store, admin, "ci", ["engineer"])
    api_tokens.create_token(store, admin, "other", ["engineer"])
    at = _page("root")
    at.selectbox(key="tok_revoke_pick").set_value("ci").run()
    assert at.button(key="tok_revoke").disabled
    at.checkbox(key="tok_sure_ci").check().run()
    assert not at.button(key="tok_revoke").disabled
    at.button(key="tok_revoke").click().run()
    assert not at.exception and any("Token ci revoked" in plain(s.value) for s in at.success)
    states = at.dataframe[1].value.set_index("name")["state"].to_dict()
    assert states == {"ci": "revoked", "other": "live"}
    assert at.selectbox(key="tok_revoke_pick").options == ["other"]
    with pytest.raises(api_tokens.TokenRefused, match="was revoked"):
        api_tokens.authenticate(store, secret)


def test_recent_uses_are_listed_newest_first_with_refusals(people):
    store, admin = people
    info, secret = api_tokens.create_token(store, admin, "ci", ["engineer"])
    api_tokens.authenticate_request(store, secret, client="10.0.0.5", method="GET", path="/api/v1/versions")
    api_tokens.record_use(store, info, client="10.0.0.5", method="GET", path="/api/v1/versions", status=200)
    with pytest.raises(api_tokens.TokenRefused):
        api_tokens.authenticate_request(store, "gst_wrong", client="10.0.0.6", method="GET", path="/api/v1/runs")
    at = _page("root")  # the page writes what the audit buffer holds before reading
    uses = at.dataframe[2].value
    assert uses[["name", "client", "path", "status", "outcome"]].values.tolist() == [
        ["(no token matched)", "10.0.0.6", "/api/v1/runs", 401, "unknown"], ["ci", "10.0.0.5", "/api/v1/versions", 200, "ok"]]


@pytest.mark.parametrize("who", ["lead", "engineer"])
def test_a_non_admin_never_sees_the_section_and_is_refused_by_the_annotator_layer(people, who):
    store, admin = people
    api_tokens.create_token(store, admin, "ci", ["engineer"])
    with pytest.raises(ValueError, match="Could not find a navigation page"):  # not in their navigation
        app_as(who).switch_page(PAGE)
    at = signed_in(AppTest.from_file(str(Path(APP).parent / PAGE), default_timeout=60), who).run()  # the page itself
    assert "API tokens" not in [h.value for h in at.subheader] and not at.dataframe and not at.code
    assert any("You do not have access to this page" in plain(e.value) for e in at.error)
    user = identity.get_user(store, who)
    for call in (lambda: api_tokens.create_token(store, user, "mine", [who]),
                 lambda: api_tokens.list_tokens(store, user),
                 lambda: api_tokens.revoke_token(store, user, "ci"),
                 lambda: api_tokens.token_uses(store, user)):
        with pytest.raises(PermissionDenied, match=f"{who} .*may not create and revoke API tokens"):
            call()


def test_disabling_or_taking_a_role_says_how_many_of_the_accounts_tokens_were_revoked_or_narrowed(people):
    """Issue 37 A4: the admin sees at once which pipelines lost access, and the tokens did."""
    store, admin = people
    boss = identity.create_user(store, admin, "boss", ["admin", "engineer"], password=PASSWORD)
    api_tokens.create_token(store, boss, "pipe", ["admin", "engineer"])
    _, adm = api_tokens.create_token(store, boss, "adm", ["admin"])
    at = _page("root")
    at.selectbox(key="u_pick").set_value("boss").run()
    at.multiselect(key="u_roles_boss").set_value(["engineer"]).run()
    at.button(key="u_save_roles").click().run()
    assert not at.exception and not at.error
    said = " ".join(plain(s.value) for s in at.success)
    assert ("1 API token created by boss revoked; 1 API token created by boss narrowed to the roles boss still "
            "has") in said
    states = at.dataframe[1].value.set_index("name")
    assert states.loc["pipe", "roles"] == "engineer" and states.loc["adm", "state"] == "revoked"
    at.button(key="u_toggle").click().run()
    assert not at.exception and not at.error
    assert "boss disabled. 1 API token created by boss revoked" in " ".join(plain(s.value) for s in at.success)
    assert at.dataframe[1].value.set_index("name").loc["pipe", "state"] == "revoked"
    with pytest.raises(api_tokens.TokenRefused, match="was revoked"):
        api_tokens.authenticate(store, adm)


# ---- issue 37, item 10: an admin-only account makes tokens from the page --------------------


@pytest.fixture
def admin_only():
    """The newcomer's setup: the first account holds the admin role and nothing else."""
    store = context.get_store()
    return store, identity.create_user(store, None, "root", ["admin"], password=PASSWORD)


def _token_roles(at):
    """The roles box of the token form (by its form, not its label, which item 10 changed)."""
    (found,) = [m for m in at.multiselect if str(m.form_id).startswith("tok_create")]
    return found


def _said(at) -> str:
    return " ".join(plain(e.value) for e in [*at.error, *at.warning, *at.info, *at.success, *at.caption])


def test_an_admin_only_account_creates_an_engineer_token_from_the_page_and_sees_its_secret_once(admin_only):
    """The newcomer was offered no role (only "admin" was there, none chosen) and told to pass
    --role: an admin holds every permission, so every role is offered, engineer chosen."""
    store, _ = admin_only
    at = _page("root")
    roles = _token_roles(at)
    assert roles.options == ["annotator", "lead", "engineer", "reviewer", "admin"] and roles.value == ["engineer"]
    _by_label(at.text_input, "Token name").input("ci")
    _by_label(at.button, "Create token").click().run()
    assert not at.exception and not at.error
    (secret,) = _secrets_shown(at)
    info, user = api_tokens.authenticate(store, secret)
    assert info.name == "ci" and info.roles == ("engineer",) and info.created_by == "root"
    assert user.username == f"token:ci#{info.token_id}"
    at.run()
    assert not at.exception and _secrets_shown(at) == []  # shown once
    listed = at.dataframe[1].value.set_index("name")
    assert listed.loc["ci", "roles"] == "engineer" and listed.loc["ci", "acts as"] == f"token:ci#{info.token_id}"
    # the token keeps its role while its admin-only creator stays an admin
    assert api_tokens.authenticate(store, secret)[0].roles == ("engineer",)


def test_an_admin_only_account_may_give_a_token_the_admin_role(admin_only):
    store, _ = admin_only
    at = _page("root")
    _by_label(at.text_input, "Token name").input("ops")
    _token_roles(at).set_value(["admin"])
    _by_label(at.button, "Create token").click().run()
    assert not at.exception and not at.error
    (secret,) = _secrets_shown(at)
    assert api_tokens.authenticate(store, secret)[0].roles == ("admin",)


def test_a_token_with_no_role_is_refused_in_the_apps_words_with_no_cli_flag(admin_only):
    store, _ = admin_only
    at = _page("root")
    _by_label(at.text_input, "Token name").input("ci")
    _token_roles(at).set_value([])
    _by_label(at.button, "Create token").click().run()
    assert not at.exception
    (said,) = [plain(e.value) for e in at.error]
    assert "Choose at least one role under Token roles" in said and "--" not in said and "golden " not in said
    assert _secrets_shown(at) == [] and store.read("SELECT * FROM api_tokens") == []


def test_an_account_that_may_give_no_role_is_told_what_to_do_in_the_app(admin_only):
    """Nobody who may manage tokens holds no grantable role today (only admins manage them, and
    an admin may give any role); should that change, the page says what to do, not a flag."""
    with patch("annotator.people.roles.grantable_roles", return_value=[]):
        at = _page("root")
    assert not at.exception
    said = _said(at)
    assert "holds no role a token could be given" in said and "Change an account" in said
    assert "--" not in said and "golden tokens" not in said
    assert not [b for b in at.button if b.label == "Create token"]
