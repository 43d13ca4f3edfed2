"""An exported qrels file gives the numbers `golden score --version` gives (issue 36, item 4).

The demo's q005 is unanswerable (answerable = false) and has a judged-0 pooled passage, so it
is in the version's qrels. The studio leaves it out of every mean (retrieval measures are
undefined for it) and counts grade >= 2 as relevant; the export used to write q005's row into
qrels.txt / qrels/test.tsv and say nothing of the level, so trec_eval-family tools on the
export gave bm25 R(rel=2)@10 0.829 against the studio's 0.853. Here the references are
pytrec_eval (trec_eval's C code) and ir_measures reading the exported files themselves, with
the relevance level taken from the export's scoring note; the expected figures are theirs.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval

from annotator import cli
from annotator.integration import judgments_import
from annotator.demo import DEMO_DIR, load_demo
from annotator.people.identity import cli_user
from golden_store.core.errors import ValidationError
from golden_store.versions import load_version
from golden_store.versions.export import export_version
from tests.conftest import prepared_store

BM25 = Path(DEMO_DIR) / "runs" / "bm25.trec"
# the studio's names, and each one's pytrec_eval measure (relevance_level applies to the binary ones)
MEASURES = {"R(rel=2)@10": "recall_10", "nDCG@10": "ndcg_cut_10", "AP(rel=2)": "map", "P(rel=2)@5": "P_5",
            "RR(rel=2)": "recip_rank"}


def _export_the_demo(store, folder: Path) -> None:
    load_demo(store, cli_user(), workflows=True)
    v = load_version("demo.v0", folder / "versions")
    export_version(v, "trec", folder / "trec")
    export_version(v, "beir", folder / "beir")


@pytest.fixture
def exported(request, golden_db, tmp_path):
    """The whole demo (runs, pool, grades, demo.v0) and demo.v0 exported as TREC and BEIR
    (made once, copied into this test's folder)."""
    prepared_store(request, "full-demo-cli-exported", _export_the_demo)
    return load_version("demo.v0"), tmp_path


def _golden(capsys, *args: str) -> tuple[dict, str]:
    assert cli.main(["--json", *args]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def _beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    out: dict[str, dict[str, int]] = {}
    for q, d, g in rows[1:]:
        out.setdefault(q, {})[d] = int(g)
    return out


def _pytrec_means(qrels: dict, run: dict, level: int) -> dict[str, float]:
    """trec_eval -c: a qrels query the run does not rank would score 0 (none here: asserted)."""
    assert set(qrels) <= set(run)
    per = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()), relevance_level=level).evaluate(
        {q: run[q] for q in qrels})
    return {name: sum(per[q][m] for q in qrels) / len(qrels) for name, m in MEASURES.items()}


def _ir_measures_means(qrels: dict, level: int) -> dict[str, float]:
    ms = {name: ir_measures.parse_measure(name.replace("rel=2", f"rel={level}")) for name in MEASURES}
    got = ir_measures.calc_aggregate(list(ms.values()), qrels, ir_measures.read_trec_run(str(BM25)))
    return {name: got[m] for name, m in ms.items()}


def test_exported_qrels_scored_by_trec_eval_tools_equal_golden_score_version(exported, capsys):
    v, tmp = exported
    assert "q005" in v.qrels() and not bool(v.queries.set_index("query_id").loc["q005", "answerable"])
    version, err = _golden(capsys, "score", "--version", "demo.v0", "--run", str(BM25),
                           *[a for m in MEASURES for a in ("-m", m)])
    assert "grade >= 2" in version["definitions"]["_relevance"]
    with BM25.open() as fh:
        run = pytrec_eval.parse_run(fh)
    trec_file = tmp / "trec" / "qrels.txt"
    with trec_file.open() as fh:
        trec_qrels = pytrec_eval.parse_qrel(fh)
    beir_file = tmp / "beir" / "qrels" / "test.tsv"
    beir_qrels = _beir_qrels(beir_file)
    assert trec_qrels == beir_qrels
    for qrels_file, qrels in ((trec_file, trec_qrels), (beir_file, beir_qrels)):
        side = qrels_file.with_name(qrels_file.stem + ".scoring.json")
        # the level the export wrote beside the qrels; without a note, trec_eval's default
        level = json.loads(side.read_text())["relevance_level"] if side.exists() else 1
        ref = _pytrec_means(qrels, run, level)
        irm = _ir_measures_means(qrels, level)
        for name in MEASURES:
            assert version["mean"][name] == pytest.approx(ref[name], abs=1e-12), (qrels_file, name)
            assert irm[name] == pytest.approx(ref[name], abs=1e-12), (qrels_file, name)
        note = json.loads(side.read_text())
        assert (note["relevance_level"], note["graded"], note["left_out"]["unanswerable"]) == (2, "0-3", ["q005"])
        assert note["qrels_file"] == qrels_file.name and note["n_queries"] == len(qrels) == version["n_queries"]
        # golden score --qrels on the export reads the note (level 2): -m AP is AP(rel=2), as on --version
        got, err = _golden(capsys, "score", "--qrels", str(qrels_file), "--run", str(BM25), "-m", "AP", "-m", "R@10")
        assert got["mean"]["AP(rel=2)"] == pytest.approx(ref["AP(rel=2)"], abs=1e-12)
        assert got["mean"]["R(rel=2)@10"] == pytest.approx(ref["R(rel=2)@10"], abs=1e-12)
        assert "grade >= 2" in got["definitions"]["_relevance"]
        assert qrels_file.stem + ".scoring.json" in got["definitions"]["_relevance"]
    assert version["mean"]["R(rel=2)@10"] == pytest.approx(0.8529, abs=1e-4)  # the studio figure


