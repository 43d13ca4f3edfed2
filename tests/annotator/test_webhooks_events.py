"""Each webhook event emitted by its real workflow, exactly once per occurrence, in the
transaction of the change it reports (a refused or rolled-back change emits nothing), and a
slow receiver never holds up a labeler."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotator.events import webhooks
from annotator.integration import background
from annotator.labeling import adjudication, judging, rounds
from annotator.versions import versioning
from annotator.people.identity import cli_user
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.live import judging as judging_rows
from golden_store.live import webhooks as rows
from golden_store.live.results import record_evaluation
from tests.annotator.webhook_receiver import Receiver
from tests.pooled import pool_first_documents, team_accounts

PASSWORD = "correct horse battery"


@pytest.fixture
def pooled(demo_store, tmp_path):
    """The demo with a pool of 200 items and accounts: lead; ann, bob, cat (annotators)."""
    s = demo_store
    pool_first_documents(s, tmp_path, 5)
    return s, team_accounts(s, PASSWORD, ("ann", "bob", "cat"))


def _events(store, event_type):
    return [{**e, "body": json.loads(e["payload"])} for e in rows.events(store, event_type=event_type)]


def _rank(s, item) -> int:
    """The item's place among the round's items (the same for every annotator of the round)."""
    keys = s.read("SELECT DISTINCT query_id, doc_id, start, \"end\" FROM round_assignments ORDER BY 1, 2, 3, 4")
    return keys.index((item.query_id, item.doc_id, item.start, item.end))


def _grade_round(s, user, n, grade_of):
    """Grade the first ``n`` items of the user's queue (a calibration round's come first, in
    random order): ``grade_of(the item's rank in the round)``."""
    for _ in range(n):
        item = judging.next_item(s, user)
        judging.judge(s, user, item, "grade", grade_of(_rank(s, item)))


def test_round_completed_and_below_the_bar_once_when_the_last_grade_is_written(pooled):
    s, u = pooled
    rid = rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=4, seed=1)
    _grade_round(s, u["ann"], 4, lambda k: k)
    _grade_round(s, u["bob"], 3, lambda k: 3 - k)
    assert _events(s, "round.completed") == []  # one assignment left
    _grade_round(s, u["bob"], 1, lambda k: 3 - k)
    (done,) = _events(s, "round.completed")
    assert done["body"]["type"] == "round.completed" and done["actor"] == "bob"
    assert done["body"]["data"] == {"round_id": rid, "kind": "calibration", "annotators": ["ann", "bob"],
                                    "items": 4, "assignments": 8, "created_by": "lead"}
    (below,) = _events(s, "agreement.below_bar")
    data = below["body"]["data"]
    assert data["round_id"] == rid and data["value"] < data["bar"]["graded_threshold"]
    assert data["measure"] == data["bar"]["graded_measure"] == "kappa_unweighted"
    # more grades in the queue (not of the round) and the hook run again change nothing
    for _ in range(2):
        judging.judge(s, u["ann"], judging.next_item(s, u["ann"]), "grade", 1)
    last = s.read_one("SELECT query_id, doc_id, start, \"end\" FROM round_assignments WHERE annotator = 'bob' "
                      "ORDER BY 1, 2, 3 LIMIT 1")
    s.write(lambda cur: webhooks.on_grade_tx(cur, "bob", *last))
    assert len(_events(s, "round.completed")) == 1 and len(_events(s, "agreement.below_bar")) == 1
    # a split refused below the bar reads the same round: the same event, not a second one
    with pytest.raises(ValidationError, match="not split below the agreement bar"):
        rounds.split_work(s, u["lead"], ["ann", "bob", "cat"])
    assert len(_events(s, "agreement.below_bar")) == 1


def test_a_round_whose_agreement_clears_the_bar_sends_no_below_bar(pooled):
    s, u = pooled
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=4, seed=1)
    _grade_round(s, u["ann"], 4, lambda k: k)
    _grade_round(s, u["bob"], 4, lambda k: k)
    assert len(_events(s, "round.completed")) == 1 and _events(s, "agreement.below_bar") == []


def test_a_failed_split_check_emits_below_the_bar_for_the_round_it_read(pooled):
    """Grades written outside the labeling surface (as the demo loads them) emit no round
    event; the split's failed bar check still tells the pipeline, once."""
    s, u = pooled
    rid = rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=4, seed=1)
    items = s.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments WHERE annotator = 'ann' "
                   "ORDER BY 1, 2, 3")
    for k, it in enumerate(items):
        judging_rows.record(s, "ann", *it, op="grade", grade=k)
        judging_rows.record(s, "bob", *it, op="grade", grade=3 - k)
    assert _events(s, "agreement.below_bar") == []
    for _ in range(2):
        with pytest.raises(ValidationError):
            rounds.split_work(s, u["lead"], ["ann", "bob", "cat"])
    (below,) = _events(s, "agreement.below_bar")
    assert below["body"]["data"]["round_id"] == rid and below["actor"] == "lead"


