"""The Transcripts page in the real app (AppTest): an engineer imports with the uploader, a
reviewer draws a sample, reads a transcript whose text carries HTML and script (shown as
text), records verdicts through the labeling surface, adds a production-log failure to the golden set,
and the lead finds the grader failure on the Adjudication page and resolves it."""

from __future__ import annotations

import json

from annotator import demo
from annotator.evaluation import transcripts
from annotator.people import identity
from annotator.process import context
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
    rev.radio(key="tr_add_answerable_run-7|pl-9|0").set_value(True).run()
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



def _mine(at):
    return next(d.value for d in at.dataframe if "corrected" in d.value.columns)


def _errors(at) -> str:
    return "\n".join(plain(e.value) for e in at.error)


def test_a_reviewer_changes_a_verdict_after_the_sample_and_adds_an_unanswerable_failure(tmp_path):
    """Issue 37 item 10 (newcomer walkthrough, reviewer 1-2). A verdict given on the surface
    is changed after the sample on *Reviewed in my samples*: a new verdict with its reason, the
    page then shows the current one, that it was corrected and from what, and the history (the
    old verdict is still stored). "Add to the golden set" asks whether the corpus answers the
    question (no default: nothing is added until it is said), and an unanswerable one needs
    its reason, goes to the negative stratum and is stored unanswerable."""
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "reviewer", ["reviewer"], password=PASSWORD)
    recs = [{**_record("p-001", passed=True, source="production_log", stratum="paraphrase",
                       question="what is the CEO's salary?"), "evaluation_id": "ev"},
            {**_record("p-002", source="production_log", stratum="paraphrase",
                       question="how do I join the bike scheme?"), "evaluation_id": "ev"}]
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    transcripts.import_file(store, admin, f)
    fabricated, bike = "ev|p-001|0", "ev|p-002|0"

    rev = app_as("reviewer")
    rev.switch_page("app_pages/transcripts.py").run()
    rev.number_input(key="tr_n").set_value(2)
    rev.number_input(key="tr_pass_share").set_value(0.5)
    rev.button(key="tr_draw").click().run()
    items = {c["item"]["item_id"]: c for c in cards(rev, "transcript_surface")}
    assert set(items) == {fabricated, bike}
    wrong = label_for(items[fabricated], "reviewer", "no_failure")  # the mistake: the answer is a fabrication
    miss = label_for(items[bike], "reviewer", "system_failure", "retrieval_miss")
    acks = send(rev, "transcript_surface", [wrong, miss])
    assert {a["status"] for a in acks.values()} == {"saved"}
    mine = _mine(rev)
    assert dict(zip(mine["transcript"], mine["corrected"])) == {fabricated: "", bike: ""}

    # change it: a reason is required, and nothing is written without one
    rev.selectbox(key="tr_fix_pick").set_value(fabricated).run()
    assert any("Your verdict now: **no failure**" in plain(m.value) for m in rev.markdown)
    new = rev.selectbox(key=f"tr_fix_verdict_{fabricated}_0")
    assert "no failure: the answer is right" not in new.options  # the current verdict is not offered
    new.select_index(new.options.index("system failure: generation unfaithful")).run()
    rev.button(key="tr_fix_save").click().run()
    assert "say why you change the verdict" in _errors(rev)
    assert store.read_one("SELECT count(*) FROM transcript_review_events WHERE query_id = 'p-001'")[0] == 1
    rev.text_input(key=f"tr_fix_why_{fabricated}_0").input("the answer is made up").run()
    rev.button(key="tr_fix_save").click().run()
    assert not rev.exception
    assert any(f"Changed your verdict on {fabricated} from no failure to system failure: generation unfaithful"
               in plain(m.value) for m in rev.success)
    # the page shows the current verdict and that it was corrected; the store kept both
    mine = _mine(rev)
    row = mine[mine["transcript"] == fabricated].iloc[0]
    assert (row["your verdict"], row["class"], row["corrected"], row["note"]) == (
        "system_failure", "generation_unfaithful", "yes, was no failure", "the answer is made up")
    assert bool(row["against judge"]) is True
    assert any("Your verdict now: **system failure: generation unfaithful** (corrected; it replaced *no failure*)"
               in plain(m.value) for m in rev.markdown)
    history = next(d.value for d in rev.dataframe if list(d.value.columns) == ["when", "who", "verdict", "note"])
    assert list(history["verdict"]) == ["no failure", "system failure: generation unfaithful"]
    assert store.read("SELECT verdict, failure_class, note, actor FROM transcript_review_events "
                      "WHERE query_id = 'p-001' ORDER BY event_id") == [
        ("no_failure", None, None, "reviewer"), ("system_failure", "generation_unfaithful", "the answer is made up",
                                                 "reviewer")]

    # both are system failures now, on questions not in the set: added, asked answerable or not
    assert set(rev.selectbox(key="tr_add_pick").options) >= {f"{bike} · how do I join the bike scheme?"}
    rev.selectbox(key="tr_add_pick").set_value(bike).run()
    assert rev.radio(key=f"tr_add_answerable_{bike}").value is None  # no default
    rev.button(key="tr_add").click().run()
    assert "say whether the corpus answers the question" in _errors(rev)
    rev.radio(key=f"tr_add_answerable_{bike}").set_value(False).run()
    assert rev.selectbox(key=f"tr_add_stratum_{bike}_False").value == "negative"
    rev.button(key="tr_add").click().run()
    assert "say why the corpus does not answer it" in _errors(rev)
    assert store.read_one("SELECT count(*) FROM queries WHERE query_id = 'p-002'")[0] == 0
    rev.text_input(key=f"tr_add_reason_{bike}").input("The handbook has no bike scheme.").run()
    rev.button(key="tr_add").click().run()
    assert not rev.exception
    assert any("Added p-002 (production_log, dated today, stratum negative) as not answerable from the corpus"
               in plain(m.value) for m in rev.success)
    q = store.read_one("SELECT answerable, stratum, notes FROM queries WHERE query_id = 'p-002'")
    assert q[:2] == (False, "negative") and q[2].startswith("Not answerable from the corpus: The handbook has no "
                                                           "bike scheme.")
    # the other one is answerable: the negative stratum is not offered for it
    rev.selectbox(key="tr_add_pick").set_value(fabricated).run()
    assert rev.radio(key=f"tr_add_answerable_{fabricated}").value is None  # asked again for this one
    rev.radio(key=f"tr_add_answerable_{fabricated}").set_value(True).run()
    assert "negative" not in rev.selectbox(key=f"tr_add_stratum_{fabricated}_True").options
    assert rev.selectbox(key=f"tr_add_stratum_{fabricated}_True").value == "paraphrase"
    rev.button(key="tr_add").click().run()
    assert any("Added p-001 (production_log, dated today, answerable, stratum paraphrase)" in plain(m.value)
               for m in rev.success)
    assert store.read_one("SELECT answerable, stratum FROM queries WHERE query_id = 'p-001'") == (True, "paraphrase")
