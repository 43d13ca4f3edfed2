"""The direct label channel (annotator/labeling/label_channel.py, issue 29 item 1): a pass stands only
as issued, by this process, unexpired; every batch re-derives the person (an ended sign-in,
a disabled account, a store that gained accounts stop it); labels go through the surface's
own rules (bound to what was shown, written once per id); the queue is refilled only when
the browser runs low, and progress moves with the acknowledgements."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest

from annotator.labeling import judging, label_channel
from annotator.people import sessions
from annotator.people.identity import LOCAL_USER, create_user, set_disabled
from annotator.labeling.label_channel import Channel, ChannelRefused
from annotator.labeling.label_queue import LOW_WATER
from tests.annotator.test_labeling import _events, _key, pooled  # noqa: F401  (fixture)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _pass(user, session: str | None = None, *, mode: str = "accounts", scope: str = "random", page: str = "p1",
          now: float | None = None) -> str:
    return label_channel.issue(user, mode=mode, session=session, surface=judging.SURFACE, scope=scope, page=page,
                               now=now)


def _signed(body: bytes) -> str:
    """A body signed with this process's key (what only a bug could issue)."""
    import base64

    return base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + label_channel._sign(body)


def _grade(card: dict, by: str, value: int = 2) -> dict:
    return {"id": uuid.uuid4().hex, "by": by, "uid": card["uid"], "item": card["item"], "digest": card["digest"],
            "action": "grade", "value": value, "note": ""}


def test_a_pass_stands_only_as_issued_by_this_process_and_unexpired(pooled, monkeypatch):
    s, u = pooled
    good = _pass(u["ann"], "tok", now=0.0 + 1e9)
    claims = label_channel.open_pass(good, now=1e9 + 60)
    assert (claims.user, claims.mode, claims.session, claims.surface, claims.scope) == (
        "ann", "accounts", sessions.digest("tok"), judging.SURFACE, "random")
    assert "tok" not in json.dumps(dataclasses.asdict(claims))  # a pass is never a way to sign in
    body, sig = good.rsplit(".", 1)
    forged = _pass(u["lead"], "tok", now=1e9).rsplit(".", 1)[0] + "." + sig  # another body, ann's signature
    for bad, why in [(forged, "not issued by this server"), (body + ".x", "not issued by this server"),
                     ("", "No label pass"), (None, "No label pass"), ("%%%.abc", "not issued by this server"),
                     (_signed(b"[1]"), "damaged"), (_signed(b'{"user": "ann"}'), "damaged")]:
        with pytest.raises(ChannelRefused, match=why):
            label_channel.open_pass(bad, now=1e9 + 60)
    with pytest.raises(ChannelRefused, match="expired"):
        label_channel.open_pass(good, now=1e9 + label_channel.PASS_LIFETIME_S + 1)
    monkeypatch.setattr(label_channel, "_KEY", b"another process's key" * 2)  # a restarted server
    with pytest.raises(ChannelRefused, match="restarted"):
        label_channel.open_pass(good, now=1e9 + 60)


def test_a_batch_writes_each_label_on_the_item_it_names_once(pooled):
    s, u = pooled
    ch = Channel()
    token = sessions.start(s, u["ann"])
    first = ch.batch(s, {"pass": _pass(u["ann"], token), "labels": [], "left": 0}, local_client=False)
    cards = first["items"]
    assert len(cards) == judging.QUEUE_AHEAD and first["acks"] == []
    assert first["progress"] == {"done": 0, "total": judging.progress(s, u["ann"])[1]}
    labels = [_grade(cards[1], "ann", 3), _grade(cards[0], "ann", 1)]  # not the server's order
    answer = ch.batch(s, {"pass": _pass(u["ann"], token), "labels": labels, "left": 10}, local_client=False)
    assert [(a["label_id"], a["status"]) for a in answer["acks"]] == [(x["id"], "saved") for x in labels]
    again = ch.batch(s, {"pass": _pass(u["ann"], token), "labels": labels, "left": 10}, local_client=False)
    assert [a["status"] for a in again["acks"]] == ["duplicate", "duplicate"]  # a re-send writes nothing
    assert _events(s, "ann") == [(*_key(cards[1]), "grade", 3), (*_key(cards[0]), "grade", 1)]
    assert answer["progress"]["done"] == 2
    # a label made by another person (a browser's unsent labels never change owner), and a changed digest
    other = _grade(cards[2], "bob")
    stale = {**_grade(cards[3], "ann"), "digest": "0" * 24}
    refused = ch.batch(s, {"pass": _pass(u["ann"], token), "labels": [other, stale], "left": 8}, local_client=False)
    assert [a["status"] for a in refused["acks"]] == ["refused", "refused"]
    assert "made by bob" in refused["acks"][0]["message"] and "changed since it was shown" in refused["acks"][1]["message"]
    assert len(_events(s, "ann")) == 2 and _events(s, "bob") == []


