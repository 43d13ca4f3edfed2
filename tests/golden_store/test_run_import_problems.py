"""Run import reports every problem of an upload at once (issue 29, M9): bad lines each with
the file and line, unknown query ids and unknown doc ids named with their lines and counted,
as the corpus importer does; skipping unknown doc ids as well as unknown query ids; still all
or nothing."""

from __future__ import annotations

import json

import pytest

from annotator.evaluation import runs_import
from annotator.people.identity import User
from annotator.people.roles import Role
from golden_store.core.errors import OptionRequiredError, ValidationError
from tests.conftest import table_snapshot

ENG = User("eng", "Eng", frozenset({Role.ENGINEER}))

# The review's file: 7 lines, a good one first and last, then a 4-field line, score abc,
# score NaN, query q999 and document no-such-doc.
REVIEW_FILE = (
    "q001 Q0 pension 1 3.0 sys\n"
    "q001 Q0 sick-leave 2\n"
    "q001 Q0 annual-leave 3 abc sys\n"
    "q002 Q0 pension 1 NaN sys\n"
    "q999 Q0 pension 1 2.0 sys\n"
    "q002 Q0 no-such-doc 2 1.0 sys\n"
    "q002 Q0 sick-leave 3 0.5 sys\n"
)


def test_one_upload_reports_every_problem_of_the_review_file(demo_store, tmp_path):
    p = tmp_path / "bad.trec"
    p.write_text(REVIEW_FILE)
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "bad")
    exc = err.value
    assert exc.summary == ("Run import refused: 3 bad line(s); 1 unknown query id(s) ('q999'); 1 unknown doc id(s) "
                           "('no-such-doc'); nothing was imported.")
    assert exc.problems == [
        f"{p} line 2: not a run line: expected 6 fields like 'q1 Q0 doc7 1 12.5 bm25', got 4.",
        f"{p} line 3: score 'abc' is not a number (only finite numbers).",
        f"{p} line 4: score 'NaN' is not a number (only finite numbers).",
        f"{p} line 5: unknown query id 'q999' (not in the store's queries)",
        f"{p} line 6: unknown doc id 'no-such-doc' (not in the corpus)",
    ]
    assert table_snapshot(demo_store) == before
    # an upload's own name is what the page's messages call the file
    with pytest.raises(ValidationError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "bad", name="mine.trec")
    assert all(x.startswith("mine.trec line ") for x in err.value.problems)


def test_unknown_ids_are_named_with_their_lines_the_first_ten_then_counted(demo_store, tmp_path):
    lines = [f"q9{i:02d} Q0 pension 1 1.0 sys\n" for i in range(12)]  # 12 unknown queries, lines 1-12
    lines += ["q001 Q0 ghost 1 1.0 sys\n", "q002 Q0 ghost 1 1.0 sys\n"]  # one unknown doc, lines 13-14
    p = tmp_path / "ids.trec"
    p.write_text("# a comment line\n" + "".join(lines))
    with pytest.raises(OptionRequiredError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "ids")
    exc = err.value
    assert exc.option == "--skip-unknown --skip-unknown-docs"
    assert "12 unknown query id(s) ('q900', 'q901', 'q902', 'q903', 'q904', ...)" in exc.summary
    assert "1 unknown doc id(s) ('ghost')" in exc.summary
    assert exc.problems[:2] == [f"{p} line 2: unknown query id 'q900' (not in the store's queries)",
                                f"{p} line 3: unknown query id 'q901' (not in the store's queries)"]
    assert exc.problems[9] == f"{p} line 11: unknown query id 'q909' (not in the store's queries)"
    assert exc.problems[10] == f"{p}: ... and 2 more unknown query id(s)"
    assert exc.problems[11] == f"{p} line 14: unknown doc id 'ghost' (not in the corpus; also on line 15)"
    assert len(exc.problems) == 12


