"""Judgments from other labeling tools (issue 38 item 2): Label Studio's JSON-MIN export,
Prodigy's db-out JSONL and Argilla v2 record exports (the fixtures in tool_exports/ have the
tools' own shapes) are read and placed on the corpus; a JSON Lines file of any other shape is
refused naming what it is, never "not valid JSON ... export again as JSON"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotator.integration import judgments_import
from annotator.cli import main
from annotator.people.identity import cli_user
from golden_store.core.errors import ValidationError
from tests.annotator.test_judgments_import import DOCS, _fill, _grade_rows

HERE = Path(__file__).parent / "tool_exports"
FT1 = "Refunds are accepted within 30 days of delivery."
FT2 = "Shipping is free on orders over 50 euros."


def _grades(store) -> set[tuple]:
    return set(store.read("SELECT query_id, doc_id, start, \"end\", grade FROM grade_state WHERE op = 'grade'"))


@pytest.mark.parametrize(("fixture", "fmt", "expected", "unlabeled"), [
    # two annotators agreeing on task 11 are one judgment; task 13 has no annotation value
    ("labelstudio_min.json", "labelstudio-min", {("301", "FT-1", 0, len(FT1), 3), ("302", "FT-2", 0, len(FT2), 2)}, 1),
    ("prodigy_db_out.jsonl", "prodigy", {("301", "FT-1", 0, len(FT1), 3), ("302", "FT-2", 0, len(FT2), 2)}, 1),
    ("argilla_records.json", "argilla", {("301", "FT-1", 0, len(FT1), 3), ("302", "FT-2", 0, len(FT2), 2)}, 1),
    # the draft response is not a judgment; the pending record has none
    ("argilla_flat.jsonl", "argilla", {("301", "FT-1", 0, len(FT1), 3), ("302", "FT-2", 0, len(FT2), 2)}, 1),
])
def test_each_tool_s_export_is_told_from_its_records_and_lands_on_the_passages(store, tmp_path, fixture, fmt,
                                                                               expected, unlabeled):
    _fill(store, tmp_path)
    rep = judgments_import.import_judgments(store, cli_user(), HERE / fixture)
    assert (rep.fmt, rep.n_judgments, rep.unlabeled) == (fmt, 2, unlabeled)
    assert _grades(store) == expected
    assert DOCS["FT-1"].startswith(FT1) and DOCS["FT-2"].startswith(FT2)


def test_a_valid_json_lines_file_of_another_shape_is_named_for_what_it_is(store, tmp_path):
    _fill(store, tmp_path)
    f = tmp_path / "export.jsonl"
    f.write_text('{"question": "How long is the refund window?", "label": 1}\n{"question": "Is shipping free?", '
                 '"label": 0}\n')
    before = _grade_rows(store)
    with pytest.raises(ValidationError) as err:
        judgments_import.import_judgments(store, cli_user(), f)
    message = str(err.value)
    assert "JSON Lines whose first record has keys label, question" in message
    assert "Prodigy db-out JSONL, Argilla v2 records" in message and "export the project again" not in message
    assert _grade_rows(store) == before


def test_the_wrong_format_named_says_which_one_it_is(store, tmp_path):
    _fill(store, tmp_path)
    with pytest.raises(ValidationError, match="Label Studio JSON-MIN export.*--format labelstudio-min"):
        judgments_import.import_judgments(store, cli_user(), HERE / "labelstudio_min.json", "labelstudio")
    with pytest.raises(ValidationError, match="JSON Lines file .* not a Label Studio JSON export"):
        judgments_import.import_judgments(store, cli_user(), HERE / "prodigy_db_out.jsonl", "labelstudio")


def test_a_binary_prodigy_answer_means_nothing_until_mapped(store, tmp_path):
    _fill(store, tmp_path)
    f = tmp_path / "binary.jsonl"
    f.write_text("".join(json.dumps({"text": t, "meta": {"query_id": q}, "label": "RELEVANT", "answer": a,
                                     "_input_hash": i, "_task_hash": i + 1, "_view_id": "classification",
                                     "_session_id": "ds-ann"}) + "\n"
                         for i, (q, t, a) in enumerate([("301", FT1, "accept"), ("302", FT1, "reject")])))
    before = _grade_rows(store)
    with pytest.raises(ValidationError, match=r"binary.jsonl line 1: the answer 'accept' has no grade.*"
                                              r"--map 'accept=3,reject=0'"):
        judgments_import.import_judgments(store, cli_user(), f)
    assert _grade_rows(store) == before
    rep = judgments_import.import_judgments(store, cli_user(), f, grade_map="accept=3,reject=0")
    assert rep.n_judgments == 2
    assert _grades(store) == {("301", "FT-1", 0, len(FT1), 3), ("302", "FT-1", 0, len(FT1), 0)}


def test_argilla_responses_that_disagree_are_refused_naming_the_record(store, tmp_path):
    _fill(store, tmp_path)
    f = tmp_path / "argilla.json"
    f.write_text(json.dumps([{"id": "r7", "fields": {"query": "Is shipping free?", "passage": FT2},
                              "metadata": {}, "suggestions": {}, "vectors": {},
                              "responses": {"relevance": [{"value": "3", "user_id": "a"},
                                                          {"value": "0", "user_id": "b"}]}}]))
    with pytest.raises(ValidationError, match=r"argilla.json record r7: its 2 submitted responses to 'relevance' "
                                              r"disagree \(3, 0\)"):
        judgments_import.import_judgments(store, cli_user(), f)


def test_cli_reads_a_prodigy_export(store, golden_db, tmp_path, capsys):
    _fill(store, tmp_path)
    store.close()
    assert main(["judgments", "import", str(HERE / "prodigy_db_out.jsonl"), "--db", golden_db, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert (rep["format"], rep["n_judgments"], rep["unlabeled_tasks"]) == ("prodigy", 2, 1)


def test_an_empty_export_says_so(store, tmp_path):
    f = tmp_path / "empty.json"
    f.write_text("[]")
    with pytest.raises(ValidationError, match="empty.json: the file holds no records"):
        judgments_import.import_judgments(store, cli_user(), f)


def test_a_trec_run_given_as_judgments_is_named_a_run(store, tmp_path):
    _fill(store, tmp_path)
    f = tmp_path / "results.test"
    f.write_text("301\tQ0\tFT-1\t1\t9.5\tsysA\n301\tQ0\tFT-2\t2\t8.1\tsysA\n")
    with pytest.raises(ValidationError, match=r"results.test line 1: this looks like a TREC run .* golden runs import"):
        judgments_import.import_judgments(store, cli_user(), f)


def test_a_binary_qrels_file_read_on_the_studio_scale_says_what_that_means(store, tmp_path):
    _fill(store, tmp_path)
    f = tmp_path / "binary.qrels"
    f.write_text("301 0 FT-1 1\n301 0 FT-2 0\n")
    rep = judgments_import.import_judgments(store, cli_user(), f)
    assert rep.as_dict()["binary_scale_warning"]
    assert "none of these is relevant to them" in rep.summary() and f"retract {rep.import_id}" in rep.summary()
    mapped = judgments_import.import_judgments(store, cli_user(), f, grade_map="1=3", again=True)
    assert not mapped.as_dict()["binary_scale_warning"] and "Note:" not in mapped.summary()
