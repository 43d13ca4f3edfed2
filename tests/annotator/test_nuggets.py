"""Nugget drafting with the real anthropic SDK against the local Messages API server, human
editing as events, approval, answers, assignment and V_strict / V / A_strict / A."""

from __future__ import annotations

import json

import pytest

from annotator.evidence import nuggets
from annotator.judge import llm
from annotator.people.identity import LOCAL_USER
from golden_store.live import nuggets as store_nuggets
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.freezing import freeze
from golden_store.versions import load_version
from tests.conftest import table_snapshot
from tests.llm_server import message

Q1_QUOTE = "VPN-ERR-0417 means the device certificate on your laptop has expired"
Q1_FIX = "open Company Portal, renew the device certificate and restart the client"
Q2_QUOTE = "phone or message your line manager before 10:00 on the first morning of absence"


def proposal(*items: tuple[str, str, str], insufficient: bool = False) -> str:
    return json.dumps({"insufficient_evidence": insufficient,
                       "nuggets": [{"text": t, "importance": i, "quote": q} for t, i, q in items]})


def ok(text: str, usage: dict | None = None):
    return lambda body: (200, message(text, usage=usage))


def test_draft_is_parsed_verified_and_stored_as_events(demo_store, llm_server):
    llm_server.script.append(ok(proposal(
        ("VPN-ERR-0417 means an expired device certificate", "vital", Q1_QUOTE),
        ("Renew the certificate in Company Portal", "vital", Q1_FIX),
        ("Restart the VPN client afterwards", "okay", "simply reboot the router twice"),  # not in the evidence
    )))
    out = nuggets.draft(demo_store, LOCAL_USER, "q001")
    assert out.outcome == "ok" and out.added == ["n1", "n2", "n3"] and out.flagged == ["n3"]
    req = llm_server.requests[-1]["body"]
    # the fixed instructions are a cached system prefix; structured output was asked for
    assert req["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert req["system"][0]["text"] == nuggets.INSTRUCTIONS
    assert req["output_config"]["format"]["type"] == "json_schema"
    assert "VPN-ERR-0417" in req["messages"][0]["content"]
    cur = nuggets.current(demo_store, LOCAL_USER, "q001")
    assert [(n["nugget_id"], n["importance"], n["flagged"]) for n in cur] == [
        ("n1", "vital", False), ("n2", "vital", False), ("n3", "okay", True)]
    raw = demo_store.read_one("SELECT raw_text FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    assert raw[cur[0]["start"]:cur[0]["end"]] == Q1_QUOTE  # verified onto the exact span
    hist = nuggets.history(demo_store, LOCAL_USER, "q001")
    assert {h["model"] for h in hist} == {llm.model_id()} and len({h["prompt_sha"] for h in hist}) == 1
    # usage and cost recorded: cost = usage x prices
    call = demo_store.read_dicts("SELECT * FROM llm_calls WHERE purpose = 'draft_nuggets'")[0]
    i, o, cw, cr = next(p for k, p in llm.PRICES.items() if llm.model_id().startswith(k))
    assert call["cost_usd"] == pytest.approx((1200 * i + 300 * o + 900 * cw + 0 * cr) / 1e6)
    assert out.cost_usd == pytest.approx(call["cost_usd"])
    # a flagged nugget blocks approval until its quote is fixed or cleared
    with pytest.raises(ValidationError, match="not in the evidence"):
        nuggets.approve(demo_store, LOCAL_USER, "q001")


def test_edits_are_events_and_the_history_shows_draft_versus_edits(demo_store, llm_server):
    llm_server.script.append(ok(proposal(
        ("Error means expired device certificate", "vital", Q1_QUOTE),
        ("Renew in Company Portal", "okay", Q1_FIX),
        ("Bogus", "okay", "not a quote from anywhere at all here"),
    )))
    nuggets.draft(demo_store, LOCAL_USER, "q001")
    cur = {n["nugget_id"]: n for n in nuggets.current(demo_store, LOCAL_USER, "q001")}
    rows = [  # reorder, reword, flip importance, delete n3, add one by hand without a quote
        {"nugget_id": "n2", "text": "Renew the device certificate in Company Portal", "importance": "vital",
         "quote": cur["n2"]["quote"]},
        {"nugget_id": "n1", "text": cur["n1"]["text"], "importance": "vital", "quote": cur["n1"]["quote"]},
        {"nugget_id": None, "text": "Then restart the VPN client", "importance": "okay", "quote": ""},
    ]
    counts = nuggets.save(demo_store, LOCAL_USER, "q001", rows)
    assert counts == {"add": 1, "edit": 2, "delete": 1}
    cur = nuggets.current(demo_store, LOCAL_USER, "q001")
    assert [(n["nugget_id"], n["text"], n["importance"]) for n in cur] == [
        ("n2", "Renew the device certificate in Company Portal", "vital"),
        ("n1", "Error means expired device certificate", "vital"),
        ("n4", "Then restart the VPN client", "okay")]
    assert cur[0]["doc_id"] == "vpn-troubleshooting"  # unchanged quote keeps its verified span
    hist = nuggets.history(demo_store, LOCAL_USER, "q001")
    drafted = [h for h in hist if h["model"]]
    edited = [h for h in hist if not h["model"]]
    assert [h["op"] for h in drafted] == ["add"] * 3
    assert sorted(h["op"] for h in edited) == ["add", "delete", "edit", "edit"]
    assert all(h["actor"] == "local" for h in hist)
    # saving the same list again writes nothing
    same = [{"nugget_id": n["nugget_id"], "text": n["text"], "importance": n["importance"], "quote": n["quote"]}
            for n in cur]
    assert nuggets.save(demo_store, LOCAL_USER, "q001", same) == {"add": 0, "edit": 0, "delete": 0}
    # too long / bad importance: refused, nothing written
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match="12"):
        nuggets.save(demo_store, LOCAL_USER, "q001", same + [{"text": "w " * 13, "importance": "vital"}])
    with pytest.raises(ValidationError, match="vital or okay"):
        nuggets.save(demo_store, LOCAL_USER, "q001", [{**same[0], "importance": "must"}])
    assert table_snapshot(demo_store) == before
    assert nuggets.approve(demo_store, LOCAL_USER, "q001") == 3
    assert all(n["approved"] for n in nuggets.current(demo_store, LOCAL_USER, "q001"))


def test_refusal_is_counted_and_malformed_output_rejected(demo_store, llm_server):
    llm_server.script.append(lambda body: (200, message("I can't help with that.", stop_reason="refusal")))
    out = nuggets.draft(demo_store, LOCAL_USER, "q001")
    assert out.outcome == "refusal" and out.added == []
    llm_server.script.append(ok('{"nuggets": "not a list"}'))
    with pytest.raises(llm.LLMOutputError, match="q001.*does not match"):
        nuggets.draft(demo_store, LOCAL_USER, "q001")
    llm_server.script.append(lambda body: (200, message('{"insufficient', stop_reason="max_tokens")))
    with pytest.raises(llm.LLMOutputError, match="q001.*max_tokens"):
        nuggets.draft(demo_store, LOCAL_USER, "q001")
    llm_server.script.append(ok(proposal(insufficient=True)))
    assert nuggets.draft(demo_store, LOCAL_USER, "q001").outcome == "insufficient_evidence"
    assert nuggets.current(demo_store, LOCAL_USER, "q001") == []
    outcomes = dict(demo_store.read("SELECT outcome, count(*) FROM llm_calls GROUP BY 1"))
    # failed calls are calls too: recorded with what they cost (issue 18 item 14)
    assert outcomes == {"refusal": 1, "insufficient_evidence": 1, "error:invalid_output": 1, "error:truncated": 1}


def test_rate_limit_is_retried(demo_store, llm_server):
    llm_server.script.append(lambda body: (429, {"type": "error", "error": {"type": "rate_limit_error",
                                                                           "message": "slow down"}}))
    llm_server.script.append(ok(proposal(("Expired device certificate", "vital", Q1_QUOTE))))
    out = nuggets.draft(demo_store, LOCAL_USER, "q001")
    assert out.outcome == "ok" and out.added == ["n1"]
    assert [r["path"] for r in llm_server.requests] == ["/v1/messages", "/v1/messages"]


def test_held_out_is_never_sent(demo_store, llm_server):
    assert demo_store.read_one("SELECT held_out FROM queries WHERE query_id = 'q009'")[0]
    with pytest.raises(llm.LLMRefused, match="held out"):
        nuggets.draft(demo_store, LOCAL_USER, "q009")
    outs = nuggets.draft_many(demo_store, LOCAL_USER, ["q009", "q018"], batch=True)
    assert [o.outcome for o in outs] == ["skipped", "skipped"]
    assert llm_server.requests == []  # no HTTP call at all


def test_no_key_explains_and_manual_authoring_works(demo_store, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(llm.LLMUnavailable, match="ANTHROPIC_API_KEY"):
        nuggets.draft(demo_store, LOCAL_USER, "q001")
    nuggets.save(demo_store, LOCAL_USER, "q001", [{"text": "Certificate expired", "importance": "vital",
                                                   "quote": Q1_QUOTE}])
    assert nuggets.current(demo_store, LOCAL_USER, "q001")[0]["doc_id"] == "vpn-troubleshooting"
    assert nuggets.approve(demo_store, LOCAL_USER, "q001") == 1


def test_batch_results_are_matched_out_of_order(demo_store, llm_server):
    by_question = {
        "q001": proposal(("Expired device certificate", "vital", Q1_QUOTE)),
        "q002": proposal(("Tell line manager before 10:00", "vital", Q2_QUOTE),
                         ("Say how long you expect to be off", "okay",
                          "say roughly how long you expect to be off")),
    }
    usage = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 800}

    def result(cid, params):
        text = params["messages"][0]["content"]
        qid = "q001" if "VPN-ERR-0417" in text else "q002"
        return {"type": "succeeded", "message": message(by_question[qid], usage=usage)}

    llm_server.batch_result = result
    seen = []
    outs = nuggets.draft_many(demo_store, LOCAL_USER, ["q001", "q002", "q009"], batch=True,
                              progress=lambda d, t: seen.append((d, t)))
    assert {o.query_id: (o.outcome, len(o.added)) for o in outs} == {
        "q001": ("ok", 1), "q002": ("ok", 2), "q009": ("skipped", 0)}
    assert [n["text"] for n in nuggets.current(demo_store, LOCAL_USER, "q002")][0] == "Tell line manager before 10:00"
    assert seen[-1] == (2, 2)
    methods = [(r.get("method"), r["path"].split("?")[0]) for r in llm_server.requests]
    assert methods[0] == ("POST", "/v1/messages/batches") and ("GET", "/v1/messages/batches/msgbatch_0001/results") in methods
    created = llm_server.requests[0]["body"]["requests"]
    assert all(r["params"]["system"][0]["cache_control"] == {"type": "ephemeral"} for r in created)
    # batch price: half of usage x prices
    i, o, cw, cr = next(p for k, p in llm.PRICES.items() if llm.model_id().startswith(k))
    per_call = (1000 * i + 200 * o + 800 * cr) / 1e6 * 0.5
    s = nuggets.summarize(outs)
    assert s["cost_usd"] == pytest.approx(2 * per_call) and s["cache_read_tokens"] == 1600
    assert s["outcomes"] == {"ok": 2, "skipped": 1}


def test_answers_assignment_and_scores(demo_store, tmp_path):
    nuggets.save(demo_store, LOCAL_USER, "q001", [
        {"text": "Certificate expired", "importance": "vital", "quote": Q1_QUOTE},
        {"text": "Renew in Company Portal", "importance": "vital", "quote": Q1_FIX},
        {"text": "Restart the client", "importance": "okay", "quote": ""}])
    nuggets.approve(demo_store, LOCAL_USER, "q001")
    f = tmp_path / "answers.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "Your certificate expired. <script>x</script>"}) + "\n")
    assert nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag-a") == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query_id": "q001", "answer": "x"}) + "\n" + json.dumps({"query_id": "nope", "answer": "y"})
                   + "\n")
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError) as e:
        nuggets.import_answers(demo_store, LOCAL_USER, str(bad), "rag-b")
    assert "bad.jsonl line 2: unknown query_id 'nope'" in e.value.problems[0]
    assert table_snapshot(demo_store) == before
    ids = [n["nugget_id"] for n in nuggets.current(demo_store, LOCAL_USER, "q001")]
    nuggets.assign(demo_store, LOCAL_USER, "rag-a", "q001", ids[0], "support")
    per_answer, per_system = nuggets.scores(demo_store, LOCAL_USER)
    assert not per_answer.loc[0, "complete"] and per_system.empty  # unassigned nuggets are not "none"
    nuggets.assign(demo_store, LOCAL_USER, "rag-a", "q001", ids[1], "partial")
    nuggets.assign(demo_store, LOCAL_USER, "rag-a", "q001", ids[2], "support")
    per_answer, per_system = nuggets.scores(demo_store, LOCAL_USER)
    row = per_answer.iloc[0]
    assert (row["v_strict"], row["v"], row["a_strict"], row["a"]) == (0.5, 0.75, pytest.approx(2 / 3),
                                                                        pytest.approx(2.5 / 3))
    assert per_system.loc[0, "system"] == "rag-a" and per_system.loc[0, "answers"] == 1
    with pytest.raises(ValidationError, match="support, partial or none"):
        nuggets.assign(demo_store, LOCAL_USER, "rag-a", "q001", ids[0], "yes")
    # approved nuggets go into the frozen version with their provenance
    freeze(demo_store, "n.v1", actor="eng", versions_dir=tmp_path / "v")
    frozen = load_version("n.v1", tmp_path / "v").nuggets
    assert list(frozen["text"]) == ["Certificate expired", "Renew in Company Portal", "Restart the client"]
    assert list(frozen["importance"]) == ["vital", "vital", "okay"]


