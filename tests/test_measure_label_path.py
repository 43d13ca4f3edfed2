"""scripts/measure_label_path.py (issue 29 item 1) runs on a small generated store and its
incremental progress (counted from acknowledgements) equals the store's exact count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_measure_label_path_runs_and_counts_progress_exactly(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "measure_label_path.py"), "--docs", "60", "--queries", "20",
         "--labels", "30", "--json", "--keep", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout.strip().splitlines()[-1])
    after, before = res["after"], res["before"]
    assert before["per_label"]["n"] == after["per_label"]["n"] == 30
    assert after["progress_incremental"] == after["progress_exact"]
    assert after["progress_exact"][0] == 30  # 30 labels on 30 distinct items
    assert 1 <= after["refills"] < 30  # refilled ahead, not after each label
