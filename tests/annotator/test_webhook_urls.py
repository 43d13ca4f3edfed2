"""Webhook URLs (issue 37, probes W5 and W7).

W5: a webhook may not target loopback, private, link-local (cloud metadata) or otherwise
non-public addresses unless ``GOLDEN_WEBHOOK_ALLOW_PRIVATE=1``: refused when the endpoint is
added (nothing stored) and again at every send, after one name lookup whose addresses are
the ones connected to (a name that turns private after it was added is refused; the
delivery is failed with the reason, not retried).

W7: credentials in a webhook URL (userinfo password, query values) are never shown: not by
``golden webhooks`` (text or ``--json``), the delivery log, a refusal message or the page,
while the receiver still gets them (the page: tests/app_pages/test_webhooks_page.py)."""

from __future__ import annotations

import base64
import ipaddress
import json
import socket

import pytest

from annotator.events import webhook_urls, webhooks
from annotator.cli import main
from annotator.people.identity import cli_user
from annotator.events.webhook_delivery import Dispatcher
from golden_store.core.errors import ValidationError
from tests.annotator.webhook_receiver import Receiver
from tests.conftest import table_snapshot

ALLOW = webhook_urls.ALLOW_ENV


class Resolver:
    """Stands in for the system resolver (``webhook_urls._getaddrinfo``): ``names`` maps a
    host to the addresses it resolves to now (tests change them between add and send);
    other names do not resolve. Counts the lookups of each name."""

    def __init__(self, monkeypatch, **names: list[str]) -> None:
        self.names = {k.replace("_", "."): v for k, v in names.items()}
        self.lookups: list[str] = []
        monkeypatch.setattr(webhook_urls, "_getaddrinfo", self)

    def __call__(self, host: str, port: int) -> list:
        self.lookups.append(host)
        if host not in self.names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for a in self.names[host]:
            fam = socket.AF_INET6 if ":" in a else socket.AF_INET
            out.append((fam, socket.SOCK_STREAM, 6, "", (a, port, 0, 0) if fam == socket.AF_INET6 else (a, port)))
        return out


# ---- W5: the address classes --------------------------------------------------------------------


@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.5.4", "private"), ("192.168.1.1", "private"), ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"), ("fe80::1%eth0", "link-local"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.1.2.3", "private"), ("::ffff:169.254.169.254", "link-local"),
    ("64:ff9b::10.0.0.1", "private"), ("2002:7f00:1::", "loopback"),  # NAT64 and 6to4 reach the IPv4 inside
    ("::127.0.0.1", "reserved"), ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("100.64.0.1", "non-public"), ("240.0.0.1", "reserved"), ("fec0::1", "site-local"), ("192.0.2.1", "private"),
    ("8.8.8.8", None), ("93.184.216.34", None), ("2606:4700::1111", None), ("::ffff:8.8.8.8", None),
    ("64:ff9b::8.8.8.8", None),
])
def test_each_address_class(address, kind):
    assert webhook_urls.address_class(ipaddress.ip_address(address)) == kind


# ---- W5: refused when added ---------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "kind"), [
    ("http://127.0.0.1:8621/api/v1/versions", "127.0.0.1 is a loopback address"),  # the studio's own API
    ("http://[::1]:8622/ok", "::1 is a loopback address"),
    ("HTTP://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1 is a loopback address"),
    ("https://[fc00::1]:8443/h", "fc00::1 is a private address"),
    ("http://localhost:8621/api/v1/versions", "localhost resolves to a loopback address"),
    ("http://2130706433/", "2130706433 resolves to a loopback address"),  # 127.0.0.1 as one number
    ("http://ciuser:s3cr3tPASS@10.0.0.1/ok?token=abc123", "10.0.0.1 is a private address"),
])
def test_a_private_address_is_refused_when_added_and_nothing_is_stored(store, url, kind):
    before = table_snapshot(store)
    with pytest.raises(ValidationError) as err:
        webhooks.add_endpoint(store, cli_user(), url)
    msg = str(err.value)
    assert kind in msg and f"{ALLOW}=1" in msg and len(msg.splitlines()) == 1
    assert "s3cr3tPASS" not in msg and "abc123" not in msg  # W7: the refusal quotes the URL masked
    assert table_snapshot(store) == before


