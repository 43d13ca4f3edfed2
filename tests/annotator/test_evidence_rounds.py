"""Double annotation of evidence quotes: a round gives the same questions to two annotators,
each sees only their own quotes on every page, "no answer" is per annotator, agreement is
measured on span overlap and answerability, the lead settles (in bulk when they agree), and
unsettled quotes stay out of a freeze."""

from __future__ import annotations

from datetime import date

import pytest

from annotator.evidence import evidence_authoring as ea, nuggets
from annotator.labeling import agreement, evidence_rounds, judging
from annotator.people.identity import create_user
from annotator.people.roles import PermissionDenied
from golden_store.live import queries
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.freezing import freeze

PASSWORD = "correct horse battery"
VPN = "VPN-ERR-0417 means the device certificate on your laptop has expired"
VPN_LONGER = ("VPN-ERR-0417 means the device certificate on your laptop has expired; open Company Portal, renew "
              "the device certificate and restart the client.")
SICK = "phone or message your line manager before 10:00 on the first morning of absence"


@pytest.fixture
def team(demo_store):
    s = demo_store
    for qid, text in (("e1", "What does VPN error 0417 mean?"), ("e2", "When must I report sick?")):
        queries.save_query(s, queries.QueryRecord(qid, text, "paraphrase", True, "expert", date(2026, 3, 1)),
                           actor="t", must_exist=False)
    admin = create_user(s, None, "admin", ["admin"], password=PASSWORD)
    u = {"admin": admin, "lead": create_user(s, admin, "lead", ["lead"], password=PASSWORD)}
    for name in ("ann", "bob", "cat"):
        u[name] = create_user(s, admin, name, ["annotator"], password=PASSWORD)
    return s, u


def _save(s, user, qid, quote):
    res = ea.resolve(s, user, quote)
    return ea.save_quote(s, user, qid, quote, res, res.best if res.status != "ambiguous" else res.candidates[0])


def test_blind_evidence_round_agreement_settlement_and_freeze(team, tmp_path):
    s, u = team
    rid = evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=5, seed=1)
    assigned = evidence_rounds.my_questions(s, u["ann"])
    assert set(assigned) == {"e1", "e2"}  # the only answerable questions without quotes
    q_ann = ea.queue(s, u["ann"])
    assert list(q_ann["query_id"][:2]) == sorted(assigned) and q_ann["in_round"][:2].all()

    eid = _save(s, u["ann"], "e1", VPN)
    # bob is blind to ann's quote: quotes, queue count, duplicate check, retract, judge and nugget views
    assert ea.quotes(s, u["bob"], "e1") == []
    assert int(ea.queue(s, u["bob"]).set_index("query_id").loc["e1", "quotes"]) == 0
    with pytest.raises(NotFoundError):
        ea.retract_quote(s, u["bob"], "e1", eid)
    assert nuggets.passages(s, "e1", user=u["bob"]) == []
    assert [p.text for p in nuggets.passages(s, "e1", user=u["ann"])] == [VPN]
    assert evidence_rounds.visible_evidence(s, u["cat"], "e1") == []  # not in the round either
    assert len(evidence_rounds.visible_evidence(s, u["lead"], "e1")) == 1  # the lead sees everyone's
    # bob quotes the same passage (not refused as a duplicate: his own quotes are separate)
    _save(s, u["bob"], "e1", VPN_LONGER)
    # e2: ann quotes, bob says "no answer" (his own verdict; the question stays answerable)
    _save(s, u["ann"], "e2", SICK)
    ea.mark_no_answer(s, u["bob"], "e2")
    assert ea.said_no_answer(s, u["bob"], "e2") and not ea.said_no_answer(s, u["ann"], "e2")
    assert queries.get_query(s, "e2").answerable
    with pytest.raises(ValidationError, match="retract them"):
        ea.mark_no_answer(s, u["ann"], "e2")

    ev = agreement.compute(s, u["lead"]).evidence
    pairs = {p["query_id"]: p for p in ev.per_question if {p["annotator_a"], p["annotator_b"]} == {"ann", "bob"}}
    assert pairs["e1"]["spans_agree"] and not pairs["e2"]["spans_agree"]
    assert not pairs["e2"]["b_answerable"] and ev.raw_answerable == 0.5

    # unsettled: their quotes stay out of a freeze, which says so
    m = freeze(s, "ev.v1", actor="eng", versions_dir=tmp_path / "v").manifest
    assert m["n_evidence_questions_pending"] == 2 and "evidence round" in m["evidence_pending_reason"]
    assert m["n_spans"] == 39  # the demo's, none of the round's

    disputes = {d.query_id: d for d in evidence_rounds.disputes(s, u["lead"])}
    assert disputes["e1"].agree is True and disputes["e2"].agree is False
    with pytest.raises(PermissionDenied):
        evidence_rounds.disputes(s, u["ann"])
    assert evidence_rounds.accept_agreeing(s, u["lead"]) == 1
    assert [q["actor"] for q in ea.quotes(s, u["bob"], "e1")] == ["ann"]  # settled: visible, one set kept
    with pytest.raises(ValidationError, match="rationale"):
        evidence_rounds.settle(s, u["lead"], "e2", "no_answer", " ")
    evidence_rounds.settle(s, u["lead"], "e2", "no_answer", "the policy does not say when")
    rec = queries.get_query(s, "e2")
    assert (rec.answerable, rec.stratum) == (False, "negative")
    assert ea.quotes(s, u["ann"], "e2") == []
    m2 = freeze(s, "ev.v2", actor="eng", versions_dir=tmp_path / "v").manifest
    assert m2["n_evidence_questions_pending"] == 0 and m2["n_spans"] == 40
    assert m2["rounds"][0]["round_id"] == rid and m2["rounds"][0]["items"] == "evidence"
    # the round's agreement still describes what the annotators said, not the settled gold
    ev2 = agreement.compute(s, u["lead"]).evidence
    assert ev2.raw_answerable == 0.5 and ev2.n_questions == 2


