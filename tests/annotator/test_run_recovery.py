"""Issue 17 item 5: a run import can be recovered from. Unknown query ids can be skipped (and
are counted), errors name the file as the person knows it, the CLI and the page say what to
ask for, the format is told from the content, and a lead or engineer can retire a run (an
event: its results and pool contributions stay recorded; it leaves new pools and the
coverage list)."""

from __future__ import annotations

import json
import os

import pytest

from annotator import cli
from annotator.evaluation import runs_import
from annotator.people.identity import User
from annotator.people.roles import PermissionDenied, Role
from golden_store.live import runs
from golden_store.core.errors import NotFoundError, OptionRequiredError, ValidationError
from golden_store.db.store import Store
from tests.conftest import table_snapshot

ENG = User("eng", "Eng", frozenset({Role.ENGINEER}))
LEAD = User("lead", "Lead", frozenset({Role.LEAD}))
ANN = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
QUOTE = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"

TREC_WITH_UNKNOWN = ("q001 Q0 pension 1 2.0 x\n"
                     "q999 Q0 pension 1 2.0 x\n"
                     "q001 Q0 sick-leave 2 1.0 x\n"
                     "q999 Q0 sick-leave 2 1.0 x\n"
                     "q998 Q0 pension 1 1.0 x\n")


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---- skipping unknown query ids -------------------------------------------------------------


def test_unknown_query_ids_refuse_the_run_and_say_how_to_skip_them(demo_store, tmp_path):
    p = _write(tmp_path, "a.trec", TREC_WITH_UNKNOWN)
    before = table_snapshot(demo_store)
    with pytest.raises(OptionRequiredError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "bm25")
    assert err.value.option == "--skip-unknown"
    assert "--skip-unknown" in str(err.value) and "2 unknown query id(s)" in str(err.value)
    assert f"{p} line 2: unknown query id 'q999'" in str(err.value)
    assert table_snapshot(demo_store) == before


def test_skip_unknown_imports_the_rest_and_counts_lines_and_queries(demo_store, tmp_path):
    p = _write(tmp_path, "a.trec", TREC_WITH_UNKNOWN)
    rep = runs_import.import_run_file(demo_store, ENG, p, "bm25", skip_unknown=True)
    assert (rep.n_results, rep.skipped_lines, rep.skipped_queries, rep.fmt) == (2, 3, ("q998", "q999"), "trec")
    assert "Skipped 3 line(s) for 2 unknown query id(s): q998, q999." in rep.summary()
    rows = demo_store.read("SELECT query_id, doc_id, rank FROM run_results WHERE system = 'bm25' ORDER BY rank")
    assert rows == [("q001", "pension", 1), ("q001", "sick-leave", 2)]


