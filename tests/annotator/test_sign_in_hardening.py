"""Issue 18 items 10 and 11, the annotator side: one scrypt per sign-in whether the name
exists or not, a failed-attempt back-off (an injected clock, no real sleeping), passwords of
spaces refused, loopback detection for single-user mode, and no way back to single-user
mode by disabling accounts."""

from __future__ import annotations

import hashlib

import pytest

from annotator.people import identity
from annotator.people.identity import SignInThrottle, SignInThrottled
from golden_store.core.errors import ValidationError

PASSWORD = "0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def scrypt_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = hashlib.scrypt

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(hashlib, "scrypt", counting)
    return calls


def test_every_sign_in_costs_one_scrypt_known_name_or_not(store, scrypt_calls):
    admin = identity.create_user(store, None, "root", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "oidc@example.com", ["annotator"], passwordless=True)
    identity.create_user(store, admin, "gone", ["annotator"], password=PASSWORD)
    identity.set_disabled(store, admin, "gone", True)
    identity.authenticate(store, "warm-up", "x", throttle=SignInThrottle())  # the dummy hash is made once
    for name, password in [("ghost", "whatever123"), ("root", "wrong-password"), ("root", PASSWORD),
                           ("oidc@example.com", "whatever123"), ("gone", PASSWORD)]:
        scrypt_calls.clear()
        identity.authenticate(store, name, password, throttle=SignInThrottle())
        assert len(scrypt_calls) == 1, (name, len(scrypt_calls))


def test_fifty_wrong_passwords_then_the_right_one_is_refused_until_the_back_off_ends(store, scrypt_calls):
    identity.create_user(store, None, "root", ["admin"], password=PASSWORD)
    clock = Clock()
    throttle = SignInThrottle(clock=clock)
    for _ in range(5):
        assert identity.authenticate(store, "root", "wrong-password", throttle=throttle) is None
    scrypt_calls.clear()
    for _ in range(45):
        with pytest.raises(SignInThrottled):
            identity.authenticate(store, "root", "wrong-password", throttle=throttle)
    with pytest.raises(SignInThrottled) as e:
        identity.authenticate(store, " root ", PASSWORD, throttle=throttle)  # the same name, normalised
    assert e.value.retry_after_s == pytest.approx(30.0) and "try again in 30 s" in str(e.value)
    assert scrypt_calls == []  # refused attempts check nothing
    clock.now += 31
    assert identity.authenticate(store, "root", PASSWORD, throttle=throttle).username == "root"
    # a success clears the name's count; a failure after the next lock doubles the wait
    for _ in range(5):
        identity.authenticate(store, "root", "wrong-password", throttle=throttle)
    clock.now += 31
    assert identity.authenticate(store, "root", "wrong-password", throttle=throttle) is None
    with pytest.raises(SignInThrottled) as e:
        identity.authenticate(store, "root", PASSWORD, throttle=throttle)
    assert e.value.retry_after_s == pytest.approx(60.0)
    clock.now += 15 * 60  # the window passes: a fresh start
    assert identity.authenticate(store, "root", PASSWORD, throttle=throttle) is not None


def test_unknown_names_and_one_client_are_throttled_alike(store):
    identity.create_user(store, None, "root", ["admin"], password=PASSWORD)
    clock = Clock()
    throttle = SignInThrottle(clock=clock)
    for _ in range(5):
        identity.authenticate(store, "ghost", "x" * 10, throttle=throttle)
    with pytest.raises(SignInThrottled):  # no hint that "ghost" does not exist
        identity.authenticate(store, "ghost", "x" * 10, throttle=throttle)
    # one address spraying many names is throttled too (a higher limit: people share addresses)
    for i in range(throttle.client_limit):
        identity.authenticate(store, f"name{i}", "x" * 10, client="203.0.113.7", throttle=throttle)
    with pytest.raises(SignInThrottled):
        identity.authenticate(store, "root", PASSWORD, client="203.0.113.7", throttle=throttle)
    assert identity.authenticate(store, "root", PASSWORD, client="198.51.100.1", throttle=throttle) is not None


def test_a_password_of_spaces_is_refused(store):
    for pw in (" " * 10, " " * 20, "abc" + " " * 10):
        with pytest.raises(ValidationError, match="not counting spaces"):
            identity.create_user(store, None, "root", ["admin"], password=pw)
    admin = identity.create_user(store, None, "root", ["admin"], password="correct horse battery")
    with pytest.raises(ValidationError, match="not counting spaces"):
        identity.set_password(store, admin, "root", "\t" * 12)


def test_the_last_enabled_admin_or_account_cannot_be_disabled(store):
    cli = identity.cli_user()  # every role, not an account: nothing stops it but the rule
    admin = identity.create_user(store, None, "root", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    with pytest.raises(ValidationError, match="no enabled admin"):
        identity.set_disabled(store, cli, "root", True)
    with pytest.raises(ValidationError, match="no enabled admin"):
        identity.set_roles(store, cli, "root", ["annotator"])
    identity.create_user(store, admin, "root2", ["admin"], password=PASSWORD)
    identity.set_disabled(store, admin, "root2", True)
    identity.set_disabled(store, cli, "ann", True)
    with pytest.raises(ValidationError, match="no enabled admin"):  # the last enabled account
        identity.set_disabled(store, cli, "root", True)
    assert identity.auth_mode(store, oidc_configured=False) == "accounts"
    identity.set_disabled(store, cli, "root2", False)  # enabling is always allowed
    identity.set_disabled(store, cli, "root", True)  # another admin is enabled now


@pytest.mark.parametrize("ip, headers, local", [
    (None, {}, True), ("127.0.0.1", {}, True), ("127.0.0.2", {}, True), ("::1", {}, True),
    ("::ffff:127.0.0.1", {}, True), ("::ffff:10.0.0.5", {}, False),  # what a server on all IPv6 addresses sees
    ("10.0.0.5", {}, False), ("192.168.1.20", {}, False), ("2001:db8::1", {}, False), ("garbage", {}, False),
    (None, {"X-Forwarded-For": "203.0.113.9"}, False), (None, {"Forwarded": "for=203.0.113.9"}, False),
])
def test_loopback_client(ip, headers, local):
    assert identity.is_loopback_client(ip, headers) is local
