"""Labels bound to what was shown (annotator/labeling/labeling.py and the Judge / Transcripts writers):
a label lands on the item named in it or is refused with one sentence, never on another item;
a repeated label id writes once; undo is a new event; order options of the queue."""

from __future__ import annotations

import dataclasses
import threading
import uuid

import pytest

from annotator.evaluation import transcripts
from annotator.labeling import judging, rounds
from annotator.people.identity import LOCAL_USER, create_user
from annotator.labeling.labeling import LabelRefused
from golden_store.live.queries import get_query, save_query
from golden_store.live.transcripts import parse_item_key
from tests.annotator.test_transcripts import _record, _write
from tests.conftest import prepared_store
from tests.pooled import pool_first_documents, team_accounts

PASSWORD = "correct horse battery"


def _pool_and_people(s, folder):
    pool_first_documents(s, folder, 4)
    return team_accounts(s, PASSWORD, ("ann", "bob", "cat"))


@pytest.fixture
def pooled(request, golden_db):
    """The demo with a pool of 40 queries x 4 documents, a lead and two annotators (built once,
    copied)."""
    store, users = prepared_store(request, "demo-pooled-people", _pool_and_people, demo=True)
    return store, dict(users)


def _label(card: dict, by: str, action: str = "grade", value=2, **extra) -> dict:
    return {"id": uuid.uuid4().hex, "by": by, "item": card["item"], "digest": card["digest"], "action": action,
            "value": value, "note": "", **extra}


def _events(s, actor: str) -> list[tuple]:
    return s.read("SELECT query_id, doc_id, start, \"end\", op, grade FROM grade_events WHERE actor = ? "
                  "ORDER BY event_id", [actor])


def _key(card: dict) -> tuple:
    i = card["item"]
    return (i["query_id"], i["doc_id"], i["start"], i["end"])


def test_a_grade_lands_on_the_item_it_names_not_on_the_servers_next_item(pooled):
    """Repro A at the service level: two tabs show the same item; tab 2 grades it, then tab 1
    grades what *it* shows. Both grades land on that item, never on the next one."""
    s, u = pooled
    shown = judging.next_items(s, u["ann"], 1)[0].card()
    tab2 = _label(shown, "ann", value=3)
    tab1 = _label(shown, "ann", value=0)
    assert [a.status for a in judging.submit(s, u["ann"], [tab2])] == ["saved"]
    assert [a.status for a in judging.submit(s, u["ann"], [tab1])] == ["saved"]
    assert _events(s, "ann") == [(*_key(shown), "grade", 3), (*_key(shown), "grade", 0)]


def test_a_round_started_meanwhile_never_receives_a_key_meant_for_the_item_shown(pooled):
    """Repro B: ann looks at an item; a lead starts a round giving other items to ann and
    bob; ann's key grades the item she saw (or is refused), never a round item."""
    s, u = pooled
    shown = judging.next_items(s, u["ann"], 1)[0].card()
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=5, seed=1)
    round_items = {r for r in s.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments")}
    ack = judging.submit(s, u["ann"], [_label(shown, "ann", value=2)])[0]
    events = _events(s, "ann")
    if ack.status == "saved":
        assert events == [(*_key(shown), "grade", 2)]
    else:
        assert events == [] and ack.message.startswith("Not saved")
    assert not ({e[:4] for e in events} & (round_items - {_key(shown)}))


def test_an_item_a_round_gave_to_others_is_refused_with_a_sentence(pooled):
    s, u = pooled
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=3, seed=2)
    theirs = judging.next_items(s, u["ann"], 1)[0].card()  # a round item of ann and bob
    ack = judging.submit(s, u["cat"], [_label(theirs, "cat")])[0]
    assert ack.status == "refused" and "a round now gives it to other annotators" in ack.message
    assert _events(s, "cat") == []


def test_a_changed_question_refuses_the_label_instead_of_moving_it(pooled):
    s, u = pooled
    card = judging.next_items(s, u["ann"], 1)[0].card()
    q = get_query(s, card["item"]["query_id"])
    save_query(s, dataclasses.replace(q, text=q.text + " (edited)"), actor="lead", must_exist=True)
    ack = judging.submit(s, u["ann"], [_label(card, "ann")])[0]
    assert ack.status == "refused" and "changed since it was shown" in ack.message
    assert _events(s, "ann") == []
    # offered again with the new text, and that grade is accepted
    again = next(c.card() for c in judging.next_items(s, u["ann"], 200) if c.card()["item"] == card["item"])
    assert again["title"].endswith("(edited)")
    assert judging.submit(s, u["ann"], [_label(again, "ann")])[0].status == "saved"