def test_judge_page_highlights_only_visible_evidence(team, tmp_path):
    from annotator.evaluation import runs_import

    s, u = team
    evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=2)
    _save(s, u["ann"], "e1", VPN)
    run = tmp_path / "r.txt"
    run.write_text("e1 Q0 vpn-troubleshooting 1 1 x\n")
    runs_import.import_run(s, u["admin"], run, "x")
    runs_import.build_pool(s, u["admin"], 5)
    seen_by_bob = judging.next_item(s, u["bob"])
    seen_by_ann = judging.next_item(s, u["ann"])
    assert not any(kind == "evidence" for _, kind in seen_by_bob.segments)
    assert any(kind == "evidence" for _, kind in seen_by_ann.segments)


def test_round_needs_two_annotators_with_label_roles(team):
    s, u = team
    with pytest.raises(ValidationError, match="two annotators"):
        evidence_rounds.start(s, u["lead"], ["ann"], n=2)
    with pytest.raises(ValidationError, match="cannot take part"):
        evidence_rounds.start(s, u["lead"], ["ann", "ghost"], n=2)
    with pytest.raises(PermissionDenied):
        evidence_rounds.start(s, u["ann"], ["ann", "bob"], n=2)


def test_outsiders_cannot_write_and_no_answer_blocks_quoting(team):
    s, u = team
    evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=2)
    with pytest.raises(ValidationError, match="not part of"):
        _save(s, u["cat"], "e1", VPN)
    with pytest.raises(ValidationError, match="not part of"):
        ea.mark_no_answer(s, u["cat"], "e1")
    ea.mark_no_answer(s, u["ann"], "e1")
    with pytest.raises(ValidationError, match="withdraw that first"):
        _save(s, u["ann"], "e1", VPN)
    ea.withdraw_no_answer(s, u["ann"], "e1")
    _save(s, u["ann"], "e1", VPN)
    # a lead may still quote (and is not blind); keep_all keeps only the round's annotators' quotes
    _save(s, u["lead"], "e1", VPN_LONGER)
    _save(s, u["bob"], "e1", VPN)
    evidence_rounds.settle(s, u["lead"], "e1", "keep_all", "both fine")
    assert sorted(q["actor"] for q in ea.quotes(s, u["ann"], "e1")) == ["ann", "bob"]
    # nuggets of a blind question wait for the settlement
    with pytest.raises(ValidationError, match="evidence round"):
        nuggets.save(s, u["ann"], "e2", [{"text": "x", "importance": "vital"}])
    assert nuggets.current(s, u["ann"], "e2") == []


