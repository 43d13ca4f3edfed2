"""The client-side labeling surface: a Streamlit custom component (Components v2, inline
JS/CSS beside this file, no iframe, nothing to build) that holds a prefetched queue of items,
paints the next one the moment a key is pressed, and sends each label to Python with its own
id and a digest of what was on screen.

Python's part is small: receive the labels (a trigger value, handled in the component's
callback before the page runs, so the queue the page then builds already reflects them), hand
them to the surface's ``submit`` in ``annotator/`` (which owns the rules), and give the
browser back the acknowledgements of that batch and the next items. An acknowledgement lost
to an interrupted rerun is not lost: its label stays in the browser's outbox, goes again with
the next batch, and is answered as a duplicate (written once).

The label path comes first (issue 29): a page that passes ``fetch`` and ``count`` instead of
``cards`` and ``progress`` lets the surface keep its queue ahead
(:class:`annotator.labeling.label_queue.QueueAhead` in the session): a batch of labels then costs its
write and nothing else, the next items are re-queried only when the browser's queue runs low,
and progress is counted from the acknowledgements with an exact recount every few seconds.

What the browser sends (trigger ``send``): ``{"seq", "labels": [...], "left": <cards it
holds>}``; a batch with no labels is a request for more items (its queue ran low).

DOM attributes on the surface's root (``.gs-root``), for tests and benchmarks:

* ``data-uid``: the item painted now (its key as JSON), empty when none is;
* ``data-saved`` / ``data-refused``: labels acknowledged as saved / refused in this page (its
  own and those it sent for another tab or an earlier visit: an outbox it adopted);
* ``data-saved-here``: of the saved ones, those made in this page: the status line's "Saved"
  (issue 37 item 10; the adopted ones are said apart, "N more saved from another tab or an
  earlier visit");
* ``data-pending``: labels made and not acknowledged yet (kept in the outbox);
* ``data-connection``: ``ok``, or why pending labels are not saved: ``offline`` (the browser
  says so), ``unreachable`` (the page lost its connection), ``no-answer`` (no answer for 8 s);
  then a sentence under the status line (``.gs-notice``) says what that means;
* ``data-rate``: the labels/hour figure shown, empty while there is none (``labelRate`` in
  surface.js: only once 10 labels span 2 minutes; the pace over the last 15 minutes);
* ``data-state``: ``labeling`` (an item is on screen), ``browsing`` (looking back at one's
  own label), ``loading`` (the queue ran empty while the pool is not exhausted: a key then
  labels nothing and says so), ``empty`` (nothing left to label);
* ``data-queue``: items waiting in the browser behind the one on screen;
* ``data-unused``: keys pressed while nothing was on screen (each reported in the status);
* ``data-channel``: ``direct`` while labels go through the direct channel, else ``page``;
* ``data-updates``: how many times the page has given the surface its data (each run of it).

The direct channel (issue 29): under ``golden serve`` a surface with ``fetch``/``count`` whose
surface the channel knows (:data:`annotator.labeling.label_channel.SURFACES`) is also given a label
pass, and its browser posts batches to the API process's ``/surface/v1/batch`` instead of
rerunning this fragment; the page path stays for everything the channel cannot take.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from annotator.labeling.label_queue import QueueAhead, item_uid, with_uids
from annotator.labeling.labeling import Ack
from app_pages._shared import label_pass

_HERE = Path(__file__).resolve().parent
_COMPONENT = st.components.v2.component(
    "golden_labeling_surface",
    css=(_HERE / "surface.css").read_text(encoding="utf-8"),
    js=(_HERE / "surface.js").read_text(encoding="utf-8"),
)
_ACKS_KEPT = 500


def _acks_key(key: str) -> str:
    return f"_label_acks_{key}"


def _sent_key(key: str) -> str:
    return f"_label_sent_{key}"


def _queue_key(key: str) -> str:
    return f"_label_queue_{key}"


def _page_id(key: str) -> str:
    """This browser session's id for the surface's queue on the direct channel."""
    return st.session_state.setdefault(f"_label_page_{key}", secrets.token_hex(8))


def _receive(key: str, submit: Callable[[list], list[Ack]]) -> None:
    """Component callback: write the labels the browser sent; keep the acknowledgements (and
    fold them into the queue kept ahead, when the page uses one)."""
    result = st.session_state.get(key)
    sent = getattr(result, "send", None) if result is not None else None
    if not isinstance(sent, dict):
        return
    labels = sent.get("labels") or []
    # the page answers for this batch's labels only: a label whose answer was lost is still in
    # the browser's outbox, so it comes again and is answered again (a duplicate writes nothing)
    st.session_state[_sent_key(key)] = [raw.get("id") for raw in labels if isinstance(raw, dict)] \
        if isinstance(labels, list) else []
    acks: dict[str, dict] = st.session_state.setdefault(_acks_key(key), {})
    answered = submit(labels) if labels else []
    for ack in answered:
        acks.pop(ack.label_id, None)
        acks[ack.label_id] = ack.to_json()
    while len(acks) > _ACKS_KEPT:
        acks.pop(next(iter(acks)))
    queue = st.session_state.get(_queue_key(key))
    if isinstance(queue, QueueAhead):
        queue.note_acks(labels if isinstance(labels, list) else [], answered)
        left = sent.get("left")
        queue.browser_left = left if type(left) is int and left >= 0 else None


def _acks_for_last_batch(key: str) -> list[dict]:
    """The acknowledgements of the labels in the browser's last batch (not every one kept:
    in a long session that list grew to 500 per rerun)."""
    acks = st.session_state.get(_acks_key(key), {})
    return [acks[i] for i in st.session_state.get(_sent_key(key), []) if isinstance(i, str) and i in acks]


def uid(item: dict[str, Any]) -> str:
    """A stable id for an item key (the browser tells items apart by it)."""
    return item_uid(item)


def _queue_ahead(key: str, actor: str, scope: str, ahead: int, fetch: Callable[[int], list[dict[str, Any]]],
                 count: Callable[[], tuple[int, int]]) -> QueueAhead:
    """The session's queue for this surface, refilled and recounted only when due. It is the
    signed-in person's: another sign-in in the same browser session starts afresh (never
    another person's cards or counts)."""
    scope = f"{actor}\x1f{scope}"
    queue = st.session_state.get(_queue_key(key))
    if not isinstance(queue, QueueAhead) or queue.scope != scope or queue.ahead != ahead:
        queue = QueueAhead(ahead=ahead, scope=scope)
        st.session_state[_queue_key(key)] = queue
    now = time.monotonic()
    if queue.refill_due(now):
        cards = fetch(ahead)
        queue.refill(cards, exhausted=len(cards) < ahead)
    if queue.recount_due(now):
        done, total = count()
        queue.recounted(done, total, now=now)
    return queue