def test_store_level_ids_continue_after_deletes(demo_store):
    store_nuggets.add_draft(demo_store, "q001", [store_nuggets.NuggetDraft("A fact", "vital")], actor="x",
                            model=None, prompt_sha=None)
    nuggets.save(demo_store, LOCAL_USER, "q001", [])
    ids = store_nuggets.add_draft(demo_store, "q001", [store_nuggets.NuggetDraft("B fact", "okay")], actor="x",
                                  model=None, prompt_sha=None)
    assert ids == ["n2"]  # a deleted id is never reused


def test_server_error_is_retried_and_a_persistent_one_names_the_item(demo_store, llm_server):
    err = lambda body: (500, {"type": "error", "error": {"type": "api_error", "message": "boom"}})  # noqa: E731
    llm_server.script += [err, ok(proposal(("Expired device certificate", "vital", Q1_QUOTE)))]
    assert nuggets.draft(demo_store, LOCAL_USER, "q001").added == ["n1"]
    assert len(llm_server.requests) == 2
    llm_server.default = err
    with pytest.raises(llm.LLMOutputError, match="q002.*500"):
        nuggets.draft(demo_store, LOCAL_USER, "q002", client=llm.LLMClient(max_retries=1))
    assert nuggets.current(demo_store, LOCAL_USER, "q002") == []