def test_review_fixes_corpus_change_stuck_questions_and_counts(team, tmp_path):
    from annotator.evaluation import overview
    from annotator.integration import corpus_import
    from annotator.versions import versioning

    s, u = team
    evidence_rounds.start(s, u["lead"], ["ann", "bob", "cat"], n=2)
    _save(s, u["ann"], "e1", VPN)
    # home counts for annotators leave unsettled round questions out
    before = overview.store_overview(s, u["bob"])["evidence"]["spans"]
    _save(s, u["bob"], "e1", VPN)
    assert overview.store_overview(s, u["cat"])["evidence"]["spans"] == before
    assert overview.store_overview(s, u["lead"])["evidence"]["spans"] == before + 2
    # a corpus change re-places the quotes (system events) but they stay their authors'
    raw = s.read_one("SELECT raw_text FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    f = tmp_path / "vpn-troubleshooting.md"
    f.write_text("A new first line.\n\n" + raw)
    corpus_import.import_paths(s, u["admin"], [f], replace=True)
    assert s.read_one("SELECT count(*) FROM evidence_events WHERE actor LIKE 'system:%' AND query_id = 'e1'")[0] >= 1
    assert [q["author"] for q in ea.quotes(s, u["ann"], "e1")] == ["ann"]
    assert versioning.live_problems(s, u["lead"]) == []  # re-placed, nothing broken
    # not everyone finished: no bulk accept, but the lead can settle it by hand
    assert evidence_rounds.accept_agreeing(s, u["lead"]) == 0
    d = {x.query_id: x for x in evidence_rounds.disputes(s, u["lead"])}["e1"]
    assert d.agree is True and not d.complete
    with pytest.raises(ValidationError, match="no quote"):
        evidence_rounds.settle(s, u["lead"], "e1", "keep:typo", "x")
    assert evidence_rounds.settle(s, u["lead"], "e1", "keep:ann", "cat never started") == 1
    # leads decide by settling, not by a "no answer" of their own; drafting waits for settlement
    with pytest.raises(ValidationError, match="settling"):
        ea.mark_no_answer(s, u["lead"], "e2")
    with pytest.raises(ValidationError, match="evidence round"):
        nuggets.save(s, u["lead"], "e2", [{"text": "x", "importance": "vital"}])


def test_evidence_settlement_and_no_answer_are_keyed_by_the_question_whatever_its_id(team):
    """Issue 16: settlements and per-annotator "no answer" have their own tables keyed by a
    real query_id column, so nothing in the workflow depends on what an id holds. The query
    id rule refuses '|' for ids typed into query files; the question here is written with the
    store's own revision insert, as an older store or another importer could hold it, and it
    settles, counts and leaves the round like any other."""
    from golden_store.live.queries import _INSERT_REVISION, _revision_row

    s, u = team
    for qid in ("e1", "e2"):  # only the odd question in the round
        queries.retire_query(s, qid, actor="t")
    odd = "e|1"
    rec = queries.QueryRecord(odd, "What does VPN error 0417 mean?", "paraphrase", True, "expert", date(2026, 3, 1))
    s.write(lambda cur: cur.execute(_INSERT_REVISION, _revision_row(rec, "t")))
    rid = evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=5, seed=1)
    assert evidence_rounds.my_questions(s, u["ann"]) == [odd]
    _save(s, u["ann"], odd, VPN)
    ea.mark_no_answer(s, u["bob"], odd)
    assert ea.said_no_answer(s, u["bob"], odd) and not ea.said_no_answer(s, u["ann"], odd)
    assert s.read("SELECT query_id, op, actor FROM evidence_no_answer_events") == [(odd, "no_answer", "bob")]
    (d,) = evidence_rounds.disputes(s, u["lead"])
    assert d.query_id == odd and d.annotators["bob"]["no_answer"] and d.complete and d.agree is False
    row = next(r for r in rounds_list(s, u["lead"]) if r["round_id"] == rid)
    assert (row["n_assignments"], row["n_done"]) == (2, 2)
    evidence_rounds.settle(s, u["lead"], odd, "keep:ann", "ann quoted the error line")
    assert s.read("SELECT query_id, decision, note, actor FROM evidence_settlement_events") == [
        (odd, "keep:ann", "ann quoted the error line", "lead")]
    assert evidence_rounds.disputes(s, u["lead"]) == [] and evidence_rounds.my_questions(s, u["ann"]) == []
    assert s.read("SELECT count(*) FROM unsettled_evidence_questions") == [(0,)]
    assert [e["author"] for e in evidence_rounds.visible_evidence(s, u["bob"], odd)] == ["ann"]


def rounds_list(s, user):
    from annotator.labeling import rounds

    return rounds.list_rounds(s, user)


def test_nugget_status_is_cached_per_generation_and_each_visitor_sees_only_their_own_evidence(team):
    """The Nuggets page's question table is read once per store generation (issue 19) and made
    blind per visitor on a copy: an annotator's view never changes what the lead is shown,
    nor the other way round, and a new quote shows at once."""
    s, u = team
    evidence_rounds.start(s, u["lead"], ["ann", "bob"], n=5, seed=1)
    _save(s, u["ann"], "e1", VPN)

    def n_evidence(who: str) -> int:
        return next(r["n_evidence"] for r in nuggets.status(s, u[who]) if r["query_id"] == "e1")

    for _ in range(2):  # the second pass reads the cached table
        assert (n_evidence("lead"), n_evidence("bob"), n_evidence("ann"), n_evidence("lead")) == (1, 0, 1, 1)
    _save(s, u["bob"], "e1", VPN_LONGER)
    assert (n_evidence("bob"), n_evidence("ann"), n_evidence("lead")) == (1, 1, 2)