def test_a_repeated_label_id_writes_once_even_from_many_threads(pooled):
    s, u = pooled
    cards = [c.card() for c in judging.next_items(s, u["ann"], 10)]
    labels = [_label(c, "ann", value=i % 4) for i, c in enumerate(cards)]
    results: list[list] = []

    def resend() -> None:
        results.append(judging.submit(s, u["ann"], labels))

    threads = [threading.Thread(target=resend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _events(s, "ann") == [(*_key(c), "grade", i % 4) for i, c in enumerate(cards)]
    for label in labels:
        statuses = sorted(r[labels.index(label)].status for r in results)
        assert statuses == ["duplicate"] * 7 + ["saved"]


def test_labels_of_another_person_or_a_stolen_id_are_refused(pooled):
    s, u = pooled
    card = judging.next_items(s, u["ann"], 1)[0].card()
    made_by_ann = _label(card, "ann")
    ack = judging.submit(s, u["bob"], [made_by_ann])[0]  # ann's unsent label, bob signed in
    assert ack.status == "refused" and "made by ann" in ack.message
    assert judging.submit(s, u["ann"], [made_by_ann])[0].status == "saved"
    stolen = {**_label(card, "bob"), "id": made_by_ann["id"]}
    ack = judging.submit(s, u["bob"], [stolen])[0]
    assert ack.status == "refused" and "another person" in ack.message
    assert _events(s, "bob") == []


def test_signed_out_labels_are_held_not_refused(pooled):
    s, u = pooled
    card = judging.next_items(s, u["ann"], 1)[0].card()
    assert judging.submit(s, None, [_label(card, "ann")])[0].status == "held"
    eve = create_user(s, u["admin"], "eve", ["engineer"], password=PASSWORD)
    assert judging.submit(s, eve, [_label(card, "eve")])[0].status == "refused"
    assert s.read_one("SELECT count(*) FROM grade_events")[0] == 0


def test_bad_labels_are_refused_one_by_one(pooled):
    s, u = pooled
    card = judging.next_items(s, u["ann"], 1)[0].card()
    good = _label(card, "ann")
    bad = [{"id": "x"}, {**_label(card, "ann"), "value": 7}, {**_label(card, "ann"), "action": "adjudicate"},
           {**_label(card, "ann"), "item": {"query_id": card["item"]["query_id"]}},
           {**_label(card, "ann"), "item": {**card["item"], "start": "0"}}, "nonsense"]
    acks = judging.submit(s, u["ann"], [*bad, good])
    assert [a.status for a in acks] == ["refused"] * 6 + ["saved"]
    assert _events(s, "ann") == [(*_key(card), "grade", 2)]


def test_undo_is_a_retract_event_and_the_item_comes_back(pooled):
    s, u = pooled
    card = judging.next_items(s, u["ann"], 1)[0].card()
    first = _label(card, "ann", value=1)
    judging.submit(s, u["ann"], [first])
    assert card["item"] not in [c.card()["item"] for c in judging.next_items(s, u["ann"], 500)]
    undo = _label(card, "ann", "undo", None, target=first["id"])
    assert judging.submit(s, u["ann"], [undo])[0].status == "saved"
    assert _events(s, "ann") == [(*_key(card), "grade", 1), (*_key(card), "retract", None)]
    assert card["item"] in [c.card()["item"] for c in judging.next_items(s, u["ann"], 500)]
    assert s.read_one("SELECT count(*) FROM current_grades WHERE actor = 'ann'")[0] == 0
    # an undo never erases a later label: undoing the first label after a new one is refused
    second = _label(card, "ann", value=3)
    judging.submit(s, u["ann"], [second])
    late = judging.submit(s, u["ann"], [_label(card, "ann", "undo", None, target=first["id"])])[0]
    assert late.status == "refused" and "again since" in late.message
    assert judging.submit(s, u["bob"], [_label(card, "bob", "undo", None, target=second["id"])])[0].status == "refused"
    assert s.read_one("SELECT grade FROM current_grades WHERE actor = 'ann'")[0] == 3


def test_the_old_judge_call_follows_the_same_rules(pooled):
    s, u = pooled
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=3, seed=2)
    theirs = judging.next_item(s, u["ann"])
    with pytest.raises(LabelRefused, match="other annotators"):
        judging.judge(s, u["cat"], theirs, "grade", 1)


def test_grouped_by_query_keeps_each_questions_passages_together(pooled):
    s, u = pooled
    items = judging.next_items(s, u["ann"], 40, order="by_query")
    qids = [i.query_id for i in items]
    runs_of = [q for k, q in enumerate(qids) if k == 0 or qids[k - 1] != q]
    assert len(runs_of) == len(set(qids)) == 10  # 4 passages per question, each question once
    shuffled = [i.query_id for i in judging.next_items(s, u["ann"], 40)]
    assert sorted(shuffled) != shuffled or len({*shuffled}) > 10  # randomized order interleaves questions
    other = [i.query_id for i in judging.next_items(s, u["bob"], 40, order="by_query")]
    assert other != qids  # each annotator has their own question order


# ---- transcripts -------------------------------------------------------------------------------


def test_the_judge_queue_reads_the_store_the_same_number_of_times_for_2_or_12_cards(pooled, monkeypatch):
    """Every key press repaints the queue ahead (12 cards): each card's document and visible
    evidence are read for all cards at once, not one statement per card (a round trip each
    on PostgreSQL). The cards are what per-card reads make."""
    from annotator.labeling.evidence_rounds import visible_evidence
    from golden_store.live import documents

    s, u = pooled
    calls: list[str] = []
    for name in ("read", "read_one", "read_dicts", "df"):
        orig = getattr(s, name)
        monkeypatch.setattr(s, name, lambda *a, _o=orig, _n=name, **k: (calls.append(_n), _o(*a, **k))[1])
    judging.next_items(s, u["ann"], 2)
    few, calls[:] = len(calls), []
    many = judging.next_items(s, u["ann"], 12)
    assert len(many) == 12 and len({c.query_id for c in many}) > 2 and len({c.doc_id for c in many}) > 2
    assert len(calls) == few
    monkeypatch.undo()
    for c in many:
        raw = documents.raw_text(s, c.doc_id)
        ev = [(e["start"], e["end"]) for e in visible_evidence(s, u["ann"], c.query_id) if e["doc_id"] == c.doc_id]
        assert c.segments == judging.marked_segments(raw[c.start:c.end], c.start, c.query_text, ev)


def test_progress_is_one_read_and_counts_the_queue(pooled, monkeypatch):
    """The Judge page asks for progress on every key press: one statement over the queue."""
    s, u = pooled
    done0, total = judging.progress(s, u["bob"])
    card = judging.next_items(s, u["bob"], 1)[0].card()
    assert judging.submit(s, u["bob"], [_label(card, "bob")])[0].status == "saved"
    calls: list[str] = []
    for name in ("read", "read_one", "read_dicts", "df"):
        orig = getattr(s, name)
        monkeypatch.setattr(s, name, lambda *a, _o=orig, _n=name, **k: (calls.append(_n), _o(*a, **k))[1])
    assert judging.progress(s, u["bob"]) == (done0 + 1, total) and total == 160
    assert len(calls) == 1


@pytest.fixture
def drawn(demo_store, tmp_path):
    s = demo_store
    transcripts.import_file(s, LOCAL_USER, _write(tmp_path, [_record("q001"), _record("q002"), _record("q003")]))
    transcripts.draw(s, LOCAL_USER, 2, 0)
    return s


def test_transcript_verdicts_land_on_the_transcript_shown_and_undo_reopens_it(drawn):
    s = drawn
    first, second = transcripts.review_cards(s, LOCAL_USER)
    a = _label(first, "local", "grader_failure", None)
    b = _label(second, "local", "system_failure", "incomplete")
    assert [x.status for x in transcripts.submit(s, LOCAL_USER, [a, b, a])] == ["saved", "saved", "duplicate"]
    rows = s.read("SELECT evaluation_id, query_id, trial, verdict, failure_class FROM transcript_review_events "
                  "ORDER BY event_id")
    assert rows == [(*parse_item_key(first["item"]["item_id"]), "grader_failure", None),
                    (*parse_item_key(second["item"]["item_id"]), "system_failure", "incomplete")]
    assert transcripts.review_cards(s, LOCAL_USER) == []
    undo = _label(second, "local", "undo", None, target=b["id"])
    assert transcripts.submit(s, LOCAL_USER, [undo])[0].status == "saved"
    assert [c["item"] for c in transcripts.review_cards(s, LOCAL_USER)] == [second["item"]]
    assert {r["item_id"]: r["verdict"] for r in transcripts.latest_draw(s, LOCAL_USER)} == {
        first["item"]["item_id"]: "grader_failure", second["item"]["item_id"]: None}


def test_a_verdict_for_another_transcript_or_one_never_drawn_is_refused(drawn):
    s = drawn
    first, second = transcripts.review_cards(s, LOCAL_USER)
    swapped = {**_label(first, "local", "ambiguous", None), "digest": second["digest"]}
    ack = transcripts.submit(s, LOCAL_USER, [swapped])[0]
    assert ack.status == "refused" and "not the transcript that was on screen" in ack.message
    undrawn = {"item_id": next(r[0] for r in s.read("SELECT evaluation_id || '|' || query_id || '|' || trial FROM transcripts")
                               if r[0] not in (first["item"]["item_id"], second["item"]["item_id"]))}
    ack = transcripts.submit(s, LOCAL_USER, [{**_label(first, "local", "ambiguous", None), "item": undrawn}])[0]
    assert ack.status == "refused" and "never drawn" in ack.message
    assert s.read_one("SELECT count(*) FROM transcript_review_events")[0] == 0


def test_earlier_samples_stay_reachable(drawn):
    s = drawn
    transcripts.draw(s, LOCAL_USER, 1, 1)  # a second sample before reviewing the first
    assert len(transcripts.review_cards(s, LOCAL_USER)) == 3


# ---- adjudication ------------------------------------------------------------------------------


@pytest.fixture
def disputed(pooled):
    """Two items ann and bob graded apart (a calibration round gave both the same items)."""
    s, u = pooled
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=2, seed=3)
    for who, grade in (("ann", 3), ("bob", 0)):
        for c in [c.card() for c in judging.next_items(s, u[who], 2)]:
            assert judging.submit(s, u[who], [_label(c, who, value=grade)])[0].status == "saved"
    return s, u


