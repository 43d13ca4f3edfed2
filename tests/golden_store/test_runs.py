"""Run import (TREC and JSONL passages placed as spans) and pool building (issue 5, part 1)."""

from __future__ import annotations

import json

import pytest

from annotator.evaluation import runs_import
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.live import grade_state
from golden_store.core.errors import ValidationError
from golden_store.db.store import utcnow
from tests.conftest import table_snapshot

ENG = User("eng", "Eng", frozenset({Role.ENGINEER}))
QUOTE = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"


def _trec(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join(f"{q} Q0 {d} {r} {s} sys\n" for q, d, r, s in lines))
    return p


def test_trec_run_import_ranks_by_score_and_stores_whole_documents(demo_store, tmp_path):
    p = _trec(tmp_path, "a.txt", [("q001", "pension", 1, 1.0), ("q001", "vpn-troubleshooting", 2, 5.0)])
    assert runs_import.import_run(demo_store, ENG, p, "bm25") == 2
    rows = demo_store.read("SELECT rank, doc_id, start, \"end\" FROM run_results WHERE system = 'bm25' ORDER BY rank")
    n = demo_store.read_one("SELECT length(raw_text) FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    assert rows[0] == (1, "vpn-troubleshooting", 0, n)
    with pytest.raises(ValidationError, match="exists"):
        runs_import.import_run(demo_store, ENG, p, "bm25")
    assert runs_import.import_run(demo_store, ENG, p, "bm25", replace=True) == 2


def test_jsonl_passages_are_placed_on_the_corpus(demo_store, tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [
        {"query_id": "q004", "doc_id": "expenses-per-diem", "text": QUOTE, "score": 3.0},
        {"query_id": "q004", "doc_id": "expenses-per-diem", "text": QUOTE.lower().replace("165", "165,"),
         "score": 2.0},
    ]) + "\n")
    runs_import.import_run(demo_store, ENG, p, "dense", "jsonl")
    rows = demo_store.read("SELECT rank, start, \"end\", match_kind FROM run_results WHERE system = 'dense' ORDER BY rank")
    raw = demo_store.read_one("SELECT raw_text FROM documents WHERE doc_id = 'expenses-per-diem'")[0]
    assert raw[rows[0][1]:rows[0][2]] == QUOTE and rows[0][3] == "exact" and rows[1][3] == "fuzzy"


@pytest.mark.parametrize("content,fmt,message", [
    ("q001 Q0 pension 1 1.0 x\n\nq999 Q0 pension 1 1.0 x\n", "trec", "bad.trec line 3: unknown query id 'q999'"),
    ("q001 Q0 nosuchdoc 1 1.0 x\n", "trec", "unknown doc id 'nosuchdoc'"),
    ("q001 Q0 pension 1 1.0 x\nq001 Q0 pension 2\n", "trec", "line 2"),
    ('{"query_id": "q001", "doc_id": "pension", "text": "Employees may keep a pet dragon at their desk", "score": 1}\n',
     "jsonl", "could not be placed in 'pension'"),
])
def test_bad_runs_are_refused_and_leave_the_store_unchanged(demo_store, tmp_path, content, fmt, message):
    p = tmp_path / f"bad.{fmt}"
    p.write_text(content)
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match=message):
        runs_import.import_run(demo_store, ENG, p, "bad", fmt)
    assert table_snapshot(demo_store) == before


