"""How a team deploys the studio (README "Team deployment"), driven in Debian's chromium:

* **OIDC sign-in**: with an ``[auth]`` section in ``.streamlit/secrets.toml`` the sign-in page
  sends the person to the identity provider (a real local OpenID Connect provider,
  tests/oidc_provider.py: authorization-code flow, RS256 ID tokens checked by Authlib) and
  back; the account whose username is the verified email gives the roles. An address the
  studio has no account for, or one the provider has not verified, opens nothing. Signing
  out signs out (a reload does not sign in again).
* **Several app servers on one PostgreSQL store** (what a proxy in front of several
  ``golden serve`` gives): a person signed in on one server is signed in on the other (the
  session lives in the store, its token in the browser's cookie), grades pressed on both
  servers each land once on the passage the pressing page showed, and each server sees the
  other's writes on its next render.

Needs ``chromium`` on PATH; the second test needs PostgreSQL (skipped without it, saying how).
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path

import psycopg
from playwright.sync_api import Page, expect

from tests.oidc_provider import OIDCProvider
from tests.browser.test_browser import _browser_page, _cli, _free_port, _serve, idle, shown_uid, sign_in, surface

PASSWORD = "ann-password-1"
DOCS = ("vpn-troubleshooting", "sick-leave", "pension")


def _sidebar(page: Page):
    return page.get_by_test_id("stSidebar")


def _oidc_sign_in(page: Page) -> None:
    """Click the sign-in page's button: the browser goes to the provider and comes back."""
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("Sign in with your organisation's identity provider.")).to_be_visible()
    main.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:\d+/(home)?(\?.*)?$"))
    idle(page)


def test_oidc_sign_in_maps_the_verified_email_to_its_account(tmp_path: Path) -> None:
    _cli(tmp_path, "users", "add", "lead@example.org", "--role", "admin", "--role", "lead", "--no-password")
    _cli(tmp_path, "users", "add", "expert@example.org", "--role", "annotator", "--name", "An Expert",
         "--no-password")
    port = _free_port()
    with OIDCProvider() as idp:
        (tmp_path / ".streamlit").mkdir()
        (tmp_path / ".streamlit" / "secrets.toml").write_text(
            idp.secrets_toml(f"http://127.0.0.1:{port}/oauth2callback", secrets.token_hex(32)))
        with _serve(tmp_path, port) as server, _browser_page(server, Path("/tmp/browser_oidc.png")) as page:
            # no password form: only the provider's button
            page.goto(server.url)
            _oidc_sign_in(page)
            sidebar = _sidebar(page)
            expect(sidebar.get_by_text("An Expert", exact=True)).to_be_visible()
            expect(sidebar.get_by_text("Roles: annotator", exact=True)).to_be_visible()
            expect(sidebar.get_by_role("link", name="Judge", exact=True)).to_be_visible()
            expect(sidebar.get_by_role("link", name="Users", exact=True)).to_have_count(0)  # not an admin
            assert len(idp.token_requests) == 1  # one code exchanged, at the token endpoint
            # a refresh keeps the person signed in (Streamlit's signed identity cookie)
            page.reload()
            expect(_sidebar(page).get_by_text("Roles: annotator", exact=True)).to_be_visible()

            # signing out signs out: back at the provider's button, and a reload keeps it so
            _sidebar(page).get_by_role("button", name="Sign out").click()
            expect(page.get_by_test_id("stMain").get_by_role("button", name="Sign in")).to_be_visible()
            page.reload()
            expect(page.get_by_test_id("stMain").get_by_role("button", name="Sign in")).to_be_visible()
            expect(_sidebar(page).get_by_text("Roles:", exact=False)).to_have_count(0)

            # an address with no account opens nothing, and says what to do
            idp.next_identity = {"sub": "u-2", "email": "stranger@example.org", "email_verified": True}
            _oidc_sign_in(page)
            main = page.get_by_test_id("stMain")
            expect(main.get_by_text(re.compile(r"no account for that address"))).to_be_visible()
            expect(_sidebar(page).get_by_role("link", name="Judge", exact=True)).to_have_count(0)
            main.get_by_role("button", name="Sign out").click()

            # an address the provider has not verified cannot claim the expert's account
            idp.next_identity = {"sub": "u-3", "email": "expert@example.org", "email_verified": False}
            _oidc_sign_in(page)
            expect(page.get_by_test_id("stMain").get_by_text(re.compile(r"has not verified"))).to_be_visible()
            expect(_sidebar(page).get_by_role("link", name="Judge", exact=True)).to_have_count(0)
            expect(_sidebar(page).get_by_text("An Expert", exact=True)).to_have_count(0)
            assert not page.errors  # type: ignore[attr-defined]


