"""Issue 28 item 2: API tokens. Only a hash is stored; a token's roles never exceed its
creator's; names are unique among live tokens; a revoked or expired token is refused with its
own message; after N unknown secrets from one address the throttle answers 429 to any secret
that is not a live token (a live one passes) and lets go after the window; every answered
request and every refusal is audited. On DuckDB and PostgreSQL (``any_store``); the throttle's clock is injected."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta

import pytest

from unittest.mock import patch

from annotator.people import api_tokens, roles
from annotator.people.api_tokens import TokenRefused, UseAudit
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.core.errors import GoldenError, NotFoundError, ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import api_tokens as rows
from tests.waiting import wait_until

ADMIN = User("boss", "Boss", frozenset({Role.ADMIN, Role.ENGINEER}))
ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _every_cell(store: Store, table: str) -> list[str]:
    return [str(v) for row in store.read(f"SELECT * FROM {table}") for v in row]


def _uses(store: Store) -> list[dict]:
    return store.read_dicts("SELECT token_id, client, method, path, status, outcome FROM api_token_uses "
                            "ORDER BY event_id")


def _expired(store: Store, name: str) -> str:
    """A token whose expiry has passed (made as create_token makes one, dated back)."""
    secret = api_tokens.PREFIX + "expired-" + name
    rows.insert_token(store, token_id=f"tok_{name}", name=name, token_hash=api_tokens.hash_secret(secret),
                      roles=["engineer"], created_by="boss", expires_at=utcnow() - timedelta(seconds=1))
    return secret


def test_the_secret_is_never_stored_only_its_sha256(any_store):
    info, secret = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    assert secret.startswith("gst_") and len(secret) > 40
    api_tokens.authenticate_request(any_store, secret, client="10.0.0.1", method="GET", path="/api/v1/versions")
    api_tokens.record_use(any_store, info, client="10.0.0.1", method="GET", path="/api/v1/versions", status=200)
    api_tokens.flush_audit(any_store)
    random_part = secret.removeprefix("gst_")
    for table in ("api_tokens", "api_token_uses"):
        cells = _every_cell(any_store, table)
        assert cells and not any(random_part in c or random_part[:16] in c for c in cells), table
    (stored,) = any_store.read_one("SELECT token_hash FROM api_tokens WHERE token_id = ?", [info.token_id])
    assert stored == api_tokens.hash_secret(secret) and len(stored) == 64


def test_a_token_acts_as_token_name_and_id_with_its_roles_only(any_store):
    made, secret = api_tokens.create_token(any_store, ADMIN, "nightly", ["engineer"], expires_in=timedelta(days=30))
    info, user = api_tokens.authenticate(any_store, f"  {secret}\n")
    assert user.username == f"token:nightly#{made.token_id}" and user.roles == frozenset({Role.ENGINEER})
    assert api_tokens.parse_actor(user.username) == ("nightly", made.token_id)
    assert info.state == "live" and info.expires_at is not None
    assert timedelta(days=29, hours=23) < info.expires_at - info.created_at <= timedelta(days=30)


def test_a_role_needing_a_permission_the_creator_lacks_is_refused_and_nothing_is_stored(any_store):
    """Compared by permission (issue 37, item 10): an admin holds every one, so it may give any
    role; only a creator without some of a role's permissions is refused it. Only admins manage
    tokens today, so the refusal is shown with a creator given that permission by hand."""
    assert roles.grantable_roles([Role.ADMIN]) == ["annotator", "lead", "engineer", "reviewer", "admin"]
    assert roles.grantable_roles(["lead"]) == ["annotator", "lead"]  # a lead holds every annotator permission
    assert roles.grantable_roles(["engineer"]) == ["engineer"] and roles.grantable_roles([]) == []
    with patch("annotator.people.api_tokens.require"):  # as if engineers managed tokens
        with pytest.raises(PermissionDenied, match=r"eng may not give a token the role\(s\) lead: a token never "
                                                   r"holds a permission its creator lacks"):
            api_tokens.create_token(any_store, ENGINEER, "too-much", ["engineer", "lead"])
    assert any_store.read("SELECT * FROM api_tokens") == []
    info, _ = api_tokens.create_token(any_store, ADMIN, "leads", ["lead"])  # ADMIN does not hold lead, but admin
    assert info.roles == ("lead",)
    with pytest.raises(GoldenError, match="Unknown role 'wizard'; roles are annotator"):
        api_tokens.create_token(any_store, ADMIN, "bad", ["wizard"])
    with pytest.raises(ValidationError, match=r"Token 'none': give it at least one role \(engineer, for a CI job\)\.$"):
        api_tokens.create_token(any_store, ADMIN, "none", [])


def test_only_an_admin_manages_tokens(any_store):
    info, _ = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    for call in (lambda: api_tokens.create_token(any_store, ENGINEER, "mine", ["engineer"]),
                 lambda: api_tokens.list_tokens(any_store, ENGINEER),
                 lambda: api_tokens.revoke_token(any_store, ENGINEER, "ci"),
                 lambda: api_tokens.token_uses(any_store, ENGINEER)):
        with pytest.raises(PermissionDenied, match="eng .*may not create and revoke API tokens"):
            call()
    assert [t.state for t in api_tokens.list_tokens(any_store, ADMIN)] == ["live"]


def test_a_live_name_is_unique_and_free_again_once_revoked(any_store):
    first, _ = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    with pytest.raises(ValidationError, match="A token named 'ci' already exists; revoke it first"):
        api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    assert api_tokens.revoke_token(any_store, ADMIN, "ci").state == "revoked"
    second, _ = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    states = {t.token_id: t.state for t in api_tokens.list_tokens(any_store, ADMIN)}
    assert states == {first.token_id: "revoked", second.token_id: "live"}
    with pytest.raises(NotFoundError, match="No live API token 'nope'"):
        api_tokens.revoke_token(any_store, ADMIN, "nope")


@pytest.mark.parametrize("name", ["", "has space", "-dash-first", "x" * 65, "semi;colon"],
                         ids=["empty", "space", "dash-first", "too-long", "semicolon"])
def test_a_bad_name_is_refused_with_what_to_use(store, name):
    with pytest.raises(ValidationError, match="use letters, digits"):
        api_tokens.create_token(store, ADMIN, name, ["engineer"])


def test_revoked_expired_unknown_and_missing_each_have_their_own_message(any_store):
    _, revoked = api_tokens.create_token(any_store, ADMIN, "old", ["engineer"])
    api_tokens.revoke_token(any_store, ADMIN, "old")
    expired = _expired(any_store, "stale")
    cases = {revoked: ("revoked", "The API token 'old' was revoked"),
             expired: ("expired", "The API token 'stale' expired"),
             "gst_not-a-token": ("unknown", "The API token is not known"),
             None: ("unknown", "This endpoint needs an API token: send Authorization: Bearer")}
    for secret, (outcome, message) in cases.items():
        with pytest.raises(TokenRefused, match=message) as caught:
            api_tokens.authenticate(any_store, secret)
        assert caught.value.status == 401 and caught.value.outcome == outcome
    assert {t.name: t.state for t in api_tokens.list_tokens(any_store, ADMIN)} == {"old": "revoked", "stale": "expired"}


def test_throttle_answers_429_to_guesses_after_n_unknown_secrets_while_a_live_token_passes(any_store):
    """A live token is never locked out (anyone behind the same NAT could otherwise lock a
    team's CI out with a few bad requests); every other secret from a throttled address is."""
    clock = Clock()
    throttle = api_tokens.token_throttle(limit=3, window_s=600, clock=clock)
    audit = UseAudit(background=False)
    _, good = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])

    def attempt(secret: str | None, client: str = "10.0.0.9") -> TokenRefused | str:
        try:
            return api_tokens.authenticate_request(any_store, secret, client=client, method="GET", path="/api/v1/x",
                                                   throttle=throttle, audit=audit)[1].username
        except TokenRefused as exc:
            return exc

    for n in range(3):  # unknown secrets at t = 1000, 1010, 1020
        if n == 2:
            assert attempt(None).status == 401  # no token sent: refused and audited, but not counted
        refused = attempt("gst_guess")
        assert isinstance(refused, TokenRefused) and refused.status == 401
        clock.now += 10
    assert attempt(good).startswith("token:ci#tok_")  # t = 1030: the team's pipeline is not held back
    guess = attempt("gst_guess2")
    assert isinstance(guess, TokenRefused) and guess.status == 429 and guess.outcome == "throttled"
    assert guess.retry_after_s == 590 and "try again in 590 s" in str(guess)  # the window after the last refusal
    assert attempt("gst_guess3", client="10.0.0.10").status == 401  # another address is not held back
    clock.now = 1020 + 599  # the 429s did not extend the lockout
    assert attempt("gst_guess4").status == 429
    clock.now = 1020 + 600
    assert attempt("gst_guess5").status == 401
    audit.flush()
    outcomes = Counter((u["client"], u["status"], u["outcome"]) for u in _uses(any_store))
    assert outcomes == {("10.0.0.9", 401, "unknown"): 5, ("10.0.0.10", 401, "unknown"): 1,
                        ("10.0.0.9", 429, "throttled"): 2}