def test_moving_an_approved_nugget_keeps_its_approval_and_replaced_answers_lose_labels(demo_store, tmp_path):
    for text in ("First fact here", "Second fact here", "Third fact here"):
        nuggets.edit_one(demo_store, LOCAL_USER, "q001", None, text=text, importance="vital")
    nuggets.approve(demo_store, LOCAL_USER, "q001")
    nuggets.edit_one(demo_store, LOCAL_USER, "q001", "n1", delete=True)  # n2, n3 move up
    cur = nuggets.current(demo_store, LOCAL_USER, "q001")
    assert [(n["nugget_id"], n["approved"]) for n in cur] == [("n2", True), ("n3", True)]
    nuggets.edit_one(demo_store, LOCAL_USER, "q001", "n2", text="Second fact, reworded", importance="vital")
    assert [n["approved"] for n in nuggets.current(demo_store, LOCAL_USER, "q001")] == [False, True]
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "one"}) + "\n")
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag")
    nuggets.assign(demo_store, LOCAL_USER, "rag", "q001", "n3", "support")
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag", replace=True)  # same text: labels stay
    assert len(nuggets.assignments(demo_store, LOCAL_USER, "rag")) == 1
    f.write_text(json.dumps({"query_id": "q001", "answer": "a different answer"}) + "\n")
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag", replace=True)
    assert nuggets.assignments(demo_store, LOCAL_USER, "rag") == []  # withdrawn with the old text


