"""Issue 18 items 10 and 11, the page side (AppTest): single-user mode serves only this
machine, the store path is shown only to those who manage the store (never on the sign-in
page), and repeated failed sign-ins are refused for a while."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import APP, PASSWORD, accounts, app_as, texts  # noqa: F401 (fixture)


@pytest.fixture
def remote_client(monkeypatch):
    """Requests come from another machine (what st.context reports for a non-loopback peer)."""
    monkeypatch.setattr(type(st.context), "ip_address", property(lambda self: "203.0.113.9"))


def test_single_user_mode_refuses_another_machine(remote_client):
    context.get_store()  # a store with no accounts: single-user mode
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("answers only on the machine it runs on" in e.value for e in at.error)
    assert not at.title
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("app_pages/users.py")
    # a page reached around the entry script does not make the visitor admin either
    direct = AppTest.from_file(str(Path(APP).parent / "app_pages/users.py"), default_timeout=60).run()
    assert any("Sign in" in w.value for w in direct.warning) and not direct.text_input


def test_single_user_mode_still_serves_this_machine():
    context.get_store()
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.error
    assert "Single-user local mode" in texts(at)


def test_store_path_is_shown_only_to_those_who_manage_the_store(accounts):  # noqa: F811
    store_path = str(context.get_store().path)
    signed_out = AppTest.from_file(APP, default_timeout=60).run()
    assert signed_out.text_input  # the sign-in form
    assert "Store:" not in texts(signed_out) and Path(store_path).name not in texts(signed_out)
    for role, shown in (("annotator", False), ("reviewer", False), ("lead", False), ("engineer", True),
                        ("admin", True)):
        assert ("Store:" in texts(app_as(role))) is shown, role


def test_sign_in_page_refuses_after_repeated_failures(accounts):  # noqa: F811
    at = AppTest.from_file(APP, default_timeout=60).run()

    def sign_in(password: str) -> None:
        at.text_input[0].input("annotator")
        at.text_input[1].input(password)
        next(b for b in at.button if b.label == "Sign in").click().run()

    for _ in range(5):
        sign_in("wrong-password")
        assert any("wrong password" in e.value for e in at.error)
    sign_in(PASSWORD)
    assert not at.exception
    assert any("Too many failed sign-ins" in e.value for e in at.error)
    assert "username" not in at.session_state
    identity.THROTTLE.forget(f"{context.get_store().path}|user:annotator")
    sign_in(PASSWORD)
    assert at.session_state["username"] == "annotator"
