"""The Nuggets page in the real app (AppTest): draft with Claude against the local Messages
API server, edit and add by hand, approve, see draft vs edits in the history; assign nuggets
to a system answer with the 1/2/3 buttons and read the scores; without a key the page
explains and manual authoring works."""

from __future__ import annotations

import json

from annotator import demo
from annotator.evidence import nuggets
from annotator.people import identity
from annotator.process import context
from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.conftest import plain
from tests.app_pages.test_app_roles import app_as
from tests.llm_server import message
from tests.waiting import wait_until

PASSWORD = "0123456789"
Q1_QUOTE = "VPN-ERR-0417 means the device certificate on your laptop has expired"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "annotator", ["annotator"], password=PASSWORD)
    demo.load_demo(store, admin)
    return store, admin


def _open(at):
    at.switch_page("app_pages/nuggets.py").run()
    assert not at.exception
    at.selectbox(key="nug_q").set_value("q001").run()
    assert not at.exception
    return at


def test_draft_edit_approve_and_history(llm_server):
    store, _ = _accounts()
    llm_server.script.append(lambda body: (200, message(json.dumps({"insufficient_evidence": False, "nuggets": [
        {"text": "Error means expired device certificate", "importance": "vital", "quote": Q1_QUOTE},
        {"text": "Reboot the router", "importance": "okay", "quote": "reboot your home router twice"}]}))))
    at = _open(app_as("annotator"))
    at.button(key="nug_draft").click().run()
    assert not at.exception
    # the estimate first, and nothing sent until it is confirmed (§11.7)
    shown = " ".join(plain(i.value) for i in at.info)
    assert "Nugget drafting: 1 call(s) to claude-sonnet-4-5" in shown and "Caching applies" in shown
    confirm = at.button(key="nug_plan_confirm")
    assert plain(confirm.label).startswith("Confirm: spend ≈ $")
    assert llm_server.requests == []
    confirm.click().run()
    assert not at.exception
    assert any("ok: 2 nugget(s) drafted, 1 flagged" in plain(m.value) for m in at.success)
    assert any("The last draft used:" in plain(i.value) and "Used: 1 call(s)" in plain(i.value) for i in at.info)
    assert llm_server.requests and llm_server.requests[0]["path"] == "/v1/messages"
    current = nuggets.current(store, identity.get_user(store, "annotator"), "q001")
    assert [n["flagged"] for n in current] == [False, True]
    # approval refused while a quote is not in the evidence
    at.button(key="nug_approve").click().run()
    assert any("not in the evidence" in e.value for e in at.error)
    # fix n2 by hand: new text, no quote; then add a third nugget
    at.selectbox(key="nug_one_q001").set_value("n2").run()
    at.text_input(key="nug_t_q001_n2").input("Renew the certificate in Company Portal")
    at.text_input(key="nug_qt_q001_n2").input("")
    at.button(key="nug_one_save").click().run()
    assert not at.exception and any("1 edited" in plain(m.value) for m in at.success)
    at.selectbox(key="nug_one_q001").set_value(None).run()
    at.text_input(key="nug_t_q001_None").input("Restart the VPN client")
    at.radio(key="nug_i_q001_None").set_value("okay")
    at.button(key="nug_one_save").click().run()
    assert any("1 added" in plain(m.value) for m in at.success)
    at.button(key="nug_approve").click().run()
    assert any("Approved 3 nugget(s) of q001" in plain(m.value) for m in at.success)
    hist = next(d.value for d in at.dataframe if "op" in d.value.columns)
    by_model = hist[hist["model"].notna()]
    assert list(by_model["op"]) == ["add", "add"]  # what the model proposed
    people = hist[hist["model"].isna()]
    assert list(people["op"]) == ["edit", "add", "approve", "approve", "approve"]  # what people changed