def test_the_unanswerable_rows_are_kept_apart_and_nothing_is_lost(exported):
    v, tmp = exported
    trec = tmp / "trec"
    apart = (trec / "qrels.unanswerable.txt").read_text().splitlines()
    assert apart == ["q005 0 pension 0"]  # the demo's one judged passage of an unanswerable question
    kept = (trec / "qrels.txt").read_text().splitlines()
    assert not any(line.split()[0] == "q005" for line in kept)
    every = {(q, d): g for q, docs in v.qrels().items() for d, g in docs.items()}
    assert {(x.split()[0], x.split()[2]): int(x.split()[3]) for x in kept + apart} == every
    beir = tmp / "beir"
    assert _beir_qrels(beir / "qrels-unanswerable" / "test.tsv") == {"q005": {"pension": 0}}
    assert "q005" not in _beir_qrels(beir / "qrels" / "test.tsv")
    note = json.loads((beir / "qrels" / "test.scoring.json").read_text())
    assert note["left_out"]["file"] == "../qrels-unanswerable/test.tsv"
    assert (beir / "qrels" / note["left_out"]["file"]).is_file()
    # queries.tsv stays two columns; the flags are beside it
    qs = v.queries.set_index("query_id")
    with (trec / "queries.meta.tsv").open(encoding="utf-8", newline="") as fh:
        meta = list(csv.DictReader(fh, delimiter="\t"))
    assert [m["query_id"] for m in meta] == [line.split("\t")[0] for line in (trec / "queries.tsv").read_text().splitlines()]
    assert {m["query_id"]: m["answerable"] for m in meta} == {q: str(bool(a)).lower() for q, a in qs["answerable"].items()}
    assert {m["query_id"]: m["held_out"] for m in meta} == {q: str(bool(h)).lower() for q, h in qs["held_out"].items()}
    assert sorted(note["unanswerable_questions"]) == sorted(q for q, a in qs["answerable"].items() if not a)
    for folder in (trec, beir):
        readme = (folder / "README.txt").read_text()
        assert "grade >= 2" in readme and "trec_eval -c -l 2" in readme and "q005" in readme


def test_the_studio_reads_back_every_qrels_file_it_exports(exported, store):
    v, tmp = exported
    user = cli_user()
    files = [tmp / "trec" / "qrels.txt", tmp / "trec" / "qrels.unanswerable.txt", tmp / "beir" / "qrels" / "test.tsv",
             tmp / "beir" / "qrels-unanswerable" / "test.tsv"]
    for f in files:
        rows = [x for x in f.read_text().splitlines()[(1 if f.suffix == ".tsv" else 0):] if x.strip()]
        rep = judgments_import.import_judgments(store, user, f)
        assert rep.n_judgments == len(rows) and not rep.skipped and not rep.negative, f
    # the scoring note is not judgments: an import given it says so instead of a Label Studio error
    for note in (tmp / "trec" / "qrels.scoring.json", tmp / "beir" / "qrels" / "test.scoring.json"):
        with pytest.raises(ValidationError, match="scoring note an export writes"):
            judgments_import.import_judgments(store, user, note)


def _score(capsys, *args: str) -> tuple[dict, str]:
    """(the JSON result, the text run's stderr, where the comment lines are) of golden score."""
    code = cli.main(["--json", "score", *args])
    out = capsys.readouterr()
    if code:
        return {}, out.err
    got = json.loads(out.out)
    assert cli.main(["score", *args]) == 0
    return got, capsys.readouterr().err


def test_one_relevance_rule_for_a_qrels_file_said_in_the_output(tmp_path, capsys):
    """Hand-worked: q1 judges d1 grade 1 and d2 grade 2; the run ranks d1 then d2. At level 1
    both are relevant, AP = (1/1 + 2/2) / 2 = 1; at level 2 only d2, found at rank 2, AP = 1/2.
    `-m AP` used to mean level 2 on --version and level 1 on --qrels whatever the file was."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    trec = tmp_path / "q.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 2\n")
    beir = tmp_path / "beir" / "test.tsv"
    beir.parent.mkdir()
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n")
    for qrels in (trec, beir):
        got, err = _score(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "AP")
        assert got["mean"] == {"AP": 1.0}
        assert "grade >= 1" in got["definitions"]["_relevance"] and "trec_eval's default" in err
        assert "# relevance: binary measures count grade >= 1" in err
        got, err = _score(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "AP", "-l", "2")
        assert got["mean"] == {"AP(rel=2)": 0.5} and "-l 2" in got["definitions"]["_relevance"]
        # the level written beside the file (as the export writes it) is the file's level
        note = qrels.with_name(qrels.stem + ".scoring.json")
        note.write_text(json.dumps({"format": "golden-studio/qrels-scoring@1", "qrels_file": qrels.name,
                                    "relevance_level": 2}))
        got, err = _score(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "AP")
        assert got["mean"] == {"AP(rel=2)": 0.5}
        assert "grade >= 2" in got["definitions"]["_relevance"] and note.name in got["definitions"]["_relevance"]
        assert "# relevance: binary measures count grade >= 2" in err
        got, err = _score(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "AP", "-l", "1")
        assert got["mean"] == {"AP": 1.0} and f"-l 1 given: {note.name} says 2" in err
        # a note about another file is refused, not silently applied
        note.write_text(json.dumps({"format": "golden-studio/qrels-scoring@1", "qrels_file": "other.txt",
                                    "relevance_level": 2}))
        got, err = _score(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "AP")
        assert not got and "describes 'other.txt'" in err
    # a BEIR line that is not three tab-separated fields is named
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 2\n")
    beir.with_name("test.scoring.json").unlink()
    got, err = _score(capsys, "--qrels", str(beir), "--run", str(run), "-m", "AP")
    assert not got and "test.tsv line 3: not a BEIR qrels line" in err
