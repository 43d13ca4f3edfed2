"""The server's side of a labeling surface's queue: keep it ahead, count progress from acks.

Why: every batch of labels a browser sends reruns the page's fragment before the
acknowledgements can reach the browser. When that rerun re-queried the person's next items
and re-counted their progress for every batch, the label path paid two scans of the queue per
key, and on a busy server (12 annotators, the cores shared with an import) acknowledgements
took seconds and the browser's prefetched queue ran dry (issue 29).

So the label path does only the write. This object, kept in the person's session, remembers
the cards the browser was last given and decides when the expensive queries are due:

* **refill** when the queue runs low: the cards the browser still holds (its own count, sent
  with each batch, or the server's estimate: cards given minus items acknowledged) fall below
  ``low``; also after a refused label (the item may come back with new text, a round may have
  changed the queue) and when the queue's scope changes (another order). An exhausted queue
  (the last refill came back short) is re-queried only on the recount cadence, in case new
  items entered the pool.
* **progress** is updated from the acknowledgements (a saved label on an item not yet counted
  this session adds one, a saved undo takes it back) and re-counted exactly every
  ``recount_s`` seconds, so another tab or a round started meanwhile is reflected soon.

Everything here is pure bookkeeping (no store, no Streamlit): the page passes the fetch and
count results in, and ``tests/annotator/test_label_queue.py`` drives it directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotator.labeling.labeling import Ack

LOW_WATER = 6       # refill when the browser holds fewer cards than this
RECOUNT_S = 20.0    # exact progress recount at most this often (seconds)


def item_uid(item: object) -> str:
    """A stable id for an item key (the browser tells items apart by it)."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def with_uids(cards: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cards as the browser takes them, each with its item's uid (the page path and the
    direct channel give the same)."""
    return [{**c, "uid": item_uid(c["item"])} for c in cards]


@dataclass
class QueueAhead:
    """One person's queue on one surface, as the server last gave it to their browser."""

    ahead: int = 12
    low: int = LOW_WATER
    recount_s: float = RECOUNT_S
    scope: str = ""                          # e.g. the queue order: another scope starts afresh
    cards: list[dict[str, Any]] = field(default_factory=list)  # given to the browser, minus items acknowledged
    exhausted: bool = False                  # the last refill came back short: the queue's end is in sight
    stale: bool = True                       # refill on the next chance whatever the counts say
    browser_left: int | None = None          # cards the browser said it holds (with its last batch)
    done: int | None = None
    total: int | None = None
    counted_at: float | None = None
    counted: set[str] = field(default_factory=set)  # uids counted done this session (not undone)
    refills: int = 0
    recounts: int = 0

    def note_acks(self, labels: Sequence[object], acks: Sequence[Ack]) -> None:
        """Fold one batch's acknowledgements in: labeled items leave the cards, progress moves."""
        by_id = {raw.get("id"): raw for raw in labels if isinstance(raw, dict)}
        for ack in acks:
            raw = by_id.get(ack.label_id)
            if raw is None:
                continue
            uid = item_uid(raw.get("item"))
            undo = raw.get("action") == "undo"
            if ack.status == "refused":
                self.stale = True
            elif ack.status == "duplicate" and not undo:
                self._drop(uid)  # written before (a re-send): already counted
            elif ack.status == "saved" and undo:
                if uid in self.counted:
                    self.counted.discard(uid)
                    if self.done is not None:
                        self.done = max(0, self.done - 1)
                self.stale = True  # the item is back in the queue, ahead of the cards given
            elif ack.status == "saved":
                self._drop(uid)
                if uid not in self.counted:
                    self.counted.add(uid)
                    if self.done is not None:
                        self.done += 1
                        if self.total is not None:
                            self.done = min(self.done, self.total)

    def _drop(self, uid: str) -> None:
        self.cards = [c for c in self.cards if item_uid(c.get("item")) != uid]

    def left(self) -> int:
        """How many cards the browser holds, as far as the server knows (its own word first)."""
        mine = len(self.cards)
        return mine if self.browser_left is None else min(mine, self.browser_left)

    def refill_due(self, now: float) -> bool:
        if self.stale:
            return True
        if self.exhausted:
            return self.recount_due(now)
        return self.left() < self.low

    def refill(self, cards: Sequence[dict[str, Any]], *, exhausted: bool) -> None:
        self.cards = list(cards)
        self.exhausted = exhausted
        self.stale = False
        self.browser_left = None  # the browser's count was of the cards before these
        self.refills += 1

    def recount_due(self, now: float) -> bool:
        return self.counted_at is None or now - self.counted_at >= self.recount_s

    def recounted(self, done: int, total: int, *, now: float) -> None:
        self.done, self.total, self.counted_at = done, total, now
        self.recounts += 1

    def progress(self) -> dict[str, int] | None:
        if self.done is None or self.total is None:
            return None
        return {"done": self.done, "total": self.total}
