#!/usr/bin/env python3
"""Agreement benchmark: one live refresh of the Agreement page
(``annotator.labeling.agreement.compute(store, LOCAL_USER)``) on a store where ``--annotators``
annotators labelled ``--items`` items, split into its parts, against a naive pairwise
Cohen's kappa (scikit-learn + pandas merges) measured in the same run.

What it does, in order:

1. builds a store in a temporary folder (fixed seed), all rows inserted directly with SQL
   from registered DataFrames (generation is not measured):
   - ``--items / 10`` queries (10 items each) over the 7 builtin strata, as
     ``query_revisions`` rows;
   - ``--items`` items = (query, doc, start, end) units. Each item has a true grade
     (0-3: 45/25/18/12%) and is labelled by 2 of the annotators, the pairs rotating so
     every pair shares items; 10% get a third annotator. Each annotator has a reliability
     (0.60-0.90): with that probability they give the true grade, else one grade off
     (3 in 4) or a uniform grade. Labels spread over 12 weeks in 6 rounds (``round_id``);
   - extra ``grade_events``: 5% of labels have an earlier, superseded grade (re-grades),
     1% are retracted afterwards, 2% of items have a ``skip`` by someone else;
   - 5% of the items are adjudicated (``op = 'adjudicate'`` by ``lead``, the true grade),
     disputed items first, so drift has adjudicated gold;
   - evidence: on each query, two of its annotators place 1-2 spans each
     (``evidence_events``, same first span 70% of the time); ``--no-evidence`` leaves
     them out (the refresh then has no evidence figures to compute);
   - ``rounds`` rows for the 6 rounds.
2. in one fresh child process: one cold ``compute`` (the first refresh after start-up,
   reported on its own), one warm-up of everything, then ``--repeats`` interleaved
   repetitions of: the full refresh; each of its parts on its own (the three SQL reads
   ``agreement_data.grade_rows / gold_rows / evidence_rows`` and the report functions
   ``group``, ``distributions``, ``by(stratum)``, ``by(round_id)``, ``over_time``,
   ``drift``, ``evidence``); and the baseline. The baseline starts from the same
   ``grade_rows`` frame: the rows split per annotator once, then for every annotator pair
   a pandas merge on the unit and three ``sklearn.metrics.cohen_kappa_score`` calls
   (binary, linear, quadratic) - the pairwise part of ``group`` only (no alpha, no
   strata, rounds, weeks or drift). Its kappas are compared with ``group``'s.
   ``--profile`` also cProfiles one more refresh in that child and prints the top entries.
3. prints medians, ratios to the baseline and to the 0.5 s aim, peak RSS (VmHWM of the
   child), then one JSON line (``--json``: only the JSON line).

Usage::

    python scripts/bench_agreement.py [--annotators 20] [--items 20000] [--repeats 7]
                                      [--no-evidence] [--profile] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
import warnings
from datetime import date, datetime
from itertools import combinations
from pathlib import Path

from benchlib import _mark_before, _maxrss_kib, child_runner, git_head, log, mib, print_profile, refill_grade_state, set_quiet, work_dir  # noqa: E402  (scripts/ is on sys.path)

run_child = child_runner(__file__)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
ACTOR = "bench"
LEAD = "lead"
AIM_S = 0.5
ITEMS_PER_QUERY = 10
N_ROUNDS = 6
WEEKS = 12
THIRD_SHARE = 0.10
REGRADE_SHARE = 0.05
RETRACT_SHARE = 0.01
SKIP_SHARE = 0.02
ADJUDICATED_SHARE = 0.05
GRADE_P = (0.45, 0.25, 0.18, 0.12)
PARTS = ("grade_rows", "gold_rows", "evidence_rows", "group", "distributions", "by_stratum", "by_round",
         "over_time", "drift", "evidence")
SQL_PARTS = ("grade_rows", "gold_rows", "evidence_rows")


# ---- data generation ---------------------------------------------------------------------------


def generate(db: Path, n_annotators: int, n_items: int, seed: int, evidence: bool = True) -> dict:
    import numpy as np
    import pandas as pd

    from golden_store.db.schema import BUILTIN_STRATA
    from golden_store.db.store import Store, utcnow

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    A = n_annotators
    actors = np.array([f"ann{i:02d}" for i in range(A)], dtype=object)
    strata = list(BUILTIN_STRATA)
    n_queries = max(1, -(-n_items // ITEMS_PER_QUERY))
    qids = np.array([f"q-{i:05d}" for i in range(n_queries)], dtype=object)
    start = datetime(2025, 1, 6, 8, 0, 0)
    now = utcnow()

    # items: query i // 10, a document and a span
    item = np.arange(n_items)
    it_q = qids[item // ITEMS_PER_QUERY]
    it_doc = np.array([f"doc-{d:05d}.md" for d in rng.integers(0, max(100, n_items // 5), size=n_items)], dtype=object)
    it_start = rng.integers(0, 5000, size=n_items)
    it_end = it_start + rng.integers(200, 600, size=n_items)
    true = rng.choice(4, size=n_items, p=GRADE_P)
    # labelling order = time order; rounds are consecutive blocks of that order
    order_pos = rng.permutation(n_items)
    it_round = 1 + order_pos * N_ROUNDS // n_items
    it_time = np.sort(rng.uniform(0, WEEKS * 7 * 86400, size=n_items))[order_pos]

    # who labels what: a rotating pair (every pair shares items), a third annotator on 10%
    a1 = item % A
    a2 = (a1 + 1 + (item // A) % max(1, A - 1)) % A
    third = rng.random(n_items) < THIRD_SHARE
    lab_item = [item, item]
    lab_actor = [a1, a2]
    if A >= 3:
        a3 = rng.integers(0, A, size=n_items)
        clash = (a3 == a1) | (a3 == a2)
        while clash.any():  # redraw until distinct from the pair
            a3[clash] = rng.integers(0, A, size=int(clash.sum()))
            clash = (a3 == a1) | (a3 == a2)
        lab_item.append(item[third])
        lab_actor.append(a3[third])
    lab_item = np.concatenate(lab_item)
    lab_actor = np.concatenate(lab_actor)
    n_labels = len(lab_item)

    # grades: the true grade with the annotator's reliability, else one off (3 in 4) or uniform
    reliab = rng.uniform(0.60, 0.90, size=A)
    t = true[lab_item]
    r = rng.random(n_labels)
    off = np.clip(t + rng.choice([-1, 1], size=n_labels), 0, 3)
    uniform = rng.integers(0, 4, size=n_labels)
    grade = np.where(r < reliab[lab_actor], t,
                     np.where(rng.random(n_labels) < 0.75, off, uniform))
    lab_time = it_time[lab_item] + rng.uniform(0, 3 * 86400, size=n_labels)

    def frame(idx: np.ndarray, act: np.ndarray, op: str, grades, secs: np.ndarray,
              rounds: bool = True) -> pd.DataFrame:
        g = pd.array(grades if grades is not None else np.full(len(idx), -1), dtype="Int16")
        if grades is None:
            g[:] = pd.NA
        return pd.DataFrame({
            "query_id": it_q[idx], "doc_id": it_doc[idx], "start": it_start[idx], "end": it_end[idx],
            "op": op, "grade": g, "actor": act,
            "created_at": pd.Timestamp(start) + pd.to_timedelta(secs, unit="s"),
            "round_id": (pd.Series([f"round-{k}" for k in it_round[idx]], dtype=object)
                         if rounds else pd.Series([None] * len(idx), dtype=object)),
        })

    parts = [frame(lab_item, actors[lab_actor], "grade", grade, lab_time)]
    # re-grades: an earlier grade that the label above supersedes
    rg = np.flatnonzero(rng.random(n_labels) < REGRADE_SHARE)
    parts.append(frame(lab_item[rg], actors[lab_actor[rg]], "grade", rng.integers(0, 4, size=len(rg)),
                       lab_time[rg] - rng.uniform(600, 86400, size=len(rg))))
    # retractions after the label: that annotator's label is gone
    rt = np.flatnonzero(rng.random(n_labels) < RETRACT_SHARE)
    parts.append(frame(lab_item[rt], actors[lab_actor[rt]], "retract", None,
                       lab_time[rt] + rng.uniform(600, 86400, size=len(rt))))
    # skips by someone else (never a current grade)
    sk = np.flatnonzero(rng.random(n_items) < SKIP_SHARE)
    parts.append(frame(sk, actors[rng.integers(0, A, size=len(sk))], "skip", None,
                       it_time[sk] + rng.uniform(0, 86400, size=len(sk))))
    # adjudications by the lead, disputed items first (disputed on the labels above)
    lab = pd.DataFrame({"item": lab_item, "grade": grade})
    retracted = np.zeros(n_labels, dtype=bool)
    retracted[rt] = True
    n_distinct = lab[~retracted].groupby("item")["grade"].nunique()
    disputed = n_distinct[n_distinct > 1].index.to_numpy()
    n_adj = int(round(ADJUDICATED_SHARE * n_items))
    pick = rng.permutation(disputed)[:n_adj]
    if len(pick) < n_adj:
        rest = np.setdiff1d(item, pick)
        pick = np.concatenate([pick, rng.choice(rest, size=n_adj - len(pick), replace=False)])
    parts.append(frame(pick, np.full(len(pick), LEAD, dtype=object), "adjudicate", true[pick],
                       it_time[pick] + 4 * 86400 + rng.uniform(0, 7 * 86400, size=len(pick)), rounds=False))
    ev = pd.concat(parts, ignore_index=True).sort_values("created_at", kind="stable", ignore_index=True)

    # queries over the builtin strata
    qdf = pd.DataFrame({"query_id": qids, "stratum": [strata[i % len(strata)] for i in range(n_queries)]})

    # evidence: two of each query's annotators (its first item's pair), 1-2 spans each
    first = np.arange(n_queries) * ITEMS_PER_QUERY
    ev_rows = []
    for qi, i0 in enumerate(first if evidence else []):
        q_items = np.arange(i0, min(i0 + ITEMS_PER_QUERY, n_items))
        shared = int(q_items[0])
        for who in (actors[a1[i0]], actors[a2[i0]]):
            n_spans = 1 + int(rng.random() < 0.5)
            chosen = [shared if rng.random() < 0.7 else int(rng.choice(q_items))]
            if n_spans == 2:
                chosen.append(int(rng.choice(q_items)))
            for k, j in enumerate(chosen):
                ev_rows.append((qids[qi], f"ev-{who}-{k}", it_doc[j], int(it_start[j]), int(it_end[j]), who,
                                start + pd.to_timedelta(float(it_time[j]) + 3600, unit="s")))
    edf = pd.DataFrame(ev_rows, columns=["query_id", "evidence_id", "doc_id", "start", "end", "actor", "created_at"])

    store = Store.open(db)
    try:
        def tx(cur) -> None:
            cur.register("_q", qdf)
            cur.execute(
                "INSERT INTO query_revisions (query_id, text, stratum, answerable, source, created_date, held_out,"
                " notes, actor, created_at) SELECT query_id, 'How does ' || query_id || ' work?', stratum,"
                " stratum <> 'negative', 'expert', DATE '2025-01-06', FALSE, '', ?, ? FROM _q", [ACTOR, now])
            cur.unregister("_q")
            cur.register("_ev", ev)
            cur.execute(
                "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at,"
                " rubric_version, round_id) SELECT query_id, doc_id, start, \"end\", NULL, op, grade, actor,"
                " created_at, 1, round_id FROM _ev")
            cur.unregister("_ev")
            refill_grade_state(cur)
            cur.register("_e", edf)
            cur.execute(
                "INSERT INTO evidence_events (query_id, evidence_id, op, quote, doc_id, start, \"end\","
                " canonical_start, canonical_end, doc_sha256, match_kind, score, actor, created_at, rubric_version)"
                " SELECT query_id, evidence_id, 'set', 'quoted text', doc_id, start, \"end\", start, \"end\", NULL,"
                " 'exact', 100.0, actor, created_at, 1 FROM _e")
            cur.unregister("_e")
            for k in range(1, N_ROUNDS + 1):
                cur.execute("INSERT INTO rounds (round_id, kind, annotators, overlap, seed, n_items, note, created_by,"
                            " created_at) VALUES (?, 'split', ?, 0.0, ?, ?, NULL, ?, ?)",
                            [f"round-{k}", list(actors), seed, int((it_round == k).sum()), LEAD, now])

        store.write(tx)
        counts = store.read_one(
            "SELECT (SELECT count(*) FROM grade_events), (SELECT count(*) FROM current_grades),"
            " (SELECT count(DISTINCT (query_id, doc_id, start, \"end\")) FROM current_grades),"
            " (SELECT count(*) FROM adjudications), (SELECT count(*) FROM final_grades),"
            " (SELECT count(*) FROM pending_grades), (SELECT count(*) FROM current_evidence),"
            " (SELECT count(*) FROM queries)")
    finally:
        store.close()
    keys = ("grade_events", "current_labels", "items_with_labels", "adjudicated", "gold_labels", "pending",
            "evidence_spans", "queries")
    out = dict(zip(keys, (int(c) for c in counts)))
    out.update(annotators=A, items=n_items, third_annotator_items=int(third.sum()) if A >= 3 else 0,
               rounds=N_ROUNDS, generation_s=round(time.perf_counter() - t0, 2))
    return out


# ---- baseline --------------------------------------------------------------------------------


def naive_pairwise(rows) -> dict[tuple[str, str], tuple[int, float, float, float]]:
    """For every annotator pair: a pandas merge on the unit, then scikit-learn's kappa three
    times (binary relevance, linear, quadratic). The rows are split per annotator once."""
    from sklearn.metrics import cohen_kappa_score

    per = {a: part[["unit", "grade"]] for a, part in rows.groupby("actor", sort=True)}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined kappa (one label used) warns and gives NaN
        for a, b in combinations(sorted(per), 2):
            m = per[a].merge(per[b], on="unit", suffixes=("_a", "_b"))
            if not len(m):
                continue
            ga, gb = m["grade_a"].astype(int), m["grade_b"].astype(int)
            out[(a, b)] = (len(m),
                           float(cohen_kappa_score(ga >= 2, gb >= 2, labels=[False, True])),
                           float(cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="linear")),
                           float(cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="quadratic")))
    return out


# ---- child side: measured calls in a fresh process --------------------------------------------


def child(args: argparse.Namespace) -> None:
    import math

    from annotator.labeling.agreement import compute
    from annotator.people.identity import LOCAL_USER
    from golden_store.live import agreement_data as data
    from golden_store.scoring import agreement_report as report
    from golden_store.db.store import Store

    out: dict = {}
    store = Store.open(args.db, create=False)
    try:
        t = time.perf_counter()
        agg = compute(store, LOCAL_USER)  # the first refresh after start-up (imports, caches)
        out["cold_refresh_s"] = time.perf_counter() - t
        try:
            import sklearn  # noqa: F401

            have_baseline = True
        except ImportError as exc:
            have_baseline = False
            out["baseline_unavailable"] = f"scikit-learn not importable: {exc}"

        def parts_once(times: dict | None) -> None:
            def timed(key, fn, *a):
                t0 = time.perf_counter()
                res = fn(*a)
                if times is not None:
                    times[key].append(time.perf_counter() - t0)
                return res

            rows = timed("grade_rows", data.grade_rows, store)
            gold = timed("gold_rows", data.gold_rows, store)
            evr = timed("evidence_rows", data.evidence_rows, store)
            timed("group", report.group, rows)
            timed("distributions", report.distributions, rows)
            timed("by_stratum", report.by, rows, "stratum")
            timed("by_round", report.by, rows, "round_id")
            timed("over_time", report.over_time, rows)
            timed("drift", report.drift, rows, gold)
            timed("evidence", report.evidence, evr)

        # warm-up of everything, not measured
        compute(store, LOCAL_USER)
        parts_once(None)
        if have_baseline:
            naive_pairwise(agg.rows)

        pre_peak, before = _mark_before()
        times: dict[str, list[float]] = {k: [] for k in ("refresh", "baseline", *PARTS)}
        for _ in range(args.repeats):
            t = time.perf_counter()
            agg = compute(store, LOCAL_USER)
            times["refresh"].append(time.perf_counter() - t)
            parts_once(times)
            if have_baseline:
                rows = data.grade_rows(store)  # the baseline's input, not timed (the SQL part is shared)
                t = time.perf_counter()
                naive = naive_pairwise(rows)
                times["baseline"].append(time.perf_counter() - t)
        out["times"] = times
        if args.profile_to:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
            compute(store, LOCAL_USER)
            prof.disable()
            prof.dump_stats(args.profile_to)
        out["call_peak_kib"] = _maxrss_kib()
        out["maxrss_kib"] = max(out["call_peak_kib"], pre_peak)
        out["pre_rss_kib"] = before

        g = agg.group
        out["result"] = {
            "rows": len(agg.rows), **{k: v for k, v in g.summary().items() if k != "annotators"},
            "annotators": len(g.annotators), "pairs": len(g.pairs),
            "strata": len(agg.per_stratum), "rounds": len(agg.per_round), "weeks": len(agg.over_time),
            "drift_annotators": len(agg.drift), "evidence_questions": agg.evidence.n_questions,
        }
        if have_baseline:
            diffs, n_mismatch = [], 0
            ours = {(p.a, p.b): p for p in g.pairs}
            for key, (n, kb, kl, kq) in naive.items():
                p = ours.get(key)
                if p is None or p.n != n:
                    n_mismatch += 1
                    continue
                for x, y in ((p.kappa_binary, kb), (p.kappa_linear, kl), (p.kappa_quadratic, kq)):
                    if math.isnan(x) != math.isnan(y):
                        n_mismatch += 1
                    elif not math.isnan(x):
                        diffs.append(abs(float(x) - y))
            out["check"] = {"pairs_ours": len(g.pairs), "pairs_baseline": len(naive),
                            "pairs_differing": n_mismatch + len(set(ours) - set(naive)),
                            "max_abs_kappa_diff": max(diffs) if diffs else None}
    finally:
        store.close()
    print(json.dumps(out))


# ---- parent -----------------------------------------------------------------------------------


def _stats(xs: list[float]) -> dict:
    return {"median_s": round(statistics.median(xs), 4), "min_s": round(min(xs), 4), "max_s": round(max(xs), 4),
            "n": len(xs)}


def _file_sha(rel: str) -> str | None:
    p = ROOT / rel
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16] if p.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=20_000, help="labelled items (query, passage)")
    ap.add_argument("--repeats", type=int, default=7, help="measured repetitions (medians are reported)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-evidence", action="store_true", help="no evidence spans in the store")
    ap.add_argument("--profile", action="store_true", help="cProfile one more refresh and print the top entries")
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temp dir, removed)")
    ap.add_argument("--_child", dest="op", choices=["measure"], help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.op:
        child(args)
        return 0
    if args.annotators < 2 or args.items < 1 or args.repeats < 1:
        ap.error("need --annotators >= 2, --items >= 1, --repeats >= 1")
    set_quiet(args.json)

    import duckdb
    import numpy as np
    import pandas as pd

    work, tmp = work_dir(ap, args.keep, "bench_agreement-")
    try:
        db = work / "bench.duckdb"
        log(f"generating: {args.annotators} annotators x {args.items} items (seed {args.seed}) in {work}")
        stats = generate(db, args.annotators, args.items, args.seed, evidence=not args.no_evidence)
        stats["db_bytes"] = db.stat().st_size
        log(f"  done: {json.dumps(stats)}")

        log(f"measuring in a fresh child: cold refresh, warm-up, then {args.repeats} interleaved repeats "
            f"(refresh, its parts, baseline)")
        prof_path = str(work / "refresh.prof") if args.profile else None
        c = run_child("measure", db=db, repeats=args.repeats, profile_to=prof_path)
        T = c["times"]
        refresh = _stats(T["refresh"])
        parts = {k: _stats(T[k]) for k in PARTS}
        med = {k: statistics.median(T[k]) for k in ("refresh", *PARTS)}
        sql_s = sum(med[k] for k in SQL_PARTS)
        py_s = sum(med[k] for k in PARTS if k not in SQL_PARTS)
        baseline = _stats(T["baseline"]) if T["baseline"] else None
        ratios = {"refresh_vs_aim": round(med["refresh"] / AIM_S, 3)}
        if baseline:
            bmed = statistics.median(T["baseline"])
            ratios.update(group_vs_baseline=round(med["group"] / bmed, 3),
                          refresh_vs_baseline=round(med["refresh"] / bmed, 3),
                          baseline_vs_aim=round(bmed / AIM_S, 3))
        result = {
            "bench": "agreement",
            "date": date.today().isoformat(),
            "params": {"annotators": args.annotators, "items": args.items, "repeats": args.repeats, "seed": args.seed,
                       "evidence": not args.no_evidence},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "duckdb": duckdb.__version__,
                        "numpy": np.__version__, "pandas": pd.__version__, "platform": platform.platform()},
            "code": {"git_head": git_head(ROOT),
                     "agreement_sha256_16": _file_sha("annotator/labeling/agreement.py"),
                     "agreement_report_sha256_16": _file_sha("golden_store/scoring/agreement_report.py")},
            "store": stats,
            "refresh": refresh,
            "cold_refresh_s": round(c["cold_refresh_s"], 4),
            "parts": parts,
            "parts_sum_s": {"sql": round(sql_s, 4), "python": round(py_s, 4), "all": round(sql_s + py_s, 4),
                            "without_evidence": round(sql_s + py_s - med["evidence_rows"] - med["evidence"], 4)},
            "baseline_naive_pairwise": baseline,
            "baseline_unavailable": c.get("baseline_unavailable"),
            "ratios": ratios,
            "check_vs_sklearn": c.get("check"),
            "result": c["result"],
            "peak_rss_mib": mib(c["maxrss_kib"]),
            "rss_growth_mib": mib(c["call_peak_kib"] - c["pre_rss_kib"]),
            "targets": {"refresh_aim_s": AIM_S, "refresh_aim_met": med["refresh"] <= AIM_S},
            "rss_metric": "peak RSS = VmHWM of the fresh child process that ran the calls (whole process); "
                          "growth = VmHWM during the measured repeats - VmRSS just before them",
        }
        if not args.json:
            r = c["result"]
            print(f"\nAgreement benchmark: {args.annotators} annotators x {args.items} items "
                  f"({stats['current_labels']} current labels, {stats['grade_events']} grade events, "
                  f"{stats['adjudicated']} adjudicated, {stats['evidence_spans']} evidence spans); "
                  f"nproc {os.cpu_count()}, Python {platform.python_version()}, DuckDB {duckdb.__version__}")
            print(f"report: {r['pairs']} pairs over {r['n_units']} units, kappa binary {r['kappa_binary']}, "
                  f"linear {r['kappa_linear']}, alpha ordinal {r['alpha_ordinal']}; {r['strata']} strata, "
                  f"{r['rounds']} rounds, {r['weeks']} weeks")
            hdr = f"{'operation':<44}{'median s':>10}{'min s':>9}{'max s':>9}{'share':>8}"
            print(hdr)
            print("-" * len(hdr))
            print(f"{'refresh: agreement.compute(store, local)':<44}{refresh['median_s']:>10.4f}"
                  f"{refresh['min_s']:>9.4f}{refresh['max_s']:>9.4f}{'':>8}")
            for k in PARTS:
                s = parts[k]
                label = ("  SQL " if k in SQL_PARTS else "  ") + k
                print(f"{label:<44}{s['median_s']:>10.4f}{s['min_s']:>9.4f}{s['max_s']:>9.4f}"
                      f"{med[k] / med['refresh']:>8.0%}")
            print(f"{'  sum of part medians (SQL + Python)':<44}{sql_s + py_s:>10.4f}   "
                  f"SQL {sql_s:.4f}, Python {py_s:.4f}")
            print(f"{'  sum of part medians without evidence':<44}{result['parts_sum_s']['without_evidence']:>10.4f}")
            if baseline:
                print(f"{'baseline: pandas merge + sklearn kappa x3/pair':<44}{baseline['median_s']:>10.4f}"
                      f"{baseline['min_s']:>9.4f}{baseline['max_s']:>9.4f}")
                ck = c["check"]
                print(f"group / baseline {ratios['group_vs_baseline']:.3f}x; refresh / baseline "
                      f"{ratios['refresh_vs_baseline']:.3f}x; kappas vs sklearn: max |diff| "
                      f"{ck['max_abs_kappa_diff']}, {ck['pairs_differing']} pairs differ "
                      f"({ck['pairs_ours']} vs {ck['pairs_baseline']} pairs)")
            else:
                print(f"baseline unavailable: {c.get('baseline_unavailable')}")
            print(f"first refresh after start-up (cold): {c['cold_refresh_s']:.4f} s; child peak RSS "
                  f"{result['peak_rss_mib']} MiB, growth {result['rss_growth_mib']} MiB")
            print(f"aim: refresh under {AIM_S} s -> {ratios['refresh_vs_aim']:.2f}x the aim: "
                  f"{'met' if result['targets']['refresh_aim_met'] else 'NOT met'}\n")
            if args.profile:
                print_profile(prof_path, "one refresh (agreement.compute)", 25)
                print()
        print(json.dumps(result, sort_keys=False, default=str))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
