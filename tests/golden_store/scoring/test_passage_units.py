"""A grade on a whole document is ONE relevant unit of a passage run, never one per chunk
(issue 36, item 3).

Document-level grades (pooled document-run results, TREC/BEIR judgment imports: both stored
as (doc_id, 0, len(raw_text))) used to reach chunks through the hit rule as a span covering
the document, so every chunk of it was relevant and recall's denominator grew with the number
of chunks. The references here are pytrec_eval (trec_eval) on qrels written by hand from the
rule (the credited chunk carries the grade, the document's other chunks 0), and, on the demo,
a unit counter written from scratch in this file.

The store is a small real one: three documents of 84 tokens ("D", "E", "F", each 419
characters), the document grades imported from a TREC qrels file (the issue's path), the
evidence spans and a person's passage grade appended as the app writes them, then frozen.

========  ==========================================  =============================================
query     labels                                      what it checks
========  ==========================================  =============================================
q1        D graded 3 (qrels)                          one unit, whatever the chunker and hit rule
q2        E graded 3 (qrels), evidence E[200:224)     subsumed by the evidence: adds no unit
q3        D graded 3 (qrels), a person: D[0:50) = 1   the doc grade is higher: it stands as a unit
q4        D graded 2 (qrels), evidence E[200:224)     D not retrieved: a missed unit, virtual id
q5        the judge only: D graded 3, E[0:50) 2       human+judge: the judge's whole-D grade too
========  ==========================================  =============================================
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval

from annotator import cli
from annotator.integration import judgments_import
from annotator.people import identity
from annotator.demo import DEMO_DIR
from golden_store.corpus.passage_runs import read_version_passages
from golden_store.freezing import freeze
from golden_store.live import queries
from golden_store.live.documents import import_paths
from golden_store.live.evidence import EvidenceSpan, append_evidence
from golden_store.live.judge_labels import JudgeLabel
from golden_store.live.judging import record
from golden_store.scoring import evaluate
from golden_store.versions import load_version
from tests.golden_store.test_judge_labels_frozen import judge
from tests.conftest import prepared_store

TOKENS = 84
DOCS = {d: " ".join(f"{d.lower()}{i:03d}" for i in range(TOKENS)) for d in "DEF"}
L = len(DOCS["D"])  # 419: every document has this length
EVIDENCE = (200, 224)  # e040 .. e044 in E
R10, NDCG10 = "R(rel=2)@10", "nDCG@10"


def _frozen_v1(store, folder) -> None:
    """The table above's labels, frozen as v1 in ``folder``'s versions."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    import_paths(store, [corpus], actor="eng")
    if "lexical" not in queries.known_strata(store):
        queries.add_stratum(store, "lexical", "words in common", actor="eng")
    qfile = "".join(json.dumps({"id": q, "text": f"question {q}", "stratum": "lexical"}) + "\n"
                    for q in ("q1", "q2", "q3", "q4", "q5")).encode()
    queries.import_queries(store, queries.parse_query_file("q.jsonl", qfile, queries.known_strata(store)),
                           actor="eng")
    admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789ab")
    lead = identity.create_user(store, admin, "lead1", ["lead"], password="0123456789ab")
    qrels = folder / "qrels.trec"
    qrels.write_text("q1 0 D 3\nq2 0 E 3\nq3 0 D 3\nq4 0 D 2\n")
    judgments_import.import_judgments(store, lead, qrels)
    s, e = EVIDENCE
    append_evidence(store, [EvidenceSpan(q, f"ev-{q}", DOCS["E"][s:e], "E", s, e, s, e, "exact", 100.0)
                            for q in ("q2", "q4")], actor="ann")
    record(store, "ann1", "q3", "D", 0, 50, op="grade", grade=1)
    judge(store, [JudgeLabel("q5", "D", 0, L, outcome="labeled", route="judge", grade=3, p_fail=0.1, p_used=0.1),
                  JudgeLabel("q5", "E", 0, 50, outcome="labeled", route="judge", grade=2, p_fail=0.1, p_used=0.1)],
          model="judge-a", rubric="a" * 64, calibration="cal-1")
    freeze(store, "v1", actor="eng")


