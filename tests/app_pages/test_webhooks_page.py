"""The Webhooks page (issue 28): add an endpoint (its secret shown once, and it signs what the
receiver gets), send a test event, the delivery log with status codes and errors, retry a
failed delivery, disable; roles without MANAGE_WEBHOOKS neither see it nor get past the
annotator layer; a credential in a URL is never on the page (issue 37, probe W7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from standardwebhooks import Webhook
from streamlit.testing.v1 import AppTest

from annotator.events import webhooks
from annotator.people import identity
from annotator.process import context
from annotator.people.roles import PermissionDenied
from annotator.events.webhook_delivery import Dispatcher
from tests.annotator.webhook_receiver import Receiver
from tests.app_pages.test_app_roles import APP, app_as, signed_in
from tests.conftest import plain

PAGE = "app_pages/webhooks.py"


def _page():
    at = app_as(None).switch_page(PAGE).run()  # single-user local mode: the local admin
    assert not at.exception
    return at


def _add(at, url: str, description: str = ""):
    next(t for t in at.text_input if t.label.startswith("URL")).input(url)
    next(t for t in at.text_input if t.label == "Description").input(description)
    next(b for b in at.button if b.label == "Add endpoint").click().run()
    assert not at.exception
    return at


def test_add_send_a_test_event_and_read_the_delivery_log(allow_private_webhooks):
    with Receiver() as rx:
        at = _add(_page(), rx.url, "ci")
        (code,) = at.code
        secret = code.value
        assert secret.startswith("whsec_")
        assert any("shown this once" in s.value for s in at.success)
        at.run()  # the next run no longer shows it
        assert not at.code
        listed = at.dataframe[0].value
        assert list(listed["url"]) == [rx.url] and list(listed["description"]) == ["ci"]
        next(b for b in at.button if b.label == "Send test event").click().run()
        assert not at.exception and any("queued" in s.value for s in at.success)
        Dispatcher(context.get_store()).run_until_idle()
        assert len(rx.requests) == 1
        headers, body = rx.requests[0]
        assert Webhook(secret).verify(body, headers)["type"] == "webhook.test"
        at.run()
        log = at.dataframe[1].value
        assert list(log["status"]) == ["delivered"] and list(log["last code"]) == [200]
        tries = at.dataframe[2].value
        assert list(tries["status code"]) == [200]


def test_a_failed_delivery_shows_its_error_and_retry_now_makes_it_due(allow_private_webhooks):
    with Receiver(answer=lambda n: 503) as rx:
        at = _add(_page(), rx.url)
        next(b for b in at.button if b.label == "Send test event").click().run()
        Dispatcher(context.get_store(), schedule=()).run_until_idle()  # no retries: failed at once
        at.run()
        log = at.dataframe[1].value
        assert list(log["status"]) == ["failed"] and list(log["last error"]) == ["HTTP 503"]
        next(b for b in at.button if b.label == "Retry now").click().run()
        assert not at.exception
        assert list(at.dataframe[1].value["status"]) == ["pending"]


def test_a_bad_url_is_refused_on_the_page_and_disable_stops_an_endpoint():
    at = _add(_page(), "ftp://example.com/x")
    assert any("http:// or https://" in plain(e.value) for e in at.error)
    assert not at.dataframe  # nothing added
    at = _add(at, "https://ci.example.com/hook")
    next(b for b in at.button if b.label == "Disable").click().run()
    assert not at.exception
    assert list(at.dataframe[0].value["enabled"]) == [False]
    assert not [b for b in at.button if b.label == "Send test event"]


@pytest.mark.parametrize("role", ["annotator", "lead", "reviewer"])
def test_a_role_without_webhooks_neither_sees_the_page_nor_passes_the_annotator_layer(role):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789")
    who = identity.create_user(store, admin, role, [role], password="0123456789")
    for call in (lambda: webhooks.list_endpoints(store, who), lambda: webhooks.deliveries(store, who),
                 lambda: webhooks.add_endpoint(store, who, "https://ci.example.com/h")):
        with pytest.raises(PermissionDenied):
            call()
    at = app_as(role)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(PAGE)
    at = signed_in(AppTest.from_file(str(Path(APP).parent / PAGE), default_timeout=60), role).run()
    assert any("do not have access" in e.value for e in at.error)
    assert not at.dataframe and not at.text_input


def _page_text(at: AppTest) -> str:
    """Everything the page shows: every element's message (dataframes, select options,
    alerts, code) and each table's cells."""
    parts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    parts += [df.value.to_csv() for df in at.dataframe]
    return "\n".join(parts)


def test_the_page_never_shows_a_credential_in_a_url(allow_private_webhooks):
    with Receiver(answer=lambda n: 503) as rx:
        url = rx.url.replace("http://", "http://ciuser:s3cr3tPASS@") + "?token=abc123"
        at = _page()
        next(t for t in at.text_input if t.label.startswith("URL")).input(url)
        next(b for b in at.button if b.label == "Add endpoint").click().run()
        assert not at.exception
        next(b for b in at.button if b.label == "Send test event").click().run()
        Dispatcher(context.get_store(), schedule=()).run_until_idle()
        at.run()
        assert list(at.dataframe[0].value["url"]) == [rx.url.replace("http://", "http://ciuser:***@") + "?token=***"]
        assert list(at.dataframe[1].value["status"]) == ["failed"]  # the log and the attempts are on the page too
        text = _page_text(at)
        assert "ciuser:***@" in text and "s3cr3tPASS" not in text and "abc123" not in text
        # a refused URL's message quotes it masked
        next(t for t in at.text_input if t.label.startswith("URL")).input("ftp://u:s3cr3tPASS@h/?token=abc123")
        next(b for b in at.button if b.label == "Add endpoint").click().run()
        assert at.error and "s3cr3tPASS" not in _page_text(at) and "abc123" not in _page_text(at)