def test_pool_is_the_deduplicated_union_and_extends_with_unjudged_items_only(demo_store, tmp_path):
    a = _trec(tmp_path, "a.txt", [("q001", "vpn-troubleshooting", 1, 3.0), ("q001", "pension", 2, 2.0),
                                  ("q001", "sick-leave", 3, 1.0), ("q002", "sick-leave", 1, 1.0)])
    b = _trec(tmp_path, "b.txt", [("q001", "pension", 1, 3.0), ("q001", "annual-leave", 2, 2.0),
                                  ("q002", "sick-leave", 1, 1.0)])
    runs_import.import_run(demo_store, ENG, a, "a")
    rep = runs_import.build_pool(demo_store, ENG, 2, ["a"])
    assert (rep.pool_size, rep.new_items, rep.queries) == (3, 3, 2)
    # someone judges pension for q001
    start, end = demo_store.read_one("SELECT start, \"end\" FROM pool_items WHERE doc_id = 'pension'")
    demo_store.write(lambda cur: grade_state.append_tx(cur, query_id="q001", doc_id="pension", start=start, end=end,
                                                       op="grade", grade=0, actor="ann", created_at=utcnow(),
                                                       doc_sha256=None, rubric_version=None))
    runs_import.import_run(demo_store, ENG, b, "b")
    rep = runs_import.build_pool(demo_store, ENG, 2)
    assert rep.new_items == 1 and rep.new_unjudged == 1  # only annual-leave is new
    assert rep.pool_size == 4
    assert rep.per_run["b"] == {"graded_at_k": pytest.approx((1 / 2 + 0) / 2), "k": 2}
    srcs = demo_store.read("SELECT system FROM pool_sources WHERE doc_id = 'pension' ORDER BY system")
    assert srcs == [("a",), ("b",)]  # both runs contributed it: recorded, never shown to judges
    rep = runs_import.build_pool(demo_store, ENG, 2)
    assert rep.new_items == 0


def test_only_engineers_import_runs(demo_store, tmp_path):
    p = _trec(tmp_path, "a.txt", [("q001", "pension", 1, 1.0)])
    with pytest.raises(PermissionDenied):
        runs_import.import_run(demo_store, User("ann", "Ann", frozenset({Role.ANNOTATOR})), p, "x")


def test_pool_status_and_the_manifest_pool_graded_fraction(demo_store, tmp_path):
    from golden_store.live import judging
    from golden_store.freezing import freeze
    from golden_store.live.pool import pool_status

    a = _trec(tmp_path, "a.txt", [("q001", "vpn-troubleshooting", 1, 3.0), ("q001", "pension", 2, 2.0),
                                  ("q002", "sick-leave", 1, 1.0), ("q002", "pension", 2, 0.5)])
    runs_import.import_run(demo_store, ENG, a, "a")
    runs_import.build_pool(demo_store, ENG, 10)
    items = demo_store.read_dicts("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY query_id, doc_id")
    for it, g in zip(items[:3], [3, 0, 3]):  # q001 fully judged, q002 half
        judging.record(demo_store, "ann", it["query_id"], it["doc_id"], it["start"], it["end"], op="grade", grade=g)
    st = pool_status(demo_store)["runs"]["a"]
    assert st["graded_at_10"] == pytest.approx((1.0 + 0.5) / 2)
    assert st["below_threshold"] == ["q002"] and st["queries_below_threshold"] == 1
    assert 0 <= st["ap"] <= st["bpref"] + 1e-9
    m = freeze(demo_store, "v1", actor="eng").manifest
    assert m["pool_graded_at_10"] == pytest.approx(0.75) and m["pool_graded_at_10_per_run"]["a"] == 0.75
    assert m["label_type"] == "graded_0_3"


def test_pool_cli_json_shape(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    golden = str(Path(sys.executable).parent / "golden")
    run = lambda *a: subprocess.run([golden, *a], capture_output=True, text=True, cwd=tmp_path, env=env)  # noqa: E731
    assert run("demo", "--small").returncode == 0
    _trec(tmp_path, "a.txt", [("q001", "pension", 1, 1.0), ("q001", "sick-leave", 2, 0.5)])
    r = run("runs", "import", "a.txt", "--system", "bm25")
    assert r.returncode == 0, r.stderr
    r = run("pool", "build", "--depth", "1", "--json")
    rep = json.loads(r.stdout)
    assert rep == {"queries": 1, "pool_size": 1, "new_unjudged": 1, "per_run": {"bm25": {"graded_at_k": 0.0, "k": 1}}}
    r = run("pool", "status", "--json")
    assert json.loads(r.stdout)["runs"]["bm25"]["queries_below_threshold"] == 1
    bad = tmp_path / "bad.txt"
    bad.write_text("q001 Q0 pension 1 1.0 x\nq001 Q0 pension\n")
    r = run("runs", "import", "bad.txt", "--system", "x")
    assert r.returncode == 2 and "bad.txt line 2" in r.stderr
