"""What auditing every API request costs (issue 28, API tokens): N calls of the per-request
audit written one transaction each, against the same N rows written in one transaction (what
the buffered audit does), on a DuckDB file and on PostgreSQL (a throwaway cluster from
tests/pg.py, made durable: fsync and synchronous_commit on, as a real server runs).

    python scripts/bench_token_audit.py [--uses 1000] [--table-rows 200000] [--no-postgres] [--json]

Then what keeping the table bounded adds to a write (probe A9, schema 26): on a table already
holding ``--table-rows`` rows (half refusals, half answered requests, spread over their
retention), one-row writes with no pruning, with the deletes by age (done in the first write
of each minute), and with the check of the refusal cap (done once per 1% of the cap).

No figure is asserted anywhere; the numbers decide whether the audit is buffered and how it is
pruned (see ``annotator/people/api_tokens.py``)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotator.people import api_tokens  # noqa: E402
from annotator.people.identity import cli_user  # noqa: E402
from golden_store.db.store import Store, utcnow  # noqa: E402
from golden_store.live import api_tokens as rows  # noqa: E402


def _measure(store: Store, uses: int) -> dict[str, float]:
    info, secret = api_tokens.create_token(store, cli_user(), "bench", ["engineer"], expires_in=timedelta(days=1))
    t0 = time.perf_counter()
    for i in range(uses):  # the unbuffered path: one transaction per request
        rows.record_uses(store, [(info.token_id, "10.0.0.1", "GET", f"/api/v1/versions/{i}", 200, "ok", utcnow())])
    one_each = time.perf_counter() - t0
    batch = [(info.token_id, "10.0.0.1", "GET", f"/api/v1/versions/{i}", 200, "ok", utcnow()) for i in range(uses)]
    t0 = time.perf_counter()
    rows.record_uses(store, batch)
    batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(uses):  # what every request pays anyway: finding the token by its hash
        api_tokens.authenticate(store, secret)
    auth = time.perf_counter() - t0
    return {"uses": uses, "one_transaction_each_s": round(one_each, 3),
            "per_use_ms": round(one_each / uses * 1000, 3), "one_transaction_for_all_s": round(batched, 4),
            "authenticate_per_request_ms": round(auth / uses * 1000, 3)}


def _measure_prune(store: Store, table_rows: int, writes: int) -> dict[str, float]:
    info, _ = api_tokens.create_token(store, cli_user(), "bench-prune", ["engineer"], expires_in=timedelta(days=1))
    now = utcnow()
    half = table_rows // 2
    fill = [(None, f"10.2.{i % 250}.{i % 199}", "GET", "/api/v1/versions", 401, "unknown",
             now - timedelta(days=29) * (1 - i / half)) for i in range(half)]
    fill += [(info.token_id, "10.0.0.1", "GET", f"/api/v1/versions/{i}", 200, "ok",
              now - timedelta(days=399) * (1 - i / half)) for i in range(half)]
    for start in range(0, len(fill), 50_000):
        rows.record_uses(store, fill[start:start + 50_000])
    retention = api_tokens.AuditRetention(refused_max_rows=max(half, 1) + 1000)  # at the cap, nothing to cut
    out: dict[str, float] = {"table_rows": table_rows}
    for label, prune in (("no_prune", None), ("by_age", retention.prune(age=True, cap=False)),
                         ("cap_check", retention.prune(age=False, cap=True))):
        t0 = time.perf_counter()
        for _ in range(writes):
            rows.record_uses(store, [(None, "10.3.0.1", "GET", "/api/v1/x", 401, "unknown", utcnow())], prune=prune)
        out[f"{label}_per_write_ms"] = round((time.perf_counter() - t0) / writes * 1000, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uses", type=int, default=1000)
    ap.add_argument("--table-rows", type=int, default=200_000, help="audit rows already there when pruning is timed")
    ap.add_argument("--prune-writes", type=int, default=200)
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with Store.open(Path(tmp) / "bench.duckdb") as store:
            out["duckdb"] = _measure(store, args.uses)
            out["duckdb_prune"] = _measure_prune(store, args.table_rows, args.prune_writes)
        if not args.no_postgres:
            from tests import pg

            why = pg.unavailable()
            if why:
                out["postgresql"] = f"skipped: {why}"
            else:
                cluster = pg.start_cluster()
                try:
                    for setting in ("fsync = on", "synchronous_commit = on", "full_page_writes = on"):
                        cluster.admin(f"ALTER SYSTEM SET {setting}")
                    cluster.admin("SELECT pg_reload_conf()")
                    with Store.open(cluster.new_database()) as store:
                        out["postgresql"] = _measure(store, args.uses)
                        out["postgresql_prune"] = _measure_prune(store, args.table_rows, args.prune_writes)
                finally:
                    pg.stop_cluster(cluster)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for engine, figures in out.items():
            print(f"{engine}: {figures}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
