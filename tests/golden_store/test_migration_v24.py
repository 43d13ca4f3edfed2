"""Schema 24 (issue 36, item 6): eval_results gains the definitions a number was scored under
(run_level, hit_rule, run_depth, label_judge_models, label_rubric_shas). A store's results
recorded at version 23 must survive the migration as they were, with the new columns NULL
("not recorded", never a made-up value), on both engines; evaluation_frame then reads them as
missing, and a recording after the migration fills them. Built at version 23 with rows written
as that version's record path wrote them (modelled on test_migration_v22)."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from golden_store.db import schema
from golden_store.db.store import Store
from golden_store.live.results import evaluation_frame, record_evaluation
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 11, 1, 9, 0, 0)
NEW = ("run_level", "hit_rule", "run_depth", "label_judge_models", "label_rubric_shas")
_V23_COLUMNS = ("evaluation_id, ts, system, git_sha, dataset_version, corpus_digest, config_sha, judge_model, rubric_sha, "
                "metric_impl_sha, query_id, stratum, trial, metric, value, judged_fraction, labels")


def _fill_v23(cur) -> None:
    rows = [("old", AT, "bm25", "g1", "v1", "cd", None, None, None, "sha-impl", "q1", "lexical", 0, "R@10", 0.5, 0.9,
             None),
            ("old", AT, "bm25", "g1", "v1", "cd", None, None, None, "sha-impl", "q2", "lexical", 0, "R@10", 1.0, 1.0,
             None),
            ("judged", AT, "dense", "g2", "v1", "cd", "c", "m1", "r" * 64, "sha-impl", "q1", None, 0, "nDCG@10", 0.25,
             None, "human+judge")]
    for r in rows:
        cur.execute(f"INSERT INTO eval_results ({_V23_COLUMNS}) VALUES "
                    f"({', '.join('?' * len(r))})", list(r))


_ALL = f"SELECT {_V23_COLUMNS} FROM eval_results ORDER BY evaluation_id, query_id"


def test_migration_24_keeps_every_result_row_with_its_definitions_not_recorded(old_url, monkeypatch):
    schema_at(monkeypatch, 23)
    with Store.open(old_url) as old:
        assert old.schema_version() == 23
        old.write(_fill_v23)
        before = old.read(_ALL)
    monkeypatch.undo()
    assert len(before) == 3

    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 24
        assert s.read(_ALL) == before  # every row, every old column's value
        assert s.read(f"SELECT {', '.join(NEW)} FROM eval_results") == [(None,) * 5] * 3
        f = evaluation_frame(s, "old")
        assert list(f.columns[-5:]) == list(NEW)
        assert f[list(NEW)].isna().all().all()
        # a recording after the migration keeps its definitions beside the old rows
        record_evaluation(s, "new", pd.DataFrame({"R@10": {"q1": 1.0}}).rename_axis("query_id"),
                          dataset_version="v1", run_level="passage", hit_rule="contains_span", run_depth=20)
        assert s.read(f"SELECT {', '.join(NEW)} FROM eval_results WHERE evaluation_id = 'new'") == [
            ("passage", "contains_span", 20, None, None)]
        assert [r for r in s.read(_ALL) if r[0] != "new"] == before
