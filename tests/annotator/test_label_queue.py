"""The server's queue kept ahead of a labeling surface (annotator/labeling/label_queue.py): refills
only when the browser's queue runs low, progress from acknowledgements equal to an exact
recount, a refused label or an undo forces a refill; and, on a real store with the Judge
surface, incremental progress matches ``judging.progress`` after grades, a re-send and undo."""

from __future__ import annotations

import uuid

from annotator.labeling import judging
from annotator.labeling.label_queue import QueueAhead, item_uid
from annotator.labeling.labeling import Ack
from tests.annotator.test_labeling import pooled  # noqa: F401  (fixture)


def _card(i: int) -> dict:
    return {"item": {"n": i}, "digest": f"d{i}"}


def _label(card: dict, action: str = "grade") -> dict:
    return {"id": uuid.uuid4().hex, "item": card["item"], "action": action}


def test_a_label_leaves_the_cards_and_counts_once() -> None:
    q = QueueAhead(ahead=4, low=2)
    q.refill([_card(i) for i in range(4)], exhausted=False)
    q.recounted(10, 50, now=0.0)
    a, b = _label(_card(0)), _label(_card(0))  # the same item twice (looked back, changed it)
    q.note_acks([a], [Ack(a["id"], "saved")])
    q.note_acks([b], [Ack(b["id"], "saved")])
    assert [c["item"]["n"] for c in q.cards] == [1, 2, 3]
    assert q.progress() == {"done": 11, "total": 50}


def test_a_duplicate_drops_the_card_without_counting_and_a_refusal_forces_a_refill() -> None:
    q = QueueAhead(ahead=4, low=2)
    q.refill([_card(i) for i in range(4)], exhausted=False)
    q.recounted(0, 4, now=0.0)
    dup, bad = _label(_card(1)), _label(_card(2))
    q.note_acks([dup, bad], [Ack(dup["id"], "duplicate"), Ack(bad["id"], "refused", "changed")])
    assert [c["item"]["n"] for c in q.cards] == [0, 2, 3]
    assert q.done == 0
    assert q.refill_due(1.0)


def test_refill_only_when_the_browser_holds_fewer_than_low() -> None:
    q = QueueAhead(ahead=6, low=3, recount_s=100.0)
    assert q.refill_due(0.0)  # nothing given yet
    q.refill([_card(i) for i in range(6)], exhausted=False)
    q.recounted(0, 100, now=0.0)
    assert not q.refill_due(1.0)
    for i in range(3):
        lab = _label(_card(i))
        q.note_acks([lab], [Ack(lab["id"], "saved")])
    assert len(q.cards) == 3 and not q.refill_due(1.0)
    q.browser_left = 2  # the browser's own word: it has labeled further than the acks say
    assert q.refill_due(1.0)
    q.refill([_card(i) for i in range(3, 9)], exhausted=False)
    assert q.browser_left is None and not q.refill_due(1.0)
    assert q.refills == 2


def test_an_exhausted_queue_is_requeried_only_on_the_recount_cadence() -> None:
    q = QueueAhead(ahead=6, low=3, recount_s=20.0)
    q.refill([_card(0)], exhausted=True)
    q.recounted(5, 6, now=100.0)
    assert not q.refill_due(110.0)
    assert q.refill_due(120.0) and q.recount_due(120.0)


def test_an_undo_takes_the_count_back_and_refills() -> None:
    q = QueueAhead(ahead=4, low=1)
    q.refill([_card(i) for i in range(4)], exhausted=False)
    q.recounted(0, 4, now=0.0)
    g = _label(_card(0))
    q.note_acks([g], [Ack(g["id"], "saved")])
    assert q.done == 1 and not q.refill_due(1.0)
    u = _label(_card(0), "undo")
    q.note_acks([u], [Ack(u["id"], "saved")])
    assert q.done == 0 and q.refill_due(1.0)


def test_held_acks_and_unknown_ids_change_nothing() -> None:
    q = QueueAhead(ahead=2, low=1)
    q.refill([_card(0), _card(1)], exhausted=False)
    q.recounted(0, 2, now=0.0)
    g = _label(_card(0))
    q.note_acks([g, "not a label"], [Ack(g["id"], "held", "signed out"), Ack("x" * 10, "saved")])
    assert len(q.cards) == 2 and q.done == 0 and not q.stale


def test_on_a_real_store_incremental_progress_equals_the_exact_count(pooled) -> None:  # noqa: F811
    """The Judge surface's own path: submit, fold the acks in, refill when due; after grades,
    a skip, a re-sent batch and an undo, the queue's count is judging.progress's."""
    s, u = pooled
    ann = u["ann"]
    q = QueueAhead(ahead=judging.QUEUE_AHEAD, low=4)
    q.refill([it.card() for it in judging.next_items(s, ann, q.ahead)], exhausted=False)
    q.recounted(*judging.progress(s, ann), now=0.0)
    assert q.done == 0 and q.total == judging.progress(s, ann)[1] > 20
    sent: list[dict] = []
    for i in range(20):
        card = q.cards[0]
        lab = {"id": uuid.uuid4().hex, "by": "ann", "item": card["item"], "digest": card["digest"],
               "action": "skip" if i % 5 == 4 else "grade", "value": i % 4, "note": ""}
        batch = [lab]
        q.note_acks(batch, judging.submit(s, ann, batch))
        sent.append(lab)
        if q.refill_due(1.0):
            q.refill([it.card() for it in judging.next_items(s, ann, q.ahead)], exhausted=False)
    assert q.refills > 1
    assert (q.done, q.total) == judging.progress(s, ann) == (20, q.total)
    acks = judging.submit(s, ann, sent[:3])  # a lost reply: the browser sends them again
    assert [a.status for a in acks] == ["duplicate"] * 3
    q.note_acks(sent[:3], acks)
    undo = {"id": uuid.uuid4().hex, "by": "ann", "item": sent[-1]["item"], "digest": sent[-1]["digest"],
            "action": "undo", "target": sent[-1]["id"], "note": ""}
    q.note_acks([undo], judging.submit(s, ann, [undo]))
    assert (q.done, q.total) == judging.progress(s, ann) == (19, q.total)
    assert q.refill_due(1.0)  # the undone item is offered again
    q.refill([it.card() for it in judging.next_items(s, ann, q.ahead)], exhausted=False)
    assert item_uid(sent[-1]["item"]) in {item_uid(c["item"]) for c in q.cards}
