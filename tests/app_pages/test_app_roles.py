"""Every page, as every role, in the real Streamlit app (AppTest): what each may see and do."""

from __future__ import annotations

import json

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.conftest import plain
from annotator import demo
from annotator.people import identity, sessions
from annotator.process import context
from golden_store.live.queries import get_query

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = {
    "home": "app_pages/home.py",
    "corpus": "app_pages/corpus.py",
    "queries": "app_pages/queries.py",
    "evidence": "app_pages/evidence.py",
    "judge": "app_pages/judge.py",
    "versions": "app_pages/versions.py",
    "power": "app_pages/power.py",
    "results": "app_pages/results.py",
    "pool": "app_pages/pool.py",
    "users": "app_pages/users.py",
    "adjudication": "app_pages/adjudication.py",
    "nuggets": "app_pages/nuggets.py",
    "calibration": "app_pages/calibration.py",
    "transcripts": "app_pages/transcripts.py",
    "agreement": "app_pages/agreement.py",
    "pool_grading": "app_pages/pool_grading.py",
    "webhooks": "app_pages/webhooks.py",
    "freeze_conflicts": "app_pages/freeze_conflicts.py",
    "references": "app_pages/references.py",
    "claims": "app_pages/claims.py",
    "answer_grading": "app_pages/answer_grading.py",
}
VISIBLE = {
    "annotator": {"home", "corpus", "queries", "evidence", "judge", "nuggets", "references", "answer_grading"},
    "reviewer": {"home", "corpus", "queries", "transcripts", "nuggets", "claims"},  # nuggets: Scores only (outcomes)
    "lead": {"home", "corpus", "queries", "evidence", "judge", "nuggets", "versions", "power", "results", "pool",
             "adjudication", "agreement", "calibration", "pool_grading", "freeze_conflicts", "references", "claims",
             "answer_grading"},
    "engineer": {"home", "corpus", "queries", "versions", "power", "results", "pool", "transcripts", "pool_grading",
                 "webhooks", "freeze_conflicts"},
    "admin": set(PAGES),
}
PASSWORD = "0123456789"


