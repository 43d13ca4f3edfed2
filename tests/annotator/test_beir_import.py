"""A BEIR dataset comes in whole (issue 38 item 2): ``golden import-beir DIR`` reads corpus,
queries and one split's qrels, checks them together before writing anything, imports the
qrels as judgments attributed to the dataset, changes nothing the second time, and reads the
studio's own BEIR export back to the same documents, questions and qrels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from annotator.integration import beir_import, judgments_import
from annotator.versions import versioning
from annotator.cli import main
from annotator.people.identity import cli_user
from golden_store.core.errors import OptionRequiredError, ValidationError
from golden_store.db.store import Store
from golden_store.versions.export import export_version
from golden_store.versions import load_version
from tests.conftest import table_snapshot

DOCS = {"d1": ("Refunds", "Refunds are accepted within 30 days of delivery.\nKeep the receipt."),
        "d2": ("", "Shipping is free on orders over 50 euros."),
        "d3": ("Gift cards", "Gift cards never expire and can be used online.")}
QUERIES = {"q1": "How long is the refund window?", "q2": "Is shipping free?"}


def _write_beir(root: Path, *, qrels: str = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td2\t1\n",
                split: str = "test", corpus_lines: list[str] | None = None,
                query_lines: list[str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = corpus_lines if corpus_lines is not None else [
        json.dumps({"_id": d, "title": t, "text": x}) for d, (t, x) in DOCS.items()]
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    qlines = query_lines if query_lines is not None else [
        json.dumps({"_id": q, "text": t}) for q, t in QUERIES.items()]
    (root / "queries.jsonl").write_text("\n".join(qlines) + "\n", encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_a_binary_beir_dataset_needs_its_grades_said_then_comes_in_whole(store, tmp_path):
    root = _write_beir(tmp_path / "shopfaq")
    before = table_snapshot(store)
    with pytest.raises(OptionRequiredError, match=r"grades 0/1.*--map '1=3'"):
        beir_import.import_beir(store, cli_user(), root)
    assert table_snapshot(store) == before
    rep = beir_import.import_beir(store, cli_user(), root, grade_map="1=3")
    assert (rep.docs_added, rep.queries["added"], rep.stratum_created) == (3, 2, "imported")
    [j] = rep.judgments
    assert (j["imported"], j["n_judgments"], j["source"], j["file"]) == (
        True, 3, "import:shopfaq test", "shopfaq/qrels/test.tsv")
    docs = {r[0]: r[1:] for r in store.read("SELECT doc_id, title, raw_text FROM documents")}
    assert docs == {"d1": ("Refunds", DOCS["d1"][1]), "d2": (None, DOCS["d2"][1]), "d3": ("Gift cards", DOCS["d3"][1])}
    grades = sorted(store.read("SELECT query_id, doc_id, start, \"end\", grade, actor FROM grade_state"))
    assert grades == [("q1", "d1", 0, len(DOCS["d1"][1]), 3, "import:shopfaq test"),
                      ("q1", "d2", 0, len(DOCS["d2"][1]), 0, "import:shopfaq test"),
                      ("q2", "d2", 0, len(DOCS["d2"][1]), 3, "import:shopfaq test")]
    # an import like any other: listed, and withdrawn by its id
    listed = judgments_import.list_imports(store, cli_user())
    assert list(listed["import_id"]) == [j["import_id"]] and list(listed["standing"]) == [3]

    # the same dataset again: nothing changes, and the report says so
    after = table_snapshot(store)
    again = beir_import.import_beir(store, cli_user(), root, grade_map="1=3")
    assert not again.changed and "nothing changed" in again.summary()
    assert table_snapshot(store) == after
    assert judgments_import.retract_import(store, cli_user(), j["import_id"]) == 3


def test_the_split_is_chosen_and_a_missing_one_names_the_splits_found(store, tmp_path):
    root = _write_beir(tmp_path / "ds", split="dev")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td3\t1\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"no split 'test'; its splits are dev, train: pass --split dev"):
        beir_import.import_beir(store, cli_user(), root, grade_map="1=3")
    rep = beir_import.import_beir(store, cli_user(), root, split="train", grade_map="1=3")
    assert rep.judgments[0]["file"] == "ds/qrels/train.tsv" and rep.judgments[0]["n_judgments"] == 1


@pytest.mark.parametrize(("case", "expected"), [
    ("corpus_no_id", r"corpus.jsonl line 2: field 'doc_id' is missing .*'_id'"),
    ("corpus_bad_json", r"corpus.jsonl line 3: not valid JSON"),
    ("query_no_text", r"queries.jsonl line 2: field 'text' is missing"),
    ("qrels_unknown_doc", r"qrels/test.tsv line 3: field 'corpus-id' 'd9' is not in corpus.jsonl"),
    ("qrels_unknown_query", r"qrels/test.tsv line 2: field 'query-id' 'q7' is not in queries.jsonl"),
    ("qrels_bad_grade", r"qrels/test.tsv line 2: the grade 'x' is not an integer"),
    ("qrels_no_header", r"qrels/test.tsv line 1: a BEIR qrels file starts with the header"),
    ("qrels_contradiction", r"qrels/test.tsv line 3: grades query 'q1', document 'd1' 0, but line 2 gave 3"),
])
def test_bad_input_is_one_sentence_naming_file_line_and_field_and_the_store_is_unchanged(store, tmp_path, case,
                                                                                          expected):
    good = [json.dumps({"_id": d, "title": t, "text": x}) for d, (t, x) in DOCS.items()]
    kwargs: dict = {}
    if case == "corpus_no_id":
        kwargs["corpus_lines"] = [good[0], json.dumps({"title": "t", "text": "x"}), good[2]]
    elif case == "corpus_bad_json":
        kwargs["corpus_lines"] = [good[0], good[1], '{"_id": "d3", "text": ']
    elif case == "query_no_text":
        kwargs["query_lines"] = [json.dumps({"_id": "q1", "text": "a?"}), json.dumps({"_id": "q2"})]
    else:
        kwargs["qrels"] = {"qrels_unknown_doc": "query-id\tcorpus-id\tscore\nq1\td1\t3\nq1\td9\t3\n",
                           "qrels_unknown_query": "query-id\tcorpus-id\tscore\nq7\td1\t3\n",
                           "qrels_bad_grade": "query-id\tcorpus-id\tscore\nq1\td1\tx\n",
                           "qrels_no_header": "q1\td1\t3\n",
                           "qrels_contradiction": "query-id\tcorpus-id\tscore\nq1\td1\t3\nq1\td1\t0\n"}[case]
    root = _write_beir(tmp_path / "bad", **kwargs)
    before = table_snapshot(store)
    with pytest.raises(ValidationError) as err:
        beir_import.import_beir(store, cli_user(), root, grade_map="1=3")
    message = str(err.value)
    assert "nothing was imported" in message and "\n" not in message.split("nothing was imported")[0]
    import re
    assert re.search(expected, message), message
    assert table_snapshot(store) == before


def test_unknown_qrels_ids_can_be_left_out_and_are_counted(store, tmp_path):
    root = _write_beir(tmp_path / "ds", qrels="query-id\tcorpus-id\tscore\nq1\td1\t3\nq1\td9\t3\nq8\td1\t2\n")
    with pytest.raises(OptionRequiredError, match="--skip-unknown"):
        beir_import.import_beir(store, cli_user(), root)
    rep = beir_import.import_beir(store, cli_user(), root, skip_unknown=True)
    assert rep.judgments[0]["n_judgments"] == 1 and rep.judgments[0]["skipped"] == 2


def _frozen_demo(tmp_path: Path, templates: dict[str, Path], *, unanswerable_row: bool = False):
    """The demo frozen in a DuckDB store of its own (the source side of a round trip);
    ``unanswerable_row``: with a passage judged 0 for an unanswerable question (the export
    keeps such rows apart, in qrels-unanswerable/)."""
    db = tmp_path / "src" / "store.duckdb"
    db.parent.mkdir()
    shutil.copyfile(templates["demo"], db)
    with Store.open(db) as src:
        if unanswerable_row:
            qid = sorted(r[0] for r in src.read("SELECT query_id FROM queries WHERE NOT answerable"))[0]
            doc = sorted(r[0] for r in src.read("SELECT doc_id FROM documents"))[0]
            (tmp_path / "src" / "neg.qrels").write_text(f"{qid} 0 {doc} 0\n")
            judgments_import.import_judgments(src, cli_user(), tmp_path / "src" / "neg.qrels", source="reviewer")
        folder = Path(versioning.freeze(src, cli_user(), "rt.v1").path)
    return load_version(folder.name, folder.parent)


def _docs(v) -> dict:
    return {d.doc_id: (d.title or "", d.raw_text) for d in v.documents.itertuples(index=False)}


def _queries(v) -> dict:
    return {q.query_id: (q.text, q.stratum, bool(q.answerable), bool(q.held_out))
            for q in v.queries.itertuples(index=False)}


def test_the_studio_s_own_beir_export_reads_back_to_the_same_docs_queries_and_qrels(store, tmp_path,
                                                                                   _duckdb_templates):
    v1 = _frozen_demo(tmp_path, _duckdb_templates, unanswerable_row=True)
    out = tmp_path / "exp_beir"
    export_version(v1, "beir", out)
    assert (out / "qrels-unanswerable" / "test.tsv").exists()
    rep = beir_import.import_beir(store, cli_user(), out)  # no --map: the export's scoring note vouches for 0-3
    assert rep.docs_added == len(v1.documents) and rep.queries["added"] == len(v1.queries)
    assert rep.stratum_created is None  # the export names every question's stratum
    assert [j["file"] for j in rep.judgments] == ["exp_beir/qrels/test.tsv", "exp_beir/qrels-unanswerable/test.tsv"]
    folder = Path(versioning.freeze(store, cli_user(), "rt.v2").path)
    v2 = load_version(folder.name, folder.parent)
    assert _docs(v2) == _docs(v1)
    assert _queries(v2) == _queries(v1)
    assert v2.qrels() == v1.qrels()
    assert v2.manifest["corpus_digest"] == v1.manifest["corpus_digest"]
    # and once more: nothing changes
    snap = table_snapshot(store)
    assert not beir_import.import_beir(store, cli_user(), out).changed
    assert table_snapshot(store) == snap


def test_the_per_file_commands_read_the_beir_shapes_too(store, golden_db, tmp_path, _duckdb_templates, capsys):
    v1 = _frozen_demo(tmp_path, _duckdb_templates)
    out = tmp_path / "exp_beir"
    export_version(v1, "beir", out)
    assert main(["corpus", "import", str(out / "corpus.jsonl"), "--db", golden_db]) == 0
    assert main(["queries", "import", str(out / "queries.jsonl"), "--db", golden_db]) == 0
    assert main(["judgments", "import", str(out / "qrels" / "test.tsv"), "--db", golden_db]) == 0
    printed = capsys.readouterr().out
    assert f"{len(v1.documents)} added" in printed and f"Queries: {len(v1.queries)} added" in printed
    assert _queries(v1) == {r[0]: (r[1], r[2], bool(r[3]), bool(r[4])) for r in store.read(
        "SELECT query_id, text, stratum, answerable, held_out FROM queries")}


def test_cli_import_beir_prints_what_it_did_and_again_that_nothing_changed(store, golden_db, tmp_path, capsys):
    root = _write_beir(tmp_path / "shopfaq")
    assert main(["import-beir", str(root), "--db", golden_db]) != 0  # refused
    err = capsys.readouterr().err
    assert "--map" in err and "nothing was imported" in err
    assert main(["import-beir", str(root), "--map", "1=3", "--db", golden_db, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["changed"] and first["documents"]["added"] == 3 and first["judgments"][0]["n_judgments"] == 3
    assert main(["import-beir", str(root), "--map", "1=3", "--db", golden_db]) == 0
    assert "nothing changed" in capsys.readouterr().out


def test_the_benchmark_script_runs_at_a_tiny_size(tmp_path):
    """scripts/bench_beir_import.py end to end (no timing is asserted)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_beir_import.py"
    out = subprocess.run([sys.executable, str(script), "--docs", "200", "--queries", "10", "--words", "30", "--reps",
                          "1", "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["sizes"] == {"docs": 200, "queries": 10, "qrels_rows": 30, "corpus_bytes": report["sizes"]["corpus_bytes"]}
    for key in ("baseline_corpus_import", "import_beir", "import_beir_again"):
        assert report[key]["median_s"] > 0 and report[key]["peak_mib"] > 0
    assert report["ratio_time_vs_baseline"] > 0 and report["ratio_peak_vs_baseline"] > 0


def test_an_engineer_who_may_not_add_strata_is_told_before_anything_is_written(store, tmp_path):
    from annotator.people import identity

    admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789ab")
    eng = identity.create_user(store, admin, "eng1", ["engineer"], password="0123456789ab")
    root = _write_beir(tmp_path / "ds")
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match=r"names no stratum .* pass --stratum NAME \(one of .*lexical"):
        beir_import.import_beir(store, eng, root, grade_map="1=3")
    assert table_snapshot(store) == before
    rep = beir_import.import_beir(store, eng, root, grade_map="1=3", stratum="lexical")
    assert rep.queries["added"] == 2 and rep.stratum_created is None


def test_a_re_import_that_would_unhold_a_question_is_refused_before_anything_is_written(store, tmp_path):
    root = _write_beir(tmp_path / "ds", query_lines=[json.dumps({"_id": "q1", "text": QUERIES["q1"],
                                                                 "metadata": {"held_out": True}}),
                                                     json.dumps({"_id": "q2", "text": QUERIES["q2"]})])
    beir_import.import_beir(store, cli_user(), root, grade_map="1=3")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": QUERIES["q1"], "metadata": {"held_out": False}})
                                        + "\n" + json.dumps({"_id": "q2", "text": QUERIES["q2"]}) + "\n")
    (root / "corpus.jsonl").write_text((root / "corpus.jsonl").read_text() + json.dumps(
        {"_id": "d4", "title": "", "text": "A new document."}) + "\n")
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match=r"take 1 question\(s\) out of the held-out set \(q1\)"):
        beir_import.import_beir(store, cli_user(), root, grade_map="1=3", update=True)
    assert table_snapshot(store) == before
