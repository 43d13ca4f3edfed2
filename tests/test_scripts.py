"""The benchmark scripts still run end to end (tiny sizes; no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_store_runs_and_reports_ratios(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_store.py"), "--queries", "300", "--events", "3000",
         "--docs", "60", "--reps", "1", "--json"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["frozen_rows"]["queries.parquet"] == report["store"]["queries"]
    assert report["verify_checked"]["spans"] == report["frozen_rows"]["spans.parquet"]
    for item in ("freeze", "verify"):
        assert report[item]["ratio_vs_baseline"] > 0 and report[item]["median_s"] > 0
