"""Driving the labeling surface (a Components v2 custom component) from AppTest.

AppTest cannot press keys in a component's JavaScript, so these helpers do what the
browser does: read the data the page gave the surface (the cards it would paint) and send
labels back as the surface's "send" trigger, through the page's real callback. The real
browser tests (tests/browser/) cover the JavaScript side.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from streamlit.components.v2.bidi_component.main import _make_trigger_id


def _element(at, key: str):
    found = [e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{key}")]
    assert found, f"no labeling surface {key!r} on the page"
    return found[0]


def surface_data(at, key: str) -> dict[str, Any]:
    """Everything the page handed the surface: items, keys, acks, progress."""
    return json.loads(_element(at, key).proto.json)


def cards(at, key: str) -> list[dict[str, Any]]:
    return surface_data(at, key)["items"]


def label_for(card: dict[str, Any], by: str, action: str, value: Any = None, note: str = "",
              target: str | None = None) -> dict[str, Any]:
    """A label as the surface makes it for ``card``."""
    out = {"id": uuid.uuid4().hex, "by": by, "uid": card["uid"], "item": card["item"], "digest": card["digest"],
           "action": action, "value": value, "note": note}
    if target:
        out["target"] = target
    return out


def send(at, key: str, labels: list[dict[str, Any]]) -> dict[str, dict]:
    """Send ``labels`` as the browser would and rerun; returns the page's acks by label id."""
    el = _element(at, key)
    states = at._tree.get_widget_states()
    w = states.widgets.add()
    w.id = _make_trigger_id(el.proto.id, "events")
    w.json_trigger_value = json.dumps([{"event": "send", "value": {"seq": 1, "labels": labels}}])
    at._run(states)
    assert not at.exception, at.exception
    return {a["label_id"]: a for a in surface_data(at, key)["acks"]}