@pytest.fixture
def version(request, golden_db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prepared_store(request, "passage-units-v1", _frozen_v1)  # frozen once, copied
    v = load_version("v1")
    # the frozen labels are what the table above says (else every number below is off)
    j = v.judgments
    assert sorted(zip(j["query_id"], j["doc_id"], j["start"], j["end"], j["grade"])) == [
        ("q1", "D", 0, L, 3), ("q2", "E", 0, L, 3), ("q3", "D", 0, 50, 1), ("q3", "D", 0, L, 3), ("q4", "D", 0, L, 2)]
    return v


def chunks(doc: str, n: int) -> list[tuple[str, str, int, int]]:
    """``doc`` cut into ``n`` chunks of (nearly) equal length: (passage id, doc, start, end)."""
    cuts = [round(i * L / n) for i in range(n + 1)]
    return [(f"{doc}#{i}", doc, cuts[i], cuts[i + 1]) for i in range(n)]


def run(query: str, ranked: list[tuple[str, str, int, int]], scores: list[float] | None = None) -> pd.DataFrame:
    """A passage run for ``query``: the chunks in rank order (scores descending unless given)."""
    scores = scores or [float(len(ranked) - i) for i in range(len(ranked))]
    return pd.DataFrame([(query, pid, doc, s, e, sc) for (pid, doc, s, e), sc in zip(ranked, scores)],
                        columns=["query_id", "passage_id", "doc_id", "start", "end", "score"])


def reference(qrels: dict[str, int], r: pd.DataFrame, measure: str) -> float:
    """pytrec_eval (trec_eval) on hand-written qrels, binary measures at relevance level 2."""
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, {measure}, relevance_level=2)
    return ev.evaluate({"q": dict(zip(r["passage_id"], r["score"].astype(float)))})["q"][measure]


def scored(v, r: pd.DataFrame, query: str, **kw) -> dict[str, float]:
    res = evaluate(v, r, ["R@10", "nDCG@10", "RR"], n_boot=10, **kw)
    return {m: float(res.per_query.loc[query, m]) for m in res.measures}


def test_one_document_grade_over_seven_chunks_is_one_unit(version):
    """q1: D (graded 3 as a whole) in 7 chunks; the run has one of them at rank 1 and two more
    lower down. One unit, credited at rank 1: R@10 = nDCG@10 = 1 (before: 3 relevant chunks
    in the qrels, R@10 3/3 here but nDCG lower, and 1/7 of the recall had it listed all 7)."""
    d, f = chunks("D", 7), chunks("F", 7)
    r = run("q1", [d[3], f[0], f[1], d[0], d[5]])
    got = scored(version, r, "q1")
    hand = {"D#3": 3, "D#0": 0, "D#5": 0}  # the best-ranked chunk carries the grade, the others are judged 0
    assert got[R10] == reference(hand, r, "recall_10") == 1.0
    assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10")) and got[NDCG10] == 1.0
    # ranked second behind an unlabeled chunk: nDCG 1/log2(3), by hand and by trec_eval
    r2 = run("q1", [f[0], d[3], d[0]])
    got2 = scored(version, r2, "q1")
    assert got2[NDCG10] == pytest.approx(reference({"D#3": 3, "D#0": 0}, r2, "ndcg_cut_10"))
    assert got2[NDCG10] == pytest.approx(1 / 1.5849625007211562) and got2["RR(rel=2)"] == 0.5


def test_a_small_chunker_is_not_penalised(version):
    """The same document graded 3, cut into 3 chunks and into 12; each run lists its chunker's
    chunks of D and of the unlabeled F: D's first chunk at rank 1, F's chunks, then D's other
    chunks. Before, the 12-chunk run had 12 relevant units of which only the first was in its
    top 10 (R@10 1/12) and the 3-chunk run 3 of 3 (R@10 1): now one unit each, R@10 = 1 both."""
    figures = []
    for n in (3, 12):
        d, f = chunks("D", n), chunks("F", n)
        r = run("q1", [d[0], *f, *d[1:]])
        got = scored(version, r, "q1")
        hand = {"D#0": 3, **{p: 0 for p, *_ in d[1:]}}
        assert got[R10] == reference(hand, r, "recall_10") == 1.0
        assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10"))
        figures.append(got)
    assert figures[0] == figures[1]


def test_the_document_unit_ignores_the_hit_rule(version):
    """No chunk contains the whole document, so under contains_span a document grade used to
    credit nothing (q1 R@10 0): it is hit by any chunk of its document, whatever the rule."""
    d = chunks("D", 7)
    for rule in ("any_overlap", "min_overlap(0.5)", "contains_span"):
        assert scored(version, run("q1", [d[6]]), "q1", hit_rule=rule)[R10] == 1.0


def test_a_document_grade_beside_an_evidence_span_adds_no_unit(version):
    """q2: E graded 3 and an evidence span in E's chunk 3 (of 7). The evidence says where the
    relevance is: chunk 3 is the one unit, E's chunk 0 is judged 0. R@10 = 1 and nDCG@10 =
    1/log2(3) with the evidence chunk second (before: both chunks relevant, nDCG 1)."""
    e = chunks("E", 7)
    assert e[3][2] <= EVIDENCE[0] < EVIDENCE[1] <= e[3][3]
    r = run("q2", [e[0], e[3]])
    got = scored(version, r, "q2")
    hand = {"E#3": 3, "E#0": 0}
    assert got[R10] == reference(hand, r, "recall_10") == 1.0
    assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10")) == pytest.approx(1 / 1.5849625007211562)
    # the whole of E in the run: still one unit (before: 7)
    assert scored(version, run("q2", [e[3], *e[:3], *e[4:]]), "q2")[NDCG10] == 1.0


