"""The one rule for a system's name, and (issue 16) a '|' inside one.

Whitespace is refused wherever a system name enters, always with the same message (a name is
typed and read as one word: CLI flags, TREC run files). A '|' is a name like any other now
that nugget support labels have a real ``system`` column: a label on a system called
``rag|v2`` lands on that system, reads back, scores and calibrates as its own, and never mixes
with a system ``rag`` whose packed key would once have looked alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pandas as pd
import pytest

from annotator.evaluation import runs_import
from annotator.evidence import nuggets
from annotator.people.identity import LOCAL_USER
from golden_store.live import calibrations, results
from golden_store.live import nuggets as store_nuggets
from golden_store.core.errors import ValidationError
from tests.conftest import table_snapshot

BAD = "rag v2"
RULE = "a system name must be non-empty, with no spaces (e.g. bm25-v2)"
GOLDEN = os.path.join(os.path.dirname(sys.executable), "golden")


def _answers(tmp_path, answer="Your certificate expired.", name="answers.jsonl"):
    f = tmp_path / name
    f.write_text(json.dumps({"query_id": "q001", "answer": answer}) + "\n")
    return f


def _run(tmp_path):
    f = tmp_path / "run.txt"
    f.write_text("q001 Q0 vpn-troubleshooting 1 2.0 x\n")
    return f


def test_every_entry_refuses_whitespace_with_one_message(demo_store, tmp_path):
    before = table_snapshot(demo_store)
    attempts = [
        lambda: nuggets.import_answers(demo_store, LOCAL_USER, str(_answers(tmp_path)), BAD),
        lambda: store_nuggets.store_answers(demo_store, "tab\there", [("q001", "x")], actor="t"),
        lambda: store_nuggets.store_answers(demo_store, "", [("q001", "x")], actor="t"),
        lambda: runs_import.import_run(demo_store, LOCAL_USER, _run(tmp_path), BAD),
        lambda: results.record_evaluation(demo_store, "r1", pd.DataFrame({"AP": [0.5]}, index=["q001"]),
                                   dataset_version="v1", system=BAD),
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError) as e:
            attempt()
        assert RULE in str(e.value)
    assert table_snapshot(demo_store) == before


def test_cli_refuses_whitespace_in_system_names(tmp_path):
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)

    def golden(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([GOLDEN, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    assert golden("demo", "--small").returncode == 0
    for args in (["answers", "import", str(_answers(tmp_path)), "--system", BAD],
                 ["runs", "import", str(_run(tmp_path)), "--system", BAD]):
        r = golden(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.strip() == f"golden: System name {BAD!r} refused: {RULE}."


def _label(card: dict, action: str, value=None, **extra) -> dict:
    return {"id": uuid.uuid4().hex, "by": "local", "item": card["item"], "digest": card["digest"],
            "action": action, "value": value, "note": "", **extra}


def test_a_pipe_in_a_system_name_round_trips_through_nugget_support(demo_store, tmp_path):
    s = demo_store
    for text in ("Certificate expired", "Renew it"):
        nuggets.edit_one(s, LOCAL_USER, "q001", None, text=text, importance="vital")
    nuggets.approve(s, LOCAL_USER, "q001")
    n1, n2 = [n["nugget_id"] for n in nuggets.current(s, LOCAL_USER, "q001")]
    # two systems whose packed keys would have been confusable: "rag|v2" and "rag"
    nuggets.import_answers(s, LOCAL_USER, str(_answers(tmp_path, "Your cert expired; renew it.", "a.jsonl")), "rag|v2")
    nuggets.import_answers(s, LOCAL_USER, str(_answers(tmp_path, "Restart the router.", "b.jsonl")), "rag")
    # the keyed surface (blind: it names answers by a digest) and the direct path
    cards = nuggets.assignment_cards(s, LOCAL_USER)
    piped = [c for c in cards if c["item"]["answer"] == nuggets.answer_ref("rag|v2", "q001")]
    assert len(piped) == 2 and "rag|v2" not in json.dumps(cards)
    labels = [_label(piped[0], "assign", "support"), _label(piped[1], "assign", "support")]
    assert [a.status for a in nuggets.submit_assignments(s, LOCAL_USER, labels)] == ["saved", "saved"]
    nuggets.assign(s, LOCAL_USER, "rag", "q001", n1, "none")
    nuggets.assign(s, LOCAL_USER, "rag", "q001", n2, "partial")
    assert sorted(s.read("SELECT system, query_id, nugget_id, label FROM nugget_support_events")) == [
        ("rag", "q001", n1, "none"), ("rag", "q001", n2, "partial"),
        ("rag|v2", "q001", n1, "support"), ("rag|v2", "q001", n2, "support")]
    # read back per system, scored per system, calibrated as its own items
    got = {(a["system"], a["nugget_id"]): a["label"] for a in nuggets.assignments(s, LOCAL_USER)}
    assert got == {("rag", n1): "none", ("rag", n2): "partial", ("rag|v2", n1): "support", ("rag|v2", n2): "support"}
    assert [a["nugget_id"] for a in nuggets.assignments(s, LOCAL_USER, "rag|v2")] == [n1, n2]
    per_answer, _ = nuggets.scores(s, LOCAL_USER)
    v = per_answer.set_index("system")["v_strict"]
    assert v["rag|v2"] == 1.0 and v["rag"] == 0.0
    cal = {r["item_id"]: r["human_label"] for r in calibrations.nugget_support_set(s)}
    assert cal == {f"rag|v2|q001|{n1}": "pass", f"rag|v2|q001|{n2}": "pass", f"rag|q001|{n1}": "fail",
                   f"rag|q001|{n2}": "fail"}  # partial kept (the nugget scale), a fail at the default cut
    assert store_nuggets.counts(s)["assigned"] == 4
    # undo on the surface withdraws that label alone
    undo = _label(piped[0], "undo", target=labels[0]["id"])
    assert nuggets.submit_assignments(s, LOCAL_USER, [undo])[0].status == "saved"
    assert {a["nugget_id"] for a in nuggets.assignments(s, LOCAL_USER, "rag|v2")} == {n2}
    # replacing the piped system's answer withdraws its labels, not those of "rag"
    nuggets.import_answers(s, LOCAL_USER, str(_answers(tmp_path, "Something else.", "c.jsonl")), "rag|v2",
                           replace=True)
    assert nuggets.assignments(s, LOCAL_USER, "rag|v2") == []
    assert len(nuggets.assignments(s, LOCAL_USER, "rag")) == 2
