"""Evaluation results in the store (§14.4), the v1 -> v2 migration, and run comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from golden_store.db import schema
from golden_store.core.errors import ValidationError
from golden_store.live.results import export_results, list_evaluations, record_evaluation, evaluation_frame
from golden_store.scoring.compare import compare_runs, format_comparison
from golden_store.db.store import Store


@pytest.mark.duckdb_only("migrates a version-1 DuckDB file")
def test_a_v1_store_migrates_forward_keeping_its_data(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr("golden_store.db.store.MIGRATIONS", schema.MIGRATIONS[:1])
    monkeypatch.setattr("golden_store.db.store.SCHEMA_VERSION", 1)
    with Store.open(path) as old:
        old.write(lambda cur: cur.execute("INSERT INTO store_meta VALUES ('team', 'hr')"))
        assert old.schema_version() == 1
    monkeypatch.undo()
    with Store.open(path) as new:
        assert new.schema_version() == schema.SCHEMA_VERSION >= 2
        assert new.read("SELECT value FROM store_meta WHERE key = 'team'") == [("hr",)]
        assert new.read_one("SELECT count(*) FROM eval_results")[0] == 0


def _per_query(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"nDCG@10": values}).rename_axis("query_id")


def test_record_list_refuse_overwrite_and_export(store, tmp_path):
    strata = {"q1": "lexical", "q2": "negative", "q3": "lexical"}
    n = record_evaluation(store, "base", _per_query({"q1": 0.5, "q2": 0.0, "q3": 1.0}), dataset_version="v1", strata=strata)
    assert n == 3
    with pytest.raises(ValidationError, match="never overwritten"):
        record_evaluation(store, "base", _per_query({"q1": 0.9}), dataset_version="v1")
    record_evaluation(store, "base", _per_query({"q1": 0.7, "q2": 0.2, "q3": 1.0}), dataset_version="v1", trial=1)
    runs = list_evaluations(store)
    assert runs.loc[0, "evaluation_id"] == "base" and runs.loc[0, "trials"] == 2 and runs.loc[0, "queries"] == 3
    f = evaluation_frame(store, "base").set_index("query_id")
    assert f.at["q1", "value"] == pytest.approx(0.6) and f.at["q1", "stratum"] == "lexical"
    assert len(f.at["q1", "metric_impl_sha"]) == 64
    assert export_results(store, tmp_path / "r.parquet") == 6
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 6


def _long(values, strata):
    return pd.DataFrame({"query_id": [f"q{i}" for i in range(len(values))], "stratum": strata,
                         "metric": "R@10", "value": values})


def test_compare_gives_the_gate_verdict_overall_and_per_stratum():
    rng = np.random.default_rng(0)
    base = rng.random(300)
    strata = ["a"] * 150 + ["b"] * 150
    worse = base.copy()
    worse[150:] -= 0.2  # stratum b regresses, a is unchanged
    c = compare_runs(_long(base, strata), _long(worse, strata))
    e = c["metrics"]["R@10"]
    assert e["verdict"] == "FAIL" and e["delta"] == pytest.approx(-0.1)
    assert e["strata"]["b"]["verdict"] == "FAIL" and e["strata"]["a"]["verdict"] == "PASS"
    assert e["strata"]["a"]["ties"] == 150
    text = format_comparison(c, "base", "cand")
    assert "R@10: FAIL" in text and "b            FAIL" in text


def test_compare_pairs_only_shared_queries():
    a = _long([1.0, 0.0, 1.0], ["x"] * 3)
    b = _long([1.0, 1.0], ["x"] * 2)
    e = compare_runs(a, b, min_n=1)["metrics"]["R@10"]
    assert e["n"] == 2 and e["only_in_a"] == 1 and e["wins"] == 1


# ---- provenance of recorded rows (issue 25, item 8; METHODOLOGY §3.6, §10.8, §14.3-14.4) ----------------


def _two_metrics(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"R@10": values, "faithfulness": {q: 1.0 - v for q, v in values.items()}}).rename_axis("query_id")


def test_provenance_columns_read_back_as_given(store):
    judged = {"q1": 0.9, "q2": 0.4, "q3": 1.0}
    n = record_evaluation(store, "prov", _two_metrics({"q1": 0.5, "q2": 0.0, "q3": 1.0}), dataset_version="v1",
                          strata={"q1": "lexical", "q2": "negative", "q3": "lexical"}, corpus_digest="sha256:c",
                          config_sha="c" * 64, system="bm25", git_sha="a" * 40, trial=3, judged_fraction=judged,
                          judge_model="claude-judge-1", rubric_sha="r" * 64, judged_metrics=["faithfulness"])
    assert n == 6
    rows = store.read_dicts("SELECT * FROM eval_results WHERE evaluation_id = 'prov' ORDER BY metric, query_id")
    assert len(rows) == 6
    for r in rows:
        assert (r["trial"], r["system"], r["git_sha"], r["config_sha"], r["dataset_version"], r["corpus_digest"]) \
            == (3, "bm25", "a" * 40, "c" * 64, "v1", "sha256:c")
        assert r["judged_fraction"] == pytest.approx(judged[r["query_id"]])
        assert len(r["metric_impl_sha"]) == 64
        # the judge goes on the judged metric's rows only: deterministic metrics keep it NULL (§14.4)
        if r["metric"] == "faithfulness":
            assert (r["judge_model"], r["rubric_sha"]) == ("claude-judge-1", "r" * 64)
        else:
            assert (r["judge_model"], r["rubric_sha"]) == (None, None)
    # a query without a judged fraction gets NULL, not NaN
    record_evaluation(store, "prov2", _per_query({"q1": 0.5, "q9": 1.0}), dataset_version="v1",
                      judged_fraction={"q1": 0.7})
    got = dict(store.read("SELECT query_id, judged_fraction FROM eval_results WHERE evaluation_id = 'prov2'"))
    assert got["q1"] == pytest.approx(0.7) and got["q9"] is None


def test_a_recorded_trial_is_refused_again_all_or_nothing_unless_replaced(store):
    from tests.conftest import table_snapshot

    record_evaluation(store, "e", _per_query({"q1": 0.5, "q2": 1.0}), dataset_version="v1", trial=0, git_sha="a")
    record_evaluation(store, "e", _per_query({"q1": 0.7, "q2": 1.0}), dataset_version="v1", trial=1, git_sha="a")
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match=r"'e' \(trial 1\) is already recorded; results are never overwritten"):
        record_evaluation(store, "e", _per_query({"q1": 0.0, "q3": 0.0}), dataset_version="v1", trial=1)
    # a judged metric without its judge, a trial of another dataset, a bad trial number: refused, nothing written
    with pytest.raises(ValidationError, match="judged by a model"):
        record_evaluation(store, "e", _per_query({"q1": 0.1}), dataset_version="v1", trial=2,
                          judged_metrics=["nDCG@10"], judge_model="claude-judge-1")
    with pytest.raises(ValidationError, match="no metric is judged"):
        record_evaluation(store, "e", _per_query({"q1": 0.1}), dataset_version="v1", trial=2, judge_model="m")
    with pytest.raises(ValidationError, match="Trials are repeats of one evaluation"):
        record_evaluation(store, "e", _per_query({"q1": 0.1}), dataset_version="v2", trial=2)
    with pytest.raises(ValidationError, match="whole number"):
        record_evaluation(store, "e", _per_query({"q1": 0.1}), dataset_version="v1", trial=-1)
    assert table_snapshot(store) == before
    # --replace swaps that trial's rows (and only that trial's) in one transaction
    assert record_evaluation(store, "e", _per_query({"q1": 0.0, "q3": 0.25}), dataset_version="v1", trial=1,
                             git_sha="b", replace=True) == 2
    got = store.read("SELECT trial, query_id, value, git_sha FROM eval_results WHERE evaluation_id = 'e' "
                     "ORDER BY trial, query_id")
    assert got == [(0, "q1", 0.5, "a"), (0, "q2", 1.0, "a"), (1, "q1", 0.0, "b"), (1, "q3", 0.25, "b")]


def test_trial_rows_and_provenance_per_trial(store):
    from golden_store.live.results import trial_provenance, trial_rows

    for t, sha in ((0, "g0"), (1, "g1")):
        record_evaluation(store, "e", _per_query({"q1": float(t), "q2": 1.0}), dataset_version="v1", trial=t,
                          git_sha=sha, config_sha="cfg", judged_fraction={"q1": 0.5, "q2": 1.0})
    rows = trial_rows(store, "e")
    assert sorted(rows["trial"]) == [0, 0, 1, 1] and set(rows.columns) >= {"query_id", "trial", "metric", "value"}
    prov = trial_provenance(store, "e")
    assert [(p["trial"], p["git_sha"], p["config_sha"], p["n_rows"]) for p in prov] == [(0, "g0", "cfg", 2),
                                                                                       (1, "g1", "cfg", 2)]
    assert prov[0]["judged_fraction"] == pytest.approx(0.75)
    with pytest.raises(Exception, match="No recorded evaluation"):
        trial_rows(store, "nope")