# ---- an answer's outcome and abstention (METHODOLOGY §10.5) -------------------------------------

def _outcome_answers(tmp_path, rows: list[tuple[str, str | None]], name: str = "out.jsonl"):
    f = tmp_path / name
    f.write_text("".join(json.dumps({"query_id": q, "answer": f"answer to {q}", **({"outcome": o} if o else {})})
                         + "\n" for q, o in rows))
    return f


# the demo's unanswerable questions are q005 q012 q019 q026 q032 q040
OUTCOME_ROWS = [("q005", "abstained"), ("q012", "abstained"), ("q019", "abstained"), ("q026", "answered"),
                ("q032", "refused"), ("q040", None),
                ("q001", "abstained"), ("q002", "answered"), ("q003", "answered"), ("q004", "answered")]


def _rates(store, user=LOCAL_USER, system="rag"):
    r = nuggets.abstention(store, user, n_boot=300)[system]
    return {k: v.value for k, v in r.rates.items()}, r


def test_outcomes_are_imported_and_an_absent_one_is_unknown_not_answered(demo_store, tmp_path):
    assert nuggets.import_answers(demo_store, LOCAL_USER, str(_outcome_answers(tmp_path, OUTCOME_ROWS)), "rag") == 10
    got = {r["query_id"]: (r["outcome"], r["basis"]) for r in nuggets.answer_outcomes(demo_store, LOCAL_USER)}
    assert got["q005"] == ("abstained", "imported") and got["q032"] == ("refused", "imported")
    assert got["q040"] == ("unknown", "unmarked")
    rates, r = _rates(demo_store)
    # hand-computed: unanswerable scored q005 q012 q019 (declined) q026 (fabricated), q032 refused, q040 unmarked;
    # answerable q001 declined, q002-q004 answered
    assert rates["abstention_recall"] == pytest.approx(3 / 4)
    assert rates["abstention_precision"] == pytest.approx(3 / 4)
    assert rates["over_refusal_rate"] == pytest.approx(1 / 4)
    assert (r.refused, r.refused_unanswerable, r.n_unmarked, r.n_unanswerable, r.n_answerable) == (1, 1, 1, 5, 4)
    assert not r.complete


