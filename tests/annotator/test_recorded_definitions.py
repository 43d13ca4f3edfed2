"""A recorded number keeps the definitions it was scored under (issue 36, item 6): the same
passage run recorded under two hit rules must not read as a system change, so every result
row carries the run level, hit rule, depth and (with human+judge labels) the judge labels'
models and rubric shas; ``evaluation_frame`` returns them, ``golden results export`` writes
them, and ``annotator.evaluation.comparability.differences`` names what differs.

The corpus is small enough to work by hand (as test_cli_chunking): document ``d`` is "t00
t01 ... t59", token i at characters [4i, 4i + 3). q1's evidence is t10..t19, q2's t40..t44,
q3 is unanswerable. The passage run:

=====  ====  ==========  ===========================  ==========================
query  rank  tokens      any_overlap                  contains_span
=====  ====  ==========  ===========================  ==========================
q1     1     t05..t14    hits q1's span (half of it)  no
q1     2     t10..t19    hits                         hits (the whole span)
q1     3     t30..t39    no                           no
q2     1     t30..t39    no                           no
q2     2     t42..t49    hits q2's span (t42..t44)    no
q3     1-4   anything    not scored: unanswerable     not scored
=====  ====  ==========  ===========================  ==========================

RR: any_overlap q1 1, q2 1/2 (mean 0.75); contains_span q1 1/2, q2 0 (mean 0.25). Depth: q1
has 3 results, q2 2; q3's 4 do not count (it is not scored): 3."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from annotator.cli import main
from annotator.evaluation.comparability import differences
from golden_store.core.errors import ValidationError
from golden_store.corpus.sources import load_sources
from golden_store.freezing import freeze
from golden_store.live.documents import import_documents
from golden_store.live.evidence import EvidenceSpan, append_evidence
from golden_store.live.queries import import_queries, known_strata, parse_query_file
from golden_store.live.results import evaluation_frame, record_evaluation, run_depth, scored_definitions
from golden_store.scoring import evaluate
from tests.golden_store.test_judge_labels_frozen import RUBRIC_A, RUBRIC_B, RUN, build

D = " ".join(f"t{i:02d}" for i in range(60))
DEFINITIONS = ("run_level", "hit_rule", "run_depth", "label_judge_models", "label_rubric_shas")


def tok(i: int) -> int:
    return 4 * i


def chunk(first: int, last: int) -> dict:
    return {"doc_id": "d", "start": tok(first), "end": tok(last) + 3}


@pytest.fixture
def tiny(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import_documents(store, load_sources([("d.txt", D.encode())]), actor="eng")
    strata = known_strata(store)
    answerable = "lexical" if "lexical" in strata else sorted(strata - {"negative"})[0]
    qs = [{"id": "q1", "text": "which tokens are ten to nineteen", "stratum": answerable},
          {"id": "q2", "text": "which tokens are forty to forty-four", "stratum": answerable},
          {"id": "q3", "text": "what is not in the corpus", "stratum": answerable, "answerable": False}]
    import_queries(store, parse_query_file("q.jsonl", "\n".join(json.dumps(q) for q in qs).encode(), strata),
                   actor="eng")
    append_evidence(store, [EvidenceSpan(q, f"e-{q}", D[tok(a):tok(b) + 3], "d", tok(a), tok(b) + 3, tok(a),
                                         tok(b) + 3, "exact", 100.0) for q, a, b in [("q1", 10, 19), ("q2", 40, 44)]],
                    actor="ann")
    freeze(store, "v1", actor="eng")
    lines = [("q1", 1, chunk(5, 14)), ("q1", 2, chunk(10, 19)), ("q1", 3, chunk(30, 39)),
             ("q2", 1, chunk(30, 39)), ("q2", 2, chunk(42, 49)),
             *[("q3", r, chunk(10 * r, 10 * r + 5)) for r in range(1, 5)]]
    run = tmp_path / "passages.jsonl"
    run.write_text("".join(json.dumps({"query_id": q, "rank": r, **c}) + "\n" for q, r, c in lines), "utf-8")
    trec = tmp_path / "docs.trec"  # a document run: q1 two documents, an unlabeled question five
    trec.write_text("q1 Q0 d 1 2.0 t\nq1 Q0 x 2 1.0 t\n" + "".join(f"qx Q0 y{i} {i} 1.0 t\n" for i in range(1, 6)),
                    "utf-8")
    return tmp_path


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _score(capsys, run: Path, record: str, *extra: str) -> str:
    rc, out, err = golden(capsys, "score", "--version", "v1", "--run", str(run), "-m", "RR", "--record", record,
                          "--system", "dense", "--git-sha", "abc", *extra)
    assert rc == 0, err
    return out


def test_the_same_run_under_two_hit_rules_records_each_rule_and_the_depth(tiny, store, capsys):
    out_any = _score(capsys, tiny / "passages.jsonl", "d-any")
    out_cs = _score(capsys, tiny / "passages.jsonl", "d-cs", "--hit-rule", "contains_span")
    assert "RR(rel=2)\tall\t0.7500" in out_any and "RR(rel=2)\tall\t0.2500" in out_cs  # the hand-worked means
    rows = store.read(f"SELECT evaluation_id, query_id, {', '.join(DEFINITIONS)} FROM eval_results "
                      "ORDER BY evaluation_id, query_id")
    assert rows == [("d-any", "q1", "passage", "any_overlap", 3, None, None),
                    ("d-any", "q2", "passage", "any_overlap", 3, None, None),
                    ("d-cs", "q1", "passage", "contains_span", 3, None, None),
                    ("d-cs", "q2", "passage", "contains_span", 3, None, None)]
    a, b = evaluation_frame(store, "d-any"), evaluation_frame(store, "d-cs")
    assert a["hit_rule"].tolist() == ["any_overlap"] * 2 and b["hit_rule"].tolist() == ["contains_span"] * 2
    assert a["run_depth"].tolist() == [3, 3] and a["run_level"].tolist() == ["passage"] * 2
    assert a["label_judge_models"].isna().all() and a["label_rubric_shas"].isna().all()
    assert differences("d-any", a, "d-cs", b) == ["hit rule differs: d-any any_overlap, d-cs contains_span"]
    assert differences("d-any", a, "d-any", a) == []


def test_a_document_run_records_no_hit_rule_and_the_depth_of_its_scored_questions(tiny, store, capsys):
    _score(capsys, tiny / "docs.trec", "docs")
    # q1 has 2 documents; qx's 5 are not scored (no labels); q2 has none
    assert store.read(f"SELECT DISTINCT {', '.join(DEFINITIONS)} FROM eval_results WHERE evaluation_id = 'docs'") == [
        ("document", None, 2, None, None)]
    _score(capsys, tiny / "passages.jsonl", "p")
    d, p = evaluation_frame(store, "docs"), evaluation_frame(store, "p")
    assert differences("docs", d, "p", p) == [
        "hit rule differs: docs none (document run), p any_overlap",
        "retrieval depth (most results per question) differs: docs 2, p 3 (can change RR(rel=2))"]


def test_results_export_carries_the_definitions(tiny, store, capsys):
    _score(capsys, tiny / "passages.jsonl", "d-cs", "--hit-rule", "contains_span")
    rc, _, err = golden(capsys, "results", "export", "--out", str(tiny / "r.parquet"))
    assert rc == 0, err
    t = pq.read_table(tiny / "r.parquet")
    assert set(DEFINITIONS) <= set(t.column_names)
    got = t.select(["query_id", *DEFINITIONS]).to_pylist()
    assert got == [{"query_id": q, "run_level": "passage", "hit_rule": "contains_span", "run_depth": 3,
                    "label_judge_models": None, "label_rubric_shas": None} for q in ("q1", "q2")]


def test_a_trial_must_be_scored_as_its_evaluation(tiny, store, capsys):
    _score(capsys, tiny / "passages.jsonl", "d")
    rc, _, err = golden(capsys, "score", "--version", "v1", "--run", str(tiny / "passages.jsonl"), "-m", "RR",
                        "--record", "d", "--trial", "1", "--hit-rule", "contains_span", "--git-sha", "abc",
                        "--system", "dense")
    assert rc != 0 and "hit_rule 'any_overlap'" in err and "hit_rule 'contains_span'" in err
    assert store.read_one("SELECT count(*) FROM eval_results")[0] == 2  # nothing half-written
    _score(capsys, tiny / "passages.jsonl", "d", "--trial", "1")  # the same rule: a repeat
    assert store.read(f"SELECT DISTINCT trial, {', '.join(DEFINITIONS)} FROM eval_results ORDER BY trial") == [
        (0, "passage", "any_overlap", 3, None, None), (1, "passage", "any_overlap", 3, None, None)]


def test_run_depth_counts_the_scored_questions_results_and_takes_a_cutoff():
    run = pd.DataFrame({"query_id": ["a", "a", "a", "b", "c", "c", "c", "c", "c"], "doc_id": list("xyzxvwxyz")})
    assert run_depth(run, ["a", "b"]) == 3
    assert run_depth(run, ["a", "b", "c"]) == 5
    assert run_depth(run, ["b", "missing"]) == 1
    assert run_depth(run, ["missing"]) == 0
    assert run_depth(run, ["a", "c"], max_docs=4) == 4 and run_depth(run, ["a"], max_docs=4) == 3


def test_human_plus_judge_records_the_judge_labels_models_and_rubric_shas(demo_store):
    """The judge labels of version B (test_judge_labels_frozen's table): judge-a under rubric
    a..a labels q001, q002 and q009; judge-b under rubric b..b labels q004. Every one is of a
    scored question, so both models and both rubric shas were used."""
    from golden_store.versions import load_version

    build(demo_store)
    b = load_version("B", demo_store.path.parent / "versions")
    both = evaluate(b, RUN, ["RR"], n_boot=20, labels="human+judge")
    human = evaluate(b, RUN, ["RR"], n_boot=20)
    record_evaluation(demo_store, "j", both.per_query, dataset_version="B", labels=both.labels,
                      **scored_definitions(both, RUN))
    record_evaluation(demo_store, "h", human.per_query, dataset_version="B", **scored_definitions(human, RUN))
    got = dict(demo_store.read("SELECT DISTINCT evaluation_id, label_judge_models || ' | ' || label_rubric_shas "
                               "FROM eval_results WHERE evaluation_id IN ('j', 'h')"))
    assert got == {"j": f"judge-a, judge-b | {RUBRIC_A}, {RUBRIC_B}", "h": None}
    # RUN lists q001's three documents, q002's two: depth 3; a document run
    assert demo_store.read("SELECT DISTINCT run_level, hit_rule, run_depth FROM eval_results "
                           "WHERE evaluation_id = 'j'") == [("document", None, 3)]
    j, h = evaluation_frame(demo_store, "j"), evaluation_frame(demo_store, "h")
    assert differences("h", h, "j", j) == ["label set differs: h human, j human+judge"]


def test_definitions_are_recorded_whole_and_consistent(store):
    pq_ = pd.DataFrame({"R@10": {"q1": 1.0}}).rename_axis("query_id")

    def rec(**kw):
        record_evaluation(store, "x", pq_, dataset_version="v1", **kw)

    with pytest.raises(ValidationError, match="without the run level"):
        rec(hit_rule="any_overlap")
    with pytest.raises(ValidationError, match="Unknown run level"):
        rec(run_level="chunk", run_depth=3)
    with pytest.raises(ValidationError, match="hit_rule exactly when"):
        rec(run_level="passage", run_depth=3)
    with pytest.raises(ValidationError, match="hit_rule exactly when"):
        rec(run_level="document", hit_rule="any_overlap", run_depth=3)
    with pytest.raises(ValidationError, match="run_depth"):
        rec(run_level="document")
    with pytest.raises(ValidationError, match="human\\+judge scoring used"):
        rec(run_level="document", run_depth=3, label_judge_models=["m"], label_rubric_shas=["r"])
    with pytest.raises(ValidationError, match="human\\+judge scoring used"):
        rec(run_level="document", run_depth=3, labels="human+judge")
    assert store.read_one("SELECT count(*) FROM eval_results")[0] == 0
    rec(run_level="document", run_depth=3, labels="human+judge", label_judge_models=["m2", "m1", "m2"],
        label_rubric_shas=[])
    assert store.read("SELECT label_judge_models, label_rubric_shas FROM eval_results") == [("m1, m2", "")]
