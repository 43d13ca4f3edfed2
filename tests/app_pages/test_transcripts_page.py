"""The Transcripts page in the real app (AppTest): an engineer imports with the uploader, a
reviewer draws a sample, reads a transcript whose text carries HTML and script (shown as
text), records verdicts with the buttons, adds a production-log failure to the golden set,
and the lead finds the grader failure on the Adjudication page and resolves it."""

from __future__ import annotations

import json

from annotator import context, demo, identity
from tests.conftest import plain
from tests.annotator.test_transcripts import _record
from tests.app_pages.test_app_roles import _everything_rendered, app_as

PASSWORD = "0123456789"


def test_review_flow_escaping_flywheel_and_adjudication():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("reviewer", "engineer", "lead"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    recs = [_record("q001"), _record("pl-9", source="production_log", stratum="paraphrase",
                                     question="<b>taxi</b> receipts?")]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()

    eng = app_as("engineer")
    eng.switch_page("app_pages/transcripts.py").run()
    eng.file_uploader(key="tr_file").upload("t.jsonl", data, "application/json").run()
    eng.button(key="tr_import").click().run()
    assert not eng.exception and any("Imported 2 transcript(s)" in plain(m.value) for m in eng.success)
    assert not any(b.key and b.key.startswith("tr_sys_") for b in eng.button)  # engineers do not review

    rev = app_as("reviewer")
    rev.switch_page("app_pages/transcripts.py").run()
    rev.number_input(key="tr_n").set_value(2)
    rev.button(key="tr_draw").click().run()
    assert any("Drew 2 failure(s)" in plain(m.value) for m in rev.success)
    # escaped: the script and img tags are text, never markup
    shown = _everything_rendered(rev)
    assert "<img src=x onerror=alert(1)>" in shown  # in st.text, verbatim
    assert any("\\<script\\>" in m.value for m in rev.markdown)  # markdown-escaped in the passage
    assert not any("<script>" in m.value for m in rev.markdown)
    pick_key = next(sb.key for sb in rev.selectbox if sb.key.startswith("tr_pick_"))
    order = [r[0] for r in store.read("SELECT item_id FROM transcript_draws WHERE draw_id = 'd1' ORDER BY position")]
    items = {item: i for i, item in enumerate(order)}
    rev.selectbox(key=pick_key).set_value(items["run-7|q001|0"]).run()
    rev.button(key="tr_grader").click().run()
    assert any("grader failure" in plain(m.value) for m in rev.success)
    rev.selectbox(key=pick_key).set_value(items["run-7|pl-9|0"]).run()
    rev.button(key="tr_sys_incomplete").click().run()
    assert any("system failure (incomplete)" in plain(m.value) for m in rev.success)
    rev.selectbox(key=pick_key).set_value(items["run-7|pl-9|0"]).run()
    rev.button(key="tr_add").click().run()
    assert any("Added pl-9" in plain(m.value) for m in rev.success)
    assert store.read_one("SELECT source, stratum FROM queries WHERE query_id = 'pl-9'") == (
        "production_log", "paraphrase")

    lead = app_as("lead")
    lead.switch_page("app_pages/adjudication.py").run()
    assert not lead.exception
    assert any("run-7|q001|0" in plain(e.label) for e in lead.expander)
    lead.text_input(key="q_why_run-7|q001|0").input("the label was wrong")
    lead.radio(key="q_res_run-7|q001|0").set_value("label_fixed")
    lead.button(key="q_go_run-7|q001|0").click().run()
    assert any("Resolved run-7|q001|0" in plain(m.value) for m in lead.success)
    assert store.read_one("SELECT value, note FROM verdict_events WHERE kind = 'grader_failure_resolution'") == (
        "label_fixed", "the label was wrong")