def test_refusals_further_apart_than_the_window_never_throttle(store):
    clock = Clock()
    throttle = api_tokens.token_throttle(limit=2, window_s=60, clock=clock)
    for _ in range(5):
        with pytest.raises(TokenRefused) as caught:
            api_tokens.authenticate_request(store, "gst_typo", client="c", method="GET", path="/", throttle=throttle)
        assert caught.value.status == 401
        clock.now += 60


def test_revoked_and_expired_tokens_do_not_count_but_are_refused_429_while_throttled(store):
    """A revoked or expired token was real (a stale pipeline, not a guesser): it never starts
    a lockout; once unknown secrets have, it is answered 429 like any secret that is not live."""
    clock = Clock()
    throttle = api_tokens.token_throttle(limit=2, window_s=60, clock=clock)
    _, revoked = api_tokens.create_token(store, ADMIN, "old", ["engineer"])
    api_tokens.revoke_token(store, ADMIN, "old")
    expired = _expired(store, "stale")
    for secret in (revoked, expired, revoked, expired, revoked):
        with pytest.raises(TokenRefused) as caught:
            api_tokens.authenticate_request(store, secret, client="c", method="GET", path="/", throttle=throttle)
        assert caught.value.status == 401
    for _ in range(2):
        with pytest.raises(TokenRefused):
            api_tokens.authenticate_request(store, "gst_guess", client="c", method="GET", path="/", throttle=throttle)
    with pytest.raises(TokenRefused) as caught:
        api_tokens.authenticate_request(store, revoked, client="c", method="GET", path="/", throttle=throttle)
    assert caught.value.status == 429 and caught.value.outcome == "throttled"
    api_tokens.flush_audit(store)
    old = api_tokens.list_tokens(store, ADMIN)[0]
    assert [(u["token_id"], u["outcome"]) for u in _uses(store)] == [
        (old.token_id, "revoked"), ("tok_stale", "expired"), (old.token_id, "revoked"), ("tok_stale", "expired"),
        (old.token_id, "revoked"), (None, "unknown"), (None, "unknown"),
        (old.token_id, "throttled")]  # the audit says which token, the throttled one too
    assert old.last_used_at is None  # a refused request is no use


