"""A restart mid-delivery loses nothing: `golden webhooks deliver --loop` in a subprocess is
killed (SIGKILL) while the receiver holds one of its requests; another one started after it
delivers every event (the in-flight one again after its lease: allowed, counted by id)."""

from __future__ import annotations

import signal
import subprocess
import sys

from annotator.events import webhooks
from annotator.people.identity import cli_user
from golden_store.db.store import Store
from golden_store.live import webhooks as rows
from tests.annotator.webhook_receiver import Receiver


def _deliver(db: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", db, "webhooks", "deliver", "--loop",
                             "--lease", "2", "--timeout", "0.9", "--poll", "0.1", "--schedule", "0,0,0,0,0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_dispatcher_killed_mid_send_loses_nothing(allow_private_webhooks, store, golden_db):
    with Receiver(answer=lambda n: "hold" if n == 1 else 200) as rx:
        ep, _ = webhooks.add_endpoint(store, cli_user(), rx.url)
        ids = [webhooks.send_test(store, cli_user(), ep.endpoint_id) for _ in range(4)]
        store.close()  # DuckDB: one process opens the file at a time
        first = _deliver(golden_db)
        try:
            assert rx.holding.wait(60), first.stderr.read() if first.poll() is not None else "no request"
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        with Store.open(golden_db) as s:  # the killed process's claim is still there: pending, not lost
            in_flight = {d["event_id"] for d in rows.deliveries(s) if d["status"] == "pending"}
            assert in_flight and all(d["attempts"] == 0 for d in rows.deliveries(s) if d["event_id"] in in_flight)
        rx.release.set()  # the held request is answered to a dead client
        n0 = len(rx.requests)
        second = _deliver(golden_db)
        try:  # every event answered 2xx, the ones in flight at the kill by the second dispatcher
            assert rx.wait_for(lambda: set(rx.successes) == set(ids) and in_flight <= {
                i for n, i in rx.answered if n > n0}), second.stderr.read()
        finally:
            second.send_signal(signal.SIGTERM)  # stops after recording what it sent
            assert second.wait(60) == 0, second.stderr.read()
    assert set(rx.successes) == set(ids)
    with Store.open(golden_db) as s:
        log = rows.deliveries(s)
        assert sorted(d["event_id"] for d in log) == sorted(ids)
        assert {d["status"] for d in log} == {"delivered"}