def test_a_document_graded_above_its_finer_labels_keeps_its_unit(version):
    """q3: D graded 3 as a whole, one passage of it D[0:50) graded 1 by a person. The finer
    label does not say where the 3 is, so the document grade stands as one unit (on the
    run's best-ranked chunk of D) beside the passage's 1 (on the chunk that hits it)."""
    d, f = chunks("D", 7), chunks("F", 7)
    r = run("q3", [f[0], d[3], d[0], d[4]])
    got = scored(version, r, "q3")
    hand = {"D#3": 3, "D#0": 1, "D#4": 0}
    assert got[R10] == reference(hand, r, "recall_10") == 1.0
    assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10"))
    assert got[NDCG10] == pytest.approx((3 / 1.5849625007211562 + 1 / 2) / (3 + 1 / 1.5849625007211562))


def test_an_unretrieved_document_is_a_missed_unit_under_an_id_no_passage_has(version):
    """q4: D graded 2 as a whole and an evidence span in E. A run with only E's evidence chunk
    misses D: two units, one found (R@10 1/2). A passage of F named "doc:D" (the virtual id's
    natural spelling) must not be taken for D's unit."""
    e, f = chunks("E", 7), chunks("F", 7)
    r = run("q4", [e[3]])
    got = scored(version, r, "q4")
    hand = {"E#3": 3, "missed D": 2}
    assert got[R10] == reference(hand, r, "recall_10") == 0.5
    assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10"))
    impostor = run("q4", [e[3], ("doc:D", "F", f[0][2], f[0][3])])
    assert scored(version, impostor, "q4") == got


def test_a_judge_grade_on_a_whole_document_is_one_unit_too(version):
    """q5 has only the judge's labels: all of D graded 3 and E[0:50) graded 2. With
    human+judge D is one unit (its best-ranked chunk) and E's passage reaches E's chunk 0
    through the hit rule; with people's labels only q5 is not scored at all."""
    d, e, f = chunks("D", 7), chunks("E", 7), chunks("F", 7)
    r = run("q5", [f[0], d[2], e[0], d[1]])
    got = scored(version, r, "q5", labels="human+judge")
    hand = {"D#2": 3, "E#0": 2, "D#1": 0}
    assert got[R10] == reference(hand, r, "recall_10") == 1.0
    assert got[NDCG10] == pytest.approx(reference(hand, r, "ndcg_cut_10"))
    assert "q5" not in evaluate(version, r, ["R@10"], n_boot=10).per_query.index


def test_the_credited_chunk_is_the_scorer_s_first_among_tied_scores(version):
    """Two chunks of D with the same score: the scorer ranks ties by id descending (trec_eval),
    so "D-b" is first although the run lists "D-a" first; D's unit goes to "D-b" and nDCG@10
    is 1 (giving it to "D-a", ranked second, would make it 1/log2(3))."""
    d = chunks("D", 7)
    r = run("q1", [("D-a", *d[0][1:]), ("D-b", *d[1][1:])], scores=[1.0, 1.0])
    got = scored(version, r, "q1")
    assert got[NDCG10] == reference({"D-b": 3, "D-a": 0}, r, "ndcg_cut_10") == 1.0
    assert reference({"D-a": 3, "D-b": 0}, r, "ndcg_cut_10") < 0.7  # the order trec_eval gives the tie


def test_the_result_says_which_labels_the_numbers_used(version):
    d = chunks("D", 7)
    res = evaluate(version, run("q1", [d[0]]), ["R@10"], n_boot=10)
    units = res.definitions["_units"]
    # evidence: q2, q4; passage grades: q3's D[0:50); document grades standing: q1, q3, q4 on D; subsumed: q2 on E
    assert units.startswith("passage run: 2 evidence span(s), 1 passage grade(s)")
    assert "3 document grade(s) (each one unit" in units and "whatever the hit rule" in units
    assert "1 more subsumed by finer labels in the same document" in units
    # with the judge's labels: its passage grade and its grade on all of D (one more unit)
    both = evaluate(version, run("q1", [d[0]]), ["R@10"], n_boot=10, labels="human+judge").definitions["_units"]
    assert both.startswith("passage run: 2 evidence span(s), 1 passage grade(s), 1 judge passage grade(s)")
    assert "4 document grade(s) (each one unit" in both and "1 more subsumed" in both
    # a document run has no units line: its qrels are the documents' grades, unchanged
    doc_run = pd.DataFrame([("q1", "D", 1.0)], columns=["query_id", "doc_id", "score"])
    assert "_units" not in evaluate(version, doc_run, ["R@10"], n_boot=10).definitions


