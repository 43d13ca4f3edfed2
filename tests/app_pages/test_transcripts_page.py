"""The Transcripts page in the real app (AppTest): an engineer imports with the uploader, a
reviewer draws a sample, reads a transcript whose text carries HTML and script (shown as
text), records verdicts through the labeling surface, adds a production-log failure to the golden set,
and the lead finds the grader failure on the Adjudication page and resolves it."""

from __future__ import annotations

import json

from annotator import context, demo, identity, transcripts
from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.conftest import plain
from tests.annotator.test_transcripts import _record
from tests.app_pages.test_app_roles import app_as

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
    assert not [e for e in eng.get("bidi_component") if e.key == "transcript_surface"]  # engineers do not review

    rev = app_as("reviewer")
    rev.switch_page("app_pages/transcripts.py").run()
    rev.number_input(key="tr_n").set_value(2)
    rev.button(key="tr_draw").click().run()
    assert any("Drew 2 transcript(s), failures and a share of the judge's passes" in plain(m.value)
               for m in rev.success)  # the default share, 0.2: none of 2
    # the surface gets plain text (the browser sets it with textContent, never as HTML)
    items = {c["item"]["item_id"]: c for c in cards(rev, "transcript_surface")}
    assert set(items) == {"run-7|q001|0", "run-7|pl-9|0"}
    texts = json.dumps(surface_data(rev, "transcript_surface"))
    assert "<img src=x onerror=alert(1)>" in texts and "<script>" in texts
    grader = label_for(items["run-7|q001|0"], "reviewer", "grader_failure")
    system = label_for(items["run-7|pl-9|0"], "reviewer", "system_failure", "incomplete")
    acks = send(rev, "transcript_surface", [grader, system])
    assert [acks[grader["id"]]["status"], acks[system["id"]]["status"]] == ["saved", "saved"]
    assert cards(rev, "transcript_surface") == []
    assert sorted(store.read("SELECT evaluation_id, query_id, trial, verdict, failure_class FROM transcript_review_events")) == [
        ("run-7", "pl-9", 0, "system_failure", "incomplete"), ("run-7", "q001", 0, "grader_failure", None)]
    # the same labels again (a browser that did not hear back re-sends): nothing more is written
    again = send(rev, "transcript_surface", [grader, system])
    assert {a["status"] for a in again.values()} <= {"saved", "duplicate"}
    assert store.read_one("SELECT count(*) FROM transcript_review_events")[0] == 2
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
    assert store.read_one("SELECT evaluation_id, query_id, trial, resolution, note FROM transcript_resolution_events") == (
        "run-7", "q001", 0, "label_fixed", "the label was wrong")


def test_judge_check_section_and_a_draw_with_passes(tmp_path):
    """Issue 27: the draw control takes a share of the judge's passes (0.2 by default); the
    cards are blind to the judge (nothing on a pass's card differs from a failure's but its
    text); a pass the reviewer overturns, and one they confirm with n, show in the Judge check
    section, for the reviewer and for an engineer; the reviewer's list then shows what the
    judge said."""
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("reviewer", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    recs = [{**_record(f"pl-{i}", passed=i < 3, source="production_log", stratum="paraphrase"),
             "evaluation_id": "ev-page"} for i in range(6)]
    for r in recs:
        r["transcript"] = {**r["transcript"], "judge": {"verdict": "VERDICT-SENTINEL",
                                                        "justification": f"why-sentinel {r['query_id']}"}}
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    transcripts.import_file(store, admin, f)

    rev = app_as("reviewer")
    rev.switch_page("app_pages/transcripts.py").run()
    assert not rev.exception
    assert any(h.value == "Judge check" for h in rev.subheader)
    assert rev.number_input(key="tr_pass_share").value == 0.2
    rev.number_input(key="tr_n").set_value(4)
    rev.number_input(key="tr_pass_share").set_value(0.5)
    rev.button(key="tr_draw").click().run()
    assert any("Drew 4 transcript(s), failures and a share of the judge's passes" in plain(m.value)
               for m in rev.success)
    shown = cards(rev, "transcript_surface")
    passes = [c for c in shown if c["item"]["item_id"] in {f"ev-page|pl-{i}|0" for i in range(3)}]
    assert len(passes) == 2
    # blind: what the surface is sent holds neither the judge's verdict nor its justification, nor a pass notice
    sent = json.dumps(surface_data(rev, "transcript_surface"))
    assert "VERDICT-SENTINEL" not in sent and "why-sentinel" not in sent and "recall@10" not in sent
    assert not any("notice" in c for c in shown) and {tuple(sorted(c)) for c in shown} == {tuple(sorted(shown[0]))}
    assert "no failure: the answer is right" in sent
    over = label_for(passes[0], "reviewer", "grader_failure")
    right = label_for(passes[1], "reviewer", "no_failure")
    acks = send(rev, "transcript_surface", [over, right])
    assert [acks[over["id"]]["status"], acks[right["id"]]["status"]] == ["saved", "saved"]
    table = _judge_table(rev)
    row = table[table["evaluation"] == "ev-page"].iloc[0]
    assert (row["passes"], row["passes reviewed"], row["passes confirmed"], row["passes overturned"]) == (3, 2, 1, 1)
    assert row["false-pass rate [95% CI]"] == "0.50 [0.09, 0.91]"
    # after the verdict, the judge's words are on the page (the reviewer's list), and still not on the surface
    mine = next(d.value for d in rev.dataframe if "judge justification" in d.value.columns)
    assert set(mine["judge justification"]) == {f"why-sentinel {c['item']['item_id'].split('|')[1]}"
                                               for c in passes}
    assert set(mine["judge verdict"]) == {"VERDICT-SENTINEL"}
    assert dict(zip(mine["your verdict"], mine["against judge"])) == {"grader_failure": True, "no_failure": False}
    assert "why-sentinel" not in json.dumps(surface_data(rev, "transcript_surface"))

    eng = app_as("engineer")
    eng.switch_page("app_pages/transcripts.py").run()
    assert not eng.exception
    row = _judge_table(eng).iloc[0]
    assert row["evaluation"] == "ev-page" and (row["passes overturned"], row["passes confirmed"]) == (1, 1)


def _judge_table(at):
    return next(d.value for d in at.dataframe if "false-pass rate [95% CI]" in d.value.columns)

