"""The group commit's one read (issue 41 item 1, second pass): ``judging.group_facts_tx``
answers in one statement what the group read in three (each item's facts, the person of
each label id written before, the rubric version in force), and each as the statement of
its own did; and the process whose channel takes Judge labels runs DuckDB on one thread
(``Store.set_threads``) unless ``GOLDEN_DUCKDB_THREADS`` says otherwise."""

from __future__ import annotations

import uuid

import pytest

from annotator.labeling import judging, label_channel
from annotator.labeling.label_channel import Channel, LabelGroups
from annotator.people import sessions
from golden_store.db.store import THREADS_ENV, Store
from golden_store.live import judging as judging_store
from golden_store.live import label_receipts
from golden_store.live.rubric import add_rubric_version, current_version_tx
from tests.annotator.test_labeling import pooled  # noqa: F401  (fixture)


def _key(card: dict) -> tuple:
    it = card["item"]
    return it["query_id"], it["doc_id"], it["start"], it["end"]


@pytest.mark.duckdb_only("the group commit is DuckDB's (PostgreSQL keeps a transaction per label)")
def test_one_read_answers_as_the_three_it_replaces(pooled):  # noqa: F811
    s, u = pooled
    ch = Channel()
    token = sessions.start(s, u["ann"])
    p = label_channel.issue(u["ann"], mode="accounts", session=token, surface=judging.SURFACE, scope="random",
                            page="p1")
    cards = ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=False)["items"]
    written = {"id": uuid.uuid4().hex, "by": "ann", "item": cards[0]["item"], "digest": cards[0]["digest"],
               "action": "grade", "value": 2, "note": ""}
    assert ch.batch(s, {"pass": p, "labels": [written], "left": 11}, local_client=False)["acks"][0]["status"] == "saved"
    add_rubric_version(s, "Grade 3 when the passage answers the question.", "first", actor=u["lead"].username)
    keys = [("ann", *_key(c)) for c in cards[:3]] + [("bob", *_key(cards[1])), ("ann", "no-such-q", "d", 0, 1)]
    fresh = uuid.uuid4().hex
    with s.cursor() as cur:
        facts, actors, version = judging_store.group_facts_tx(cur, keys, [written["id"], fresh, written["id"]])
        assert facts == judging_store.label_facts_tx(cur, keys)
        assert facts[-1] is None and all(f is not None and f["content"] for f in facts[:-1])
        assert actors == {lid: r["actor"] for lid, r in label_receipts.find_many(cur, [written["id"], fresh]).items()}
        assert actors == {written["id"]: "ann"}
        assert version == current_version_tx(cur) and version is not None
        assert judging_store.group_facts_tx(cur, [], []) == ([], {}, version)


def test_a_serving_process_runs_duckdb_on_one_thread_unless_told(tmp_path, monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    with Store.open(tmp_path / "a.duckdb") as s:
        LabelGroups(s)  # the channel's first Judge label in this process
        assert s.read_one("SELECT current_setting('threads')")[0] == label_channel.SERVE_THREADS == 1
    monkeypatch.setenv(THREADS_ENV, "3")
    with Store.open(tmp_path / "b.duckdb") as s:
        assert s.read_one("SELECT current_setting('threads')")[0] == 3
        LabelGroups(s)
        assert s.read_one("SELECT current_setting('threads')")[0] == 3  # the person's number wins