def test_the_queue_is_refilled_only_when_the_browser_runs_low(pooled):
    s, u = pooled
    ch = Channel()
    token = sessions.start(s, u["ann"])
    p = _pass(u["ann"], token)
    cards = ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=False)["items"]
    held = len(cards)
    for card in cards[:held - LOW_WATER]:  # the browser still holds LOW_WATER or more: no re-query
        held -= 1
        answer = ch.batch(s, {"pass": p, "labels": [_grade(card, "ann")], "left": held}, local_client=False)
        assert answer["items"] is None, held
    card = cards[held - LOW_WATER + (judging.QUEUE_AHEAD - held)]
    answer = ch.batch(s, {"pass": p, "labels": [_grade(card, "ann")], "left": LOW_WATER - 1}, local_client=False)
    assert answer["items"] is not None and len(answer["items"]) == judging.QUEUE_AHEAD
    labeled = {c["uid"] for c in cards[:judging.QUEUE_AHEAD - LOW_WATER + 1]}
    assert not labeled & {c["uid"] for c in answer["items"]}  # the next cards exclude what was labeled
    # another order (scope) is another queue: refilled at once
    other = ch.batch(s, {"pass": _pass(u["ann"], token, scope="by_query"), "labels": [], "left": 12},
                     local_client=False)
    assert other["items"] is not None


def test_every_batch_re_derives_the_person(pooled):
    s, u = pooled
    clock = Clock()
    ch = Channel(clock=clock)
    token = sessions.start(s, u["ann"])
    p = _pass(u["ann"], token)
    card = ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=False)["items"][0]
    sessions.end(s, token)  # signed out in another tab
    clock.t += label_channel.RECHECK_S
    with pytest.raises(ChannelRefused, match="Nobody is signed in"):
        ch.batch(s, {"pass": p, "labels": [_grade(card, "ann")], "left": 11}, local_client=False)
    token2 = sessions.start(s, u["ann"])
    set_disabled(s, u["admin"], "ann", True)
    clock.t += label_channel.RECHECK_S
    with pytest.raises(ChannelRefused, match="Nobody is signed in"):
        ch.batch(s, {"pass": _pass(u["ann"], token2), "labels": [_grade(card, "ann")], "left": 11},
                 local_client=False)
    # a session token of another person in ann's pass (a forged pairing) stands for nobody
    bob = sessions.start(s, u["bob"])
    with pytest.raises(ChannelRefused, match="Nobody is signed in"):
        ch.batch(s, {"pass": _pass(u["ann"], bob), "labels": [], "left": 0}, local_client=False)
    assert _events(s, "ann") == []


def test_single_user_mode_is_for_this_machine_and_ends_with_the_first_account(demo_store):
    s = demo_store
    ch = Channel()
    p = _pass(LOCAL_USER, mode="local")
    with pytest.raises(ChannelRefused, match="Nobody is signed in"):
        ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=False)  # from another machine
    assert ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=True)["acks"] == []
    create_user(s, None, "admin", ["admin"], password="correct horse battery")
    with pytest.raises(ChannelRefused, match="Nobody is signed in"):
        ch.batch(s, {"pass": p, "labels": [], "left": 0}, local_client=True)


def test_bad_batches_are_refused_with_the_reason(pooled):
    s, u = pooled
    ch = Channel()
    token = sessions.start(s, u["ann"])
    with pytest.raises(ChannelRefused, match="JSON object"):
        ch.batch(s, ["not", "an", "object"], local_client=False)
    with pytest.raises(ChannelRefused, match="labels are a list"):
        ch.batch(s, {"pass": _pass(u["ann"], token), "labels": "2"}, local_client=False)
    other_surface = label_channel.issue(u["ann"], mode="accounts", session=token, surface="transcripts",
                                        scope="", page="p")
    with pytest.raises(ChannelRefused, match="through the page"):
        ch.batch(s, {"pass": other_surface, "labels": []}, local_client=False)
