"""`golden demo` loads what the app's "Load the demo project" button loads (every workflow
filled); `--small` keeps the corpus, questions, evidence and rubric only (issue 29, item 3).
Run as a user runs it: the installed command on real DuckDB files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from golden_store.db.store import Store

GOLDEN = Path(sys.executable).parent / "golden"


def _golden(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GOLDEN_DB", "GOLDEN_VERSIONS")}
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def _counts(db: Path) -> tuple[int, int, int, int]:
    with Store.open(db) as s:
        return tuple(s.read_one(  # type: ignore[return-value]
            "SELECT (SELECT count(*) FROM queries), (SELECT count(*) FROM runs), (SELECT count(*) FROM pool_items), "
            "(SELECT count(*) FROM rounds)"))


def test_golden_demo_is_the_full_demo_and_small_is_the_small_one(tmp_path):
    for d in ("full", "small", "again", "x"):  # each store its own folder: versions go beside the store
        (tmp_path / d).mkdir()
    full, small = tmp_path / "full" / "s.duckdb", tmp_path / "small" / "s.duckdb"
    r = _golden(tmp_path, "--db", str(full), "demo", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["workflows"]["runs"] == 3 and rep["workflows"]["version"] == "demo.v0"
    q, n_runs, pool, n_rounds = _counts(full)
    assert (q, n_runs) == (40, 3) and pool > 0 and n_rounds >= 1
    assert (tmp_path / "full" / "versions" / "demo.v0" / "manifest.json").exists()

    r = _golden(tmp_path, "--db", str(small), "demo", "--small")
    assert r.returncode == 0, r.stderr
    assert "Next: golden freeze demo.v1" in r.stdout
    assert _counts(small) == (40, 0, 0, 0)
    # --full is still accepted (scripts written before it became the default)
    r = _golden(tmp_path, "--db", str(tmp_path / "again" / "s.duckdb"), "demo", "--full")
    assert r.returncode == 0 and "Next: golden serve (every page has data)" in r.stdout
    assert _golden(tmp_path, "--db", str(tmp_path / "x" / "s.duckdb"), "demo", "--small", "--full").returncode == 2
