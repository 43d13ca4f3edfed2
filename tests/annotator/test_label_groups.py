"""Group commit of the Judge surface's labels (issue 41 item 1: a label in a few milliseconds of
server CPU): the labels that reach the channel while a transaction is under way are written
together in the next one (annotator/labeling/label_channel.py ``LabelGroups``), set-wise.

Nothing about a label may change with it: each is acknowledged only after its group committed;
a label sent twice is written once (also twice in one group); a label the Judge rules refuse is
refused with the same sentence as without the group, and the labels of its batch after it are
written the ordinary way, in order; an undo, a label of another person, a label of a round go
the ordinary way; the grading state equals the log (tests/golden_store/test_grade_state.py's
check); and concurrent annotators' labels all land, once each, on the items they name."""

from __future__ import annotations

import threading
import uuid

from annotator.labeling import judging, label_channel
from annotator.labeling.label_channel import Channel
from annotator.people import sessions
from tests.annotator.test_labeling import pooled  # noqa: F401  (fixture)
from tests.golden_store.test_grade_state import assert_state_matches_log
from tests.waiting import wait_until


def _pass(user, token: str, page: str = "p1") -> str:
    return label_channel.issue(user, mode="accounts", session=token, surface=judging.SURFACE, scope="random",
                               page=page)


def _label(card: dict, by: str, action: str = "grade", value=2, **extra) -> dict:
    return {"id": uuid.uuid4().hex, "by": by, "item": card["item"], "digest": card["digest"], "action": action,
            "value": value, "note": "", **extra}


def _cards(ch: Channel, s, user, token: str) -> list[dict]:
    return ch.batch(s, {"pass": _pass(user, token), "labels": [], "left": 0}, local_client=False)["items"]


def _grades(s) -> list[tuple]:
    return s.read("SELECT actor, query_id, doc_id, start, \"end\", op, grade FROM grade_events ORDER BY event_id")


def _key(card: dict) -> tuple:
    i = card["item"]
    return (i["query_id"], i["doc_id"], i["start"], i["end"])


