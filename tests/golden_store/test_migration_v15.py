"""Schema 15: "run" means only a system's run. A recorded evaluation's id and the evaluation a
transcript came from were both ``run_id``; migration 15 renames them ``evaluation_id`` in
eval_results and the four transcript tables, keeping every row, and rebuilds the review view;
LLM question proposals are recorded as 'draft_questions' (no longer 'bootstrap_questions').
Built at version 14 with rows written as that version wrote them, migrated on both engines."""

from __future__ import annotations

from datetime import datetime


from golden_store.db import schema
from golden_store.db.store import Store
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 6, 1, 9, 0, 0)
TABLES = ("eval_results", "transcripts", "transcript_draws", "transcript_review_events",
          "transcript_resolution_events")


def _fill_v14(cur) -> None:
    cur.execute("INSERT INTO eval_results (run_id, ts, dataset_version, metric_impl_sha, query_id, trial, metric, "
                "value) VALUES ('bm25@v1', ?, 'v1', 'sha', 'q1', 0, 'AP', 0.5)", [AT])
    cur.execute("INSERT INTO transcripts (run_id, query_id, trial, source, question, passed, imported_by, "
                "imported_at) VALUES ('nightly|7', 'q1', 0, 'eval_run', 'Why?', false, 'eng', ?)", [AT])
    cur.execute("INSERT INTO transcript_draws (draw_id, run_id, query_id, trial, position, seed, actor, created_at) "
                "VALUES ('d1', 'nightly|7', 'q1', 0, 0, 1, 'rita', ?)", [AT])
    cur.execute("INSERT INTO transcript_review_events (run_id, query_id, trial, verdict, actor, created_at) "
                "VALUES ('nightly|7', 'q1', 0, 'grader_failure', 'rita', ?)", [AT])
    cur.execute("INSERT INTO llm_calls (purpose, item, model, prompt_sha, outcome, input_tokens, output_tokens, "
                "cache_creation_input_tokens, cache_read_input_tokens, actor, created_at) "
                "VALUES ('bootstrap_questions', 'doc-1', 'm', 'sha', 'ok', 10, 5, 0, 0, 'eng', ?)", [AT])
    cur.execute("INSERT INTO transcript_resolution_events (run_id, query_id, trial, resolution, actor, created_at) "
                "VALUES ('nightly|7', 'q1', 0, 'judge_fixed', 'leo', ?)", [AT])


def _columns(s: Store, table: str) -> list[str]:
    return [r[0] for r in s.read("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                 "ORDER BY ordinal_position", [table])]


def test_migration_15_renames_run_id_to_evaluation_id_keeping_every_row(old_url, monkeypatch):
    schema_at(monkeypatch, 14)
    with Store.open(old_url) as old:
        assert old.schema_version() == 14
        old.write(_fill_v14)
        before = {t: old.read(f"SELECT * FROM {t}") for t in TABLES}
    monkeypatch.undo()

    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 15
        for t in TABLES:
            cols = _columns(s, t)
            assert "run_id" not in cols and "evaluation_id" in cols, t
            width = len(before[t][0]) if before[t] else 0  # later migrations append columns (eval_results.labels)
            assert [r[:width] for r in s.read(f"SELECT * FROM {t}")] == before[t], t  # same rows, same column order
        assert s.read("SELECT evaluation_id, query_id, trial, verdict FROM current_transcript_reviews") == [
            ("nightly|7", "q1", 0, "grader_failure")]
        # "bootstrap" is only the statistics: earlier question-draft calls carry the new purpose
        assert s.read("SELECT purpose, item FROM llm_calls") == [("draft_questions", "doc-1")]
