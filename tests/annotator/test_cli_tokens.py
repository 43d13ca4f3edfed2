"""`golden tokens create / list / revoke / uses` (issue 28 item 2), through the CLI's own
``main`` on this test's store (GOLDEN_DB): the secret printed once with how to use it, the
list with states and never a hash, revoke by name or id, and the audit."""

from __future__ import annotations

import json

import pytest

from annotator import cli
from annotator.people import api_tokens
from annotator.process import context
from annotator.people.identity import cli_user


def golden(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def initialized(capsys):
    """``golden init`` done; each command closes the stores it opened, so tests re-open with :func:`s`."""
    assert golden(capsys, "init")[0] == 0


def s():
    return context.get_store()


def test_create_prints_the_secret_once_with_how_to_use_it(initialized, capsys):
    code, out, err = golden(capsys, "tokens", "create", "ci-nightly", "--role", "engineer", "--role", "lead",
                            "--expires", "30d")
    assert code == 0, err
    secret = next(w for w in out.split() if w.startswith("gst_"))
    assert "will not be shown again" in out and f"export GOLDEN_TOKEN={secret}" in out
    assert "role(s) engineer, lead, expiring" in out
    info, user = api_tokens.authenticate(s(), secret)
    assert info.name == "ci-nightly" and {r.value for r in user.roles} == {"engineer", "lead"}
    code, listed, _ = golden(capsys, "tokens", "list")
    assert code == 0 and secret not in listed and api_tokens.hash_secret(secret) not in listed
    line = next(ln for ln in listed.splitlines() if "ci-nightly" in ln)
    assert info.token_id in line and "engineer,lead" in line and " live " in line and line.rstrip().endswith("never")


def test_create_json_carries_the_secret_and_the_warning(initialized, capsys):
    code, out, _ = golden(capsys, "tokens", "create", "bot", "--role", "annotator", "--json")
    data = json.loads(out)
    assert code == 0 and data["secret"].startswith("gst_") and "will not be shown again" in data["note"]
    assert data["roles"] == ["annotator"] and data["state"] == "live" and data["expires_at"] is None
    listed = json.loads(golden(capsys, "tokens", "list", "--json")[1])
    assert [t["name"] for t in listed] == ["bot"] and all("secret" not in t and "token_hash" not in t for t in listed)


def test_revoke_by_name_then_list_and_uses_show_it(initialized, capsys):
    info, secret = api_tokens.create_token(s(), cli_user(), "ci", ["engineer"])
    api_tokens.authenticate_request(s(), secret, client="10.9.8.7", method="GET", path="/api/v1/versions")
    api_tokens.record_use(s(), info, client="10.9.8.7", method="GET", path="/api/v1/versions", status=200)
    api_tokens.flush_audit(s())  # as the API process does within a second, before another process reads
    code, out, _ = golden(capsys, "tokens", "revoke", "ci")
    assert code == 0 and f"Token ci ({info.token_id}) revoked" in out
    with pytest.raises(api_tokens.TokenRefused, match="was revoked"):
        api_tokens.authenticate_request(s(), secret, client="10.9.8.7", method="GET", path="/api/v1/runs")
    listed = json.loads(golden(capsys, "tokens", "list", "--json")[1])
    assert [(t["name"], t["state"]) for t in listed] == [("ci", "revoked")] and listed[0]["last_used_at"]
    code, out, _ = golden(capsys, "tokens", "uses")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("WHEN (UTC)")
    assert lines[1].split()[2] == "ci" and "401" in lines[1] and "revoked" in lines[1] and "/api/v1/runs" in lines[1]
    assert "ci" in lines[2] and "10.9.8.7" in lines[2] and "200" in lines[2] and "GET /api/v1/versions" in lines[2]
    uses = json.loads(golden(capsys, "tokens", "uses", "ci", "--limit", "5", "--json")[1])
    assert [(u["path"], u["outcome"]) for u in uses] == [("/api/v1/runs", "revoked"), ("/api/v1/versions", "ok")]


def test_errors_are_one_sentence_and_exit_1(initialized, capsys):
    api_tokens.create_token(s(), cli_user(), "ci", ["engineer"])
    cases = [(("tokens", "create", "ci", "--role", "engineer"), "A token named 'ci' already exists"),
             (("tokens", "create", "x", "--role", "engineer", "--expires", "soon"), "--expires 'soon'"),
             (("tokens", "revoke", "nope"), "No live API token 'nope'"),
             (("tokens", "uses", "nope"), "No API token 'nope'")]
    for args, message in cases:
        code, out, err = golden(capsys, *args)
        assert code == 2 and err.startswith(f"golden: {message}") and err.count("\n") == 1, (args, err)
    assert [t.name for t in api_tokens.list_tokens(s(), cli_user())] == ["ci"]


def test_an_empty_list_says_how_to_make_a_token(initialized, capsys):
    assert "golden tokens create NAME --role engineer" in golden(capsys, "tokens", "list")[1]
    assert "No use recorded of any API token." in golden(capsys, "tokens", "uses")[1]


def test_users_roles_and_disable_say_what_happened_to_the_accounts_tokens(initialized, capsys):
    """Issue 37 A4: `golden users roles / disable` take the account's roles from its tokens
    (revoking those left with none) and say how many, so a pipeline's 401/403 has a cause."""
    from annotator.people import identity

    root = identity.create_user(s(), None, "root", ["admin"], password="0123456789")
    boss = identity.create_user(s(), root, "boss", ["admin", "engineer"], password="0123456789")
    _, pipe = api_tokens.create_token(s(), boss, "pipe", ["admin", "engineer"])
    api_tokens.create_token(s(), boss, "adm", ["admin"])
    code, out, err = golden(capsys, "users", "roles", "boss", "--role", "engineer")
    assert code == 0, err
    assert out.strip() == ("Roles of boss set to engineer. 1 API token created by boss revoked; 1 API token created "
                           "by boss narrowed to the roles boss still has (create new ones for pipelines that still "
                           "need them).")
    assert [r.value for r in api_tokens.authenticate(s(), pipe)[1].roles] == ["engineer"]
    code, out, err = golden(capsys, "users", "disable", "boss")
    assert code == 0, err
    assert out.startswith("boss disabled (signed out everywhere). 1 API token created by boss revoked")
    with pytest.raises(api_tokens.TokenRefused, match="was revoked"):
        api_tokens.authenticate(s(), pipe)
    code, out, _ = golden(capsys, "users", "disable", "boss")
    assert code == 0 and "No live API token created by boss needed changing." in out
    code, out, _ = golden(capsys, "users", "enable", "boss")
    assert code == 0 and "stay revoked" in out
