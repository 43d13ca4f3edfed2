"""The client-side labeling surface: a Streamlit custom component (Components v2, inline
JS/CSS beside this file, no iframe, nothing to build) that holds a prefetched queue of items,
paints the next one the moment a key is pressed, and sends each label to Python with its own
id and a digest of what was on screen.

Python's part is small: receive the labels (a trigger value, handled in the component's
callback before the page runs, so the queue the page then builds already reflects them), hand
them to the surface's ``submit`` in ``annotator/`` (which owns the rules), and give the
browser back the acknowledgements and the next items. Acknowledgements are kept in the
session, so one lost to an interrupted rerun is delivered on the next; a label the browser
re-sends is a duplicate and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from annotator.labeling import Ack

_HERE = Path(__file__).resolve().parent
_COMPONENT = st.components.v2.component(
    "golden_labeling_surface",
    css=(_HERE / "surface.css").read_text(encoding="utf-8"),
    js=(_HERE / "surface.js").read_text(encoding="utf-8"),
)
_ACKS_KEPT = 500


def _acks_key(key: str) -> str:
    return f"_label_acks_{key}"


def _receive(key: str, submit: Callable[[list], list[Ack]]) -> None:
    """Component callback: write the labels the browser sent; keep the acknowledgements."""
    result = st.session_state.get(key)
    sent = getattr(result, "send", None) if result is not None else None
    if not isinstance(sent, dict):
        return
    acks: dict[str, dict] = st.session_state.setdefault(_acks_key(key), {})
    for ack in submit(sent.get("labels") or []):
        acks.pop(ack.label_id, None)
        acks[ack.label_id] = ack.to_json()
    while len(acks) > _ACKS_KEPT:
        acks.pop(next(iter(acks)))


def uid(item: dict[str, Any]) -> str:
    """A stable id for an item key (the browser tells items apart by it)."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def labeling_surface(*, key: str, surface: str, actor: str, cards: Sequence[dict[str, Any]],
                     keys: Sequence[tuple[str, str, Any, str]], submit: Callable[[list], list[Ack]],
                     progress: dict[str, int] | None = None, exhausted: bool = False,
                     empty: str = "Nothing left in your queue.", note: str = "Note (optional)",
                     note_required: bool = False, fields: Sequence[tuple[str, str]] = ()) -> None:
    """Mount the surface. ``cards`` are the next items (``item``, ``digest``, ``title``,
    ``meta``, ``blocks``, optionally ``notice``: a line shown above the item), ``keys`` the surface's (key, action, value, label) and ``submit``
    writes a list of raw labels and returns one Ack each. ``note`` labels the note field
    (``note_required``: no key labels until it is written); ``fields`` adds optional text
    fields (name, label) whose values travel with the label."""
    data = {
        "surface": surface,
        "actor": actor,
        "items": [{**c, "uid": uid(c["item"])} for c in cards],
        "keys": [{"key": k, "action": a, "value": v, "label": lbl} for k, a, v, lbl in keys],
        "acks": list(st.session_state.get(_acks_key(key), {}).values()),
        "progress": progress,
        "exhausted": exhausted,
        "empty": empty,
        "note": {"label": note, "required": note_required},
        "fields": [{"name": n, "label": lbl} for n, lbl in fields],
    }
    _COMPONENT(key=key, data=data, on_send_change=lambda: _receive(key, submit))