def test_the_estimate_belongs_to_its_question_and_says_when_caching_will_not_apply(llm_server, monkeypatch):
    """An estimate confirms only what it was made for: another question (or Cancel) drops it.
    On Haiku 4.5 (4,096-token minimum) the estimate says before the run that caching will not
    apply and why."""
    monkeypatch.setenv("GOLDEN_LLM_MODEL", "claude-haiku-4-5")
    _accounts()
    at = _open(app_as("annotator"))
    at.button(key="nug_draft").click().run()
    shown = " ".join(plain(i.value) for i in at.info)
    assert "to claude-haiku-4-5" in shown and "Caching will not apply" in shown and "4,096" in shown
    assert "nug_plan_confirm" in [b.key for b in at.button]
    at.selectbox(key="nug_q").set_value("q002").run()
    assert "nug_plan_confirm" not in [b.key for b in at.button]  # made for q001, not shown for q002
    at.selectbox(key="nug_q").set_value("q001").run()
    at.button(key="nug_plan_cancel").click().run()
    assert "nug_plan_confirm" not in [b.key for b in at.button] and not at.exception
    assert llm_server.requests == []


def test_no_key_explains_and_manual_authoring_works(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    store, _ = _accounts()
    at = _open(app_as("annotator"))
    assert any("ANTHROPIC_API_KEY" in i.value for i in at.info)
    assert at.button(key="nug_draft").disabled
    at.text_input(key="nug_t_q001_None").input("Device certificate expired")
    at.text_input(key="nug_qt_q001_None").input(Q1_QUOTE)
    at.button(key="nug_one_save").click().run()
    at.button(key="nug_approve").click().run()
    assert any("Approved 1 nugget(s)" in plain(m.value) for m in at.success)


def test_held_out_question_cannot_be_drafted(llm_server):
    _accounts()
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    at.selectbox(key="nug_q").set_value("q009").run()
    assert at.button(key="nug_draft").disabled
    assert any("never sent to Claude" in c.value for c in at.caption)
    assert llm_server.requests == []


def test_assign_with_buttons_and_scores(tmp_path):
    store, admin = _accounts()
    ann = identity.get_user(store, "annotator")
    for text, imp in (("Certificate expired", "vital"), ("Renew in Company Portal", "vital"), ("Restart", "okay")):
        nuggets.edit_one(store, ann, "q001", None, text=text, importance=imp)
    nuggets.approve(store, ann, "q001")
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "<b>Your cert</b> expired; renew it."}) + "\n")
    nuggets.import_answers(store, admin, str(f), "rag-a")
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    at.radio(key="nug_mode").set_value("Assign to answers").run()
    assert not at.exception
    items = cards(at, "assignment_surface")
    assert [c["title"] for c in items] == ["Certificate expired", "Renew in Company Portal", "Restart"]
    data = json.dumps(surface_data(at, "assignment_surface"))
    assert "<b>Your cert</b>" in data and "rag-a" not in data  # plain text for the browser; blind to the system
    acks = send(at, "assignment_surface", [label_for(c, "annotator", "assign", lab)
                                           for c, lab in zip(items, ("support", "partial", "none"))])
    assert [a["status"] for a in acks.values()] == ["saved"] * 3
    assert cards(at, "assignment_surface") == []
    assert any("3 / 3 nuggets assigned" in str(p.value) or "3 / 3 nuggets assigned" in str(getattr(p, "text", ""))
               for p in at.get("progress"))
    assert at.radio(key="nug_mode").options == ["Author", "Assign to answers"]  # graders: no Scores (M6)
    at = app_as("admin")  # who sees systems reads the scores
    at.switch_page("app_pages/nuggets.py").run()
    at.radio(key="nug_mode").set_value("Scores").run()
    per_system = at.dataframe[0].value
    assert per_system.loc[0, "system"] == "rag-a"
    assert (per_system.loc[0, "v_strict"], per_system.loc[0, "v"]) == (0.5, 0.75)
    assert per_system.loc[0, "a_strict"] == 1 / 3 and per_system.loc[0, "a"] == 0.5


