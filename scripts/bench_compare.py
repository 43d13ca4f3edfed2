"""Time ``compare_runs`` on a realistic sweep: Q questions over S strata of 1 to 30 questions
each (many under the 30 below which a cell's p is the exact sign-flip test's), M metrics of
0/1 and graded values, with cohorts by source. Prints the median of REPS runs (seconds) and
what the comparison holds; ``--json`` for a line a script reads. Run it against another
checkout of the studio (``PYTHONPATH=/other/checkout python scripts/bench_compare.py``) to
get a baseline in the same run; BENCHMARKS.md records the medians and the ratio."""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pandas as pd

from golden_store.scoring.compare import compare_runs


def sweep(n_queries: int, n_metrics: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    rng = np.random.default_rng(seed)
    sizes, left = [], n_queries
    while left > 0:  # strata of 1..30 questions
        s = int(min(left, rng.integers(1, 31)))
        sizes.append(s)
        left -= s
    strata = np.repeat([f"s{i}" for i in range(len(sizes))], sizes)
    qids = [f"q{i:05d}" for i in range(n_queries)]
    frames_a, frames_b = [], []
    for m in range(n_metrics):
        if m % 2 == 0:  # a 0/1 measure (R@10 of one relevant passage): many ties
            a = rng.integers(0, 2, n_queries).astype(float)
            b = np.where(rng.random(n_queries) < 0.1, 1 - a, a)
        else:  # a graded one (nDCG@10)
            a = rng.random(n_queries)
            b = np.clip(a + rng.normal(-0.01, 0.1, n_queries), 0, 1)
        for vals, out in ((a, frames_a), (b, frames_b)):
            out.append(pd.DataFrame({"query_id": qids, "stratum": strata, "metric": f"m{m}", "value": vals}))
    cohorts = {q: ("production_log" if i % 7 == 0 else "expert") for i, q in enumerate(qids)}
    return pd.concat(frames_a), pd.concat(frames_b), cohorts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=6)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    a, b, cohorts = sweep(args.queries, args.metrics, args.seed)
    compare_runs(a.head(200), b.head(200))  # warm-up: imports, first calls
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        c = compare_runs(a, b, cohorts=cohorts, cohort_by="source")
        times.append(time.perf_counter() - t0)
    corr = c["correction"]
    out = {"queries": args.queries, "metrics": args.metrics, "median_s": statistics.median(times),
           "comparisons": corr["comparisons"], "too_few": corr.get("too_few", 0)}
    print(json.dumps(out) if args.json else
          f"compare_runs {args.queries} queries x {args.metrics} metrics (+ cohorts): median {out['median_s']:.3f} s "
          f"over {args.reps}; {out['comparisons']} corrected comparisons, {out['too_few']} too-few cells")


if __name__ == "__main__":
    main()
