#!/usr/bin/env python3
"""Judging benchmark: server-side time of one judging action (record a grade + fetch the
next item) on a store holding ``--events`` grade events, and pool building over
``--runs`` runs x ``--queries`` queries x depth ``--depth``; both against a trivial
primary-key read measured in the same run.

What it does, in order:

1. builds a store in a temporary folder (fixed seed): ``--docs`` generated documents
   (0.5-2 KB, imported through ``golden_store.live.documents``), ``--queries`` queries (through
   ``golden_store.live.queries.import_queries``), ``--runs`` runs of ``depth + 5`` results per
   query (``runs`` + ``run_results`` rows inserted directly from a registered DataFrame;
   each query's runs draw from a shared candidate set of ~``2 x depth`` spans, so runs
   overlap as real systems do). Generation time is not measured.
2. builds the pool once (not measured), then bulk-inserts ``--events`` grade_events on pool
   items (``--annotators`` annotators, ops grade 85% / skip 10% / unsure 5%, grades 0-3,
   repeats on an item = re-grades, event_id from the sequence default) from a registered
   DataFrame. One extra annotator, ``judge``, has done half of their queue (their events
   are part of ``--events``).
3. pool building with the events in place, each rep in a fresh child process: ``DELETE
   FROM pool_items; DELETE FROM pool_sources`` (not measured), then
   ``golden_store.live.pool.build_pool(depth=--depth)`` over all runs (timed), ``--pool-reps``
   times; every rep rebuilds the same pool. The baseline is ``CREATE TEMP TABLE .. AS
   SELECT DISTINCT`` of the same top-k spans (read + de-duplication floor, no writes to
   persistent tables).
4. in a fresh child: ``--actions`` judging actions by ``judge``, each on the item just
   fetched: ``record(op=grade)`` (every 10th a skip) followed by
   ``next_items(store, 'judge', 1)``; interleaved with a baseline ``SELECT * FROM documents
   WHERE doc_id = ?`` through the same ``Store.read``. The record and next_items parts are
   also reported separately. 10 unmeasured warm-up actions first.
5. prints medians / p95, ratios to the baseline and peak RSS (VmHWM of the child) as a
   table, then one JSON line (``--json``: only the JSON line).

Usage::

    python scripts/bench_judging.py [--events 1000000] [--queries 1000] [--runs 5]
                                    [--depth 20] [--actions 200] [--json] [--explain]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import date, datetime
from pathlib import Path

from benchlib import _mark_before, _maxrss_kib, child_runner, log, mib, percentile, refill_grade_state, set_quiet, syllable_vocab, work_dir  # noqa: E402  (scripts/ is on sys.path)

run_child = child_runner(__file__)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
ACTOR = "bench"
JUDGE = "judge"
JUDGE_DONE_SHARE = 0.5
P95_TARGET_MS = 150.0


# ---- data generation ---------------------------------------------------------------------------


def make_document(rng: random.Random, vocab: list[str], i: int) -> tuple[str, bytes]:
    target = rng.randint(500, 2000)
    parts = [f"# {' '.join(rng.choices(vocab, k=3)).title()} {i}\n\n"]
    size = len(parts[0])
    while size < target:
        words = rng.choices(vocab, k=rng.randint(20, 60))
        para = " ".join(words).capitalize() + ".\n\n"
        parts.append(para)
        size += len(para)
    return f"doc-{i:05d}.md", ("".join(parts)[:target].rstrip() + "\n").encode("utf-8")


def generate_base(db: Path, n_docs: int, n_queries: int, n_runs: int, depth: int, seed: int) -> dict:
    """Documents, queries, runs (no pool, no grade events)."""
    import pandas as pd

    from golden_store.corpus import sources
    from golden_store.live import documents
    from golden_store.live.queries import QueryRecord, import_queries
    from golden_store.db.store import Store, utcnow

    rng = random.Random(seed)
    vocab = syllable_vocab(rng, 2000)
    t0 = time.perf_counter()
    docs = sources.load_sources([make_document(rng, vocab, i) for i in range(n_docs)])
    lengths = {d.doc_id: len(d.raw_text) for d in docs}
    doc_ids = sorted(lengths)
    qids = [f"q-{i:05d}" for i in range(n_queries)]
    records = [QueryRecord(query_id=q, text="How does " + " ".join(rng.choices(vocab, k=rng.randint(3, 10))) + " work?",
                           stratum=rng.choice(["lexical", "paraphrase", "multi_hop", "long_tail"]), answerable=True,
                           source="expert", created_date=date(2025, 1, 6)) for q in qids]
    # each query: a candidate set of ~2 x depth spans; each run ranks depth + 5 of them
    per_run = depth + 5
    rows = []
    for q in qids:
        cands = []
        for _ in range(max(per_run, 2 * depth)):
            d = rng.choice(doc_ids)
            n = lengths[d]
            ln = min(n, rng.randint(200, 600))
            s = rng.randint(0, n - ln)
            cands.append((d, s, s + ln))
        cands = list(dict.fromkeys(cands))
        for r in range(n_runs):
            picked = rng.sample(cands, k=min(per_run, len(cands)))
            for rank, (d, s, e) in enumerate(picked, 1):
                rows.append((f"sys{r + 1}", q, rank, 100.0 - rank, d, s, e, "exact"))
    rr = pd.DataFrame(rows, columns=["system", "query_id", "rank", "score", "doc_id", "start", "end", "match_kind"])

    store = Store.open(db)
    try:
        documents.import_documents(store, docs, actor=ACTOR)
        import_queries(store, records, actor=ACTOR)

        def tx(cur) -> None:
            now = utcnow()
            for r in range(n_runs):
                system = f"sys{r + 1}"
                cur.execute("INSERT INTO runs VALUES (?, 'jsonl', ?, ?, ?, ?, ?)",
                            [system, f"{system}.jsonl", "0" * 64, int((rr["system"] == system).sum()), now, ACTOR])
            cur.register("_rr", rr)
            cur.execute("INSERT INTO run_results SELECT system, query_id, rank, score, doc_id, start, \"end\","
                        " match_kind FROM _rr")
            cur.unregister("_rr")

        store.write(tx)
    finally:
        store.close()
    return {"documents": n_docs, "queries": n_queries, "runs": n_runs, "run_results": len(rr),
            "base_generation_s": round(time.perf_counter() - t0, 2)}


def generate_events(db: Path, n_events: int, n_annotators: int, seed: int) -> dict:
    """Bulk grade events on pool items; JUDGE does about half of their queue."""
    import numpy as np
    import pandas as pd

    from golden_store.db.store import Store

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    store = Store.open(db, create=False)
    try:
        pool = store.df("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY ALL")
        n_pool = len(pool)
        n_judge = min(n_events, int(n_pool * JUDGE_DONE_SHARE))
        n_rest = n_events - n_judge
        # JUDGE: a random half of the pool, one event each
        j_idx = rng.choice(n_pool, size=n_judge, replace=False)
        # others: items uniformly at random (repeats = re-grades / several annotators)
        o_idx = rng.integers(0, n_pool, size=n_rest)
        idx = np.concatenate([j_idx, o_idx])
        actors = np.concatenate([np.full(n_judge, JUDGE, dtype=object),
                                 np.array([f"ann{i:03d}" for i in range(n_annotators)], dtype=object)[
                                     rng.integers(0, n_annotators, size=n_rest)]])
        r = rng.random(n_events)
        op = np.where(r < 0.85, "grade", np.where(r < 0.95, "skip", "unsure")).astype(object)
        grade = pd.array(np.where(op == "grade", rng.integers(0, 4, size=n_events), -1), dtype="Int16")
        grade[op != "grade"] = pd.NA
        start = datetime(2025, 1, 6, 8, 0, 0)
        secs = np.sort(rng.uniform(0, 180 * 86400, size=n_events))
        order = rng.permutation(n_events)  # interleave the judge's events with everyone else's
        ev = pd.DataFrame({
            "query_id": pool["query_id"].to_numpy()[idx][order],
            "doc_id": pool["doc_id"].to_numpy()[idx][order],
            "start": pool["start"].to_numpy()[idx][order],
            "end": pool["end"].to_numpy()[idx][order],
            "op": op[order], "grade": grade[order], "actor": actors[order],
            "created_at": pd.Timestamp(start) + pd.to_timedelta(secs, unit="s"),
        })

        def tx(cur) -> None:
            cur.register("_ev", ev)
            cur.execute("INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor,"
                        " created_at, rubric_version) SELECT query_id, doc_id, start, \"end\", NULL, op, grade, actor,"
                        " created_at, 1 FROM _ev")
            cur.unregister("_ev")
            refill_grade_state(cur)

        store.write(tx)
        n_ge, n_actors, judge_events = store.read_one(
            "SELECT count(*), count(DISTINCT actor), count(*) FILTER (actor = ?) FROM grade_events", [JUDGE])
    finally:
        store.close()
    return {"pool_items": n_pool, "grade_events": int(n_ge), "annotators": int(n_actors),
            "judge_events": int(judge_events), "events_generation_s": round(time.perf_counter() - t0, 2)}


def generate_judge_labels(db: Path, share: float, seed: int) -> dict:
    """A calibrated judge's labels on ``share`` of the pool (issue 27): judge_label_events and
    judge_item_state, 90% of them standing (route 'judge': out of every Judge queue), 10% the
    standing sample. Inserted directly, as the grade events are."""
    import numpy as np

    from golden_store.db.store import Store

    rng = np.random.default_rng(seed + 27)
    store = Store.open(db, create=False)
    try:
        pool = store.df("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY ALL")
        idx = rng.choice(len(pool), size=int(len(pool) * share), replace=False)
        lab = pool.iloc[idx].reset_index(drop=True)
        lab["route"] = np.where(rng.random(len(lab)) < 0.1, "sample", "judge")
        lab["grade"] = rng.integers(0, 4, size=len(lab))

        def tx(cur) -> None:
            cur.execute("INSERT INTO judge_jobs VALUES ('j1', 'c1', 'claude-sonnet-4-5', 'r', 'batch', 0.1, 0, 0.8, "
                        "NULL, NULL, 'bench', now())")
            cur.register("_jl", lab)
            cur.execute("INSERT INTO judge_label_events (job_id, calibration_id, query_id, doc_id, start, \"end\", "
                        "outcome, route, grade, model, rubric_sha, created_at) SELECT 'j1', 'c1', query_id, doc_id, "
                        "start, \"end\", 'labeled', route, grade, 'claude-sonnet-4-5', 'r', now() FROM _jl")
            cur.execute("INSERT INTO judge_item_state SELECT e.query_id, e.doc_id, e.start, e.\"end\", e.event_id, "
                        "'j1', 'c1', 'labeled', e.route, e.grade, e.created_at FROM judge_label_events e")
            cur.unregister("_jl")

        store.write(tx)
    finally:
        store.close()
    return {"judge_labeled": int(len(lab)), "judge_standing": int((lab["route"] == "judge").sum())}


# ---- child side: measured operations in a fresh process ----------------------------------------


def child(args: argparse.Namespace) -> None:
    from golden_store.live import judging
    from golden_store.live.pool import build_pool
    from golden_store.db.store import Store

    out: dict = {}
    store = Store.open(args.db, create=False)
    try:
        if args.op == "pool":
            store.write(lambda cur: (cur.execute("DELETE FROM pool_items"), cur.execute("DELETE FROM pool_sources")))
            pre_peak, before = _mark_before()
            t = time.perf_counter()
            rep = build_pool(store, args.depth, actor=ACTOR)
            out["seconds"] = time.perf_counter() - t
            out["report"] = {"queries": rep.queries, "pool_size": rep.pool_size, "new_items": rep.new_items}
        elif args.op == "pool_baseline":
            pre_peak, before = _mark_before()

            def floor(cur) -> int:
                cur.execute("CREATE TEMP TABLE _b AS SELECT DISTINCT query_id, doc_id, start, \"end\" FROM run_results"
                            " WHERE rank <= ?", [args.depth])
                n = cur.execute("SELECT count(*) FROM _b").fetchone()[0]
                cur.execute("DROP TABLE _b")
                return n

            t = time.perf_counter()
            out["rows"] = store.write(floor)
            out["seconds"] = time.perf_counter() - t
        else:  # judge
            doc_ids = [r[0] for r in store.read("SELECT doc_id FROM documents ORDER BY doc_id")]
            rnd = random.Random(args.seed)
            item = judging.next_items(store, JUDGE, 1)[0]
            done0, total = judging.progress(store, JUDGE)

            def act(it: dict, i: int) -> tuple[float, float, dict | None]:
                t0 = time.perf_counter()
                if i % 10 == 9:
                    judging.record(store, JUDGE, it["query_id"], it["doc_id"], it["start"], it["end"], op="skip")
                else:
                    judging.record(store, JUDGE, it["query_id"], it["doc_id"], it["start"], it["end"], op="grade",
                                   grade=rnd.randint(0, 3), rubric_version=1)
                t1 = time.perf_counter()
                nxt = judging.next_items(store, JUDGE, 1)
                t2 = time.perf_counter()
                return t1 - t0, t2 - t1, (nxt[0] if nxt else None)

            for i in range(10):  # warm-up, not measured
                store.read("SELECT * FROM documents WHERE doc_id = ?", [rnd.choice(doc_ids)])
                _, _, item = act(item, i)
            pre_peak, before = _mark_before()
            base, rec, nxt, action = [], [], [], []
            for i in range(args.actions):
                if item is None:
                    break
                t = time.perf_counter()
                store.read("SELECT * FROM documents WHERE doc_id = ?", [rnd.choice(doc_ids)])
                base.append(time.perf_counter() - t)
                r, n, item = act(item, i)
                rec.append(r)
                nxt.append(n)
                action.append(r + n)
            done1, _ = judging.progress(store, JUDGE)
            out.update(baseline=base, record=rec, next_items=nxt, action=action,
                       progress_before=[done0, total], progress_after=[done1, total])
            if args.explain:
                sql, params = _next_items_sql()
                res = store.read(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
                out["explain"] = _plan_lines(json.loads(res[0][1]))
    finally:
        store.close()
    out["call_peak_kib"] = _maxrss_kib()
    out["maxrss_kib"] = max(out["call_peak_kib"], pre_peak)
    out["pre_rss_kib"] = before
    print(json.dumps(out))


def _next_items_sql() -> tuple[str, list]:
    """The SQL of judging.next_items, for EXPLAIN ANALYZE (kept in step with the module)."""
    from golden_store.live.judging import _DONE

    sql = ("SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.text AS query_text "
           "FROM pool_items p JOIN queries q USING (query_id) "
           f"ANTI JOIN ({_DONE}) d USING (query_id, doc_id, start, \"end\") "
           "ORDER BY hash(? || '\x1f' || p.query_id || '\x1f' || p.doc_id || '\x1f' || p.start || '\x1f' || p.\"end\") "
           "LIMIT ?")
    return sql, [JUDGE, JUDGE, 1]


def _plan_lines(plan: dict) -> list[str]:
    """An EXPLAIN ANALYZE JSON plan as one line per operator: own time, rows, what it reads."""
    lines: list[str] = []
    keep = ("Table", "Join Type", "Conditions", "Filters", "Expression", "Top", "Order By")

    def walk(node: dict, depth: int) -> None:
        if node.get("name") not in ("RESULT_COLLECTOR", "EXPLAIN_ANALYZE"):
            info = node.get("extra_info") or {}
            extra = "; ".join(f"{k}: {' '.join(v) if isinstance(v, list) else v}" for k, v in info.items() if k in keep)
            scanned = f", scanned {node['rows_scanned']}" if "rows_scanned" in node else ""
            lines.append(f"{'  ' * depth}{node['name']}: {node.get('timing', 0) * 1000:.1f} ms, "
                         f"{node.get('intermediate_rows', 0)} rows{scanned}" + (f"  [{extra[:300]}]" if extra else ""))
            depth += 1
        for ch in node.get("children", []):
            walk(ch, depth)

    for op in plan.get("operator", []):
        walk(op, 0)
    return lines


# ---- parent -----------------------------------------------------------------------------------


def _ms(xs: list[float]) -> dict:
    return {"median_ms": round(statistics.median(xs) * 1000, 2), "p95_ms": round(percentile(xs, 95) * 1000, 2),
            "min_ms": round(min(xs) * 1000, 2), "max_ms": round(max(xs) * 1000, 2), "n": len(xs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="grade events in the store")
    ap.add_argument("--queries", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--actions", type=int, default=200, help="measured judging actions")
    ap.add_argument("--docs", type=int, default=2_000)
    ap.add_argument("--annotators", type=int, default=40)
    ap.add_argument("--pool-reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    ap.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE next_items after the actions")
    ap.add_argument("--judge-labeled", type=float, default=0.0, metavar="SHARE",
                    help="then label SHARE of the pool by a judge (issue 27) and measure the judging actions again")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temp dir, removed)")
    ap.add_argument("--_child", dest="op", choices=["pool", "pool_baseline", "judge"], help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.op:
        child(args)
        return 0
    if min(args.queries, args.docs, args.runs, args.depth, args.actions, args.pool_reps, args.annotators) < 1 \
            or args.events < 0:
        ap.error("sizes must be >= 1 (--events >= 0)")
    set_quiet(args.json)

    import duckdb

    work, tmp = work_dir(ap, args.keep, "bench_judging-")
    try:
        db = work / "bench.duckdb"
        log(f"generating: {args.docs} docs, {args.queries} queries, {args.runs} runs x {args.depth + 5} results "
            f"(seed {args.seed}) in {work}")
        stats = generate_base(db, args.docs, args.queries, args.runs, args.depth, args.seed)
        log(f"  done: {json.dumps(stats)}")

        log("initial pool (not measured; the grade events are placed on its items)")
        run_child("pool", db=db, depth=args.depth)
        log(f"inserting {args.events} grade events ({args.annotators} annotators + {JUDGE})")
        stats.update(generate_events(db, args.events, args.annotators, args.seed))
        stats["db_bytes"] = db.stat().st_size
        log(f"  done: {json.dumps(stats)}")

        log("pool building with the events in place (fresh child per rep; empty pool each time)")
        run_child("pool_baseline", db=db, depth=args.depth)  # warm-up
        pool_runs, pool_base = [], []
        for rep in range(1, args.pool_reps + 1):
            pool_base.append(run_child("pool_baseline", db=db, depth=args.depth))
            pool_runs.append(run_child("pool", db=db, depth=args.depth))
            log(f"  rep {rep}/{args.pool_reps}: build_pool {pool_runs[-1]['seconds']:.3f} s "
                f"({pool_runs[-1]['report']['pool_size']} items), floor {pool_base[-1]['seconds']:.3f} s")

        log(f"judging: {args.actions} actions by {JUDGE!r} in a fresh child")
        j = run_child("judge", db=db, actions=args.actions, seed=args.seed, explain=args.explain)
        jj = None
        if args.judge_labeled > 0:
            log(f"judge labels on {args.judge_labeled:.0%} of the pool, then the judging actions again")
            stats.update(generate_judge_labels(db, args.judge_labeled, args.seed))
            jj = run_child("judge", db=db, actions=args.actions, seed=args.seed + 1)

        pool_secs = [r["seconds"] for r in pool_runs]
        pb_secs = [r["seconds"] for r in pool_base]
        pool = {"median_s": round(statistics.median(pool_secs), 3), "min_s": round(min(pool_secs), 3),
                "max_s": round(max(pool_secs), 3), "reps": len(pool_secs),
                "pool_size": pool_runs[-1]["report"]["pool_size"],
                "peak_rss_mib": mib(max(r["maxrss_kib"] for r in pool_runs)),
                "rss_growth_mib": mib(statistics.median(r["call_peak_kib"] - r["pre_rss_kib"] for r in pool_runs))}
        pool_floor = {"median_s": round(statistics.median(pb_secs), 3), "min_s": round(min(pb_secs), 3),
                      "max_s": round(max(pb_secs), 3)}
        pool["ratio_vs_baseline"] = round(statistics.median(pool_secs) / statistics.median(pb_secs), 2)
        judge = {k: _ms(j[k]) for k in ("action", "record", "next_items", "baseline")}
        bmed = statistics.median(j["baseline"])
        for k in ("action", "record", "next_items"):
            judge[k]["ratio_vs_baseline"] = round(statistics.median(j[k]) / bmed, 1)
        result = {
            "bench": "judging",
            "date": date.today().isoformat(),
            "params": {"events": args.events, "queries": args.queries, "runs": args.runs, "depth": args.depth,
                       "actions": args.actions, "docs": args.docs, "annotators": args.annotators,
                       "pool_reps": args.pool_reps, "seed": args.seed},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                        "duckdb": duckdb.__version__, "platform": platform.platform()},
            "store": stats,
            "judging_action": judge["action"],
            "record": judge["record"],
            "next_items": judge["next_items"],
            "baseline_pk_read": judge["baseline"],
            "judge_progress_before": j["progress_before"], "judge_progress_after": j["progress_after"],
            "judge_peak_rss_mib": mib(j["maxrss_kib"]),
            "judge_rss_growth_mib": mib(j["call_peak_kib"] - j["pre_rss_kib"]),
            "build_pool": pool,
            "pool_baseline_distinct_topk": pool_floor,
            **({"with_judge_labels": {
                "share": args.judge_labeled,
                "next_items": _ms(jj["next_items"]), "action": _ms(jj["action"]), "baseline": _ms(jj["baseline"]),
                "next_items_ratio_vs_without": round(statistics.median(jj["next_items"])
                                                     / statistics.median(j["next_items"]), 2),
                "next_items_ratio_vs_baseline": round(statistics.median(jj["next_items"])
                                                      / statistics.median(jj["baseline"]), 1)}} if jj else {}),
            "targets": {"action_p95_ms": P95_TARGET_MS,
                        "action_p95_met": judge["action"]["p95_ms"] <= P95_TARGET_MS},
            "rss_metric": "peak RSS = VmHWM of the fresh child process that ran the calls (whole process); "
                          "growth = VmHWM during the calls - VmRSS just before them",
        }
        if not args.json:
            print(f"\nJudging benchmark: {stats['grade_events']} grade events ({stats['annotators']} annotators), "
                  f"pool {stats['pool_items']} items over {args.queries} queries x {args.runs} runs x depth "
                  f"{args.depth}; nproc {os.cpu_count()}, Python {platform.python_version()}, DuckDB {duckdb.__version__}")
            hdr = f"{'operation':<34}{'median ms':>11}{'p95 ms':>10}{'max ms':>10}{'x baseline':>12}"
            print(hdr)
            print("-" * len(hdr))
            for label, key in (("action (record + next_items)", "action"), ("  record", "record"),
                               ("  next_items(limit 1)", "next_items"), ("baseline PK read (documents)", "baseline")):
                s = judge[key]
                ratio = f"{s['ratio_vs_baseline']:.1f}" if "ratio_vs_baseline" in s else "1.0"
                print(f"{label:<34}{s['median_ms']:>11.2f}{s['p95_ms']:>10.2f}{s['max_ms']:>10.2f}{ratio:>12}")
            print(f"judge child: peak RSS {result['judge_peak_rss_mib']} MiB, growth {result['judge_rss_growth_mib']} MiB;"
                  f" queue {j['progress_before'][0]}/{j['progress_before'][1]} -> {j['progress_after'][0]} done")
            print(f"p95 target {P95_TARGET_MS:.0f} ms: {'met' if result['targets']['action_p95_met'] else 'NOT met'}")
            print(f"\nbuild_pool(depth={args.depth}) from an empty pool: median {pool['median_s']:.3f} s "
                  f"(min {pool['min_s']:.3f}, max {pool['max_s']:.3f}, {pool['reps']} reps), "
                  f"{pool['pool_size']} items; floor (DISTINCT top-k into a temp table) {pool_floor['median_s']:.3f} s "
                  f"-> {pool['ratio_vs_baseline']:.2f}x; peak RSS {pool['peak_rss_mib']} MiB")
            if jj:
                w = result["with_judge_labels"]
                print(f"with {stats['judge_standing']} judge-labeled items out of the queues ({args.judge_labeled:.0%} "
                      f"of the pool labeled): next_items median {w['next_items']['median_ms']:.2f} ms, p95 "
                      f"{w['next_items']['p95_ms']:.2f} ms = {w['next_items_ratio_vs_without']:.2f}x without; "
                      f"action p95 {w['action']['p95_ms']:.2f} ms")
            if args.explain:
                print("\n--- EXPLAIN ANALYZE next_items (operator: own time, output rows) ---")
                print("\n".join(j["explain"]))
            print()
        print(json.dumps(result, sort_keys=False))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
