"""scripts/bench_team_store.py runs end to end at a tiny size on both engines and what it
measured is right: the labels written are the labels sent, the frozen version's counts are
the store's, and both engines give the same agreement figures and the same frozen data. No
timing is asserted. Needs PostgreSQL (the session's throwaway cluster, tests/pg.py); skipped
with the usual message without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_team_store_runs_on_both_engines(pg_cluster, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("GOLDEN_DB", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_team_store.py"), "--events", "3000", "--annotators", "4",
         "--items", "300", "--docs", "60", "--actions", "12", "--judges", "2", "--agree-reps", "2",
         "--freeze-queries", "200", "--freeze-events", "2000", "--freeze-docs", "40", "--freeze-reps", "1",
         "--pg-admin", pg_cluster.url("postgres"), "--json"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    team = report["stores"]["team"]
    assert team["grade_events"] == 3000 and team["current_grades"] == 4 * 300 and team["annotators"] == 4
    assert all(c["all_ok"] for c in report["copies"].values())
    for engine in ("duckdb", "postgresql"):
        r = report[engine]
        # every key press's label saved once and read back as sent (2 warm-up presses per judge)
        assert r["labels_sent"] == 12 + 2 * 2 and r["acks"] == {"saved": 16}, engine
        assert r["labels_read_back"] == r["labels_sent"] and r["labels_equal"], engine
        assert r["agreement_labels_saved"] == 2 and r["agreement_figures"]["annotators"] == 4, engine
        assert r["judging_action"]["n"] == 12 and r["agreement_refresh"]["n"] == 2, engine
        assert r["freeze_counts_equal"], engine
        assert r["freeze_counts"]["n_queries"] == report["stores"]["freeze"]["queries"], engine
        assert r["freeze_counts"]["n_judgments"] == report["stores"]["freeze"]["final_grades"], engine
    assert report["agreement_figures_equal"]
    assert report["duckdb"]["agreement_figures"]["kappa_linear"] == report["postgresql"]["agreement_figures"][
        "kappa_linear"]
    assert report["freeze_data_digest_equal"]
    # the databases the script made on the given server are gone
    import psycopg

    with psycopg.connect(pg_cluster.url("postgres"), autocommit=True) as conn:
        left = conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'bench_team_store_%'").fetchone()[0]
    assert left == 0
