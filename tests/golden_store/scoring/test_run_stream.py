"""A run file larger than one Arrow block, read as a stream (a clean file) or read whole (a
file with a comment line, a tab, text after the run tag or a bad value somewhere past the
first block): the same numbers as pytrec_eval either way, and a bad line deep in the file
named with its line number."""

from __future__ import annotations

import functools
import random

import pytest
import pytrec_eval

from golden_store.core.errors import ValidationError
from golden_store.scoring.trec import evaluate_trec

OURS = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@10": "P_10", "R@100": "recall_100",
        "Bpref": "bpref", "Judged@10": None}


@functools.cache
def _data(seed: int = 3, nq: int = 300, depth: int = 400):
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(nq):
        qid = f"q{q:03d}"
        docs = rng.sample(range(5000), depth)
        run[qid] = {f"D{d}": round(rng.randint(0, 300) / 7, 3) for d in docs}  # many ties
        judged = rng.sample(docs[:60], 8) + rng.sample(range(5000, 5100), 2)
        qrels[qid] = {f"D{d}": rng.choice([0, 0, 1, 2, 3]) for d in judged}
    qrels["q999"] = {"D1": 1}  # judged, missing from the run: scores 0 and counts
    run["unjudged"] = {"D1": 1.0}
    return qrels, run


@functools.cache
def _clean_lines() -> tuple[str, ...]:
    run = _data()[1]
    return tuple(f"{q} Q0 {d} {i} {s} tag" for q, docs in run.items()
                 for i, (d, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), 1))


@functools.cache
def _reference() -> dict[str, float]:
    qrels, run = _data()
    judged_run = {q: docs for q, docs in run.items() if q in qrels}
    per_q = pytrec_eval.RelevanceEvaluator(qrels, {v for v in OURS.values() if v}).evaluate(judged_run)
    return {ours: sum(per_q.get(q, {}).get(theirs, 0.0) for q in qrels) / len(qrels)
            for ours, theirs in OURS.items() if theirs}


@functools.cache
def _judged_at_10() -> float:
    """By hand: the share of each query's top 10 (trec_eval order) that has a grade."""
    qrels, run = _data()
    total = 0.0
    for q, judged in qrels.items():
        docs = run.get(q, {})
        top = sorted(sorted(docs, reverse=True), key=lambda d: -docs[d])[:10]
        total += sum(d in judged for d in top) / len(top) if top else 0.0
    return total / len(qrels)


def _write(tmp_path, qrels, lines: list[str]):
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                                for d, g in docs.items()))
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    assert (tmp_path / "run.txt").stat().st_size > 3 * 2**20  # several of Arrow's 1 MiB blocks
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


@pytest.mark.parametrize("mess", ["clean", "comment", "tab", "trailing text", "shuffled"])
def test_a_large_run_scores_as_pytrec_eval_clean_or_not(tmp_path, mess):
    qrels, run = _data()
    lines = list(_clean_lines())
    deep = len(lines) * 3 // 4  # past the first blocks
    if mess == "comment":
        lines.insert(deep, "# a comment line deep in the file")
    elif mess == "tab":
        lines[deep] = lines[deep].replace(" ", "\t", 2)
    elif mess == "trailing text":
        lines[deep] += " and some words after the tag"
    elif mess == "shuffled":
        random.Random(5).shuffle(lines)
    q, r = _write(tmp_path, qrels, lines)
    res = evaluate_trec(q, r, list(OURS), health=True)
    want = _reference()
    for m, v in want.items():
        assert res.mean[m] == pytest.approx(v, abs=1e-12), m
    assert res.n_queries == len(qrels)
    assert res.mean["Judged@10"] == pytest.approx(_judged_at_10(), abs=1e-12)
    assert res.judged.mean == pytest.approx(_judged_at_10(), abs=1e-12)


@pytest.mark.parametrize("bad, says", [("1.5e", "score '1.5e' is not a number"),
                                       ("nan", "score 'nan' is not a number"),
                                       (None, "expected 6 fields")])
def test_a_bad_line_past_the_first_block_is_named(tmp_path, bad, says):
    qrels, run = _data()
    lines = list(_clean_lines())
    deep = len(lines) - 7
    fields = lines[deep].split()
    lines[deep] = " ".join(fields[:4]) if bad is None else " ".join(fields[:4] + [bad] + fields[5:])
    q, r = _write(tmp_path, qrels, lines)
    with pytest.raises(ValidationError) as err:
        evaluate_trec(q, r, ["AP"])
    assert f"line {deep + 1}:" in str(err.value) and says in str(err.value)


def test_a_repeated_document_past_the_first_block_is_refused(tmp_path):
    qrels, run = _data()
    lines = list(_clean_lines())
    q, d = lines[-5].split()[0], lines[-5].split()[2]
    lines.append(f"{q} Q0 {d} 999 0.0 tag")
    q_path, r = _write(tmp_path, qrels, lines)
    with pytest.raises(ValidationError, match=f"query {q} lists document {d} more than once"):
        evaluate_trec(q_path, r, ["AP"])