def test_refusals_are_written_at_once_answered_requests_through_the_buffer(any_store):
    clock = Clock()
    audit = UseAudit(max_rows=3, max_delay_s=1.0, background=False, clock=clock)
    info, secret = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    with pytest.raises(TokenRefused):
        api_tokens.authenticate_request(any_store, "gst_wrong", client="1.2.3.4", method="GET", path="/a",
                                        throttle=api_tokens.token_throttle(), audit=audit)
    assert [(u["token_id"], u["outcome"], u["path"]) for u in _uses(any_store)] == [(None, "unknown", "/a")]
    api_tokens.record_use(any_store, info, client="1.2.3.4", method="GET", path="/b", status=200, audit=audit)
    api_tokens.record_use(any_store, info, client="1.2.3.4", method="POST", path="/c", status=403, audit=audit)
    assert len(_uses(any_store)) == 1 and audit.waiting(any_store) == 2
    assert api_tokens.list_tokens(any_store, ADMIN)[0].last_used_at is None
    clock.now += 1.0  # the oldest has waited a second: the next use writes all three
    api_tokens.record_use(any_store, info, client="1.2.3.4", method="GET", path="/d", status=200, audit=audit)
    assert audit.waiting() == 0
    assert [(u["token_id"], u["method"], u["path"], u["status"], u["outcome"]) for u in _uses(any_store)][1:] == [
        (info.token_id, "GET", "/b", 200, "ok"), (info.token_id, "POST", "/c", 403, "denied"),
        (info.token_id, "GET", "/d", 200, "ok")]
    assert api_tokens.list_tokens(any_store, ADMIN)[0].last_used_at is not None
    for path in ("/e", "/f"):
        api_tokens.record_use(any_store, info, client="x", method="GET", path=path, status=200, audit=audit)
    assert audit.waiting() == 2
    api_tokens.record_use(any_store, info, client="x", method="GET", path="/g", status=200, audit=audit)
    assert audit.waiting() == 0 and len(_uses(any_store)) == 7  # max_rows reached: flushed without waiting
    del secret