def test_a_public_name_resolving_to_a_private_address_is_refused_when_added(store, monkeypatch):
    Resolver(monkeypatch, hooks_example_com=["10.0.0.5"], mixed_example_com=["93.184.216.34", "127.0.0.1"],
             public_example_com=["93.184.216.34", "2606:4700::1111"])
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match="hooks.example.com resolves to a private address"):
        webhooks.add_endpoint(store, cli_user(), "https://hooks.example.com/h")
    with pytest.raises(ValidationError, match="mixed.example.com resolves to a loopback address"):
        webhooks.add_endpoint(store, cli_user(), "https://mixed.example.com/h")  # every address is checked
    assert table_snapshot(store) == before
    ok, _ = webhooks.add_endpoint(store, cli_user(), "https://public.example.com/h")
    later, _ = webhooks.add_endpoint(store, cli_user(), "https://not-up-yet.example.com/h")  # checked when sent
    assert {e.endpoint_id for e in webhooks.list_endpoints(store, cli_user())} == {ok.endpoint_id, later.endpoint_id}


def test_the_setting_allows_private_addresses_when_added(store, monkeypatch):
    monkeypatch.setenv(ALLOW, "1")
    for url in ("http://127.0.0.1:8621/h", "http://[::1]:8622/ok", "http://169.254.169.254/", "http://localhost/"):
        webhooks.add_endpoint(store, cli_user(), url)
    assert len(webhooks.list_endpoints(store, cli_user())) == 4


def test_a_bad_port_or_an_open_bracket_is_one_sentence(store):
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match="port is not a number"):
        webhooks.add_endpoint(store, cli_user(), "https://ci.example.com:99999/h")
    with pytest.raises(ValidationError, match="http:// or https://"):
        webhooks.add_endpoint(store, cli_user(), "http://[::1/h")
    assert table_snapshot(store) == before


# ---- W5: refused again when sent ------------------------------------------------------------------


def test_localhost_added_while_allowed_is_refused_when_sent_with_the_setting_off(store, monkeypatch):
    with Receiver() as rx:
        monkeypatch.setenv(ALLOW, "1")
        ep, _ = webhooks.add_endpoint(store, cli_user(), rx.url.replace("127.0.0.1", "localhost"))
        monkeypatch.delenv(ALLOW)
        event_id = webhooks.send_test(store, cli_user(), ep.endpoint_id)
        (out,) = Dispatcher(store).run_until_idle()  # the real schedule: a refusal is not retried
        assert not out.delivered and out.status_code is None
        assert out.error.startswith("refused: localhost resolves to a loopback address") and f"{ALLOW}=1" in out.error
        assert rx.requests == []
        (d,) = webhooks.deliveries(store, cli_user())
        assert (d["status"], d["attempts"], d["next_attempt_at"]) == ("failed", 1, None)
        assert d["last_error"] == out.error
        assert Dispatcher(store).run_until_idle() == []  # nothing left due: no retry storm
        # the operator allows it, a person retries it: delivered
        monkeypatch.setenv(ALLOW, "1")
        webhooks.retry(store, cli_user(), event_id, ep.endpoint_id)
        (out,) = Dispatcher(store).run_until_idle()
        assert out.delivered and rx.successes[event_id] == 1


def test_a_name_that_turns_private_after_it_was_added_is_refused_when_sent(store, monkeypatch):
    """DNS rebinding: public when the endpoint is added, loopback when the event is sent. The
    send looks the name up once and connects to what it checked, so nothing reaches loopback."""
    with Receiver() as rx:
        dns = Resolver(monkeypatch, rebind_example_com=["93.184.216.34"])
        ep, _ = webhooks.add_endpoint(store, cli_user(), f"http://rebind.example.com:{rx.port}/hooks")
        dns.names["rebind.example.com"] = ["127.0.0.1"]
        dns.lookups.clear()
        webhooks.send_test(store, cli_user(), ep.endpoint_id)
        (out,) = Dispatcher(store).run_until_idle()
        assert out.error.startswith("refused: rebind.example.com resolves to a loopback address")
        assert rx.requests == [] and dns.lookups == ["rebind.example.com"]
        assert webhooks.deliveries(store, cli_user())[0]["status"] == "failed"


def test_a_send_connects_to_the_address_it_checked(store, monkeypatch):
    """With the setting on, a name only the steered resolver knows is delivered to the
    receiver on loopback: the connection used the checked address, not a second lookup. With
    it off, a name giving a public and a loopback address is refused, whichever came first."""
    monkeypatch.setenv(ALLOW, "1")
    with Receiver() as rx:
        dns = Resolver(monkeypatch, receiver_test=["127.0.0.1"], mixed_test=["93.184.216.34", "127.0.0.1"])
        ep, _ = webhooks.add_endpoint(store, cli_user(), f"http://receiver.test:{rx.port}/hooks")
        event_id = webhooks.send_test(store, cli_user(), ep.endpoint_id)
        dns.lookups.clear()
        (out,) = Dispatcher(store).run_until_idle()
        assert out.delivered and rx.successes[event_id] == 1 and dns.lookups == ["receiver.test"]
        assert rx.requests[0][0]["host"] == f"receiver.test:{rx.port}"  # the URL's name, as the receiver knows it
        mixed, _ = webhooks.add_endpoint(store, cli_user(), f"http://mixed.test:{rx.port}/hooks")
        monkeypatch.delenv(ALLOW)
        webhooks.send_test(store, cli_user(), mixed.endpoint_id)
        (out,) = Dispatcher(store).run_until_idle()
        assert out.error.startswith("refused: mixed.test resolves to a loopback address") and len(rx.requests) == 1