def test_adjudication_decided_once_per_decision_and_a_refused_one_emits_nothing(pooled):
    s, u = pooled
    rounds.start_calibration(s, u["lead"], ["ann", "bob"], n=2, seed=1)
    _grade_round(s, u["ann"], 2, lambda k: 3)
    _grade_round(s, u["bob"], 2, lambda k: 0)
    before = len(_events(s, "adjudication.decided"))
    item = adjudication.queue(s, u["lead"])[0]
    d = adjudication.dispute(s, u["lead"], item)
    with pytest.raises(ValidationError):
        adjudication.decide(s, u["lead"], d, 2, "   ")  # no rationale: refused, rolled back
    assert len(_events(s, "adjudication.decided")) == before
    adjudication.decide(s, u["lead"], d, 2, "Partly answers it.", clarification="A partial answer is 2.")
    new = _events(s, "adjudication.decided")[before:]
    assert len(new) == 1
    assert new[0]["body"]["data"] == {
        "item": {"query_id": d.query_id, "doc_id": d.doc_id, "start": d.start, "end": d.end}, "grade": 2,
        "rationale": "Partly answers it.", "clarification": "A partial answer is 2.", "lead": "lead"}


def test_version_frozen_after_publish_and_a_refused_freeze_emits_nothing(demo_store):
    s, user = demo_store, cli_user()
    res = versioning.freeze(s, user, "hooks.v1")
    (ev,) = _events(s, "version.frozen")
    data = ev["body"]["data"]
    assert data["name"] == "hooks.v1" and data["content_digest"] == res.manifest["content_digest"]
    assert data["data_digest"] == res.manifest["data_digest"] and data["signed"] is False
    assert data["counts"]["n_queries"] == res.manifest["n_queries"] and data["location"] == str(res.path)
    with pytest.raises(GoldenError):
        versioning.freeze(s, user, "hooks.v1")
    assert len(_events(s, "version.frozen")) == 1


def test_evaluation_recorded_with_its_means_and_a_refused_record_emits_nothing(store):
    per_query = pd.DataFrame({"ndcg@10": [0.5, 1.0], "recall@100": [1.0, 0.0]},
                             index=pd.Index(["q1", "q2"], name="query_id"))
    record_evaluation(store, "bm25@v1", per_query, dataset_version="v1", system="bm25")
    with pytest.raises(ValidationError, match="already recorded"):
        record_evaluation(store, "bm25@v1", per_query, dataset_version="v1", system="bm25")
    (ev,) = _events(store, "evaluation.recorded")
    assert ev["body"]["data"] == {"evaluation_id": "bm25@v1", "version": "v1", "system": "bm25", "trial": 0,
                                  "labels": "human", "means": {"ndcg@10": 0.75, "recall@100": 0.5}}


def test_a_slow_receiver_does_not_block_a_labeler(allow_private_webhooks, pooled):
    """The delivery worker is stuck in a request the receiver holds; a grade written through
    the labeling surface returns meanwhile (ordering by events, no timing)."""
    s, u = pooled
    with Receiver(answer=lambda n: "hold" if n == 1 else 200) as rx:
        ep, _ = webhooks.add_endpoint(s, u["admin"], rx.url)
        workers = background.start(s)
        try:
            first = webhooks.send_test(s, u["admin"], ep.endpoint_id)
            assert rx.holding.wait(30)  # the worker is inside the held request
            item = judging.next_item(s, u["ann"])
            judging.judge(s, u["ann"], item, "grade", 2)  # returns although delivery is blocked
            assert judging.progress(s, u["ann"])[0] == 1
            assert rx.successes[first] == 0 and not rx.release.is_set()  # still held
            rx.release.set()
            assert rx.wait_for(lambda: rx.successes[first] == 1)
        finally:
            background.stop(workers)
    assert rows.deliveries(s)[0]["status"] == "delivered"


def test_a_signed_freeze_says_so(demo_store, tmp_path):
    from annotator.versions import signing

    key, _, _ = signing.keygen(tmp_path / "release.key")
    res = signing.freeze_signed(demo_store, cli_user(), "hooks.signed", key)
    (ev,) = _events(demo_store, "version.frozen")
    assert ev["body"]["data"]["signed"] is True and ev["body"]["data"]["name"] == res.name