@pytest.fixture
def accounts():
    """A store with the demo loaded and one account per role."""
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("annotator", "reviewer", "lead", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def signed_in(at: AppTest, username: str) -> AppTest:
    """Sign ``username`` in as the sign-in page does: a server-side session and its token."""
    store = context.get_store()
    at.session_state["username"] = username
    at.session_state["session_token"] = sessions.start(store, identity.get_user(store, username))
    return at


def app_as(username: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if username:
        signed_in(at, username)
    return at.run()


def labels(elements) -> list[str]:
    return [e.label for e in elements]


def texts(at: AppTest) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.caption] + [e.value for e in at.info]
    parts += [e.value for e in at.error] + [e.value for e in at.text] + [e.value for e in at.success]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_each_role_sees_exactly_its_pages(accounts, role):
    for name, path in PAGES.items():
        at = app_as(role)  # a fresh session per page: AppTest keeps page registries per instance
        assert not at.exception
        if name in VISIBLE[role]:
            at.switch_page(path).run()
            assert not at.exception, (role, name, at.exception)
            assert not at.error, (role, name, [e.value for e in at.error])
            assert at.title, (role, name)
        else:
            with pytest.raises(ValueError, match="Could not find a navigation page"):
                at.switch_page(path)


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_pages_refuse_a_role_even_when_reached_directly(accounts, role):
    """Typing a page's address (or any route around st.navigation) must not help: each page
    checks the permission itself and renders none of its controls."""
    for name, path in PAGES.items():
        if name in VISIBLE[role]:
            continue
        at = AppTest.from_file(str(Path(APP).parent / path), default_timeout=60)
        signed_in(at, role).run()
        assert not at.exception
        assert any("do not have access" in e.value for e in at.error), (role, name)
        assert not at.button and not at.text_input and not at.dataframe


def test_pages_reached_without_signing_in_ask_for_sign_in(accounts):
    for path in PAGES.values():
        at = AppTest.from_file(str(Path(APP).parent / path), default_timeout=60).run()
        assert not at.exception
        assert any("Sign in" in w.value for w in at.warning)
        assert not at.dataframe and not at.metric


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_controls_follow_permissions(accounts, role):
    at = app_as(role)
    at.switch_page("app_pages/corpus.py").run()
    assert ("Import" in labels(at.button)) == (role in {"engineer", "admin"})
    at.switch_page("app_pages/queries.py").run()
    can_edit = role in {"lead", "engineer", "admin"}
    assert ("Save" in labels(at.button)) == can_edit
    assert ("You can read queries" in texts(at)) == (not can_edit)
    if role in VISIBLE and "versions" in VISIBLE[role]:
        at.switch_page("app_pages/versions.py").run()
        assert ("Freeze" in labels(at.button)) == (role in {"engineer", "admin"})


def test_sign_in_flow(accounts):
    at = app_as(None)
    assert [t.value for t in at.subheader] == ["Sign in"]
    with pytest.raises(ValueError):
        at.switch_page("app_pages/corpus.py")
    at.text_input[0].input("engineer")
    at.text_input[1].input("wrong password")
    at.button[0].click().run()
    assert "wrong password" in texts(at)
    at.text_input[1].input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Golden-set studio"]
    assert "Documents" in [m.label for m in at.metric]


def test_disabled_account_is_signed_out_on_next_request(accounts):
    at = app_as("engineer")
    assert [m.label for m in at.metric]
    identity.set_disabled(accounts, identity.get_user(accounts, "admin"), "engineer", True)
    at.run()
    assert [t.value for t in at.subheader] == ["Sign in"]


def test_local_mode_says_so_and_loads_the_demo_with_one_click():
    at = app_as(None)
    assert "Single-user local mode" in "\n".join(i.value for i in at.sidebar.info)
    assert "This store is empty" in [s.value for s in at.subheader]
    at.button(key="load_demo").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "20" and metrics["Queries"] == "40"


def test_annotator_on_empty_store_cannot_load_demo():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    at = app_as("ann")
    assert "load_demo" not in [b.key for b in at.button]
    assert "Ask an engineer" in texts(at)


def test_engineer_freezes_from_the_versions_page(accounts):
    at = app_as("engineer")
    at.switch_page("app_pages/versions.py").run()
    next(w for w in at.text_input if w.label == "Version name").input("ui.v1")
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception
    assert any("Frozen ui.v1" in plain(s.value) for s in at.success)
    assert (accounts.path.parent / "versions" / "ui.v1" / "manifest.json").exists()
    # a second freeze with the same name is refused with a clear message, not a traceback
    next(w for w in at.text_input if w.label == "Version name").input("ui.v1")
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception and any("already exists" in e.value for e in at.error)


def test_lead_adds_a_query_from_the_queries_page(accounts):
    at = app_as("lead")
    at.switch_page("app_pages/queries.py").run()
    next(w for w in at.text_input if w.label == "Id").input("q500")
    next(w for w in at.text_area if w.label == "Question").input("Can I expense a gym membership?")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    rec = get_query(accounts, "q500")
    assert rec is not None and rec.text == "Can I expense a gym membership?"
    assert accounts.read_one("SELECT actor FROM query_revisions WHERE query_id = 'q500'")[0] == "lead"


def test_admin_adds_a_user_from_the_users_page(accounts):
    at = app_as("admin")
    at.switch_page("app_pages/users.py").run()
    next(w for w in at.text_input if w.label.startswith("Username")).input("newbie")
    next(w for w in at.text_input if w.label.startswith("Password")).input("a long password")
    next(b for b in at.button if b.label == "Add account").click().run()
    assert not at.exception
    assert identity.authenticate(accounts, "newbie", "a long password") is not None


def test_corpus_text_is_rendered_as_plain_text(accounts):
    from golden_store.live.documents import import_documents
    from golden_store.corpus.sources import load_sources

    evil = '<img src=x onerror="alert(1)"><b>bold</b> [link](http://evil.example) **md**'
    import_documents(accounts, load_sources([("aaa-evil.txt", evil.encode())]), actor="t")
    at = app_as("annotator")
    at.switch_page("app_pages/corpus.py").run()
    assert at.selectbox(key="corpus_doc").value == "aaa-evil"
    assert [t.value for t in at.text] == [evil]  # st.text: no HTML, no Markdown
    assert not any("bold" in m.value for m in at.markdown)


def test_oidc_configured_uses_the_identity_provider(accounts):
    at = AppTest.from_file(APP, default_timeout=60)
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32,
                          "client_id": "id", "client_secret": "s",
                          "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}
    at.run()
    assert not at.exception
    assert "Sign in" in labels(at.button)
    assert not at.text_input  # no local password form when an identity provider is configured
    with pytest.raises(ValueError):
        at.switch_page("app_pages/corpus.py")


def test_titles_and_file_names_are_escaped_on_the_corpus_page(accounts):
    from golden_store.live.documents import import_documents
    from golden_store.corpus.sources import load_sources

    html = b"<html><head><title>**Big** [l](http://example.com)</title></head><body><p>x</p></body></html>"
    import_documents(accounts, load_sources([("aaa-[t](x).html", html)]), actor="t")
    at = app_as("annotator")
    at.switch_page("app_pages/corpus.py").run()
    heading = next(s.value for s in at.subheader)
    # escaped, and a word joiner after the scheme so the URL is not autolinked (issue 37, probe I2)
    assert heading == "\\*\\*Big\\*\\* \\[l\\]\\(http\\:\u2060\\/\\/example\\.com\\)"
    assert any(r"from aaa\-\[t\]\(x\)\.html" in c.value for c in at.caption)


def test_import_refreshes_counts_and_keeps_the_confirmation(accounts):
    at = app_as("engineer")
    at.switch_page("app_pages/queries.py").run()
    next(w for w in at.text_input if w.label == "Id").input("q501")
    next(w for w in at.text_area if w.label == "Question").input("Is there a bike scheme?")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception
    assert any("Added q501" in plain(s.value) for s in at.success)
    assert any("41 of 41 queries" in c.value for c in at.caption)


def test_evidence_page_flow(accounts):
    """Search, paste a quote, see it placed with the span highlighted, save, retract."""
    at = app_as("annotator")
    at.switch_page("app_pages/evidence.py").run()
    at.selectbox(key="ev_query").set_value("q030").run()
    at.text_input(key="ev_search").input("per diem Berlin")
    at.button(key="ev_search_go").click().run()  # the search box is in a form (issue 29, M3)
    assert any("expenses\\-per\\-diem" in m.value for m in at.markdown)
    assert any(":orange-background[" in m.value for m in at.markdown)
    at.selectbox(key="ev_hint").set_value("expenses-per-diem").run()
    at.text_area(key="ev_quote").input("Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night")
    at.button(key="ev_resolve").click().run()
    assert not at.exception
    assert any(plain(s.value).startswith("Exact match in expenses") for s in at.success)
    assert any(":orange-background[**Full day EUR 58" in m.value for m in at.markdown)
    at.button(key="ev_save").click().run()
    assert not at.exception and any("Saved quote" in plain(s.value) for s in at.success)
    rows = accounts.read("SELECT evidence_id, actor, match_kind FROM current_evidence WHERE query_id = 'q030' "
                         "AND actor = 'annotator'")
    assert len(rows) == 1 and rows[0][2] == "exact"
    at.button(key=f"ev_retract_{rows[0][0]}").click().run()
    assert not at.exception
    assert not accounts.read("SELECT 1 FROM current_evidence WHERE evidence_id = ?", [rows[0][0]])


def test_evidence_page_unresolved_and_ambiguous(accounts):
    at = app_as("lead")
    at.switch_page("app_pages/evidence.py").run()
    at.text_area(key="ev_quote").input("The canteen serves vegan lunches every Thursday")
    at.button(key="ev_resolve").click().run()
    assert any("Not found" in e.value for e in at.error)
    assert "ev_save" not in [b.key for b in at.button]
    at.text_area(key="ev_quote").input("   ")
    at.button(key="ev_resolve").click().run()
    assert any("quote is empty" in e.value for e in at.error) and not at.exception


def test_question_drafts_from_the_corpus_page(accounts, llm_server):
    import json as _json

    from tests.llm_server import message

    quote = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"
    llm_server.script.append(lambda body: (200, message(_json.dumps({"questions": [
        {"question": "Berlin per diem for a full day?", "excerpts": [quote], "stratum": "tabular",
         "is_compound": False},
        {"question": "Invented?", "excerpts": ["not in the text at all, not even close"], "stratum": "paraphrase",
         "is_compound": False}]}), usage={"input_tokens": 400, "output_tokens": 250,
                                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1150})))
    at = app_as("engineer")
    at.switch_page("app_pages/corpus.py").run()
    at.selectbox(key="corpus_doc").set_value("expenses-per-diem").run()
    at.button(key="boot_go").click().run()
    assert not at.exception
    # the estimate first (Sonnet caches the ≥ 1024-token instructions); nothing sent until confirmed
    shown = " ".join(plain(i.value) for i in at.info)
    assert "Question drafting: 1 call(s)" in shown and "Caching applies" in shown
    assert plain(at.button(key="boot_plan_confirm").label).startswith("Confirm: spend ≈ $")
    assert llm_server.requests == []
    at.button(key="boot_plan_confirm").click().run()
    assert not at.exception and len(llm_server.requests) == 1
    used = " ".join(plain(i.value) for i in at.info)
    assert "1,150 cache-read tokens" in used and "Cache hit rate 100%" in used  # the server's figures
    assert at.checkbox(key="boot_pick_0").value is True and at.checkbox(key="boot_pick_1").disabled
    assert any("rejected (not verbatim" in c.value for c in at.caption)
    at.button(key="boot_accept").click().run()
    assert not at.exception and any("Added 1 synthetic" in plain(s.value) for s in at.success)
    assert accounts.read("SELECT text FROM queries WHERE generator_model IS NOT NULL") == [("Berlin per diem for a full day?",)]


def test_question_drafts_without_a_key_explain(accounts, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    at = app_as("engineer")
    at.switch_page("app_pages/corpus.py").run()
    assert any("ANTHROPIC_API_KEY" in i.value for i in at.info)
    assert "boot_go" not in [b.key for b in at.button]


def test_broken_quotes_are_listed_on_the_pages(accounts):
    from golden_store.live.documents import import_documents
    from golden_store.corpus.sources import load_sources

    import_documents(accounts, load_sources([("vpn-troubleshooting.md", b"Rewritten: no certificates here.\n")]),
                     actor="eng", replace=True)
    for page in ("app_pages/home.py", "app_pages/evidence.py", "app_pages/corpus.py"):
        at = app_as("lead")
        at.switch_page(page).run()
        assert not at.exception
        assert any("no longer sit on the corpus" in e.value for e in at.error), page
        assert any("query q001 evidence e1" in c.value for c in at.code), page


def test_power_page_from_a_value_and_from_recorded_evaluations(accounts):
    import pandas as pd

    from golden_store.live.results import record_evaluation

    at = app_as("engineer")
    at.switch_page("app_pages/power.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert round(table.loc[table["queries"] == 60, "MDE"].iloc[0], 3) == 0.054  # §3.3: sigma_d 0.15, n 60
    assert at.dataframe[1].value.loc[2, "queries needed"] == 197         # MDE 0.03 -> 197 queries
    a = pd.DataFrame({"R@10": {"q1": 0.0, "q2": 1.0, "q3": 0.5}}).rename_axis("query_id")
    b = pd.DataFrame({"R@10": {"q1": 1.0, "q2": 1.0, "q3": 0.5}}).rename_axis("query_id")
    record_evaluation(accounts, "a", a, dataset_version="v1")
    record_evaluation(accounts, "b", b, dataset_version="v1")
    at.radio(key="pw_source").set_value("two recorded evaluations").run()
    assert not at.exception
    assert any("σ_d = 0.5774 measured on 3 shared queries" in c.value for c in at.caption)


def _pool(store, tmp_path):
    from annotator.evaluation import runs_import

    run = tmp_path / "run.txt"
    run.write_text("q001 Q0 vpn-troubleshooting 1 3.0 x\nq001 Q0 pension 2 2.0 x\nq002 Q0 sick-leave 1 1.0 x\n")
    admin = identity.get_user(store, "admin")
    runs_import.import_run(store, admin, run, "secret-system-name")
    runs_import.build_pool(store, admin, 5)


def _everything_rendered(at) -> str:
    """Every text the page put on screen (markdown, captions, titles, tables, widget labels)."""
    parts = [e.value for e in [*at.markdown, *at.caption, *at.title, *at.subheader, *at.text, *at.success,
                               *at.info, *at.warning, *at.error]]
    parts += [str(d.value) for d in at.dataframe]
    parts += [w.label for w in [*at.button, *at.text_input, *at.selectbox, *at.radio]]
    parts += [str(o) for sb in at.selectbox for o in sb.options]
    return "\n".join(map(str, parts))


def test_judging_is_blind_grades_are_events_and_corrections_are_new_events(accounts, tmp_path):
    _pool(accounts, tmp_path)
    at = app_as("annotator")
    at.switch_page("app_pages/judge.py").run()
    assert not at.exception
    assert "secret-system-name" not in _everything_rendered(at)
    items = cards(at, "judge_surface")
    assert len(items) == 3 and "secret-system-name" not in json.dumps(surface_data(at, "judge_surface"))
    first = items[0]
    acks = send(at, "judge_surface", [label_for(first, "annotator", "grade", 2)])
    assert [a["status"] for a in acks.values()] == ["saved"]
    assert "secret-system-name" not in _everything_rendered(at)
    rows = accounts.read("SELECT query_id, op, grade, rubric_version, doc_sha256 IS NOT NULL FROM grade_events "
                         "WHERE actor = 'annotator'")
    assert rows == [(first["item"]["query_id"], "grade", 2, 1, True)]
    rest = cards(at, "judge_surface")
    assert first["uid"] not in {c["uid"] for c in rest} and len(rest) == 2
    send(at, "judge_surface", [label_for(rest[0], "annotator", "skip"), label_for(rest[1], "annotator", "unsure")])
    assert accounts.read_one("SELECT count(*) FROM grade_events WHERE actor = 'annotator'")[0] == 3
    assert cards(at, "judge_surface") == [] and surface_data(at, "judge_surface")["exhausted"]
    # correct the first judgment: a new event, the old one stays
    oldest = accounts.read_one("SELECT min(event_id) FROM grade_events WHERE actor = 'annotator'")[0]
    at.selectbox(key="fix_pick").set_value(oldest).run()  # the first judgment (the grade 2), by its event id
    at.radio(key="fix_grade").set_value(3).run()
    at.button(key="fix_save").click().run()
    assert not at.exception
    grades = accounts.read("SELECT grade FROM grade_events WHERE actor = 'annotator' AND op = 'grade' ORDER BY event_id")
    assert grades == [(2,), (3,)]


def test_each_annotator_has_their_own_order(accounts, tmp_path):
    from annotator.labeling import judging

    _pool(accounts, tmp_path)
    a = judging.next_item(accounts, identity.get_user(accounts, "annotator"))
    orders = {judging.next_item(accounts, identity.User(f"x{i}", "x", frozenset(identity.Role))).doc_id
              for i in range(12)}
    assert a is not None and len(orders) > 1  # different annotators start on different items


def test_only_leads_edit_the_rubric(accounts, tmp_path):
    at = app_as("annotator")
    at.switch_page("app_pages/judge.py").run()
    assert "rub_save" not in [b.key for b in at.button]
    at = app_as("lead")
    at.switch_page("app_pages/judge.py").run()
    at.text_area(key="rub_text").input("Grade 3 only if the passage alone answers.")
    at.text_input(key="rub_change").input("Clarified grade 3 after adjudicating q001")
    at.button(key="rub_save").click().run()
    assert not at.exception
    assert accounts.read_one("SELECT max(version), any_value(changelog ORDER BY version DESC) FROM rubric_versions") == (
        2, "Clarified grade 3 after adjudicating q001")


def test_engineer_imports_a_run_builds_the_pool_and_sees_coverage(accounts, tmp_path):
    at = app_as("engineer")
    at.switch_page("app_pages/pool.py").run()
    assert not at.exception and any("No runs yet" in i.value for i in at.info)
    _pool(accounts, tmp_path)  # a run imported and pooled through the annotator layer
    at.run()
    assert not at.exception
    cov = at.dataframe[1].value
    assert cov.loc[0, "run"] == "secret-system-name" and cov.loc[0, "graded@10"] == 0.0
    assert any("graded@10 below 0.8" in w.value for w in at.warning)
    at = app_as("lead")
    at.switch_page("app_pages/pool.py").run()
    assert "run_import" not in [b.key for b in at.button]  # leads see coverage, engineers import
