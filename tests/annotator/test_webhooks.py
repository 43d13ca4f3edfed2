"""Webhooks (issue 28): endpoints, Standard Webhooks signatures checked by an independent
implementation, at-least-once delivery from the outbox over real HTTP on loopback, retries
on the Svix schedule (an injected clock: no sleeping for backoff), the delivery log."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from annotator.events import webhooks
from annotator.people.identity import cli_user, create_user
from annotator.people.roles import PermissionDenied
from annotator.events.webhook_delivery import SCHEDULE, Dispatcher
from golden_store.core import standard_webhooks
from golden_store.core.errors import ValidationError
from golden_store.db.store import utcnow
from golden_store.live import webhooks as rows
from tests.annotator.webhook_receiver import Receiver, free_port
from tests.conftest import table_snapshot


class Clock:
    """The dispatcher's clock, moved by hand. It starts from the real now (plus ``ahead``),
    never from a fixed date: the store stamps a new delivery's first attempt with the real
    time, so a clock fixed on some day finds nothing due from the next day on."""

    def __init__(self, ahead: timedelta = timedelta(0)) -> None:
        self.now = utcnow() + ahead

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _delivery(store, event_id):
    return next(d for d in rows.deliveries(store) if d["event_id"] == event_id)


def test_a_secret_is_whsec_and_base64_of_at_least_24_bytes():
    s = standard_webhooks.new_secret()
    assert s.startswith("whsec_") and len(standard_webhooks.secret_bytes(s)) >= 24
    assert s != standard_webhooks.new_secret()


def test_signatures_verify_with_the_standardwebhooks_package(allow_private_webhooks, store):
    user = cli_user()
    with Receiver() as rx:
        ep, secret = webhooks.add_endpoint(store, user, rx.url)
        ids = [webhooks.send_test(store, user, ep.endpoint_id) for _ in range(2)]
        out = Dispatcher(store).run_until_idle()
        assert [o.delivered for o in out] == [True, True]
        assert len(rx.requests) == 2
        for headers, body in rx.requests:
            payload = Webhook(secret).verify(body, headers)  # raises on a bad signature or stale timestamp
            assert payload["type"] == "webhook.test" and payload["data"]["endpoint_id"] == ep.endpoint_id
            assert payload["timestamp"].endswith("Z")
            assert headers["content-type"] == "application/json"
            with pytest.raises(WebhookVerificationError):
                Webhook(standard_webhooks.new_secret()).verify(body, headers)
            tampered = body.replace(b"test event", b"TEST EVENT")
            with pytest.raises(WebhookVerificationError):
                Webhook(secret).verify(tampered, headers)
        assert sorted(h["webhook-id"] for h, _ in rx.requests) == sorted(ids)


def test_only_http_urls_are_taken_and_a_refusal_changes_nothing(store):
    before = table_snapshot(store)
    for url in ("ftp://example.com/x", "file:///etc/passwd", "example.com/hook", "http:///nohost", ""):
        with pytest.raises(ValidationError, match="http:// or https://"):
            webhooks.add_endpoint(store, cli_user(), url)
    with pytest.raises(ValidationError, match="Unknown webhook event version.thawed"):
        webhooks.add_endpoint(store, cli_user(), "https://ci.example.com/h", ["version.thawed"])
    assert table_snapshot(store) == before


def test_only_engineers_and_admins_manage_webhooks(store):
    admin = create_user(store, None, "root", ["admin"], password="correct horse battery")
    ann = create_user(store, admin, "ann", ["annotator"], password="correct horse battery")
    lead = create_user(store, admin, "lea", ["lead"], password="correct horse battery")
    eng = create_user(store, admin, "eve", ["engineer"], password="correct horse battery")
    ep, _ = webhooks.add_endpoint(store, eng, "https://ci.example.com/h")
    for who in (ann, lead):
        with pytest.raises(PermissionDenied):
            webhooks.add_endpoint(store, who, "https://ci.example.com/h")
        with pytest.raises(PermissionDenied):
            webhooks.list_endpoints(store, who)
        with pytest.raises(PermissionDenied):
            webhooks.deliveries(store, who)
        with pytest.raises(PermissionDenied):
            webhooks.send_test(store, who, ep.endpoint_id)
    assert [e.endpoint_id for e in webhooks.list_endpoints(store, admin)] == [ep.endpoint_id]


# The dispatcher's clock today and a year ahead: the retry schedule holds on any date.
ANY_DAY = pytest.mark.parametrize("ahead", [timedelta(0), timedelta(days=365)], ids=["today", "a-year-ahead"])


@ANY_DAY
def test_a_receiver_down_then_back_gets_every_event_once_per_id(allow_private_webhooks, store, ahead):
    """Port closed, then 503s, then up: every event id gets exactly one 2xx; the retries
    follow the schedule (5 s, then 5 min, ...) on the injected clock."""
    user = cli_user()
    port = free_port()
    ep, _ = webhooks.add_endpoint(store, user, f"http://127.0.0.1:{port}/hooks")
    ids = [webhooks.send_test(store, user, ep.endpoint_id) for _ in range(5)]
    clock = Clock(ahead)  # after the events: their first attempt is due now
    d = Dispatcher(store, clock=clock)
    # 1: nobody listens
    out = d.run_once()
    assert len(out) == 5 and not any(o.delivered for o in out)
    assert all("Connect" in (o.error or "") for o in out)
    first = _delivery(store, ids[0])
    assert first["attempts"] == 1 and first["next_attempt_at"] == clock.now + timedelta(seconds=SCHEDULE[0])
    assert d.run_once() == []  # nothing due before the backoff ends
    clock.advance(SCHEDULE[0])
    # 2: the receiver is up but answers 503
    with Receiver(port, answer=lambda n: 503 if n <= 5 else 200) as rx:
        out = d.run_once()
        assert [o.status_code for o in out] == [503] * 5
        assert _delivery(store, ids[0])["next_attempt_at"] == clock.now + timedelta(seconds=SCHEDULE[1])
        clock.advance(SCHEDULE[1])
        # 3: back
        out = d.run_until_idle()
        assert sorted(o.event_id for o in out if o.delivered) == sorted(ids)
        assert d.run_until_idle() == []
        assert dict(rx.successes) == {i: 1 for i in ids}
        assert {h["webhook-id"] for h, _ in rx.requests} == set(ids)  # the same id on every retry
    log = rows.deliveries(store)
    assert {r["status"] for r in log} == {"delivered"} and {r["attempts"] for r in log} == {3}
    attempts = rows.attempts(store)
    assert len(attempts) == 15
    assert sorted(a["status_code"] for a in attempts if a["status_code"]) == [200] * 5 + [503] * 5


@ANY_DAY
def test_after_the_last_retry_a_delivery_is_failed_and_retry_now_sends_it_again(allow_private_webhooks, store, ahead):
    user = cli_user()
    with Receiver(answer=lambda n: 500 if n <= 3 else 200) as rx:
        ep, _ = webhooks.add_endpoint(store, user, rx.url)
        eid = webhooks.send_test(store, user, ep.endpoint_id)
        clock = Clock(ahead)
        d = Dispatcher(store, clock=clock, schedule=(5, 60))
        for wait in (0, 5, 60):
            clock.advance(wait)
            assert [o.status_code for o in d.run_once()] == [500]
        row = _delivery(store, eid)
        assert row["status"] == "failed" and row["attempts"] == 3 and row["last_error"] == "HTTP 500"
        clock.advance(10 ** 6)
        assert d.run_once() == []  # failed is final until a person retries it
        assert webhooks.deliveries(store, user, status="failed")[0]["event_id"] == eid
        webhooks.retry(store, user, eid, ep.endpoint_id)  # due at once: stamped with the real now
        assert [o.delivered for o in d.run_once()] == [True]
        assert _delivery(store, eid)["status"] == "delivered" and rx.successes[eid] == 1


def test_redirects_are_not_followed_and_a_timeout_is_an_error(allow_private_webhooks, store):
    user = cli_user()
    with Receiver(answer=lambda n: 302 if n == 1 else "hold") as rx:
        ep, _ = webhooks.add_endpoint(store, user, rx.url)
        webhooks.send_test(store, user, ep.endpoint_id)
        d = Dispatcher(store, schedule=(0, 0), timeout=0.5)
        (o,) = d.run_once()
        assert o.status_code == 302 and not o.delivered and "redirects are not followed" in o.error
        assert len(rx.requests) == 1  # the Location was not requested
        (o,) = d.run_once()  # the receiver holds the request past the timeout
        assert not o.delivered and o.status_code is None and "no answer within" in o.error


def test_a_disabled_endpoint_gets_nothing_more(allow_private_webhooks, store):
    user = cli_user()
    with Receiver() as rx:
        ep, _ = webhooks.add_endpoint(store, user, rx.url, ["evaluation.recorded"])
        webhooks.send_test(store, user, ep.endpoint_id)
        webhooks.disable_endpoint(store, user, ep.endpoint_id)
        assert Dispatcher(store).run_until_idle() == [] and rx.requests == []
        with pytest.raises(ValidationError, match="disabled"):
            webhooks.send_test(store, user, ep.endpoint_id)
        assert not webhooks.list_endpoints(store, user)[0].enabled


def test_an_endpoint_gets_only_the_events_it_subscribed_to(store):
    user = cli_user()
    every, _ = webhooks.add_endpoint(store, user, "https://a.example.com/h")
    frozen_only, _ = webhooks.add_endpoint(store, user, "https://b.example.com/h", ["version.frozen"])
    store.write(lambda cur: webhooks.emit_tx(cur, "evaluation.recorded", {"evaluation_id": "e"}, "x"))
    assert [d["endpoint_id"] for d in rows.deliveries(store)] == [every.endpoint_id]
    store.write(lambda cur: webhooks.emit_tx(cur, "version.frozen", {"name": "v"}, "x"))
    assert {d["endpoint_id"] for d in rows.deliveries(store) if d["event_type"] == "version.frozen"} == {
        every.endpoint_id, frozen_only.endpoint_id}
    body = json.loads(rows.events(store, event_type="version.frozen")[0]["payload"])
    assert set(body) == {"type", "timestamp", "data"} and body["data"] == {"name": "v"}


def test_an_event_in_a_rolled_back_transaction_is_never_sent(store):
    ep, _ = webhooks.add_endpoint(store, cli_user(), "https://ci.example.com/h")

    def change_then_fail(cur):
        webhooks.emit_tx(cur, "evaluation.recorded", {"evaluation_id": "e"}, "x")
        raise ValidationError("the change was refused after its event was written")

    with pytest.raises(ValidationError):
        store.write(change_then_fail)
    assert rows.events(store) == [] and rows.deliveries(store) == []
    assert ep.enabled


def test_a_trickling_receiver_is_cut_at_the_deadline_while_another_endpoint_is_delivered(allow_private_webhooks, store):
    """Probe W4 (issue 37): httpx's timeout is per read, so a receiver that trickles its answer
    (here one byte every 0.5 s, 19 s in all) held a send, and every delivery behind it, for as
    long as it liked. The send now has a whole-request deadline (1 s): it ends with a timeout
    error after the deadline, the receiver sees the hang-up before its answer is out, and a
    second endpoint's delivery in the same run is delivered while the first still trickles."""
    user = cli_user()
    with Receiver(answer=lambda n: "trickle") as slow, \
            Receiver(answer=lambda n: 200 if slow.trickling.wait(60) else 500) as ok:
        slow_ep, _ = webhooks.add_endpoint(store, user, slow.url)
        ok_ep, _ = webhooks.add_endpoint(store, user, ok.url)
        webhooks.send_test(store, user, slow_ep.endpoint_id)
        ok_id = webhooks.send_test(store, user, ok_ep.endpoint_id)
        out = {o.endpoint_id: o for o in Dispatcher(store, timeout=1, lease=10, schedule=(60,)).run_once()}
        assert out[ok_ep.endpoint_id].delivered and ok.successes[ok_id] == 1  # answered while the other trickled
        cut = out[slow_ep.endpoint_id]
        assert (cut.delivered, cut.status_code, cut.error) == (False, None, "no answer within 1 s")
        assert slow.wait_for(lambda: len(slow.trickled) == 1)
        written, whole = slow.trickled[0]
        assert not whole and written < len(slow.trickle_answer)  # the client hung up mid-answer
        (attempt,) = [a for a in rows.attempts(store) if a["endpoint_id"] == slow_ep.endpoint_id]
        assert attempt["duration_ms"] >= 1000 and attempt["error"] == "no answer within 1 s"  # not before it
    with pytest.raises(ValueError, match="more than twice the send deadline"):
        Dispatcher(store, timeout=15, lease=30)  # a lease that could run out mid-send is refused