def test_a_bad_outcome_is_refused_with_file_line_field_and_allowed_values(demo_store, tmp_path):
    nuggets.import_answers(demo_store, LOCAL_USER, str(_outcome_answers(tmp_path, OUTCOME_ROWS)), "rag")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query_id": "q001", "answer": "x", "outcome": "answered"}) + "\n"
                   + json.dumps({"query_id": "q002", "answer": "y", "outcome": "declined"}) + "\n"
                   + json.dumps({"query_id": "q003", "answer": "z", "outcome": None}) + "\n")
    before = table_snapshot(demo_store)
    for system, replace in (("rag-b", False), ("rag", True)):
        with pytest.raises(ValidationError) as e:
            nuggets.import_answers(demo_store, LOCAL_USER, str(bad), system, replace=replace)
        assert e.value.problems[0] == (f"{bad} line 2: field 'outcome' must be one of answered, abstained, "
                                       "refused (or left out when not known), not 'declined'")
        assert e.value.problems[1].startswith(f"{bad} line 3: field 'outcome'")
        assert len(e.value.problems) == 2
        assert table_snapshot(demo_store) == before


def test_a_reviewers_mark_is_an_event_and_changes_the_score_other_roles_are_refused(demo_store, tmp_path):
    from annotator.people.identity import User
    from annotator.people.roles import PermissionDenied, Role

    nuggets.import_answers(demo_store, LOCAL_USER, str(_outcome_answers(tmp_path, OUTCOME_ROWS)), "rag")
    reviewer = User("rita", "Rita", frozenset({Role.REVIEWER}))
    lead = User("leo", "Leo", frozenset({Role.LEAD}))
    for role in (Role.ANNOTATOR, Role.ENGINEER):
        who = User(f"x-{role.value}", "X", frozenset({role}))
        before = table_snapshot(demo_store)
        with pytest.raises(PermissionDenied, match="may not mark the outcome"):
            nuggets.mark_outcome(demo_store, who, "rag", "q040", "abstained")
        assert table_snapshot(demo_store) == before
    # the unmarked answer is marked: it now counts (a fabrication)
    nuggets.mark_outcome(demo_store, reviewer, "rag", "q040", "answered", note="invents a policy")
    rates, r = _rates(demo_store, reviewer)
    assert r.n_unmarked == 0 and r.complete and rates["abstention_recall"] == pytest.approx(3 / 5)
    # a lead corrects the imported outcome of q001: it answered after all
    nuggets.mark_outcome(demo_store, lead, "rag", "q001", "answered")
    rates, _ = _rates(demo_store)
    assert rates["abstention_precision"] == 1.0 and rates["over_refusal_rate"] == 0.0
    row = next(x for x in nuggets.answer_outcomes(demo_store, LOCAL_USER) if x["query_id"] == "q001")
    assert (row["outcome"], row["imported_outcome"], row["basis"], row["marked_by"]) == (
        "answered", "abstained", "marked", "leo")
    # nothing overwritten: the import row keeps its outcome, every mark is in the history; undo is an event
    nuggets.mark_outcome(demo_store, reviewer, "rag", "q001", "withdrawn")
    assert demo_store.read_one("SELECT outcome FROM answers WHERE system = 'rag' AND query_id = 'q001'")[0] == \
        "abstained"
    hist = nuggets.outcome_history(demo_store, LOCAL_USER, "rag", "q001")
    assert [(h["outcome"], h["actor"]) for h in hist] == [("answered", "leo"), ("withdrawn", "rita")]
    rates, _ = _rates(demo_store)
    assert rates["abstention_precision"] == pytest.approx(3 / 4) and rates["over_refusal_rate"] == pytest.approx(1 / 4)
    with pytest.raises(ValidationError, match="answered, abstained, refused"):
        nuggets.mark_outcome(demo_store, reviewer, "rag", "q001", "declined")
    with pytest.raises(NotFoundError):
        nuggets.mark_outcome(demo_store, reviewer, "rag", "q999", "answered")


