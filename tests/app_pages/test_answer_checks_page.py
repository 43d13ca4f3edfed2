"""The Nuggets page's "Deterministic checks" section in the real app (AppTest): the per-system
table and the gate from the same service as `golden answers checks`; a baseline flags the
candidate whose answers doubled in length; a leaked <context> tag fails the gate and shows, as
the system wrote it, only in a table cell; the lead's pattern shows escaped in the gate's
Markdown; a bad regex is one sentence naming it, and nothing in the store changes."""

from __future__ import annotations

import json

import pytest

from annotator.evidence import nuggets
from annotator.people import identity
from annotator.process import context
from annotator import demo
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain, table_snapshot

pytestmark = pytest.mark.slow  # the app in AppTest with the demo loaded: ~1.2 s a test

PASSWORD = "0123456789"
SIX = ["q001", "q002", "q003", "q004", "q006", "q007"]


def _store_with_answers(tmp_path):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    demo.load_demo(store, admin)
    for system, n in (("base", 10), ("cand", 20)):
        rows = [{"query_id": q, "answer": " ".join(["word"] * n)} for q in SIX]
        if system == "cand":
            rows[0]["answer"] = "<context> " + " ".join(["word"] * (n - 1))
        f = tmp_path / f"{system}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
        nuggets.import_answers(store, admin, str(f), system)
    return store


def _open():
    at = app_as("admin")
    at.switch_page("app_pages/nuggets.py").run()
    at.radio(key="nug_mode").set_value("Scores").run()
    assert not at.exception
    return at


COLUMN = {"nug_chk_systems": "invalid citations", "nug_chk_hits": "first match", "nug_chk_strata": "stratum"}


def _frames(at, key):
    """The section's tables, told apart by a column only each has (AppTest's frames carry no key)."""
    return [d.value for d in at.dataframe if COLUMN[key] in d.value.columns]


def _frame(at, key):
    (frame,) = _frames(at, key)
    return frame


def test_the_table_the_gate_and_a_baseline(golden_db, tmp_path):
    _store_with_answers(tmp_path)
    at = _open()
    systems = _frame(at, "nug_chk_systems").set_index("system")
    assert systems.loc["cand", "gate"] == "FAIL" and systems.loc["base", "gate"] == "PASS"
    assert (systems.loc["cand", "forbidden hits"], systems.loc["base", "words median"]) == (1, 10)
    gate = next(e.value for e in at.error if "Gate: FAIL" in e.value)
    assert "cand: forbidden pattern(s) found - 'context tag' in 1 answer(s) (q001)." in plain(gate)
    hits = _frame(at, "nug_chk_hits")
    assert list(hits["first match"]) == ["<context>"]  # the system's text, in a table cell
    strata = _frame(at, "nug_chk_strata")
    assert set(strata["system"]) == {"base", "cand"} and strata["unmarked"].sum() == 12

    at.selectbox(key="nug_chk_base").set_value("base").run()
    assert not at.exception
    systems = _frame(at, "nug_chk_systems").set_index("system")
    assert systems.loc["base", "length shift vs base"] == "baseline"
    assert systems.loc["cand", "length shift vs base"] == "FLAGGED: p 0.00216, median +100%"
    gate = next(e.value for e in at.error if "Gate: FAIL" in e.value)
    assert "cand: answer length shifted against base (KS D = 1.000, p = 0.00216" in plain(gate)


def test_lead_patterns_are_escaped_and_a_bad_one_changes_nothing(golden_db, tmp_path):
    store = _store_with_answers(tmp_path)
    at = _open()
    at.text_area(key="nug_chk_forbid").input("<b>nothing</b>\nw[o]rd").run()
    assert not at.exception
    gate = next(e.value for e in at.error if "Gate: FAIL" in e.value)
    assert "<b>" not in gate and "'<b>nothing</b>' in" not in plain(gate)  # escaped, and it matched nothing
    assert "base: forbidden pattern(s) found - 'w[o]rd' in 6 answer(s)" in plain(gate)
    before = table_snapshot(store)
    at.text_area(key="nug_chk_forbid").input("w(o").run()
    assert not at.exception
    assert any(plain(e.value).startswith("The forbidden pattern 'w(o' is not a valid regular expression")
               for e in at.error)
    assert _frames(at, "nug_chk_systems") == []
    assert table_snapshot(store) == before
