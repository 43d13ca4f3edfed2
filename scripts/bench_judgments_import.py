"""Benchmark: `golden judgments import` of a generated TREC qrels file on DuckDB (issue 28).

Builds a store of ``--docs`` documents and ``--queries`` queries, writes a qrels file of
``--lines`` judgments (``--lines / --queries`` documents per query, grades 0-3, a few -1
lines) and times ``annotator.integration.judgments_import.import_judgments`` on it, with the peak memory
of the import itself (VmHWM reset before the call). Prints one JSON object.

    python scripts/bench_judgments_import.py --lines 1000000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import _mark_before, _maxrss_kib, mib, numbered_corpus_and_questions, work_dir  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    args = ap.parse_args()

    from annotator.integration import judgments_import
    from annotator.people import identity
    from golden_store.db.store import Store

    work, tmp = work_dir(ap, args.keep, "bench_judg_")
    try:
        rng = random.Random(args.seed)
        t0 = time.perf_counter()
        store = Store.open(work / "golden.duckdb")
        numbered_corpus_and_questions(store, work, args.docs, args.queries)
        per_query = max(1, args.lines // args.queries)
        qrels = work / "qrels.trec"
        n_lines = n_neg = 0
        with qrels.open("w", encoding="ascii") as fh:
            for q in range(args.queries):
                for d in rng.sample(range(args.docs), per_query):
                    g = rng.choice((0, 0, 0, 1, 1, 2, 3)) if rng.random() > 0.01 else -1
                    n_neg += g < 0
                    fh.write(f"Q{q:06d} 0 D{d:07d} {g}\n")
                    n_lines += 1
        setup_s = time.perf_counter() - t0
        user = identity.cli_user()
        peak_before, rss_before = _mark_before()
        t1 = time.perf_counter()
        rep = judgments_import.import_judgments(store, user, qrels)
        import_s = time.perf_counter() - t1
        peak = _maxrss_kib()
        n_events = store.read_one("SELECT count(*) FROM grade_events")[0]
        store.close()
        print(json.dumps({
            "lines": n_lines, "negative_lines": n_neg, "judgments": rep.n_judgments, "grade_events": int(n_events),
            "queries": args.queries, "documents": args.docs, "file_mib": round(qrels.stat().st_size / 2**20, 1),
            "setup_s": round(setup_s, 1), "import_s": round(import_s, 1),
            "rss_before_import_mib": round(mib(rss_before), 0), "peak_rss_during_import_mib": round(mib(peak), 0),
            "import_peak_over_before_mib": round(mib(peak - rss_before), 0),
            "peak_before_import_mib": round(mib(peak_before), 0)}, indent=2))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