def test_bulk_drafting_runs_as_a_background_job_with_progress(llm_server):
    from annotator.process import jobs

    store, _ = _accounts()
    llm_server.default = lambda body: (200, message(json.dumps({"insufficient_evidence": True, "nuggets": []})))
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    at.selectbox(key="nug_bulk_scope").set_value("lexical").run()
    at.button(key="nug_bulk").click().run()
    assert not at.exception
    assert "nug_job" not in at.session_state and llm_server.requests == []  # the estimate, not the job
    assert any("Nugget drafting:" in plain(i.value) for i in at.info)
    at.button(key="nug_bulk_plan_confirm").click().run()
    assert not at.exception
    job = jobs.get(at.session_state["nug_job"])
    wait_until(lambda: job.status != "running", "the drafting job to end")
    assert job.status == "done", job.error
    lexical = store.read("SELECT query_id, held_out FROM queries WHERE stratum = 'lexical'")
    sent = [q for q, held in lexical if not held]
    assert job.result["outcomes"].get("insufficient_evidence", 0) + job.result["outcomes"].get("skipped", 0) == len(
        lexical)
    assert len(llm_server.requests) == job.result["outcomes"].get("insufficient_evidence", 0) <= len(sent)
    at.run()
    assert any("done. Outcomes" in plain(m.value) for m in at.success)


def test_bulk_batch_drafting_confirms_the_batch_price_and_reports_cache_reads(llm_server):
    """Through the Batch API: the estimate names it and the confirm button carries the batch
    price; after the job the page shows the server's cache reads and hit rate, and llm_calls
    holds them."""
    from annotator.process import jobs
    from annotator.judge.llm_cost import money

    store, _ = _accounts()
    usage = {"input_tokens": 80, "output_tokens": 50, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 1300}
    llm_server.batch_result = lambda cid, params: {"type": "succeeded", "message": message(json.dumps(
        {"insufficient_evidence": True, "nuggets": []}), usage=usage)}
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    at.selectbox(key="nug_bulk_scope").set_value("lexical").run()
    at.checkbox(key="nug_batch").check().run()
    at.button(key="nug_bulk").click().run()
    plan = at.session_state["nug_bulk_plan"][1]
    assert plan.batch and plan.estimate.caches
    assert plain(at.button(key="nug_bulk_plan_confirm").label) == f"Confirm: spend ≈ {money(plan.usd)}"
    assert any("through the Message Batches API" in plain(i.value) for i in at.info)
    assert llm_server.requests == []
    at.button(key="nug_bulk_plan_confirm").click().run()
    job = jobs.get(at.session_state["nug_job"])
    wait_until(lambda: job.status != "running", "the batch drafting job to end")
    assert job.status == "done", job.error
    n = len(plan.items)
    at.run()
    used = " ".join(plain(i.value) for i in at.info if "The job used:" in plain(i.value))
    assert f"Used: {n} call(s)" in used and f"{1300 * n:,} cache-read tokens" in used and "hit rate 100%" in used
    assert store.read_one("SELECT sum(cache_read_input_tokens) FROM llm_calls WHERE purpose = 'draft_nuggets'")[0] \
        == 1300 * n
    created = [r for r in llm_server.requests if r["path"] == "/v1/messages/batches"]
    assert len(created) == 1 and len(created[0]["body"]["requests"]) == n


def test_a_failing_job_reports_its_error():
    from annotator.process import jobs

    def boom(progress):
        progress(1, 2)
        raise RuntimeError("disk full")

    job = jobs.start("x", "me", boom)
    wait_until(lambda: job.status != "running", "the job's thread to end")
    assert job.status == "failed" and "disk full" in job.error and (job.done, job.total) == (1, 2)


