"""Every export format the studio writes, it reads back (issue 38 item 2): a version exported
as TREC, BEIR or JSONL and imported into a fresh store with the studio's own commands
freezes again to the same questions and the same labels. (BEIR's whole-folder import is
tested in test_beir_import.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from annotator.integration import judgments_import
from annotator.versions import versioning
from annotator.cli import main
from annotator.people.identity import cli_user
from golden_store.db.store import Store
from golden_store.versions.export import export_version
from golden_store.versions import load_version
from tests.annotator.test_beir_import import _docs, _frozen_demo, _queries


def _refreeze(store, name: str):
    folder = Path(versioning.freeze(store, cli_user(), name).path)
    return load_version(folder.name, folder.parent)


def _judgments(v) -> set[tuple]:
    return {(j.query_id, j.doc_id, int(j.start), int(j.end), int(j.grade)) for j in v.judgments.itertuples(index=False)}


def _corpus_in(v1, tmp_path: Path, golden_db: str) -> None:
    """The version's documents into the store (a TREC or JSONL export carries no corpus)."""
    export_version(v1, "beir", tmp_path / "beir")
    assert main(["corpus", "import", str(tmp_path / "beir" / "corpus.jsonl"), "--db", golden_db]) == 0


def test_a_trec_export_reads_back(store, golden_db, tmp_path, _duckdb_templates):
    v1 = _frozen_demo(tmp_path, _duckdb_templates)
    out = tmp_path / "exp_trec"
    export_version(v1, "trec", out)
    _corpus_in(v1, tmp_path, golden_db)
    # queries.tsv holds id<TAB>text (what TREC tools read); queries.meta.tsv beside it the strata and flags
    assert main(["queries", "import", str(out / "queries.tsv"), "--db", golden_db]) == 0
    for qrels in ("qrels.txt", "qrels.unanswerable.txt"):
        if (out / qrels).exists():
            assert main(["judgments", "import", str(out / qrels), "--db", golden_db]) == 0
    v2 = _refreeze(store, "rt.trec")
    assert _queries(v2) == _queries(v1)
    assert v2.qrels() == v1.qrels()
    assert _docs(v2) == _docs(v1)


def _demo_with_judgments(tmp_path: Path, templates: dict[str, Path]):
    """The demo with people's judgments besides its evidence (the demo's version has none): a
    whole-document grade and two passage grades, frozen."""
    db = tmp_path / "src" / "store.duckdb"
    db.parent.mkdir()
    shutil.copyfile(templates["demo"], db)
    with Store.open(db) as src:
        docs = sorted(src.read("SELECT doc_id, length(raw_text) FROM documents"))[:2]
        qids = sorted(r[0] for r in src.read("SELECT query_id FROM queries WHERE answerable"))[:2]
        f = tmp_path / "src" / "labels.jsonl"
        f.write_text("\n".join(json.dumps({"query_id": q, "judgments": [
            {"doc_id": docs[0][0], "start": 0, "end": int(docs[0][1]), "grade": 2},
            {"doc_id": docs[1][0], "start": 5 + i, "end": 60 + i, "grade": i}]}) for i, q in enumerate(qids)) + "\n")
        judgments_import.import_judgments(src, cli_user(), f, source="reviewer")
        folder = Path(versioning.freeze(src, cli_user(), "rt.v1").path)
    return load_version(folder.name, folder.parent)


def test_a_jsonl_export_reads_back(store, golden_db, tmp_path, _duckdb_templates):
    v1 = _demo_with_judgments(tmp_path, _duckdb_templates)
    assert len(_judgments(v1)) == 4 and any(j[2] > 0 for j in _judgments(v1))  # passages, not only documents
    out = tmp_path / "exp_jsonl"
    export_version(v1, "jsonl", out)
    _corpus_in(v1, tmp_path, golden_db)
    assert main(["queries", "import", str(out / "golden.jsonl"), "--db", golden_db]) == 0
    # the judgments come back with their spans, not as whole documents
    assert main(["judgments", "import", str(out / "golden.jsonl"), "--db", golden_db]) == 0
    v2 = _refreeze(store, "rt.jsonl")
    assert _queries(v2) == _queries(v1)
    assert _judgments(v2) == _judgments(v1)