def test_skipping_unknown_doc_ids_imports_the_rest_and_counts_them(demo_store, tmp_path):
    p = tmp_path / "docs.trec"
    p.write_text("q001 Q0 pension 1 3.0 sys\nq001 Q0 ghost 2 2.0 sys\nq002 Q0 ghost 1 1.0 sys\n"
                 "q002 Q0 phantom 2 0.5 sys\nq999 Q0 pension 1 1.0 sys\n")
    before = table_snapshot(demo_store)
    with pytest.raises(OptionRequiredError) as err:  # the unknown query alone still refuses
        runs_import.import_run_file(demo_store, ENG, p, "docs", skip_unknown_docs=True)
    assert err.value.option == "--skip-unknown" and "q999" in err.value.summary
    assert table_snapshot(demo_store) == before
    with pytest.raises(OptionRequiredError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "docs", skip_unknown=True)
    assert err.value.option == "--skip-unknown-docs" and "Pass --skip-unknown-docs" in str(err.value)
    rep = runs_import.import_run_file(demo_store, ENG, p, "docs", skip_unknown=True, skip_unknown_docs=True)
    assert (rep.n_results, rep.skipped_lines, rep.skipped_queries) == (1, 1, ("q999",))
    assert (rep.skipped_doc_lines, rep.skipped_docs) == (3, ("ghost", "phantom"))
    assert rep.summary() == ("Imported 1 results as run docs (trec). Skipped 1 line(s) for 1 unknown query id(s): "
                             "q999. Skipped 3 line(s) for 2 unknown doc id(s): ghost, phantom.")
    assert demo_store.read("SELECT query_id, doc_id FROM run_results WHERE system = 'docs'") == [("q001", "pension")]


def test_bad_lines_refuse_even_with_both_skips(demo_store, tmp_path):
    p = tmp_path / "b.trec"
    p.write_text("q001 Q0 pension 1 3.0 sys\nq001 Q0 ghost 2 x sys\n")
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "b", skip_unknown=True, skip_unknown_docs=True)
    assert not isinstance(err.value, OptionRequiredError)
    assert err.value.problems == [f"{p} line 2: score 'x' is not a number (only finite numbers)."]
    assert table_snapshot(demo_store) == before


def test_jsonl_runs_skip_unknown_doc_ids_too(demo_store, tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [
        {"query_id": "q001", "doc_id": "pension", "start": 0, "end": 10, "score": 2.0},
        {"query_id": "q001", "doc_id": "ghost", "start": 0, "end": 10, "score": 1.0},
    ]) + "\n")
    with pytest.raises(OptionRequiredError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "j")
    assert err.value.option == "--skip-unknown-docs" and err.value.problems == [f"{p} line 2: unknown doc id 'ghost'"]
    rep = runs_import.import_run_file(demo_store, ENG, p, "j", skip_unknown_docs=True)
    assert (rep.n_results, rep.skipped_doc_lines, rep.skipped_docs) == (1, 1, ("ghost",))


def test_a_run_listing_a_document_twice_for_a_query_is_refused_at_import(demo_store, tmp_path):
    """Probe U4 (issue 37, item 7): the importer stored q001's document at ranks 1 and 2,
    though golden score and trec_eval refuse such a run; now it is refused with the file and
    both lines, nothing imported (no option lets it through)."""
    p = tmp_path / "dup.trec"
    p.write_text("q001 Q0 vpn-troubleshooting 1 16.8 x\n"
                 "q002 Q0 remote-work 1 5.0 x\n"
                 "q001 Q0 vpn-troubleshooting 2 3.0 x\n")
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError) as err:
        runs_import.import_run_file(demo_store, ENG, p, "s_dup", skip_unknown=True, skip_unknown_docs=True)
    exc = err.value
    assert not isinstance(exc, OptionRequiredError)
    assert "a document listed twice for one query" in exc.summary and "nothing was imported" in exc.summary
    assert exc.problems == [f"{p} line 3: query 'q001' lists document 'vpn-troubleshooting' again (first on line 1); "
                            "a run ranks each document once per query (golden score and trec_eval refuse it too)"]
    assert table_snapshot(demo_store) == before