def _judge(page: Page, url: str) -> None:
    page.goto(f"{url}/judge")
    expect(page.get_by_test_id("stMain").get_by_role("heading", name="Judge")).to_be_visible()
    expect(surface(page)).to_have_attribute("data-uid", re.compile(r".+"))


def _acknowledged(page: Page, n: int) -> None:
    """Wait until the surface says ``n`` labels of this page are stored (data-saved)."""
    expect(surface(page)).to_have_attribute("data-saved", str(n))


def test_two_app_servers_share_one_postgresql_store(tmp_path: Path, pg_url: str) -> None:
    db = pg_url
    _cli(tmp_path, "demo", "--small", db=db)
    _cli(tmp_path, "users", "add", "admin", "--role", "admin", "--password-stdin", db=db, stdin="admin-password-1\n")
    _cli(tmp_path, "users", "add", "ann", "--role", "annotator", "--password-stdin", db=db, stdin=PASSWORD + "\n")
    run = tmp_path / "sys.run"
    run.write_text("".join(f"q{i:03d} Q0 {d} {r + 1} {3 - r} sys\n" for i in range(1, 21) for r, d in enumerate(DOCS)))
    _cli(tmp_path, "runs", "import", str(run), "--system", "sys", db=db)
    _cli(tmp_path, "pool", "build", "--depth", "3", db=db)

    # two servers, as behind a proxy: same store, each its own working directory (its own
    # corpus search index, brought up to date from the store's corpus events) and port
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with _serve(tmp_path / "a", db=db) as a, _serve(tmp_path / "b", db=db) as b, \
            _browser_page(a, Path("/tmp/browser_team.png")) as page:
        page.goto(a.url)
        sign_in(page, "ann", PASSWORD, "annotator")
        # the other server knows the session: the cookie (same host) finds it in the store
        other = page.context.new_page()
        _judge(other, b.url)
        expect(_sidebar(other).get_by_text("Roles: annotator", exact=True)).to_be_visible()
        _judge(page, a.url)

        pressed: list[tuple[str, str]] = []  # (item shown when the key went down, key)
        for tab, key in ((page, "3"), (other, "1"), (page, "2"), (other, "0")):
            tab.bring_to_front()
            pressed.append((shown_uid(tab), key))
            tab.keyboard.press(key)
            expect(surface(tab)).not_to_have_attribute("data-uid", pressed[-1][0])
        _acknowledged(page, 2)
        _acknowledged(other, 2)

        with psycopg.connect(db) as con:
            stored = con.execute("SELECT query_id, doc_id, start, \"end\", grade FROM grade_events "
                                 "WHERE actor = 'ann' AND op = 'grade' ORDER BY event_id").fetchall()
        expected = []
        for uid, key in pressed:
            item = json.loads(uid)
            expected.append((item["query_id"], item["doc_id"], item["start"], item["end"], int(key)))
        # each grade once, on the passage the pressing page showed; pressed one after the
        # other (each acknowledged before the next tab's key), so in order
        assert sorted(stored) == sorted(expected)
        assert len(set(stored)) == 4

        # each server sees the other's grades on its next render: Home counts all four
        for tab, url in ((page, a.url), (other, b.url)):
            tab.goto(f"{url}/home")
            idle(tab)
        assert not page.errors  # type: ignore[attr-defined]