def test_with_the_setting_on_a_local_receiver_gets_its_delivery(store, monkeypatch):
    monkeypatch.setenv(ALLOW, "1")
    with Receiver() as rx:
        ep, _ = webhooks.add_endpoint(store, cli_user(), rx.url)
        six, _ = webhooks.add_endpoint(store, cli_user(), rx.url.replace("127.0.0.1", "[::ffff:127.0.0.1]"))
        ids = [webhooks.send_test(store, cli_user(), e.endpoint_id) for e in (ep, six)]
        out = Dispatcher(store).run_until_idle()
        assert all(o.delivered for o in out) and {i: rx.successes[i] for i in ids} == {i: 1 for i in ids}


# ---- W7: credentials in a URL are never shown ---------------------------------------------------------

SECRETS = ("s3cr3tPASS", "abc123")


@pytest.mark.parametrize(("url", "shown"), [
    ("http://ciuser:s3cr3tPASS@host/ok?token=abc123", "http://ciuser:***@host/ok?token=***"),
    ("https://ghp_tok3n@ci.example.com/h", "https://***@ci.example.com/h"),  # a token as the user name
    ("https://ci.example.com/h?a=1&flag&b=x#frag", "https://ci.example.com/h?a=***&***&b=***#***"),
    ("https://ci.example.com:8443/hooks/golden", "https://ci.example.com:8443/hooks/golden"),
    ("HTTP://u:p%40ss@[::1]:80/x?k=v", "http://u:***@[::1]:80/x?k=***"),
])
def test_mask_url(url, shown):
    assert webhook_urls.mask_url(url) == shown


def test_an_error_text_is_scrubbed_of_the_urls_secrets():
    url = "http://ciuser:s3cr3tPASS@host/ok?token=abc123&n=1"
    text = webhook_urls.scrub(f"InvalidURL: {url} (token abc123, password s3cr3tPASS), HTTP 501", url)
    assert not any(s in text for s in SECRETS) and "http://ciuser:***@host/ok?token=***&n=***" in text
    assert text.endswith("HTTP 501")  # a one-character value is no secret: left alone


def _golden(capsys, db, *args) -> tuple[int, str]:
    code = main(["--db", db, *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_the_cli_never_shows_a_credential_in_a_url_and_the_receiver_still_gets_it(capsys, golden_db, monkeypatch):
    monkeypatch.setenv(ALLOW, "1")
    assert _golden(capsys, golden_db, "init")[0] == 0
    with Receiver() as rx:
        url = rx.url.replace("http://", "http://ciuser:s3cr3tPASS@") + "?token=abc123"
        shown = rx.url.replace("http://", "http://ciuser:***@") + "?token=***"
        code, out = _golden(capsys, golden_db, "webhooks", "add", url)
        assert code == 0 and shown in out
        endpoint_id = out.split()[2]
        outputs = [out]
        for args in (["webhooks", "list"], ["--json", "webhooks", "list"], ["webhooks", "test", endpoint_id],
                     ["webhooks", "deliver", "--once"], ["webhooks", "deliveries"],
                     ["--json", "webhooks", "deliveries"], ["webhooks", "disable", endpoint_id]):
            code, out = _golden(capsys, golden_db, *args)
            assert code == 0, (args, out)
            outputs.append(out)
        assert shown in outputs[1] and json.loads(outputs[2])[0]["url"] == shown
        assert json.loads(outputs[6])[0]["url"] == shown
        for out in outputs:
            assert not any(s in out for s in SECRETS), out
        (headers, _), = rx.requests  # the URL itself was used: the receiver got the credentials
        assert headers["authorization"] == "Basic " + base64.b64encode(b"ciuser:s3cr3tPASS").decode()
    code, out = _golden(capsys, golden_db, "webhooks", "add", "ftp://ciuser:s3cr3tPASS@host/ok?token=abc123")
    assert code != 0 and "http:// or https://" in out and not any(s in out for s in SECRETS)