def test_a_decision_binds_to_the_labels_shown(disputed):
    from annotator.labeling import adjudication

    s, u = disputed
    first, second = adjudication.cards(s, u["lead"])
    # bob re-grades the first item after the lead's screen was painted: the decision is refused
    bob_card = {"item": first["item"], "digest": labeling_digest_of(s, first["item"])}  # his own re-grade
    assert judging.submit(s, u["bob"], [_label(bob_card, "bob", value=1)])[0].status == "saved"
    ack = adjudication.submit(s, u["lead"], [_label(first, "lead", "adjudicate", 3, note="why")])[0]
    assert ack.status == "refused" and "changed since it was shown" in ack.message
    # no rationale: refused; an annotator: refused; the lead on the second item: decided once
    assert adjudication.submit(s, u["lead"], [_label(second, "lead", "adjudicate", 3)])[0].status == "refused"
    assert adjudication.submit(s, u["ann"], [_label(second, "ann", "adjudicate", 3, note="x")])[0].status == "refused"
    decision = _label(second, "lead", "adjudicate", 3, note="fully answers")
    assert [a.status for a in adjudication.submit(s, u["lead"], [decision, decision])] == ["saved", "duplicate"]
    # a second lead deciding the same item from a stale screen is refused
    lead2 = create_user(s, u["admin"], "lead2", ["lead"], password=PASSWORD)
    late = adjudication.submit(s, lead2, [_label(second, "lead2", "adjudicate", 0, note="no")])[0]
    assert late.status == "refused" and "no longer waiting" in late.message
    assert s.read("SELECT query_id, doc_id, start, \"end\", grade, note FROM grade_events WHERE op = 'adjudicate'") == [
        (*_key(second), 3, "fully answers")]