def test_the_default_buffer_is_written_by_flush_audit_and_read_by_token_uses(store):
    info, secret = api_tokens.create_token(store, ADMIN, "ci", ["engineer"])
    api_tokens.authenticate_request(store, secret, client="10.1.1.1", method="GET", path="/api/v1/versions")
    api_tokens.record_use(store, info, client="10.1.1.1", method="GET", path="/api/v1/versions", status=200)
    api_tokens.flush_audit()
    assert [(u["client"], u["outcome"]) for u in _uses(store)] == [("10.1.1.1", "ok")]
    api_tokens.record_use(store, info, client="10.1.1.1", method="GET", path="/api/v1/manifest", status=200)
    listed = api_tokens.token_uses(store, ADMIN, "ci", limit=10)  # flushes this store's rows first
    assert [(u["name"], u["path"]) for u in listed] == [("ci", "/api/v1/manifest"), ("ci", "/api/v1/versions")]
    assert [u["path"] for u in api_tokens.token_uses(store, ADMIN, info.token_id, limit=1)] == ["/api/v1/manifest"]
    with pytest.raises(NotFoundError, match="No API token 'other'"):
        api_tokens.token_uses(store, ADMIN, "other")
    with pytest.raises(ValidationError, match="--limit 0"):
        api_tokens.token_uses(store, ADMIN, limit=0)


def test_the_audit_write_is_bookkeeping(store):
    """An audit row changes no page figure, so its transaction does not take a write_seq value
    (the generation's first half), which would throw away every cached aggregate. (Each row
    still takes an event id: the schema draws api_token_uses.event_id from event_seq.)"""
    info, _ = api_tokens.create_token(store, ADMIN, "ci", ["engineer"])
    before = store.generation()
    audit = UseAudit(background=False)
    api_tokens.record_use(store, info, client="c", method="GET", path="/", status=200, audit=audit)
    audit.flush()
    assert len(_uses(store)) == 1 and store.generation()[0] == before[0]


def test_a_closed_store_loses_its_buffered_rows_with_a_warning_not_an_error(tmp_path, caplog):
    s = Store.open(tmp_path / "other.duckdb")
    info, _ = api_tokens.create_token(s, ADMIN, "ci", ["engineer"])
    audit = UseAudit(background=False)
    api_tokens.record_use(s, info, client="c", method="GET", path="/", status=200, audit=audit)
    s.close()
    with caplog.at_level(logging.WARNING, logger="annotator.people.api_tokens"):
        assert audit.flush() == 0
    assert "1 use(s) not written" in caplog.text and audit.waiting() == 0


@pytest.mark.parametrize("max_rows, max_delay_s", [(500, 0.05), (2, 3600)], ids=["delay", "rows"])
def test_the_background_thread_writes_when_rows_are_due(store, max_rows, max_delay_s):
    info, _ = api_tokens.create_token(store, ADMIN, "ci", ["engineer"])
    audit = UseAudit(max_rows=max_rows, max_delay_s=max_delay_s)
    for path in ("/1", "/2"):
        api_tokens.record_use(store, info, client="c", method="GET", path=path, status=200, audit=audit)
    wait_until(lambda: len(_uses(store)) >= 2, "the background thread to write both uses")
    assert audit.waiting() == 0 and [u["path"] for u in _uses(store)] == ["/1", "/2"]


@pytest.mark.parametrize("text, expected", [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)),
                                            ("90m", timedelta(minutes=90)), (" 7D ", timedelta(days=7))])
def test_parse_duration(text, expected):
    assert api_tokens.parse_duration(text) == expected


@pytest.mark.parametrize("text", ["0d", "30", "1w", "-1d", "d"])
def test_parse_duration_refuses_with_an_example(text):
    with pytest.raises(ValidationError, match="e.g. 30d, 12h, 90m"):
        api_tokens.parse_duration(text)


def test_a_token_an_admin_only_account_made_follows_its_creator_by_permission(any_store):
    """Issue 37 item 10 with item 6: an admin-only account gives a token the engineer role; the
    token keeps it while its creator may give it (an admin, or an account holding engineer),
    and loses it in the transaction that takes that from the creator."""
    from annotator.people import identity

    root = identity.create_user(any_store, None, "root", ["admin"], password="pw-root-123456789")
    other = identity.create_user(any_store, root, "other", ["admin"], password="pw-other-123456789")
    info, secret = api_tokens.create_token(any_store, other, "ci", ["engineer"])
    _, lead_token = api_tokens.create_token(any_store, other, "leads", ["lead", "annotator"])
    assert api_tokens.authenticate(any_store, secret)[0].roles == ("engineer",)
    followed = identity.set_roles(any_store, root, "other", ["engineer"])  # no longer admin, holds engineer
    assert (followed.revoked, followed.narrowed) == (1, 0)  # "leads": engineer may give neither lead nor annotator
    assert api_tokens.authenticate(any_store, secret)[0].roles == ("engineer",)
    with pytest.raises(TokenRefused, match="was revoked"):
        api_tokens.authenticate(any_store, lead_token)
    followed = identity.set_roles(any_store, root, "other", ["lead"])
    assert (followed.revoked, followed.narrowed) == (1, 0)
    with pytest.raises(TokenRefused, match="was revoked"):
        api_tokens.authenticate(any_store, secret)
    assert info.created_by == "other"