def test_skip_unknown_in_a_passage_run(demo_store, tmp_path):
    lines = [{"query_id": "q004", "doc_id": "expenses-per-diem", "text": QUOTE, "score": 3.0},
             {"query_id": "nope", "doc_id": "expenses-per-diem", "text": QUOTE, "score": 2.0}]
    p = _write(tmp_path, "p.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(OptionRequiredError, match="p.jsonl line 2: unknown query id 'nope'"):
        runs_import.import_run_file(demo_store, ENG, p, "dense")
    rep = runs_import.import_run_file(demo_store, ENG, p, "dense", skip_unknown=True)
    assert (rep.n_results, rep.skipped_lines, rep.skipped_queries, rep.fmt) == (1, 1, ("nope",), "jsonl")


def test_skipping_never_hides_other_problems(demo_store, tmp_path):
    before = table_snapshot(demo_store)
    p = _write(tmp_path, "a.trec", "q001 Q0 nosuchdoc 1 2.0 x\nq999 Q0 pension 1 2.0 x\n")
    with pytest.raises(ValidationError, match="unknown doc id 'nosuchdoc'") as err:
        runs_import.import_run_file(demo_store, ENG, p, "bm25", skip_unknown=True)
    # the unknown doc is still refused; its own option (issue 29, M9) would skip it too
    assert isinstance(err.value, OptionRequiredError) and err.value.option == "--skip-unknown-docs"
    only_unknown = _write(tmp_path, "b.trec", "q999 Q0 pension 1 2.0 x\n")
    with pytest.raises(ValidationError, match="every result names a query id the store does not know"):
        runs_import.import_run_file(demo_store, ENG, only_unknown, "bm25", skip_unknown=True)
    bad_json = _write(tmp_path, "c.jsonl", '{"query_id": "nope", "doc_id": "pension", "text": "x", "score": 1}\n{oops\n')
    with pytest.raises(ValidationError, match="c.jsonl line 2: not valid JSON") as err:
        runs_import.import_run_file(demo_store, ENG, bad_json, "dense")
    assert not isinstance(err.value, OptionRequiredError)  # skipping would not let it through
    assert table_snapshot(demo_store) == before


# ---- the file's own name, the format from the content -----------------------------------------


@pytest.mark.parametrize("content,expected", [
    (b"", "my run.trec: the file is empty."),
    (b"q001 Q0 pension 1 1.0 x\nq001 Q0 pension\n", "my run.trec line 2"),
    (b"q001 Q0 pension 1 1.0 x\nq999 Q0 pension 2 0.5 x\n", "my run.trec line 2: unknown query id 'q999'"),
    (b"q001 Q0 pension 1 1.0 x\n\xff\n", "my run.trec line 2: not valid UTF-8"),
])
def test_errors_name_the_uploaded_file_not_its_temporary_copy(demo_store, tmp_path, content, expected):
    p = tmp_path / "tmpcopy-xyz"
    p.write_bytes(content)
    with pytest.raises(ValidationError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "bm25", "trec" if content else None, name="my run.trec")
    assert expected in str(err.value)
    assert str(p) not in str(err.value) and "tmpcopy" not in str(err.value)


def test_the_format_is_told_from_the_content(demo_store, tmp_path):
    jsonl = _write(tmp_path, "passages.txt", json.dumps(
        {"query_id": "q004", "doc_id": "expenses-per-diem", "text": QUOTE, "score": 1}) + "\n")
    assert runs_import.import_run_file(demo_store, ENG, jsonl, "dense").fmt == "jsonl"
    trec = _write(tmp_path, "run.jsonl", "# a comment\n\nq001 Q0 pension 1 1.0 x\n")
    assert runs_import.import_run_file(demo_store, ENG, trec, "bm25").fmt == "trec"
    neither = _write(tmp_path, "odd.txt", "query,doc,score\n")
    with pytest.raises(ValidationError, match=r"odd.txt line 1: cannot tell the run's format"):
        runs_import.import_run_file(demo_store, ENG, neither, "x")
    assert runs.detect_format("x", b"\xef\xbb\xbf{\"query_id\": 1}\n") == "jsonl"


def test_an_existing_name_asks_for_replace(demo_store, tmp_path):
    p = _write(tmp_path, "a.trec", "q001 Q0 pension 1 1.0 x\n")
    runs_import.import_run_file(demo_store, ENG, p, "bm25")
    with pytest.raises(OptionRequiredError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "bm25")
    assert err.value.option == "--replace" and "Pass --replace" in str(err.value)
    assert "--replace" not in err.value.reason  # the page says what to tick instead


# ---- retiring a run -----------------------------------------------------------------------------


def _two_runs_and_a_pool(store, tmp_path):
    a = _write(tmp_path, "a.trec", "q001 Q0 pension 1 2.0 x\nq001 Q0 sick-leave 2 1.0 x\n")
    b = _write(tmp_path, "b.trec", "q001 Q0 annual-leave 1 2.0 x\nq002 Q0 pension 1 1.0 x\n")
    runs_import.import_run(store, ENG, a, "a")
    runs_import.import_run(store, ENG, b, "b")
    runs_import.build_pool(store, ENG, 1)


def test_a_retired_run_leaves_new_pools_and_coverage_but_keeps_its_history(demo_store, tmp_path):
    _two_runs_and_a_pool(demo_store, tmp_path)
    results = sorted(demo_store.read("SELECT * FROM run_results"), key=repr)
    sources = sorted(demo_store.read("SELECT * FROM pool_sources"), key=repr)
    runs_import.retire_run(demo_store, LEAD, "b", "indexing bug in this build")
    # its results and pool contributions stay recorded
    assert sorted(demo_store.read("SELECT * FROM run_results"), key=repr) == results
    assert sorted(demo_store.read("SELECT * FROM pool_sources"), key=repr) == sources
    table = runs_import.run_table(demo_store, ENG).set_index("system")
    assert table.loc["b", "status"] == "retired" and table.loc["a", "status"] == "active"
    assert table.loc["b", "retired_by"] == "lead" and table.loc["b", "reason"] == "indexing bug in this build"
    # left out of the coverage list and of new pools
    assert list(runs_import.pool_status(demo_store, ENG)["runs"]) == ["a"]
    b_sources = sorted(demo_store.read("SELECT * FROM pool_sources WHERE system = 'b'"), key=repr)
    rep = runs_import.build_pool(demo_store, ENG, 2)
    assert rep.new_items == 1 and list(rep.per_run) == ["a"]  # a's second result; nothing from b
    assert sorted(demo_store.read("SELECT * FROM pool_sources WHERE system = 'b'"), key=repr) == b_sources
    with pytest.raises(ValidationError, match="'b' are retired"):
        runs_import.build_pool(demo_store, ENG, 3, ["b"])
    # a retired name is not silently reused
    with pytest.raises(ValidationError, match="was retired and is kept in the history"):
        runs_import.import_run(demo_store, ENG, tmp_path / "a.trec", "b", replace=True)
    # restoring is a new event; the history keeps both
    runs_import.restore_run(demo_store, ENG, "b")
    assert list(runs_import.pool_status(demo_store, ENG)["runs"]) == ["a", "b"]
    hist = runs_import.run_history(demo_store, ENG)
    assert list(hist["op"]) == ["retire", "restore"] and list(hist["actor"]) == ["lead", "eng"]


def test_retiring_is_checked_in_the_annotator_layer(demo_store, tmp_path):
    _two_runs_and_a_pool(demo_store, tmp_path)
    before = table_snapshot(demo_store)
    with pytest.raises(PermissionDenied):
        runs_import.retire_run(demo_store, ANN, "a", "because")
    with pytest.raises(ValidationError, match="Say why"):
        runs_import.retire_run(demo_store, ENG, "a", "  ")
    with pytest.raises(NotFoundError, match="No imported run named 'zzz'"):
        runs_import.retire_run(demo_store, ENG, "zzz", "gone")
    with pytest.raises(ValidationError, match="not retired"):
        runs_import.restore_run(demo_store, ENG, "a")
    assert table_snapshot(demo_store) == before
    runs_import.retire_run(demo_store, ENG, "a", "old")
    with pytest.raises(ValidationError, match="already retired"):
        runs_import.retire_run(demo_store, ENG, "a", "again")


def test_the_manifest_pool_graded_fraction_leaves_retired_runs_out(demo_store, tmp_path):
    from annotator.versions import versioning
    from annotator.people.identity import cli_user

    _two_runs_and_a_pool(demo_store, tmp_path)
    runs_import.retire_run(demo_store, ENG, "b", "broken")
    res = versioning.freeze(demo_store, cli_user(), "v1")
    assert list(res.manifest["pool_graded_at_10_per_run"]) == ["a"]


# ---- the CLI ------------------------------------------------------------------------------------


def test_cli_skip_unknown_retire_and_list(tmp_path, capsys):
    db = os.environ["GOLDEN_DB"]
    from annotator.demo import load_demo
    from annotator.people.identity import cli_user

    with Store.open(db) as s:
        load_demo(s, cli_user())
    p = _write(tmp_path, "a.trec", TREC_WITH_UNKNOWN)
    assert cli.main(["--db", str(db), "runs", "import", str(p), "--system", "bm25"]) == 2
    err = capsys.readouterr().err
    assert "Pass --skip-unknown" in err and "q999" in err
    assert cli.main(["--db", str(db), "runs", "import", str(p), "--system", "bm25", "--skip-unknown"]) == 0
    out = capsys.readouterr().out
    assert "Imported 2 results as run bm25 (trec). Skipped 3 line(s) for 2 unknown query id(s): q998, q999." in out
    assert cli.main(["--db", str(db), "runs", "import", str(p), "--system", "bm25", "--skip-unknown"]) == 2
    assert "Pass --replace" in capsys.readouterr().err
    assert cli.main(["--db", str(db), "runs", "retire", "bm25", "--reason", "stale index"]) == 0
    assert "Retired run 'bm25'" in capsys.readouterr().out
    assert cli.main(["--db", str(db), "runs", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["system"], r["status"], r["reason"]) for r in listed] == [("bm25", "retired", "stale index")]
    assert cli.main(["--db", str(db), "pool", "build", "--depth", "5"]) == 2
    assert "No active runs" in capsys.readouterr().err
    assert cli.main(["--db", str(db), "runs", "restore", "bm25"]) == 0
    assert cli.main(["--db", str(db), "pool", "build", "--depth", "5"]) == 0