def labeling_surface(*, key: str, surface: str, actor: str, keys: Sequence[tuple[str, str, Any, str]],
                     submit: Callable[[list], list[Ack]], cards: Sequence[dict[str, Any]] = (),
                     progress: dict[str, int] | None = None, exhausted: bool = False,
                     fetch: Callable[[int], list[dict[str, Any]]] | None = None,
                     count: Callable[[], tuple[int, int]] | None = None, ahead: int = 12, scope: str = "",
                     empty: str = "Nothing left in your queue.", empty_pool: str | None = None,
                     note: str = "Note (optional)", noun: str = "items",
                     note_required: bool = False, fields: Sequence[tuple[str, str]] = ()) -> None:
    """Mount the surface. ``cards`` are the next items (``item``, ``digest``, ``title``,
    ``meta``, ``blocks``, optionally ``notice``: a line shown above the item), ``keys`` the
    surface's (key, action, value, label) and ``submit`` writes a list of raw labels and
    returns one Ack each. ``note`` labels the note field (``note_required``: no key labels
    until it is written); ``fields`` adds optional text fields (name, label) whose values
    travel with the label.

    Instead of ``cards``/``progress``/``exhausted`` (computed by the page on every rerun), a
    page may pass ``fetch(n)`` (the next ``n`` cards) and ``count()`` ((done, total)): the
    surface then keeps ``ahead`` cards in the browser and calls them only when due (see
    :mod:`annotator.labeling.label_queue`); ``scope`` names what the queue depends on (e.g. its order).
    ``empty_pool`` replaces ``empty`` when the count says the queue has no items at all;
    ``noun`` names the items in "Loading the next passages…"."""
    low = 0  # the browser asks for more below this many cards (0: it never asks, the page refills each run)
    direct = None
    if fetch is not None and count is not None:
        queue = _queue_ahead(key, actor, scope, ahead, fetch, count)
        cards, progress, exhausted, low = queue.cards, queue.progress(), queue.exhausted, queue.low
        direct = label_pass(surface, scope, _page_id(key))
    if empty_pool is not None and progress is not None and progress.get("total") == 0:
        empty = empty_pool
    data = {
        "surface": surface,
        "actor": actor,
        "low": low,
        "items": with_uids(cards),
        "keys": [{"key": k, "action": a, "value": v, "label": lbl} for k, a, v, lbl in keys],
        "acks": _acks_for_last_batch(key),
        "progress": progress,
        "exhausted": exhausted,
        "empty": empty,
        "noun": noun,
        "note": {"label": note, "required": note_required},
        "fields": [{"name": n, "label": lbl} for n, lbl in fields],
        "direct": direct,
    }
    _COMPONENT(key=key, data=data, on_send_change=lambda: _receive(key, submit))