def test_the_picker_offers_questions_to_do_first_and_the_bulk_scope_counts_those_without_nuggets():
    """Questions with evidence and no approved nugget list first (by id), then the rest (by
    id); the bulk drafter counts the questions of its scope that have no nugget at all."""
    store, admin = _accounts()
    nuggets.edit_one(store, admin, "q001", None, text="Device certificate expired", importance="vital")
    nuggets.approve(store, admin, "q001")
    nuggets.edit_one(store, admin, "q002", None, text="Renew it in Company Portal", importance="okay")  # unapproved
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    assert not at.exception
    rows = store.read("SELECT q.query_id, q.stratum, (SELECT count(*) FROM current_evidence e WHERE e.query_id = "
                      "q.query_id) AS ev FROM queries q ORDER BY 1")
    approved = {"q001"}
    todo = [q for q, _, ev in rows if ev > 0 and q not in approved]
    rest = [q for q, _, ev in rows if not (ev > 0 and q not in approved)]
    assert "q001" in rest and "q002" in todo
    shown = [o.split(" · ")[0] for o in at.selectbox(key="nug_q").options]
    assert shown == todo + rest
    at.selectbox(key="nug_bulk_scope").set_value("lexical").run()
    without = [q for q, stratum, _ in rows if stratum == "lexical" and q not in ("q001", "q002")]
    assert any(c.value.startswith(f"{len(without)} question(s);") for c in at.caption)


def _abstention_frame(at):
    frames = [d.value for d in at.dataframe if "abstention recall" in d.value.columns]
    assert len(frames) == 1
    return frames[0].set_index("system")


def test_scores_show_abstention_and_a_reviewer_marks_an_outcome(tmp_path):
    store, admin = _accounts()
    identity.create_user(store, admin, "rita", ["reviewer"], password=PASSWORD)
    # demo: q005 q012 q019 q026 q032 q040 are unanswerable
    rows = [("q005", "abstained"), ("q012", "abstained"), ("q019", "answered"), ("q026", "answered"),
            ("q032", "refused"), ("q040", None), ("q001", "abstained"), ("q002", "answered")]
    f = tmp_path / "a.jsonl"
    f.write_text("".join(json.dumps({"query_id": q, "answer": f"<b>answer</b> to {q}",
                                     **({"outcome": o} if o else {})}) + "\n" for q, o in rows))
    nuggets.import_answers(store, admin, str(f), "rag-a")

    at = app_as("admin")  # sees the table (graders do not: M6)
    at.switch_page("app_pages/nuggets.py").run()
    at.radio(key="nug_mode").set_value("Scores").run()
    assert not at.exception
    table = _abstention_frame(at)
    assert table.loc["rag-a", "abstention recall"].startswith("0.50 [")  # 2 of q005 q012 q019 q026
    assert table.loc["rag-a", "abstention recall"].endswith("(2/4)")
    assert table.loc["rag-a", "abstention precision"].endswith("(2/3)")
    assert table.loc["rag-a", "over-refusal rate"].endswith("(1/2)")
    assert (table.loc["rag-a", "refused"], table.loc["rag-a", "unmarked"]) == (1, 1)
    assert any("Incomplete" in w.value and "rag-a: 1" in plain(w.value) for w in at.warning)


    at = app_as("rita")  # a reviewer: the Scores section only, with the marking
    at.switch_page("app_pages/nuggets.py").run()
    assert not at.exception
    assert at.radio(key="nug_mode").options == ["Scores"]
    ref = nuggets.answer_ref("rag-a", "q040")
    assert at.selectbox(key="nug_out_pick").value == ref  # the unmarked answer first
    assert "<b>answer</b> to q040" in [t.value for t in at.text]  # answer text as plain text
    assert "rag-a" not in at.selectbox(key="nug_out_pick").format_func(ref)  # named by reference, not system
    at.radio(key=f"nug_out_choice_{ref}").set_value("abstained")
    next(b for b in at.button if b.label == "Save outcome").click().run()
    assert not at.exception
    table = _abstention_frame(at)
    assert table.loc["rag-a", "abstention recall"].endswith("(3/5)") and table.loc["rag-a", "unmarked"] == 0
    row = next(r for r in nuggets.answer_outcomes(store, admin) if r["query_id"] == "q040")
    assert (row["outcome"], row["basis"], row["marked_by"]) == ("abstained", "marked", "rita")
