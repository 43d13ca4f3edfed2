"""`golden webhooks` (issue 28): add (the secret printed once), list, test, deliver --once,
deliveries [--status], disable; a non-http URL refused with one sentence; and on PostgreSQL,
two dispatchers at once never send one delivery twice (FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import json
import re
import threading

from standardwebhooks import Webhook

from annotator.events import webhooks
from annotator.cli import main
from annotator.people.identity import cli_user
from annotator.events.webhook_delivery import Dispatcher
from golden_store.db.store import Store
from golden_store.live import webhooks as rows
from tests.annotator.webhook_receiver import Receiver


def _golden(capsys, db, *args) -> tuple[int, str, str]:
    code = main(["--db", db, *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_webhooks_commands(allow_private_webhooks, capsys, golden_db):
    assert _golden(capsys, golden_db, "init")[0] == 0
    with Receiver(answer=lambda n: 200 if n == 1 else 500) as rx:
        code, out, _ = _golden(capsys, golden_db, "webhooks", "add", rx.url, "--event", "version.frozen",
                               "--description", "ci")
        assert code == 0
        endpoint_id = re.search(r"endpoint (ep_\w+) added", out).group(1)
        secret = re.search(r"(whsec_\S+)", out).group(1)
        code, out, _ = _golden(capsys, golden_db, "webhooks", "list")
        assert endpoint_id in out and rx.url in out and "version.frozen" in out and "whsec_" not in out
        for _ in range(2):
            assert _golden(capsys, golden_db, "webhooks", "test", endpoint_id)[0] == 0
        code, out, _ = _golden(capsys, golden_db, "webhooks", "deliver", "--once", "--schedule", "")
        assert code == 0 and "2 delivery attempt(s): 1 delivered, 1 to retry or failed" in out
        headers, body = rx.requests[0]
        assert Webhook(secret).verify(body, headers)["type"] == "webhook.test"
        code, out, _ = _golden(capsys, golden_db, "--json", "webhooks", "deliveries", "--status", "failed")
        (failed,) = json.loads(out)
        assert failed["last_error"] == "HTTP 500" and failed["endpoint_id"] == endpoint_id
        code, out, _ = _golden(capsys, golden_db, "webhooks", "deliveries", "--endpoint", endpoint_id)
        assert out.count("webhook.test") == 2 and "delivered" in out and "failed" in out
        assert _golden(capsys, golden_db, "webhooks", "disable", endpoint_id)[0] == 0
        code, out, _ = _golden(capsys, golden_db, "webhooks", "list")
        assert "disabled" in out
    code, _, err = _golden(capsys, golden_db, "webhooks", "add", "file:///etc/passwd")
    assert code != 0 and "give an http:// or https:// URL" in err and len(err.strip().splitlines()) == 1


def test_two_dispatchers_on_postgresql_never_send_one_delivery_twice(allow_private_webhooks, pg_store):
    with Receiver() as rx:
        ep, _ = webhooks.add_endpoint(pg_store, cli_user(), rx.url)
        ids = [webhooks.send_test(pg_store, cli_user(), ep.endpoint_id) for _ in range(30)]
        stores = [Store.open(pg_store.url) for _ in range(2)]  # two server processes' connections
        try:
            start = threading.Barrier(2)

            def run(s: Store) -> None:
                start.wait()
                Dispatcher(s, batch=3, workers=1).run_until_idle()

            threads = [threading.Thread(target=run, args=(s,)) for s in stores]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
        finally:
            for s in stores:
                s.close()
        assert dict(rx.successes) == {i: 1 for i in ids}
    assert {d["status"] for d in rows.deliveries(pg_store)} == {"delivered"}
    assert len(rows.attempts(pg_store, limit=1000)) == 30


def test_deliver_refuses_a_lease_not_over_twice_the_deadline(capsys, golden_db):
    """Issue 37, probe W4: a lease that can run out while a send is still on the wire lets a
    second dispatcher send the same delivery at once; `deliver` refuses such a pair with one
    sentence (the probe's --lease 1 beside the 15 s deadline), and takes a longer lease."""
    assert _golden(capsys, golden_db, "init")[0] == 0
    code, _, err = _golden(capsys, golden_db, "webhooks", "deliver", "--once", "--lease", "1")
    assert code != 0 and "more than twice the send deadline (15 s)" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _golden(capsys, golden_db, "webhooks", "deliver", "--once", "--lease", "31")
    assert code == 0 and "0 delivery attempt(s)" in out


def test_webhooks_add_honours_json(capsys, golden_db):
    """Issue 38 item 4: `webhooks add --json` printed prose; a pipeline adding its own endpoint
    parses the id and the (once-shown) signing secret from JSON."""
    assert _golden(capsys, golden_db, "init")[0] == 0
    code, out, _ = _golden(capsys, golden_db, "--json", "webhooks", "add", "https://93.184.216.34/hooks",
                           "--event", "version.frozen")
    assert code == 0
    added = json.loads(out)
    assert added["endpoint_id"].startswith("ep_") and added["secret"].startswith("whsec_")
    assert added["url"] == "https://93.184.216.34/hooks" and added["event_types"] == ["version.frozen"]
    listed = json.loads(_golden(capsys, golden_db, "--json", "webhooks", "list")[1])
    assert [e["endpoint_id"] for e in listed] == [added["endpoint_id"]] and "secret" not in listed[0]