def test_a_replaced_answer_text_loses_its_outcome_mark(demo_store, tmp_path):
    f = _outcome_answers(tmp_path, [("q005", None), ("q012", None)])
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag")
    nuggets.mark_outcome(demo_store, LOCAL_USER, "rag", "q005", "abstained")
    nuggets.mark_outcome(demo_store, LOCAL_USER, "rag", "q012", "abstained")
    f.write_text(json.dumps({"query_id": "q005", "answer": "answer to q005"}) + "\n"
                 + json.dumps({"query_id": "q012", "answer": "a new text", "outcome": "answered"}) + "\n")
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag", replace=True)
    got = {r["query_id"]: (r["outcome"], r["basis"]) for r in nuggets.answer_outcomes(demo_store, LOCAL_USER)}
    assert got == {"q005": ("abstained", "marked"),  # same text: the mark still describes it
                   "q012": ("answered", "imported")}  # new text: the old mark is withdrawn


def test_abstention_of_one_system_and_an_unknown_system(demo_store, tmp_path):
    nuggets.import_answers(demo_store, LOCAL_USER, str(_outcome_answers(tmp_path, OUTCOME_ROWS)), "rag")
    nuggets.import_answers(demo_store, LOCAL_USER, str(_outcome_answers(tmp_path, OUTCOME_ROWS[:2], "b.jsonl")),
                           "rag-b")
    assert list(nuggets.abstention(demo_store, LOCAL_USER, n_boot=50)) == ["rag", "rag-b"]
    only = nuggets.abstention(demo_store, LOCAL_USER, "rag-b", n_boot=50)
    assert list(only) == ["rag-b"] and only["rag-b"].rates["over_refusal_rate"].value is None
    with pytest.raises(NotFoundError, match="nope"):
        nuggets.abstention(demo_store, LOCAL_USER, "nope")
    table = nuggets.abstention_table(only)
    assert table.loc[0, "over-refusal rate"] == "undefined"
    assert table.loc[0, "abstention recall"].startswith("1.00 [1.00, 1.00] (2/2)")
    assert any("over-refusal rate undefined - no answerable question" in w for w in nuggets.undefined_reasons(only))


