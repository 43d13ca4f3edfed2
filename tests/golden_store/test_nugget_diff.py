"""Issue 29, M12: diffs name the approved nuggets added, removed and changed between two frozen
versions (text, importance, supporting quote), in the JSON (``golden diff --json``), the text
(``golden diff``) and the Versions page; a diff of versions without nugget changes says 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from annotator.evidence import nuggets
from annotator.people.identity import cli_user
from golden_store import versions
from golden_store.freezing import freeze
from golden_store.versions.diff import diff_nuggets, nugget_diff_rows

Q3_ONE = "must give one month of notice"
Q3_TWO = "must give two months"


def _first_nuggets(store) -> None:
    """q003's nuggets in the first version (the basic demo has none): three, approved."""
    u = cli_user()
    for text, imp, quote in (("Under five years: one month", "vital", Q3_ONE),
                             ("Five years or more: two months", "okay", Q3_TWO),
                             ("Notice applies after probation", "okay", "")):
        nuggets.edit_one(store, u, "q003", None, text=text, importance=imp, quote=quote)
    nuggets.approve(store, u, "q003")


def _change_nuggets(store) -> None:
    """Then: n3 deleted, n2 made vital, n4 added with a quote; approved again."""
    u = cli_user()
    nuggets.edit_one(store, u, "q003", "n3", delete=True)
    nuggets.edit_one(store, u, "q003", "n2", text="Five years or more: two months", importance="vital", quote=Q3_TWO)
    nuggets.edit_one(store, u, "q003", None, text="It starts after probation", importance="okay",
                     quote="After probation")
    nuggets.approve(store, u, "q003")


def test_diff_names_nuggets_added_removed_and_changed(demo_store):
    _first_nuggets(demo_store)
    freeze(demo_store, "a", actor="eng")
    _change_nuggets(demo_store)
    freeze(demo_store, "b", actor="eng")
    d = versions.diff_versions("a", "b")
    n = d["nuggets"]
    assert n["added"] == [{"query_id": "q003", "nugget_id": "n4", "text": "It starts after probation",
                           "importance": "okay", "quote": "After probation"}]
    assert n["removed"] == [{"query_id": "q003", "nugget_id": "n3", "text": "Notice applies after probation",
                             "importance": "okay", "quote": None}]
    assert n["changed"] == [{"query_id": "q003", "nugget_id": "n2", "text": "Five years or more: two months",
                             "importance": "vital", "quote": Q3_TWO,
                             "fields": {"importance": {"from": "okay", "to": "vital"}}}]
    json.dumps(d)  # what `golden diff --json` prints

    text = versions.format_diff(d)
    assert "nuggets (approved): +1 -1 ~1" in text
    lines = text.splitlines()
    assert "  + q003 n4 [okay] 'It starts after probation' (quote: 'After probation')" in lines
    assert "  - q003 n3 [okay] 'Notice applies after probation'" in lines
    assert "  ~ q003 n2 importance: 'okay' -> 'vital'" in lines

    rows = nugget_diff_rows(d)
    assert [(r["change"], r["nugget_id"]) for r in rows] == [("changed", "n2"), ("removed", "n3"), ("added", "n4")]
    assert rows[0]["was"] == "importance: 'okay'" and rows[0]["importance"] == "vital"

    # the other way round: what was added is removed
    back = versions.diff_versions("b", "a")["nuggets"]
    assert [x["nugget_id"] for x in back["added"]] == ["n3"] and [x["nugget_id"] for x in back["removed"]] == ["n4"]


def test_nuggets_approved_after_a_version_show_as_added(demo_store):
    """The review's case: demo.v0 has no nugget of q003; three approved later are listed."""
    freeze(demo_store, "v0", actor="eng")
    _first_nuggets(demo_store)
    freeze(demo_store, "v1", actor="eng")
    n = versions.diff_versions("v0", "v1")["nuggets"]
    assert [(x["query_id"], x["nugget_id"], x["importance"]) for x in n["added"]] == [
        ("q003", "n1", "vital"), ("q003", "n2", "okay"), ("q003", "n3", "okay")]
    assert n["removed"] == n["changed"] == []


def test_versions_without_nugget_changes_diff_as_before(demo_store):
    freeze(demo_store, "a", actor="eng")
    freeze(demo_store, "b", actor="eng")
    d = versions.diff_versions("a", "b")
    assert d["nuggets"] == {"added": [], "removed": [], "changed": []}
    assert {"from", "to", "corpus_changed", "queries", "spans", "judgments", "judge_labels"} <= set(d)
    assert "nuggets (approved): +0 -0 ~0" in versions.format_diff(d).splitlines()
    # a diff dict from before nuggets were diffed still formats
    old = {k: v for k, v in d.items() if k != "nuggets"}
    assert "nuggets (approved): +0 -0 ~0" in versions.format_diff(old).splitlines()
    assert nugget_diff_rows(old) == []


def test_diff_nuggets_orders_ids_by_number():
    row = {"text": "t", "importance": "okay", "quote": None}
    got = diff_nuggets({}, {("q1", "n10"): row, ("q1", "n2"): row, ("q0", "n3"): row})
    assert [(x["query_id"], x["nugget_id"]) for x in got["added"]] == [("q0", "n3"), ("q1", "n2"), ("q1", "n10")]


def test_golden_diff_cli_shows_nuggets(demo_store, tmp_path):
    _first_nuggets(demo_store)
    freeze(demo_store, "a", actor="eng")
    _change_nuggets(demo_store)
    freeze(demo_store, "b", actor="eng")
    demo_store.close()
    env = dict(os.environ)
    env.pop("GOLDEN_VERSIONS", None)
    cmd = [sys.executable, "-m", "annotator.cli", "diff", "a", "b"]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert [(x["query_id"], x["nugget_id"]) for x in d["nuggets"]["added"]] == [("q003", "n4")]
    assert [x["nugget_id"] for x in d["nuggets"]["removed"]] == ["n3"]
    assert d["nuggets"]["changed"][0]["fields"] == {"importance": {"from": "okay", "to": "vital"}}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and "nuggets (approved): +1 -1 ~1" in out.stdout
    assert "  + q003 n4 [okay] 'It starts after probation' (quote: 'After probation')" in out.stdout
