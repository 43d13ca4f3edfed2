"""Evaluation results in the store (§14.4), the v1 -> v2 migration, and run comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from golden_store import schema
from golden_store.errors import ValidationError
from golden_store.results import export_results, list_evaluations, record_evaluation, evaluation_frame
from golden_store.scoring.compare import compare_runs, format_comparison
from golden_store.store import Store


@pytest.mark.duckdb_only("migrates a version-1 DuckDB file")
def test_a_v1_store_migrates_forward_keeping_its_data(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr("golden_store.store.MIGRATIONS", schema.MIGRATIONS[:1])
    monkeypatch.setattr("golden_store.store.SCHEMA_VERSION", 1)
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
    e = compare_runs(a, b)["metrics"]["R@10"]
    assert e["n"] == 2 and e["only_in_a"] == 1 and e["wins"] == 1