def test_a_question_with_no_vital_nugget_is_left_out_of_v_not_scored_zero(demo_store, tmp_path):
    """Issue 25 item 5: METHODOLOGY §10.9's code gives V = NaN for a question with no vital
    nugget; scoring it 0 (castorini's nuggetizer) pulled the system's V mean down. The default
    follows the methodology and says how many answers were left out; the other convention is
    there by name."""
    nuggets.save(demo_store, LOCAL_USER, "q001", [
        {"text": "Certificate expired", "importance": "vital", "quote": Q1_QUOTE},
        {"text": "Renew in Company Portal", "importance": "vital", "quote": Q1_FIX}])
    nuggets.save(demo_store, LOCAL_USER, "q002", [{"text": "Tell the line manager", "importance": "okay", "quote": ""}])
    for q in ("q001", "q002"):
        nuggets.approve(demo_store, LOCAL_USER, q)
    f = tmp_path / "answers.jsonl"
    f.write_text("".join(json.dumps({"query_id": q, "answer": "an answer"}) + "\n" for q in ("q001", "q002")))
    nuggets.import_answers(demo_store, LOCAL_USER, str(f), "rag-a")
    for q in ("q001", "q002"):
        for n in nuggets.current(demo_store, LOCAL_USER, q):
            nuggets.assign(demo_store, LOCAL_USER, "rag-a", q, n["nugget_id"], "support")

    per_answer, per_system = nuggets.scores(demo_store, LOCAL_USER)
    row = per_system.iloc[0]
    assert per_answer.set_index("query_id")["v"].isna().to_dict() == {"q001": False, "q002": True}
    assert row["v"] == 1.0 and row["v_strict"] == 1.0  # q002 is left out, not a 0
    assert (row["answers"], row["v_answers"], row["no_vital"]) == (2, 1, 1)
    assert row["a"] == 1.0  # A is defined for both
    assert per_system.attrs["no_vital_convention"] == "methodology"

    _, nz = nuggets.scores(demo_store, LOCAL_USER, no_vital="nuggetizer")
    assert nz.iloc[0]["v"] == 0.5 and nz.iloc[0]["v_answers"] == 2  # the old, pulled-down mean, by name
    with pytest.raises(ValidationError, match="no vital nugget"):
        nuggets.scores(demo_store, LOCAL_USER, no_vital="zero")


def test_a_quote_that_changes_a_fact_is_not_in_evidence_and_blocks_approval(demo_store):
    """H1 (newcomer walkthrough 2026-12-04): the evidence of q003 says "those with five years
    or more must give two months"; a nugget quoting "ten years or more" resolved fuzzily onto
    that span, was ticked "in evidence" and approved. Only a verbatim quote (canonicalized:
    spacing and case of Unicode forms aside) is placed; the changed one is flagged."""
    s = demo_store
    nuggets.edit_one(s, LOCAL_USER, "q003", None, text="Two months' notice after ten years", importance="okay",
                     quote="those with ten years or more must give two months")
    changed = [n for n in store_nuggets.current(s, "q003") if n["text"] == "Two months' notice after ten years"][0]
    assert changed["doc_id"] is None and changed["start"] is None  # not placed: flagged
    with pytest.raises(ValidationError, match="is not in the evidence"):
        nuggets.approve(s, LOCAL_USER, "q003")
    # the verbatim quote is placed on the evidence's own span and the list can be approved
    nuggets.edit_one(s, LOCAL_USER, "q003", changed["nugget_id"], text="Two months' notice after five years",
                     importance="okay", quote="those with five years or more must give two months")
    fixed = [n for n in store_nuggets.current(s, "q003") if n["nugget_id"] == changed["nugget_id"]][0]
    raw = s.read_one("SELECT raw_text FROM documents WHERE doc_id = ?", [fixed["doc_id"]])[0]
    assert fixed["doc_id"] == "notice-periods"
    assert raw[fixed["start"]:fixed["end"]] == "those with five years or more must give two months"
    assert not [n for n in store_nuggets.current(s, "q003") if n["quote"] and n["doc_id"] is None]
    assert nuggets.approve(s, LOCAL_USER, "q003") == len(store_nuggets.current(s, "q003"))


def test_deleting_without_naming_a_nugget_is_refused_in_a_sentence(demo_store):
    # delete=True with no nugget id once reached list.pop(None) and failed with a TypeError
    nuggets.edit_one(demo_store, LOCAL_USER, "q001", None, text="First fact here", importance="vital")
    with pytest.raises(ValidationError, match="Nothing to delete: name the nugget of q001"):
        nuggets.edit_one(demo_store, LOCAL_USER, "q001", None, delete=True)
    assert [n["nugget_id"] for n in nuggets.current(demo_store, LOCAL_USER, "q001")] == ["n1"]
