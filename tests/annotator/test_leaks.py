"""Issue 18, blindness and held-out leaks: what a second annotator can learn about a colleague's
labels (pending disagreements, unsettled quotes in the broken-label notice, per-run coverage),
and held-out text reaching the hosted model by any LLM path (the request log of the local
Messages API server holds none of it)."""

from __future__ import annotations

import json
from datetime import date

import pandas as pd
import pytest

from annotator.evidence import evidence_authoring as ea, question_drafts
from annotator.integration import corpus_import
from annotator.judge import calibration, llm
from annotator.labeling import evidence_rounds
from annotator.evaluation import overview, runs_import
from annotator.evidence import nuggets
from annotator.versions import versioning
from annotator.judge.held_out import HeldOut, normalize
from annotator.people.identity import LOCAL_USER, create_user
from annotator.people.roles import PermissionDenied
from golden_store.live import judging, queries
from tests.llm_server import message

PASSWORD = "correct horse battery"
VPN = "VPN-ERR-0417 means the device certificate on your laptop has expired"
Q009 = "How long does the company keep paying a new mum her full wages while she's off?"  # held out in the demo
LEAVE = "the first 18 weeks are paid at full basic salary"


@pytest.fixture
def team(demo_store, tmp_path):
    """The demo with a question for an evidence round (e1), a one-run pool and accounts:
    admin, lead, eve (engineer), ann and bob (annotators)."""
    s = demo_store
    queries.save_query(s, queries.QueryRecord("e1", "What does VPN error 0417 mean?", "paraphrase", True, "expert",
                                              date(2026, 3, 1)), actor="t", must_exist=False)
    admin = create_user(s, None, "admin", ["admin"], password=PASSWORD)
    u = {"admin": admin, "lead": create_user(s, admin, "lead", ["lead"], password=PASSWORD),
         "eve": create_user(s, admin, "eve", ["engineer"], password=PASSWORD)}
    for name in ("ann", "bob"):
        u[name] = create_user(s, admin, name, ["annotator"], password=PASSWORD)
    run = tmp_path / "sys.run"
    run.write_text("q001 Q0 vpn-troubleshooting 1 3 x\nq001 Q0 pension 2 2 x\nq002 Q0 sick-leave 1 1 x\n")
    runs_import.import_run(s, admin, run, "sys-a")
    runs_import.build_pool(s, admin, 5)
    return s, u


def _pool_item(s, qid: str, doc: str) -> tuple[str, str, int, int]:
    start, end = s.read_one("SELECT start, \"end\" FROM pool_items WHERE query_id = ? AND doc_id = ?", [qid, doc])
    return qid, doc, start, end


# ---- 1. the pending-disagreement count -----------------------------------------------------------


def test_annotators_overview_does_not_move_with_a_colleagues_grade(team):
    s, u = team
    item = _pool_item(s, "q001", "pension")
    judging.record(s, "bob", *item, op="grade", grade=3)
    judging.record(s, "ann", *item, op="grade", grade=3)
    agreed = overview.store_overview(s, u["bob"])["judging"]
    judging.record(s, "ann", *item, op="grade", grade=0)  # ann changes her mind: now they disagree
    assert overview.store_overview(s, u["bob"])["judging"] == agreed
    assert "pending" not in agreed
    assert overview.store_overview(s, u["lead"])["judging"]["pending"] == 1  # leads adjudicate it


# ---- 2. the broken-label notice ------------------------------------------------------------------