def labeling_digest_of(s, item: dict) -> str:
    """The Judge digest of an item (question + passage), for a label made outside a queue."""
    from annotator.labeling.labeling import digest
    from golden_store.live.judging import item_content_tx

    with s.cursor() as cur:
        return digest(*item_content_tx(cur, item["query_id"], item["doc_id"], item["start"], item["end"]))


# ---- nugget assignment -------------------------------------------------------------------------


def test_support_labels_bind_to_the_answer_shown_blind_to_its_system(demo_store, tmp_path):
    import json

    from annotator.evidence import nuggets

    s = demo_store
    for text in ("Certificate expired", "Renew it"):
        nuggets.edit_one(s, LOCAL_USER, "q001", None, text=text, importance="vital")
    nuggets.approve(s, LOCAL_USER, "q001")
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "Your cert expired."}) + "\n")
    nuggets.import_answers(s, LOCAL_USER, str(f), "secret-rag")
    first, second = nuggets.assignment_cards(s, LOCAL_USER)
    assert "secret-rag" not in json.dumps([first, second])
    a = _label(first, "local", "assign", "support")
    assert [x.status for x in nuggets.submit_assignments(s, LOCAL_USER, [a, a])] == ["saved", "duplicate"]
    assert nuggets.assignment_progress(s, LOCAL_USER) == (1, 2)
    undo = _label(first, "local", "undo", None, target=a["id"])
    assert nuggets.submit_assignments(s, LOCAL_USER, [undo])[0].status == "saved"
    assert nuggets.assignment_progress(s, LOCAL_USER) == (0, 2)
    # the answer is replaced after the screen was painted: the label is refused, not moved
    f.write_text(json.dumps({"query_id": "q001", "answer": "Restart your router."}) + "\n")
    nuggets.import_answers(s, LOCAL_USER, str(f), "secret-rag", replace=True)
    ack = nuggets.submit_assignments(s, LOCAL_USER, [_label(second, "local", "assign", "none")])[0]
    assert ack.status == "refused" and "changed since it was shown" in ack.message
    assert [(r["nugget_id"], r["label"]) for r in nuggets.assignments(s, LOCAL_USER)] == []