# ---- the demo: its dense passage run against a unit count written from scratch -----------------

def _independent_units(v, rows: pd.DataFrame, k: int = 10) -> dict[str, float]:
    """R@k (grade >= 2) per scored query, counted from the version's tables without the studio's
    scorer: a label is document-level when it is a grade spanning [0, len(raw_text)); it adds a
    unit unless the query has finer labels in that document reaching its grade. Units: every
    chunk of the run (any query's lines, as the scorer sees the chunking) overlapping a finer
    label of grade >= 2 (any_overlap, the demo's rule), plus one per standing document grade >= 2,
    found when any chunk of that document is in the query's top k (the run's ranks are distinct)."""
    length = {d: len(t) for d, t in zip(v.documents["doc_id"], v.documents["raw_text"])}
    finer: list[tuple[str, str, int, int, int]] = [(s.query_id, s.doc_id, s.start, s.end, 3)
                                                   for s in v.spans.itertuples()]
    whole: dict[tuple[str, str], int] = {}
    for j in v.judgments.itertuples():
        if j.start == 0 and j.end == length[j.doc_id]:
            whole[(j.query_id, j.doc_id)] = max(whole.get((j.query_id, j.doc_id), j.grade), j.grade)
        else:
            finer.append((j.query_id, j.doc_id, j.start, j.end, j.grade))
    best_finer: dict[tuple[str, str], int] = {}
    for q, d, _, _, g in finer:
        best_finer[(q, d)] = max(best_finer.get((q, d), g), g)
    standing = {key: g for key, g in whole.items() if g > best_finer.get(key, -1)}
    all_chunks = set(zip(rows["doc_id"], rows["start"], rows["end"]))
    negatives = set(v.queries.loc[~v.queries["answerable"].astype(bool), "query_id"])
    labeled = ({q for q, *_ in finer} | {q for q, _ in whole}) - negatives
    out = {}
    for q in sorted(labeled):
        relevant = {(d, cs, ce) for d, cs, ce in all_chunks
                    for fq, fd, s, e, g in finer if fq == q and fd == d and g >= 2 and min(e, ce) > max(s, cs)}
        docs = {d for (fq, d), g in standing.items() if fq == q and g >= 2}
        top = rows[rows["query_id"] == q].sort_values("rank").head(k)
        top_chunks = set(zip(top["doc_id"], top["start"], top["end"]))
        found = len(relevant & top_chunks) + len(docs & set(top["doc_id"]))
        total = len(relevant) + len(docs)
        out[q] = found / total if total else 0.0
    return out


def test_the_demo_dense_run_counts_each_document_grade_once(demo_store, capsys):
    """The issue's reproduction: the demo's dense passage run scored R@10 0.5397 with q001 at
    0.2857 although q001's answer passage is ranked 1st (its document's grade 3 made every
    chunk of vpn-troubleshooting relevant). Now R@10 is the from-scratch unit count's, q001 1."""
    freeze(demo_store, "demo.t", actor="eng")
    v = load_version("demo.t")
    dense = str(Path(DEMO_DIR) / "runs" / "dense.jsonl")
    rows = read_version_passages(v, dense).rows
    ref = _independent_units(v, rows)
    passages = rows.assign(score=-rows["rank"].astype(float))[["query_id", "doc_id", "start", "end", "score"]]
    res = evaluate(v, passages, ["R@10"], n_boot=10)
    got = {q: float(x) for q, x in res.per_query[R10].items()}
    assert got.keys() == ref.keys()
    for q in ref:
        assert got[q] == pytest.approx(ref[q], abs=1e-12), q
    assert got["q001"] == 1.0
    assert res.mean[R10] == pytest.approx(sum(ref.values()) / len(ref), abs=1e-12)
    # the CLI prints which labels the numbers used, and puts it in its JSON
    code = cli.main(["--db", str(demo_store.path), "score", "--version", "demo.t", "--run", dense, "-m", "R@10"])
    out = capsys.readouterr()
    assert code == 0 and f"{R10}\tall\t{res.mean[R10]:.4f}" in out.out
    assert "# passage run: 39 evidence span(s)" in out.err and "document grade(s) (each one unit" in out.err
    code = cli.main(["--db", str(demo_store.path), "score", "--version", "demo.t", "--run", dense, "-m", "R@10",
                     "--json"])
    assert json.loads(capsys.readouterr().out)["definitions"]["_units"] == res.definitions["_units"]