def test_broken_label_notice_shows_only_labels_the_viewer_may_see(team, tmp_path):
    s, u = team
    evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=1)
    assert evidence_rounds.my_questions(s, u["ann"]) == ["e1"]
    res = ea.resolve(s, u["ann"], VPN)
    ea.save_quote(s, u["ann"], "e1", VPN, res, res.best)
    for who in ("ann", "bob"):
        judging.record(s, who, *_pool_item(s, "q001", "vpn-troubleshooting"), op="grade", grade=3)
    # the quoted document is re-imported without the quoted sentence
    raw = s.read_one("SELECT raw_text FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    f = tmp_path / "vpn-troubleshooting.md"
    f.write_text("Rewritten.\n\n" + raw.replace("VPN-ERR-0417 means", "An unrelated sentence about printers, and"))
    corpus_import.import_paths(s, u["admin"], [f], replace=True)

    everything = "\n".join(versioning.live_problems(s, u["lead"]))
    assert "query e1 evidence" in everything and "VPN-ERR-0417 means" in everything and "by ann" in everything and "by bob" in everything
    assert sorted(versioning.live_problems(s, u["eve"])) == sorted(everything.split("\n"))  # engineers fix them
    bob = "\n".join(versioning.live_problems(s, u["bob"]))
    assert "e1" not in bob and "by ann" not in bob  # neither ann's unsettled quote nor her grade
    assert "judgment by bob" in bob  # his own labels he sees
    ann = "\n".join(versioning.live_problems(s, u["ann"]))
    assert "query e1 evidence" in ann and "by ann" in ann


# ---- 3. per-run coverage -------------------------------------------------------------------------


def test_per_run_coverage_is_for_leads_and_engineers(team):
    s, u = team
    for who in ("ann", "bob"):
        with pytest.raises(PermissionDenied, match="judged coverage"):
            runs_import.pool_status(s, u[who])
    for who in ("lead", "eve", "admin"):
        assert set(runs_import.pool_status(s, u[who])["runs"]) == {"sys-a"}


# ---- 4. held-out text and the hosted model -------------------------------------------------------


def _held_out_texts(s) -> list[str]:
    return [normalize(t) for _, t in queries.held_out_texts(s)]


def _strings(o) -> list[str]:
    if isinstance(o, str):
        return [o]
    if isinstance(o, dict):
        return [x for v in o.values() for x in _strings(v)]
    if isinstance(o, list):
        return [x for v in o for x in _strings(v)]
    return []


def assert_nothing_held_out_sent(server, s) -> None:
    """No string of any request the local server received (messages, system, batch params)
    holds a held-out question's text, compared normalized."""
    held = _held_out_texts(s)
    assert held
    sent = [normalize(x) for r in server.requests for x in _strings(r["body"])]
    leaks = [h for h in held for x in sent if h in x]
    assert not leaks, leaks


def _verdict(body):
    return 200, message(json.dumps({"justification": "j", "grade": 0, "supporting_quote": None, "p_fail": 0.9}))


def test_a_held_out_id_is_found_inside_item_ids_whatever_their_parts_hold():
    """Issue 16: system names (and transcript run or query ids) may hold '|' now, so the
    held-out check matches a query id as a '|'-delimited run of an item id, not one part of
    a split: a '|' beside it or inside it must not hide it, and a longer id is not it."""
    guard = HeldOut(frozenset({"q018", "pl|7"}))
    assert guard.id_in("rag|v2|q018|n1") == "q018"  # a piped system name before it
    assert guard.id_in("q018|learning-budget|0|10") == "q018"
    assert guard.id_in(" q018 ") == "q018"
    assert guard.id_in("run|pl|7|0") == "pl|7"  # an id holding '|' (a split would miss it)
    assert guard.id_in("rag|q0181|n1") is None and guard.id_in("xq018") is None and guard.id_in(None) is None


def test_uploaded_calibration_rows_with_held_out_text_or_id_are_never_sent(team, llm_server):
    s, u = team
    llm_server.default = _verdict
    rows = [
        {"item_id": "u1", "human_label": "pass", "question": "What does VPN error 0417 mean?", "text": VPN},
        # the held-out question's text, recased and re-spaced, under an id the store does not know
        {"item_id": "u2", "human_label": "pass", "question": "  " + Q009.upper().replace(" ", "   \n") + " ",
         "text": LEAVE},
        {"item_id": "q018|learning-budget|0|10", "human_label": "fail", "question": "Flights?", "text": "No."},
        {"item_id": "u4", "human_label": "fail", "question": "Context: " + Q009.lower(), "text": "x"},
    ]
    df = calibration.load_upload("cal.csv", pd.DataFrame(rows).to_csv(index=False).encode())
    run = calibration.run_claude_judge(s, u["lead"], df)
    assert run.skipped_held_out == 3 and set(run.labels) == {"u1"}
    assert len(llm_server.requests) == 1
    assert_nothing_held_out_sent(llm_server, s)
    # a rubric that quotes a held-out question is refused before any request
    llm_server.requests.clear()
    with pytest.raises(llm.LLMRefused, match="q009"):
        calibration.run_claude_judge(s, u["lead"], df, rubric=calibration.DEFAULT_RUBRIC + "\nExample: " + Q009)
    assert llm_server.requests == []


def test_store_calibration_set_never_sends_held_out(team, llm_server):
    s, u = team
    for qid, doc in (("q001", "vpn-troubleshooting"), ("q002", "sick-leave")):
        judging.record(s, "ann", *_pool_item(s, qid, doc), op="grade", grade=3)
    tmp_run = s.path.parent / "held.run"
    tmp_run.write_text("q009 Q0 parental-leave 1 1 x\n")
    runs_import.import_run(s, u["admin"], tmp_run, "sys-b")
    runs_import.build_pool(s, u["admin"], 5)
    judging.record(s, "ann", *_pool_item(s, "q009", "parental-leave"), op="grade", grade=3)
    llm_server.default = _verdict
    run = calibration.run_claude_judge(s, u["lead"], calibration.store_set(s, u["lead"]))
    assert run.skipped_held_out == 1 and len(llm_server.requests) == 2
    assert_nothing_held_out_sent(llm_server, s)


def _copy_of_q009(s) -> None:
    """A question that is not flagged held out but is the held-out q009, recased, with evidence."""
    queries.save_query(s, queries.QueryRecord("dup9", Q009.upper(), "paraphrase", True, "expert", date(2026, 3, 1)),
                       actor="t", must_exist=False)
    res = ea.resolve(s, LOCAL_USER, LEAVE)
    ea.save_quote(s, LOCAL_USER, "dup9", LEAVE, res, res.best)


def _nuggets_answer(body):
    return 200, message(json.dumps({"insufficient_evidence": True, "nuggets": []}))


@pytest.mark.parametrize("batch", [False, True])
def test_nugget_drafting_never_sends_held_out_text(team, llm_server, batch):
    s, u = team
    _copy_of_q009(s)
    llm_server.default = _nuggets_answer
    llm_server.batch_result = lambda cid, params: {"type": "succeeded", "message": _nuggets_answer(params)[1]}
    with pytest.raises(llm.LLMRefused, match="q009"):
        nuggets.draft(s, LOCAL_USER, "dup9")
    with pytest.raises(llm.LLMRefused, match="held out"):
        nuggets.draft(s, LOCAL_USER, "q009")
    assert llm_server.requests == []
    out = {o.query_id: o for o in nuggets.draft_many(s, LOCAL_USER, ["dup9", "q009", "q001"], batch=batch)}
    assert out["dup9"].outcome == out["q009"].outcome == "skipped"
    assert out["q001"].outcome == "insufficient_evidence"
    assert llm_server.requests
    assert_nothing_held_out_sent(llm_server, s)


def test_question_drafts_never_send_held_out_text(team, llm_server, tmp_path):
    s, u = team
    faq = tmp_path / "faq.md"
    faq.write_text("# Office FAQ\n\nHow many days a week do we need to be in the office these days?\n\nTwo.\n")
    corpus_import.import_paths(s, u["admin"], [faq])
    llm_server.default = lambda body: (200, message(json.dumps({"questions": []})))
    with pytest.raises(llm.LLMRefused, match="q024"):
        question_drafts.propose(s, u["lead"], "faq")
    assert llm_server.requests == []
    assert question_drafts.propose(s, u["lead"], "remote-work").outcome == "ok"
    assert len(llm_server.requests) == 1
    assert_nothing_held_out_sent(llm_server, s)
