"""Issue 36 item 7b: ``MRR`` is accepted as RR's name wherever a measure name is taken (``golden
score -m MRR@10``, ``golden compare -m``, the API's measure fields: all read names through
``parse_measures``), as ir_measures itself reads it, and reported under the canonical name
(RR / RR@10) whose definition mentions the alias. Numbers checked against ir_measures' RR on a
tiny qrels/run, and by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest

from golden_store.core.errors import ValidationError
from golden_store.scoring.measures import parse_measure, parse_measures
from golden_store.scoring.trec import evaluate_trec

GOLDEN = Path(sys.executable).parent / "golden"

# three queries, distinct scores (no tie rule involved); relevant = grade >= 1
QRELS = {"q1": {"d1": 0, "d2": 2, "d3": 1},   # first relevant at rank 2 -> 1/2
         "q2": {"d4": 1, "d5": 0},            # first relevant at rank 3 -> 1/3 (0 under a cutoff of 2)
         "q3": {"d6": 0, "d7": 0, "d8": 3}}   # first relevant at rank 1 -> 1
RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7},
       "q2": {"d9": 0.9, "d5": 0.8, "d4": 0.7},
       "q3": {"d8": 0.9, "d6": 0.5}}
BY_HAND = {"RR": (1 / 2 + 1 / 3 + 1) / 3, "RR@2": (1 / 2 + 0 + 1) / 3}


@pytest.mark.parametrize("typed, canonical", [("MRR", "RR"), ("MRR@10", "RR@10"), ("MRR@2", "RR@2"),
                                              ("mrr@10", "RR@10"), ("MRR(rel=2)@10", "RR(rel=2)@10")])
def test_mrr_is_read_as_ir_measures_reads_it(typed, canonical):
    assert str(parse_measure(typed)) == canonical == str(ir_measures.parse_measure(typed.replace("mrr", "MRR")))
    assert "MRR" in parse_measure(typed).definition()  # the alias is said where the name is defined


def test_an_alias_and_its_canonical_name_are_one_measure():
    assert [str(m) for m in parse_measures(["MRR@10", "RR@10", "RR"])] == ["RR@10", "RR"]
    assert [str(m) for m in parse_measures(["MRR@10"], rel=2)] == ["RR(rel=2)@10"]  # how --record keys it
    with pytest.raises(ValidationError, match="at least 1"):
        parse_measure("MRR@0")
    with pytest.raises(ValidationError, match="Unknown measure 'MRRR'"):
        parse_measure("MRRR")


def test_mrr_scores_equal_ir_measures_rr_on_a_tiny_qrels_and_run():
    res = evaluate_trec(QRELS, RUN, ["MRR", "MRR@2", "mrr@10"])
    assert res.measures == ["RR", "RR@2", "RR@10"]
    ref = ir_measures.calc_aggregate([ir_measures.RR, ir_measures.RR @ 2, ir_measures.RR @ 10], QRELS, RUN)
    assert res.mean["RR"] == pytest.approx(ref[ir_measures.RR]) and ref[ir_measures.RR] == pytest.approx(BY_HAND["RR"])
    assert res.mean["RR@2"] == pytest.approx(ref[ir_measures.RR @ 2])
    assert ref[ir_measures.RR @ 2] == pytest.approx(BY_HAND["RR@2"])
    assert res.mean["RR@10"] == pytest.approx(ref[ir_measures.RR @ 10])
    per_query = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.RR], QRELS, RUN)}
    assert dict(res.per_query["RR"]) == pytest.approx(per_query)
    assert per_query == pytest.approx({"q1": 1 / 2, "q2": 1 / 3, "q3": 1})
    assert "MRR" in res.definitions["RR@2"]


def test_golden_score_takes_mrr_and_reports_rr(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n" for q, docs in RUN.items()
                           for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]))))
    r = subprocess.run([str(GOLDEN), "--json", "score", "--qrels", str(qrels), "--run", str(run), "-m", "MRR@2",
                        "-m", "MRR"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["measures"] == ["RR@2", "RR"]
    assert out["mean"]["RR@2"] == pytest.approx(BY_HAND["RR@2"]) and out["mean"]["RR"] == pytest.approx(BY_HAND["RR"])
    assert "MRR" in out["definitions"]["RR"]
