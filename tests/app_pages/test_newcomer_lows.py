"""Issue 29's page-level findings in the real app (AppTest): the Runs & pool page reports
every problem of a run upload at once and skips unknown doc ids on request (M9); the round
form's Annotators picker offers annotators only (L7); the store's file path is for engineers
and admins (L9); the first admin is told to sign in, and the sign-in page has no lone
Refresh (L3); the Agreement tab tells one week of figures in a sentence (M10)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from streamlit.testing.v1 import AppTest

from annotator import demo
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import APP, app_as
from tests.conftest import plain, table_snapshot

PASSWORD = "0123456789"
REVIEW_FILE = (b"q001 Q0 pension 1 3.0 sys\nq001 Q0 sick-leave 2\nq001 Q0 annual-leave 3 abc sys\n"
               b"q002 Q0 pension 1 NaN sys\nq999 Q0 pension 1 2.0 sys\nq002 Q0 no-such-doc 2 1.0 sys\n"
               b"q002 Q0 sick-leave 3 0.5 sys\n")


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for name, role in (("ann", "annotator"), ("bob", "annotator"), ("lena", "lead"), ("eng", "engineer")):
        identity.create_user(store, admin, name, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def _errors(at) -> str:
    return "\n".join(plain(e.value) for e in at.error) + "\n" + "\n".join(c.value for c in at.code)


def test_one_run_upload_shows_every_problem_and_unknown_docs_can_be_skipped():
    store = _accounts()
    at = app_as("eng")
    at.switch_page("app_pages/pool.py").run()
    at.file_uploader(key="run_file").upload("bad.trec", REVIEW_FILE, "text/plain").run()
    at.text_input(key="run_system").input("bm25")
    before = table_snapshot(store)
    at.button(key="run_import").click().run()
    assert not at.exception
    errors = _errors(at)
    for line in ("Run import refused: 3 bad line(s); 1 unknown query id(s) ('q999'); 1 unknown doc id(s) "
                 "('no-such-doc'); nothing was imported.",
                 "bad.trec line 2: not a run line", "bad.trec line 3: score 'abc' is not a number",
                 "bad.trec line 4: score 'NaN' is not a number", "bad.trec line 5: unknown query id 'q999'",
                 "bad.trec line 6: unknown doc id 'no-such-doc'"):
        assert line in errors, (line, errors)
    assert table_snapshot(store) == before

    good = b"q001 Q0 pension 1 3.0 sys\nq002 Q0 no-such-doc 2 1.0 sys\n"
    at.file_uploader(key="run_file").upload("docs.trec", good, "text/plain").run()
    at.button(key="run_import").click().run()
    errors = _errors(at)
    assert "Tick “Skip results for unknown doc ids”" in errors and "--skip-unknown-docs" not in errors
    at.checkbox(key="run_skip_docs").check().run()
    at.button(key="run_import").click().run()
    assert not at.exception
    assert any("Imported 1 results as run bm25 (trec). Skipped 1 line(s) for 1 unknown doc id(s): no-such-doc."
               in plain(m.value) for m in at.success)


def test_the_round_picker_offers_annotators_only():
    _accounts()
    at = app_as("lena")
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    assert at.multiselect(key="cal_people").options == ["ann", "bob"]
    assert at.multiselect(key="split_people").options == ["ann", "bob"]


def _store_path_shown(at) -> bool:
    shown = [c.value for c in at.caption] + [c.value for c in at.sidebar.caption]
    return any("Store file:" in plain(c) or plain(c).startswith("Store:") for c in shown)


def test_the_store_path_is_shown_to_engineers_and_admins_only():
    _accounts()
    for name, expected in (("ann", False), ("lena", False), ("eng", True), ("admin", True)):
        at = app_as(name)
        assert not at.exception
        assert _store_path_shown(at) is expected, name


def test_the_first_admin_is_told_to_sign_in_and_the_sign_in_page_has_no_lone_refresh():
    context.get_store()
    at = AppTest.from_file(APP, default_timeout=60).run()  # no account yet: single-user local mode, admin
    at.switch_page("app_pages/users.py").run()
    assert not at.exception
    [username] = [t for t in at.text_input if t.label.startswith("Username")]
    [password] = [t for t in at.text_input if t.label.startswith("Password")]
    username.input("root")
    password.input("root-password-1")
    next(b for b in at.button if b.label == "Add account").click().run()
    assert not at.exception
    assert [plain(s.value) for s in at.success] == ["Account root created: sign in now."]
    assert any(b.label == "Sign in" for b in at.button)
    assert not [b for b in at.sidebar.button if b.label == "Refresh"]


@pytest.mark.parametrize("ahead", [timedelta(0), timedelta(days=365)], ids=["today", "a-year-ahead"])
def test_one_week_of_agreement_is_told_in_a_sentence_not_an_empty_chart(monkeypatch, ahead):
    from golden_store.db.store import utcnow
    from golden_store.live import adjudication as adjudication_rows, judging as judging_rows

    # The demo's grades are stamped "now" over the (long) load: pinned to one instant, the real
    # now (no fixed date; and a year ahead), so a load that runs across Monday 00:00 UTC still
    # falls in one week.
    now = utcnow() + ahead
    for module in (judging_rows, adjudication_rows):
        monkeypatch.setattr(module, "utcnow", lambda: now)
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lena", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin, workflows=True)  # a calibration round graded by two demo annotators, today
    at = app_as("lena")
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    [week] = [plain(c.value) for c in at.caption if "fall in one week" in plain(c.value)]
    assert week.startswith("All doubly graded items so far fall in one week (") and "κ binary" in week
    assert not at.get("arrow_vega_lite_chart") or all("period" not in str(c.proto) for c in
                                                      at.get("arrow_vega_lite_chart"))
