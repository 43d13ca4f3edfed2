"""Issue 37 item 7 (probe A9): the API token audit no longer grows without bound from requests
anyone can make. Refusals (no token, unknown secret, revoked, expired, throttled) are kept a
number of days and at most N rows, the newest; a live token's answered requests are kept
longer and never pushed out by them. Pruned in the transaction that writes the audit. On
DuckDB and PostgreSQL (``any_store``); the wall clock the ages count from is injected."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest

from annotator.people import api_tokens
from annotator.people.api_tokens import AuditRetention, UseAudit
from annotator.people.identity import User
from annotator.people.roles import Role
from golden_store.core.errors import GoldenError
from golden_store.db.store import Store, utcnow
from golden_store.live import api_tokens as rows

ADMIN = User("boss", "Boss", frozenset({Role.ADMIN}))


class Clock:  # the audit's monotonic clock (when a write is due, when ages were last pruned)
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _count(store: Store, where: str = "TRUE") -> int:
    return int(store.read_one(f"SELECT count(*) FROM api_token_uses WHERE {where}")[0])


def _refusals(store: Store) -> int:
    return _count(store, "outcome NOT IN ('ok', 'denied')")


def _anonymous(store: Store, audit: UseAudit, n: int, *, guesses: int = 0) -> None:
    """``n`` requests with no token and ``guesses`` with unknown secrets (each from its own
    address, so the throttle never answers 429: the worst case, every guess written at once)."""
    for i in range(n + guesses):
        with pytest.raises(api_tokens.TokenRefused):
            api_tokens.authenticate_request(store, None if i < n else f"gst_guess{i}", client=f"10.9.{i // 250}.{i % 250}",
                                            method="GET", path="/api/v1/versions",
                                            throttle=api_tokens.token_throttle(), audit=audit)


def test_many_anonymous_requests_leave_at_most_the_cap_and_every_answered_request(any_store):
    audit = UseAudit(max_rows=50, background=False, retention=AuditRetention(refused_max_rows=20))
    info, secret = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    for i in range(12):  # the pipeline's own requests, before and among the flood
        api_tokens.authenticate_request(any_store, secret, client="10.0.0.1", method="GET", path=f"/api/v1/r{i}",
                                        audit=audit)
        api_tokens.record_use(any_store, info, client="10.0.0.1", method="GET", path=f"/api/v1/r{i}",
                              status=200 if i % 4 else 403, audit=audit)
        _anonymous(any_store, audit, 25, guesses=3)
    audit.flush()
    assert _refusals(any_store) <= 20
    assert _count(any_store, "outcome IN ('ok', 'denied')") == 12  # not one of the pipeline's requests went
    # the newest refusals are the ones kept
    kept = any_store.read("SELECT event_id FROM api_token_uses WHERE outcome NOT IN ('ok', 'denied') ORDER BY 1")
    newest = any_store.read("SELECT max(event_id) FROM api_token_uses WHERE outcome NOT IN ('ok', 'denied')")[0][0]
    assert kept[-1][0] == newest


def test_the_cap_holds_after_every_write_when_it_is_checked_once_per_slack(store):
    """With a cap of 200 the cap is checked every 2 refusals (1%), cutting to 199: the table
    never holds more than 200 refusals after any write."""
    retention = AuditRetention(refused_max_rows=200)
    assert retention.slack == 2
    audit = UseAudit(background=False, retention=retention)
    most = 0
    for i in range(215):
        audit.write_now(store, (None, f"10.1.0.{i % 200}", "GET", "/api/v1/x", 401, "unknown", utcnow()))
        most = max(most, _refusals(store))
    assert most == 200 and _refusals(store) <= 200


def test_rows_past_their_retention_go_at_the_next_write_refusals_sooner_than_answered(any_store):
    info, _ = api_tokens.create_token(any_store, ADMIN, "ci", ["engineer"])
    now = utcnow()

    def row(outcome: str, days: float, token: str | None = None) -> tuple:
        return (token, "10.0.0.2", "GET", f"/{outcome}-{days}", 401 if outcome != "ok" else 200, outcome,
                now - timedelta(days=days))

    rows.record_uses(any_store, [
        row("unknown", 31), row("expired", 31, info.token_id), row("throttled", 29), row("unknown", 1),
        row("ok", 31, info.token_id), row("ok", 399, info.token_id), row("ok", 401, info.token_id),
        row("denied", 401, info.token_id)])
    wall, mono = {"now": now}, Clock()
    audit = UseAudit(background=False, clock=mono, retention=AuditRetention(now=lambda: wall["now"]))  # 30 / 400 days

    def paths() -> set[str]:
        return {p for (p,) in any_store.read("SELECT path FROM api_token_uses")}

    api_tokens.record_use(any_store, info, client="10.0.0.2", method="GET", path="/today", status=200, audit=audit)
    audit.flush()  # this process's first write: pruned by age
    assert paths() == {"/throttled-29", "/unknown-1", "/ok-31", "/ok-399", "/today"}
    wall["now"] = now + timedelta(days=2)  # two days on: the 29-day refusal and the 399-day answer age out ...
    _anonymous(any_store, audit, 1)
    audit.flush()
    assert "/throttled-29" in paths()  # ... at the first write of the next minute, not at every write
    mono.now += 60
    _anonymous(any_store, audit, 1)
    audit.flush()
    assert paths() == {"/unknown-1", "/ok-31", "/today", "/api/v1/versions"}


def test_zero_days_keeps_answered_requests_for_good(store):
    info, _ = api_tokens.create_token(store, ADMIN, "ci", ["engineer"])
    rows.record_uses(store, [(info.token_id, "c", "GET", "/ancient", 200, "ok", utcnow() - timedelta(days=5000))])
    audit = UseAudit(background=False, retention=AuditRetention(answered_days=0))
    api_tokens.record_use(store, info, client="c", method="GET", path="/now", status=200, audit=audit)
    audit.flush()
    assert _count(store) == 2


def test_the_cap_logs_how_many_refusals_it_removed_and_when_they_were_written(store, caplog):
    audit = UseAudit(background=False, retention=AuditRetention(refused_max_rows=5))
    with caplog.at_level(logging.WARNING, logger="annotator.people.api_tokens"):
        _anonymous(store, audit, 0, guesses=9)
    assert _refusals(store) == 5
    assert "refused request(s) written from" in caplog.text and "GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS" in caplog.text


def test_the_environment_sets_the_retention_and_a_bad_value_is_one_sentence(monkeypatch):
    for env in (api_tokens.REFUSED_DAYS_ENV, api_tokens.REFUSED_MAX_ROWS_ENV, api_tokens.ANSWERED_DAYS_ENV):
        monkeypatch.delenv(env, raising=False)
    default = api_tokens.audit_retention()
    assert (default.refused_days, default.refused_max_rows, default.answered_days) == (30, 100_000, 400)
    monkeypatch.setenv(api_tokens.REFUSED_DAYS_ENV, "7")
    monkeypatch.setenv(api_tokens.REFUSED_MAX_ROWS_ENV, "5000")
    monkeypatch.setenv(api_tokens.ANSWERED_DAYS_ENV, "0")
    set_ = api_tokens.audit_retention()
    assert (set_.refused_days, set_.refused_max_rows, set_.answered_days) == (7, 5000, 0)
    fixed = datetime(2027, 1, 1)
    prune = AuditRetention(refused_days=7, answered_days=0, now=lambda: fixed).prune(age=True, cap=False)
    assert prune == rows.Prune(refused_before=fixed - timedelta(days=7), answered_before=None, refused_keep=None)
    assert AuditRetention(refused_max_rows=500).prune(age=False, cap=True) == rows.Prune(refused_keep=496)
    assert AuditRetention().prune(age=False, cap=False) is None
    for env, bad in ((api_tokens.REFUSED_MAX_ROWS_ENV, "0"), (api_tokens.REFUSED_DAYS_ENV, "-1"),
                     (api_tokens.ANSWERED_DAYS_ENV, "a year")):
        monkeypatch.setenv(env, bad)
        with pytest.raises(GoldenError, match=f"{env}={bad!r}: give a whole number of"):
            api_tokens.audit_retention()
        from http_api.app import create_app

        with pytest.raises(GoldenError, match=env):  # the API says so when it starts
            create_app("unused.duckdb")
        monkeypatch.delenv(env)


def test_a_bad_setting_met_while_writing_uses_the_defaults_and_says_so_once(store, monkeypatch, caplog):
    monkeypatch.setenv(api_tokens.REFUSED_MAX_ROWS_ENV, "lots")
    audit = UseAudit(background=False)
    with caplog.at_level(logging.WARNING, logger="annotator.people.api_tokens"):
        _anonymous(store, audit, 0, guesses=3)
    assert _refusals(store) == 3  # written: a setting never costs the audit its rows
    assert caplog.text.count("GOLDEN_TOKEN_AUDIT_REFUSED_MAX_ROWS='lots'") == 1