def test_trec_topics_without_meta_take_the_stratum_given(store, golden_db, tmp_path, capsys):
    f = tmp_path / "topics.tsv"
    f.write_text("query_id\ttext\n301\tHow long is the refund window?\n302\tIs shipping free?\n", encoding="utf-8")
    assert main(["queries", "import", str(f), "--db", golden_db]) != 0  # refused
    assert "topics.tsv line 2: field 'stratum' is missing" in capsys.readouterr().err
    assert main(["queries", "import", str(f), "--stratum", "lexical", "--db", golden_db]) == 0
    assert sorted(store.read("SELECT query_id, text, stratum FROM queries")) == [
        ("301", "How long is the refund window?", "lexical"), ("302", "Is shipping free?", "lexical")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("303 no tab here\n", encoding="utf-8")
    assert main(["queries", "import", str(bad), "--stratum", "lexical", "--db", golden_db]) != 0  # refused
    assert "bad.tsv line 1: expected 'id<TAB>text'" in capsys.readouterr().err


def test_a_results_export_reads_back(store, golden_db, tmp_path, _duckdb_templates, capsys):
    """Recorded evaluations move between stores: the demo's, exported, imported into a fresh
    store, are the same rows; again, nothing changes; a clash is refused, store unchanged."""
    from golden_store.live.results import RESULT_COLUMNS, export_results
    from tests.conftest import table_snapshot

    src_db = tmp_path / "src.duckdb"
    shutil.copyfile(_duckdb_templates["demo"], src_db)
    with Store.open(src_db) as src:
        versioning.freeze(src, cli_user(), "rt.v1")
    runs = Path(__file__).resolve().parents[2] / "annotator" / "demo" / "data" / "runs"
    for system in ("bm25", "hybrid"):
        assert main(["score", "--version", "rt.v1", "--run", str(runs / f"{system}.trec"), "-m", "nDCG@10", "-m",
                     "AP(rel=2)", "--record", f"{system}-e1", "--system", system, "--db", str(src_db)]) == 0
    capsys.readouterr()
    with Store.open(src_db) as src:
        n = export_results(src, tmp_path / "results.parquet")
        cols = ", ".join(f'"{c}"' for c in RESULT_COLUMNS)
        before = sorted(map(repr, src.read(f"SELECT {cols} FROM eval_results")))
    assert n > 0
    assert main(["results", "import", str(tmp_path / "results.parquet"), "--db", golden_db, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["added"] and not rep["unchanged"]
    assert sorted(map(repr, store.read(f"SELECT {cols} FROM eval_results"))) == before
    snap = table_snapshot(store)
    assert main(["results", "import", str(tmp_path / "results.parquet"), "--db", golden_db]) == 0
    assert f"0 evaluation(s) added (-), {len(rep['added'])} already recorded" in capsys.readouterr().out
    assert table_snapshot(store) == snap
    # the same ids with other numbers: refused, nothing written
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "results.parquet")
    pq.write_table(t.set_column(t.column_names.index("value"), "value", pc.add(t["value"], 0.5)),
                   tmp_path / "other.parquet")
    assert main(["results", "import", str(tmp_path / "other.parquet"), "--db", golden_db]) != 0
    assert "recorded in this store with other results" in capsys.readouterr().err
    assert table_snapshot(store) == snap
    (tmp_path / "bad.parquet").write_text("query_id,value\n")
    assert main(["results", "import", str(tmp_path / "bad.parquet"), "--db", golden_db]) != 0
    assert "bad.parquet: not a Parquet file" in capsys.readouterr().err


def test_an_approved_nuggets_export_reads_back(store, golden_db, tmp_path, _duckdb_templates, capsys):
    """The demo's approved nuggets, exported and imported onto the same questions of a fresh
    store, are the same nuggets (ids, order, quotes, the drafting model); again, nothing
    changes; a question with other nuggets is refused; a bad line is one sentence."""
    from golden_store.live import nuggets
    from tests.conftest import table_snapshot

    v1 = _frozen_demo(tmp_path, _duckdb_templates)
    src_db = tmp_path / "src" / "store.duckdb"
    with Store.open(src_db) as src:
        # nuggets on two questions (the demo has none): a drafted one with its verified quote, one a person added
        for s in list(v1.spans.itertuples(index=False))[:2]:
            nuggets.add_draft(src, s.query_id, [nuggets.NuggetDraft("The policy states it", "vital", s.quote, s.doc_id,
                                                                    int(s.start), int(s.end))],
                              actor="lead1", model="claude-test", prompt_sha="abc123")
            nuggets.add_draft(src, s.query_id, [nuggets.NuggetDraft("Ask the service desk", "okay")], actor="lead1",
                              model=None, prompt_sha=None)
            nuggets.approve(src, s.query_id, actor="lead1")
        want = nuggets.approved(src)
    assert want
    assert main(["nuggets", "export", "--out", str(tmp_path / "nuggets.jsonl"), "--db", str(src_db)]) == 0
    export_version(v1, "beir", tmp_path / "beir")
    from annotator.integration import beir_import

    beir_import.import_beir(store, cli_user(), tmp_path / "beir")
    capsys.readouterr()
    assert main(["nuggets", "import", str(tmp_path / "nuggets.jsonl"), "--db", golden_db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"]
    keep = ("query_id", "nugget_id", "text", "importance", "position", "quote", "doc_id", "start", "end", "model",
            "prompt_sha")
    assert [{k: r[k] for k in keep} for r in nuggets.approved(store)] == [{k: r[k] for k in keep} for r in want]
    snap = table_snapshot(store)
    assert main(["nuggets", "import", str(tmp_path / "nuggets.jsonl"), "--db", golden_db]) == 0
    assert "0 question(s) got their approved nuggets" in capsys.readouterr().out
    assert table_snapshot(store) == snap
    lines = (tmp_path / "nuggets.jsonl").read_text().splitlines()
    other = json.loads(lines[0])
    (tmp_path / "other.jsonl").write_text(json.dumps({**other, "text": "A different fact"}) + "\n")
    assert main(["nuggets", "import", str(tmp_path / "other.jsonl"), "--db", golden_db]) != 0
    assert "have other nuggets in this store" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text(json.dumps({**other, "importance": "huge"}) + "\n")
    assert main(["nuggets", "import", str(tmp_path / "bad.jsonl"), "--db", golden_db]) != 0
    assert "bad.jsonl line 1: importance must be vital or okay" in capsys.readouterr().err
    assert table_snapshot(store) == snap


def test_a_queries_csv_may_name_its_id_column_query_id(store, golden_db, tmp_path):
    f = tmp_path / "q.csv"
    f.write_text("query_id,text,stratum\n301,How long is the refund window?,lexical\n", encoding="utf-8")
    assert main(["queries", "import", str(f), "--db", golden_db]) == 0
    assert store.read("SELECT query_id, stratum FROM queries") == [("301", "lexical")]