def test_two_dispatchers_racing_one_due_delivery_send_it_once(allow_private_webhooks, store):
    """Probe W4 (issue 37): with two dispatchers, a lease that ran out while a trickling send
    was still in progress let the second claim and send the same delivery at once. Both
    dispatchers (real clock, lease 8 s, deadline 1 s, no retries) poll until the delivery is
    settled: the receiver gets exactly one request, never two of one webhook-id at once."""
    user = cli_user()
    with Receiver(answer=lambda n: "trickle") as rx:
        ep, _ = webhooks.add_endpoint(store, user, rx.url)
        eid = webhooks.send_test(store, user, ep.endpoint_id)
        settled = threading.Event()
        outcomes: list = []

        def race(d: Dispatcher) -> None:
            try:
                while not settled.is_set():
                    outcomes.extend(d.run_once())
                    if _delivery(store, eid)["status"] != "pending":
                        settled.set()
                    settled.wait(0.05)  # pace of the polling loop, not a synchronisation
            finally:
                d.close()

        threads = [threading.Thread(target=race, args=(Dispatcher(store, timeout=1, lease=8, schedule=()),))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert settled.is_set()
        assert len(rx.requests) == 1 and rx.most_at_once[eid] == 1
        assert [(o.event_id, o.delivered) for o in outcomes] == [(eid, False)]
    row = _delivery(store, eid)
    assert (row["status"], row["attempts"]) == ("failed", 1) and len(rows.attempts(store)) == 1
