"""Issue 18 item 7: a '|' in a system name is refused wherever a system name enters (nugget
support labels are keyed ``system|query_id|nugget_id``; a '|' in the name would drop that
system's labels from scoring), always with the same message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from annotator import nuggets, runs_import
from annotator.identity import LOCAL_USER
from golden_store import nuggets as store_nuggets
from golden_store import results
from golden_store.errors import ValidationError
from tests.conftest import table_snapshot

BAD = "rag|v2"
RULE = "a system name must be non-empty, with no spaces and no '|' (e.g. bm25-v2)"
GOLDEN = os.path.join(os.path.dirname(sys.executable), "golden")


def _answers(tmp_path):
    f = tmp_path / "answers.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "Your certificate expired."}) + "\n")
    return f


def _run(tmp_path):
    f = tmp_path / "run.txt"
    f.write_text("q001 Q0 vpn-troubleshooting 1 2.0 x\n")
    return f


def test_every_entry_refuses_a_pipe_with_one_message(demo_store, tmp_path):
    before = table_snapshot(demo_store)
    attempts = [
        lambda: nuggets.import_answers(demo_store, LOCAL_USER, str(_answers(tmp_path)), BAD),
        lambda: store_nuggets.store_answers(demo_store, BAD, [("q001", "x")], actor="t"),
        lambda: runs_import.import_run(demo_store, LOCAL_USER, _run(tmp_path), BAD),
        lambda: runs_import.import_run(demo_store, LOCAL_USER, _run(tmp_path), "has space"),
        lambda: results.record_run(demo_store, "r1", pd.DataFrame({"AP": [0.5]}, index=["q001"]),
                                   dataset_version="v1", system=BAD),
    ]
    for attempt in attempts:
        with pytest.raises(ValidationError) as e:
            attempt()
        assert RULE in str(e.value)
    assert table_snapshot(demo_store) == before


def test_cli_refuses_a_pipe_in_system_names(tmp_path):
    env = dict(os.environ, GOLDEN_DB=str(tmp_path / "g.duckdb"))

    def golden(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([GOLDEN, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    assert golden("demo").returncode == 0
    for args in (["answers", "import", str(_answers(tmp_path)), "--system", BAD],
                 ["runs", "import", str(_run(tmp_path)), "--system", BAD]):
        r = golden(*args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stderr.strip() == f"golden: System name {BAD!r} refused: {RULE}."