def test_one_group_keeps_every_rule_of_a_label_written_alone(pooled):  # noqa: F811
    """Four batches held behind a transaction under way become one group: a grade, its repeat
    from another batch (one event, 'duplicate'), a label on changed text (refused in the
    Judge's own words) followed by a grade in the same batch (written after it), an undo, and
    a label another person made (refused): acks and events as without the group."""
    s, u = pooled
    ch = Channel()
    tok = {n: sessions.start(s, u[n]) for n in ("ann", "bob")}
    cards = {n: _cards(ch, s, u[n], tok[n]) for n in ("ann", "bob")}
    first = _label(cards["ann"][0], "ann", value=3)
    undo_target = _label(cards["ann"][1], "ann", value=1)
    assert [a["status"] for a in ch.batch(s, {"pass": _pass(u["ann"], tok["ann"]), "labels": [undo_target],
                                              "left": 10}, local_client=False)["acks"]] == ["saved"]
    skip = _label(cards["ann"][2], "ann", action="skip", value=None)
    stale = _label(cards["bob"][0], "bob", value=2) | {"digest": "0" * 24}
    after_stale = _label(cards["bob"][1], "bob", value=0)
    batches = {
        "a1": (u["ann"], [first]),
        "a2": (u["ann"], [dict(first), skip]),
        "a4": (u["ann"], [dict(skip)]),  # the same label again, in the same group
        "b1": (u["bob"], [stale, after_stale, _label(cards["bob"][2], "ann", value=1)]),
        "a3": (u["ann"], [{"id": uuid.uuid4().hex, "by": "ann", "item": cards["ann"][1]["item"], "digest": "",
                           "action": "undo", "target": undo_target["id"]}]),
    }
    groups = ch.groups(s)
    answers: dict[str, dict] = {}

    def send(name: str) -> None:
        user, labels = batches[name]
        answers[name] = ch.batch(s, {"pass": _pass(user, tok[user.username], page=name), "labels": labels,
                                     "left": 9}, local_client=False)

    threads = {n: threading.Thread(target=send, args=(n,)) for n in batches}
    groups_before = groups.groups
    if s.engine == "duckdb":
        with s._write_lock:  # a transaction under way: whatever arrives meanwhile waits for it
            threads["a1"].start()
            wait_until(lambda: groups._leading, "the first batch to lead its group")
            for n in ("a2", "b1", "a3", "a4"):
                threads[n].start()
            wait_until(lambda: len(groups._queue) == 4, "four batches waiting together")
    else:  # PostgreSQL: several processes write; the channel writes each label alone, as before
        for t in threads.values():
            t.start()
    for t in threads.values():
        t.join(timeout=60)
    acks = {n: [(a["status"], a["message"]) for a in answers[n]["acks"]] for n in batches}
    assert acks["a1"] == [("saved", "")]
    assert acks["a2"][0] == ("duplicate", "")
    assert sorted([acks["a2"][1], *acks["a4"]]) == [("duplicate", ""), ("saved", "")]  # written once
    assert acks["b1"][0][0] == "refused" and "changed since it was shown" in acks["b1"][0][1]
    assert acks["b1"][1] == ("saved", "")
    assert acks["b1"][2] == ("refused", "Not saved: this label was made by ann, and bob is signed in now.")
    assert acks["a3"] == [("saved", "")]
    if s.engine == "duckdb":
        assert groups.groups == groups_before + 2  # a1 alone, then the four others together
    events = _grades(s)
    assert events.count(("ann", *_key(cards["ann"][0]), "grade", 3)) == 1
    assert ("ann", *_key(cards["ann"][2]), "skip", None) in events
    assert ("bob", *_key(cards["bob"][1]), "grade", 0) in events
    assert not [e for e in events if e[0] == "bob" and e[1:5] in (_key(cards["bob"][0]), _key(cards["bob"][2]))]
    assert events.count(("ann", *_key(cards["ann"][2]), "skip", None)) == 1
    assert ("ann", *_key(cards["ann"][1]), "retract", None) in events
    assert s.read_one("SELECT count(*) FROM label_receipts WHERE label_id = ?", [first["id"]])[0] == 1
    assert assert_state_matches_log(s) > 0


def test_concurrent_annotators_land_once_each_on_the_items_they_name(pooled):  # noqa: F811
    """Three annotators sending one-label batches as fast as they are answered, from threads
    (the API's thread pool): every label acknowledged 'saved', stored once, by its annotator,
    on its item with its grade; re-grades of one item by two people recount the item; the
    state equals the log."""
    s, u = pooled
    ch = Channel()
    names = ("ann", "bob", "cat")
    tok = {n: sessions.start(s, u[n]) for n in names}
    sent: dict[str, list[dict]] = {n: [] for n in names}
    acks: dict[str, list[str]] = {n: [] for n in names}
    shared = [c.card() for c in judging.next_items(s, u["ann"], 2)]  # the same two items for everyone

    def work(name: str) -> None:
        shared_keys = {_key(x) for x in shared}
        cards = [c for c in _cards(ch, s, u[name], tok[name]) if _key(c) not in shared_keys]
        for k in range(10):
            card = shared[k] if k < 2 else cards.pop(0)
            label = _label(card, name, value=(k + len(name)) % 4)
            sent[name].append(label)
            answer = ch.batch(s, {"pass": _pass(u[name], tok[name]), "labels": [label], "left": len(cards)},
                              local_client=False)
            acks[name] += [a["status"] for a in answer["acks"]]
            if answer["items"] is not None:
                cards = [c for c in answer["items"] if _key(c) not in shared_keys]

    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(a == ["saved"] * 10 for a in acks.values()), acks
    stored = _grades(s)
    expected = sorted((n, *_key(lb), "grade", lb["value"]) for n in names for lb in sent[n])
    assert sorted(e for e in stored if e[0] in names) == expected
    item = s.read_one("SELECT n_graded, actors FROM grade_item_state WHERE query_id = ? AND doc_id = ? AND start = ? "
                      "AND \"end\" = ?", list(_key(shared[0])))
    assert item == (3, "ann,bob,cat")
    assert assert_state_matches_log(s) > 0
