#!/usr/bin/env python3
"""Freeze benchmark: how long `golden_store.freezing.freeze` (and `verify`) take on a
store of realistic size, against the I/O floor measured in the same run.

What it does, in order:

1. builds a store in a temporary folder (fixed seed): ``--docs`` generated documents
   (1-3 KB each, imported through ``golden_store.live.documents``), ``--queries`` queries over the
   7 builtin strata (~15% ``negative``, unanswerable), and ``--events`` label events:
   mostly ``grade_events`` (several annotators per (query, passage), disagreements,
   re-grades, retractions, lead adjudications) plus ``evidence_events`` whose spans all
   resolve on the corpus (exact spans quote the raw text verbatim; fuzzy/manual spans
   are in bounds), so the freeze validation passes. Bulk rows go in with
   ``INSERT ... SELECT`` from registered DataFrames; generation time is not measured.
2. closes the store (DuckDB lets one process hold the file) and runs every measured
   operation in a fresh child process, ``--reps`` times, interleaved:

   * ``baseline``: ``COPY (SELECT * FROM t) TO 't.parquet' (FORMAT parquet, COMPRESSION zstd)``
     for the raw tables documents, query_revisions, grade_events, evidence_events, with
     no derivation, validation or hashing: the I/O floor;
   * ``freeze``: ``freezing.freeze(store, name, actor=..., versions_dir=...)``, each rep
     to a new version name;
   * ``verify``: ``versions.verify(name, versions_dir)`` on the version that rep froze.

   Times cover the call only (not interpreter start-up, imports or opening the store).
   Peak memory is the child's ``VmHWM`` (peak RSS of the whole child process: interpreter,
   imports, DuckDB buffers, Python objects; not ``ru_maxrss``, which on Linux inherits the
   parent's peak across exec). The table also shows the growth during the call: the peak
   is reset just before the call (``/proc/self/clear_refs``), and growth = peak during the
   call - RSS just before it, i.e. what the operation itself added.
3. prints medians, the ratio to the baseline median and peak RSS as a table, then one JSON
   line (``--json``: only the JSON line).

Usage::

    python scripts/bench_store.py [--queries 10000] [--events 200000] [--docs 2000]
                                  [--reps 5] [--json] [--profile] [--keep DIR]
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
from datetime import date, datetime, timedelta
from pathlib import Path
from benchlib import _mark_before, _maxrss_kib, child_runner, log, mib, print_profile, refill_grade_state, set_quiet, syllable_vocab, work_dir  # noqa: E402  (scripts/ is on sys.path)

run_child = child_runner(__file__)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
ACTOR = "bench"
EVIDENCE_SHARE = 0.15  # share of label events that are evidence_events (the rest: grade_events)
NEGATIVE_SHARE = 0.15
BASELINE_TABLES = ("documents", "query_revisions", "grade_events", "evidence_events")
STRATA_WEIGHTS = {  # answerable strata; 'negative' gets NEGATIVE_SHARE exactly
    "lexical": 0.22, "paraphrase": 0.22, "multi_hop": 0.14, "long_tail": 0.14,
    "tabular": 0.14, "temporal": 0.14,
}
ANNOTATORS = [f"ann{i:02d}" for i in range(1, 9)]
LEADS = ["lead1", "lead2"]


# ---- data generation ---------------------------------------------------------------------------

_SPECIAL = ["café", "Zürich", "naïve", "façade", "résumé", "coöperate", "São Paulo", "Ångström",
            "—", "–", "“approved”", "employee’s", "it’s", "50 %", "½", "ﬁle"]


def _sentence(rng: random.Random, vocab: list[str]) -> str:
    n = rng.randint(6, 22)
    words = rng.choices(vocab, k=n)
    if rng.random() < 0.25:
        words[rng.randrange(n)] = rng.choice(_SPECIAL)
    if rng.random() < 0.15:
        words[rng.randrange(n)] = f"ERR-{rng.randint(1000, 9999)}"
    if rng.random() < 0.10:
        words[rng.randrange(n)] = f"SKU {rng.randint(10, 99)}-{rng.randint(100, 999)}"
    s = " ".join(words)
    return s[0].upper() + s[1:] + rng.choice([".", ".", ".", "?", ";", ":"])


def make_document(rng: random.Random, vocab: list[str], i: int) -> tuple[str, bytes]:
    target = rng.randint(1000, 3000)
    parts = [f"# {' '.join(rng.choices(vocab, k=3)).title()} {i}\n\n"]
    size = len(parts[0])
    while size < target:
        r = rng.random()
        if r < 0.08:  # a small table
            rows = ["| " + " | ".join(rng.choices(vocab, k=3)) + " |" for _ in range(rng.randint(2, 5))]
            block = "\n".join(rows) + "\n\n"
        elif r < 0.12:
            block = f"## {' '.join(rng.choices(vocab, k=2)).title()}\n\n"
        else:
            para = " ".join(_sentence(rng, vocab) for _ in range(rng.randint(2, 6)))
            if rng.random() < 0.2:  # a hard-wrapped paragraph with a hyphenated line break
                cut = para.find(" ", len(para) // 2)
                if cut > 0:
                    para = para[:cut] + " reim-\nbursement" + para[cut:]
            block = para + "\n\n"
        parts.append(block)
        size += len(block)
    text = "".join(parts)[:target].rstrip() + "\n"
    return f"doc-{i:05d}.md", text.encode("utf-8")


def _span(rng: random.Random, n: int, lo: int, hi: int) -> tuple[int, int]:
    """A random [start, end) inside a text of length n, length in [lo, hi] when it fits."""
    length = min(rng.randint(lo, hi), n)
    start = rng.randint(0, n - length)
    return start, start + length


def generate(db: Path, n_queries: int, n_events: int, n_docs: int, seed: int) -> dict:
    import pandas as pd

    from golden_store.corpus import sources
    from golden_store.live import documents
    from golden_store.core.canonical import canonicalize
    from golden_store.live.rubric import add_rubric_version
    from golden_store.db.store import Store

    rng = random.Random(seed)
    vocab = syllable_vocab(rng, 3000)
    t0 = time.perf_counter()

    # -- corpus, through golden_store.live.documents (canonicalization, hashing, corpus_events)
    named = [make_document(rng, vocab, i) for i in range(n_docs)]
    docs = sources.load_sources(named)
    raw = {d.doc_id: d.raw_text for d in docs}
    doc_ids = [d.doc_id for d in docs]
    canon = {d.doc_id: canonicalize(d.raw_text) for d in docs}

    store = Store.open(db)
    try:
        documents.import_documents(store, docs, actor=ACTOR)
        add_rubric_version(store, "Grade 0-3: 0 irrelevant ... 3 fully answers.", "Initial rubric.", actor=ACTOR)

        def alloc(n: int) -> list[int]:
            """n fresh ids from the store's global event sequence, ascending."""
            return store.write(
                lambda cur: sorted(r[0] for r in cur.execute(
                    "SELECT nextval('event_seq') FROM range(?)", [n]).fetchall())
            )

        start_day = datetime(2025, 1, 6, 8, 0, 0)
        horizon = 180 * 86400.0

        # -- queries: one revision each, ~5% edited later, ~0.5% retired
        n_neg = round(n_queries * NEGATIVE_SHARE)
        strata = ["negative"] * n_neg + rng.choices(
            list(STRATA_WEIGHTS), weights=list(STRATA_WEIGHTS.values()), k=n_queries - n_neg
        )
        rng.shuffle(strata)
        qids = [f"q-{i:05d}" for i in range(n_queries)]
        qrows = []
        for qid, st in zip(qids, strata):
            t = rng.uniform(0, horizon * 0.2)
            rec = {
                "query_id": qid,
                "text": "How does " + " ".join(rng.choices(vocab, k=rng.randint(3, 10))) + " work?",
                "stratum": st, "answerable": st != "negative",
                "source": rng.choice(["expert", "expert", "log", "synthetic"]),
                "created_date": (start_day + timedelta(seconds=t)).date(),
                "held_out": rng.random() < 0.10, "notes": "", "retired": False,
                "actor": rng.choice(LEADS), "t": t,
            }
            qrows.append(rec)
            if rng.random() < 0.05:
                qrows.append({**rec, "text": rec["text"].replace("How does", "Why does"),
                              "t": t + rng.uniform(3600, horizon * 0.5)})
            if rng.random() < 0.005:
                qrows.append({**rec, "retired": True, "t": t + horizon * 0.6})
        qrows.sort(key=lambda r: r["t"])
        qdf = pd.DataFrame(qrows)
        qdf["event_id"] = alloc(len(qdf))
        qdf["created_at"] = [start_day + timedelta(seconds=t) for t in qdf["t"]]
        stratum_of = dict(zip(qids, strata))
        answerable = [q for q, st in zip(qids, strata) if st != "negative"]
        # each query has a few documents "about" it; labels mostly land there
        topical = {q: rng.sample(doc_ids, k=min(len(doc_ids), rng.randint(2, 4))) for q in qids}

        # -- label events; each has a time key, sorted globally before ids are assigned
        n_ev = round(n_events * EVIDENCE_SHARE)
        n_gr = n_events - n_ev
        ev_rows: list[dict] = []
        next_eid: dict[str, int] = {}
        order = answerable[:]
        rng.shuffle(order)
        i = 0
        while answerable and len(ev_rows) < n_ev:
            q = order[i % len(order)]
            i += 1
            for _ in range(rng.randint(1, 5)):
                k = next_eid[q] = next_eid.get(q, 0) + 1
                t = rng.uniform(horizon * 0.1, horizon * 0.9)
                actor = rng.choice(ANNOTATORS)
                for step in range(3):  # set, maybe re-set (corrected span), maybe retract
                    if step == 1 and rng.random() >= 0.10:
                        continue
                    if step == 2 and rng.random() >= 0.03:
                        break
                    row = {"query_id": q, "evidence_id": f"e{k}", "actor": actor,
                           "t": t + step * rng.uniform(60, 86400), "rubric_version": 1,
                           "round_id": f"r{1 + int(t // (horizon / 4))}"}
                    if step == 2:
                        row.update(op="retract")
                    else:
                        doc = rng.choice(topical[q])
                        text = raw[doc]
                        s, e = _span(rng, len(text), 40, 300)
                        kind = rng.choices(["exact", "fuzzy", "manual"], weights=[70, 10, 20])[0]
                        quote = text[s:e]
                        if kind == "fuzzy":
                            quote = quote[:-1] + "x" if len(quote) > 1 else quote
                        cs, ce = canon[doc].to_canonical(s, e)
                        row.update(op="set", quote=quote, doc_id=doc, start=s, end=e,
                                   canonical_start=cs, canonical_end=ce, match_kind=kind,
                                   score={"exact": 100.0, "fuzzy": round(rng.uniform(85, 99), 1),
                                          "manual": None}[kind])
                    ev_rows.append(row)
        del ev_rows[n_ev:]

        gr_rows: list[dict] = []
        n_pairs = n_disputed = n_adjudicated = 0
        order = qids[:]
        rng.shuffle(order)
        i = 0
        while len(gr_rows) < n_gr:
            q = order[i % len(order)]
            i += 1
            doc = rng.choice(topical[q]) if rng.random() < 0.7 else rng.choice(doc_ids)
            s, e = _span(rng, len(raw[doc]), 200, 800)
            neg = stratum_of[q] == "negative"
            true = rng.choices([0, 1], weights=[85, 15])[0] if neg else rng.choices(
                [0, 1, 2, 3], weights=[40, 25, 20, 15])[0]
            t = rng.uniform(horizon * 0.1, horizon * 0.9)
            base = {"query_id": q, "doc_id": doc, "start": s, "end": e, "rubric_version": 1,
                    "round_id": f"r{1 + int(t // (horizon / 4))}"}
            n_pairs += 1
            current: dict[str, int] = {}
            for a in rng.sample(ANNOTATORS, k=rng.choices([1, 2, 3], weights=[20, 50, 30])[0]):
                ta = t + rng.uniform(0, 7 * 86400)
                r = rng.random()
                if r < 0.02:
                    gr_rows.append({**base, "op": "skip", "grade": None, "actor": a, "t": ta})
                    continue
                if r < 0.04:
                    gr_rows.append({**base, "op": "unsure", "grade": None, "actor": a, "t": ta})
                    continue
                # an unanswerable question is never graded as answered (2+): a freeze refuses that (issue 29)
                top = 1 if neg else 3
                g = true if rng.random() < 0.8 else min(top, max(0, true + rng.choice([-1, 1])))
                gr_rows.append({**base, "op": "grade", "grade": g, "actor": a, "t": ta})
                current[a] = g
                r = rng.random()
                if r < 0.05:  # changed their mind
                    g = min(top, max(0, g + rng.choice([-1, 1])))
                    gr_rows.append({**base, "op": "grade", "grade": g, "actor": a, "t": ta + 3600})
                    current[a] = g
                elif r < 0.06:
                    gr_rows.append({**base, "op": "retract", "grade": None, "actor": a, "t": ta + 3600})
                    del current[a]
            disputed = len(set(current.values())) > 1
            n_disputed += disputed
            if (disputed and rng.random() < 0.6) or (not disputed and rng.random() < 0.02):
                gr_rows.append({**base, "op": "adjudicate", "grade": true, "actor": rng.choice(LEADS),
                                "t": t + 10 * 86400})
                n_adjudicated += 1
        del gr_rows[n_gr:]

        # -- one global order: ids follow time across both tables
        tagged = [(r["t"], 0, j) for j, r in enumerate(gr_rows)] + [(r["t"], 1, j) for j, r in enumerate(ev_rows)]
        tagged.sort()
        ids = alloc(len(tagged))
        for eid, (_, which, j) in zip(ids, tagged):
            (gr_rows if which == 0 else ev_rows)[j]["event_id"] = eid
        gdf = pd.DataFrame(gr_rows)
        edf = pd.DataFrame(ev_rows)
        for df in (gdf, edf):
            if len(df):
                df["created_at"] = [start_day + timedelta(seconds=t) for t in df["t"]]
        if len(gdf):
            gdf["grade"] = gdf["grade"].astype("Int16")

        def bulk(cur) -> None:
            cur.register("_q", qdf)
            cur.execute(
                "INSERT INTO query_revisions (event_id, query_id, text, stratum, answerable, source,"
                " created_date, held_out, notes, retired, actor, created_at)"
                " SELECT event_id, query_id, text, stratum, answerable, source, created_date, held_out,"
                " notes, retired, actor, created_at FROM _q"
            )
            if len(gdf):
                cur.register("_g", gdf)
                cur.execute(
                    "INSERT INTO grade_events (event_id, query_id, doc_id, start, \"end\", op, grade, actor,"
                    " created_at, rubric_version, round_id, note)"
                    " SELECT event_id, query_id, doc_id, start, \"end\", op, grade, actor, created_at,"
                    " rubric_version, round_id, NULL FROM _g"
                )
                refill_grade_state(cur)
            if len(edf):
                cur.register("_e", edf)
                cur.execute(
                    "INSERT INTO evidence_events (event_id, query_id, evidence_id, op, quote, doc_id, start,"
                    " \"end\", canonical_start, canonical_end, match_kind, score, actor, created_at,"
                    " rubric_version, round_id, note)"
                    " SELECT event_id, query_id, evidence_id, op, quote, doc_id, start, \"end\","
                    " canonical_start, canonical_end, match_kind, score, actor, created_at,"
                    " rubric_version, round_id, NULL FROM _e"
                )

        store.write(bulk)
        stats = dict(zip(
            ["documents", "corpus_chars", "query_revisions", "queries", "negative_queries",
             "grade_events", "evidence_events", "current_evidence", "exact_evidence", "final_grades",
             "disputed_grades", "adjudicated_pairs"],
            store.read_one(
                "SELECT (SELECT count(*) FROM documents), (SELECT sum(length(raw_text)) FROM documents),"
                " (SELECT count(*) FROM query_revisions), (SELECT count(*) FROM queries),"
                " (SELECT count(*) FILTER (NOT answerable) FROM queries),"
                " (SELECT count(*) FROM grade_events), (SELECT count(*) FROM evidence_events),"
                " (SELECT count(*) FROM current_evidence),"
                " (SELECT count(*) FILTER (match_kind = 'exact') FROM current_evidence),"
                " (SELECT count(*) FROM final_grades), (SELECT count(*) FROM disputed_grades),"
                " (SELECT count(*) FROM final_grades WHERE basis = 'adjudicated')"
            ),
        ))
        stats = {k: int(v) for k, v in stats.items()}
        stats["grade_pairs_generated"] = n_pairs
        stats["generation_s"] = round(time.perf_counter() - t0, 2)
    finally:
        store.close()
    stats["db_bytes"] = db.stat().st_size
    return stats


# ---- child side: one measured operation in a fresh process -------------------------------------


def child(args: argparse.Namespace) -> None:
    from golden_store import freezing, versions
    from golden_store.db.store import Store

    out: dict = {}
    prof = None
    if args.profile_to:
        import cProfile

        prof = cProfile.Profile()
    if args.op == "verify":
        pre_peak, before = _mark_before()
        if prof:
            prof.enable()
        t = time.perf_counter()
        rep = versions.verify(args.name, args.versions_dir)
        out["seconds"] = time.perf_counter() - t
        if prof:
            prof.disable()
        out["ok"] = rep.ok
        out["problems"] = rep.problems[:5]
        out["checked"] = rep.checked
    else:
        store = Store.open(args.db, create=False)
        try:
            pre_peak, before = _mark_before()
            if args.op == "freeze":
                marks: list[tuple[str, float]] = []
                t = time.perf_counter()

                def progress(i: int, n: int, what: str) -> None:
                    marks.append((what, time.perf_counter()))

                if prof:
                    prof.enable()
                res = freezing.freeze(store, args.name, actor=ACTOR, versions_dir=args.versions_dir,
                                      progress=progress)
                end = time.perf_counter()
                if prof:
                    prof.disable()
                out["seconds"] = end - t
                # phases from the progress callback; the first one (before "writing
                # documents.parquet") is broken_labels + the emptiness checks
                phases: dict[str, float] = {}
                prev_name, prev_t = "validate (broken_labels)", t
                for what, when in marks:
                    phases[prev_name] = phases.get(prev_name, 0.0) + (when - prev_t)
                    prev_name, prev_t = what, when
                phases[prev_name] = phases.get(prev_name, 0.0) + (end - prev_t)
                phases.pop("done", None)
                out["phases"] = phases
                out["bytes"] = sum(f["bytes"] for f in res.manifest["files"].values())
                out["rows"] = {k: v["rows"] for k, v in res.manifest["files"].items()}
            else:  # baseline: plain COPY of the raw tables, one transaction like freeze
                dest = Path(args.out)
                dest.mkdir(parents=True, exist_ok=True)

                def copy_all(cur) -> None:
                    for tbl in BASELINE_TABLES:
                        p = str(dest / f"{tbl}.parquet").replace("'", "''")
                        cur.execute(f"COPY (SELECT * FROM {tbl}) TO '{p}' (FORMAT parquet, COMPRESSION zstd)")

                t = time.perf_counter()
                store.write(copy_all)
                out["seconds"] = time.perf_counter() - t
                out["bytes"] = sum(p.stat().st_size for p in dest.iterdir())
        finally:
            store.close()
    out["call_peak_kib"] = _maxrss_kib()  # peak RSS since the reset just before the call
    out["maxrss_kib"] = max(out["call_peak_kib"], pre_peak)  # whole child process
    out["pre_rss_kib"] = before
    if prof:
        prof.dump_stats(args.profile_to)
    print(json.dumps(out))


# ---- parent -----------------------------------------------------------------------------------


def _summary(runs: list[dict]) -> dict:
    secs = [r["seconds"] for r in runs]
    return {
        "median_s": round(statistics.median(secs), 3),
        "min_s": round(min(secs), 3),
        "max_s": round(max(secs), 3),
        "peak_rss_mib": mib(max(r["maxrss_kib"] for r in runs)),
        "rss_growth_mib": mib(statistics.median(r["call_peak_kib"] - r["pre_rss_kib"] for r in runs)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=200_000, help="label events (grade + evidence)")
    ap.add_argument("--docs", type=int, default=2_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    ap.add_argument("--profile", action="store_true",
                    help="after the measured reps, cProfile one extra freeze and verify and print the top functions")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (default: a temp dir, removed)")
    # internal: child mode
    ap.add_argument("--_child", dest="op", choices=["freeze", "verify", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--versions-dir", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.op:
        child(args)
        return 0
    if min(args.queries, args.docs, args.reps) < 1 or args.events < 0:
        ap.error("--queries, --docs and --reps must be >= 1, --events >= 0")
    set_quiet(args.json)

    import duckdb

    work, tmp = work_dir(ap, args.keep, "bench_store-")
    try:
        db = work / "bench.duckdb"
        vdir = work / "versions"
        log(f"generating: {args.docs} docs, {args.queries} queries, {args.events} label events (seed {args.seed}) in {work}")
        stats = generate(db, args.queries, args.events, args.docs, args.seed)
        log(f"  done in {stats['generation_s']} s: {json.dumps(stats)}")

        # one unmeasured freeze + verify: checks the data passes validation and warms the page cache
        log("warm-up freeze + verify (not measured)")
        warm = run_child("freeze", db=db, versions_dir=vdir, name="warmup")
        wv = run_child("verify", versions_dir=vdir, name="warmup")
        if not wv["ok"]:
            raise SystemExit(f"verify of the warm-up version failed: {wv['problems']}")
        run_child("baseline", db=db, out=work / "baseline-warmup")

        runs: dict[str, list[dict]] = {"baseline": [], "freeze": [], "verify": []}
        for rep in range(1, args.reps + 1):
            name = f"bench-{rep}"
            runs["baseline"].append(run_child("baseline", db=db, out=work / f"baseline-{rep}"))
            runs["freeze"].append(run_child("freeze", db=db, versions_dir=vdir, name=name))
            v = run_child("verify", versions_dir=vdir, name=name)
            if not v["ok"]:
                raise SystemExit(f"verify {name} failed: {v['problems']}")
            runs["verify"].append(v)
            log(f"rep {rep}/{args.reps}: baseline {runs['baseline'][-1]['seconds']:.3f} s, "
                f"freeze {runs['freeze'][-1]['seconds']:.3f} s, verify {v['seconds']:.3f} s")

        summ = {k: _summary(v) for k, v in runs.items()}
        base = summ["baseline"]["median_s"]
        for k in ("freeze", "verify"):
            summ[k]["ratio_vs_baseline"] = round(summ[k]["median_s"] / base, 2) if base else None
        phases = {
            p: round(statistics.median(r["phases"].get(p, 0.0) for r in runs["freeze"]), 3)
            for p in runs["freeze"][0]["phases"]
        }
        result = {
            "bench": "freeze",
            "date": date.today().isoformat(),
            "params": {"queries": args.queries, "events": args.events, "docs": args.docs,
                       "reps": args.reps, "seed": args.seed},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                        "duckdb": duckdb.__version__, "platform": platform.platform()},
            "store": stats,
            "freeze": summ["freeze"],
            "verify": summ["verify"],
            "baseline_copy": summ["baseline"],
            "freeze_phases_median_s": phases,
            "frozen_bytes": runs["freeze"][-1]["bytes"],
            "baseline_bytes": runs["baseline"][-1]["bytes"],
            "frozen_rows": warm["rows"],
            "verify_checked": runs["verify"][-1]["checked"],
            "rss_metric": "peak_rss_mib = max VmHWM of the fresh child process that ran the call (whole "
                          "process: interpreter, imports, DuckDB); rss_growth_mib = median of (VmHWM during "
                          "the call - VmRSS just before it)",
        }

        if args.profile:
            prof_f, prof_v = str(work / "freeze.prof"), str(work / "verify.prof")
            run_child("freeze", db=db, versions_dir=vdir, name="profiled", profile_to=prof_f)
            run_child("verify", versions_dir=vdir, name="profiled", profile_to=prof_v)

        if not args.json:
            print(f"\nFreeze benchmark: {args.queries} queries, {args.events} label events "
                  f"({stats['grade_events']} grade, {stats['evidence_events']} evidence), {args.docs} docs; "
                  f"{args.reps} reps; nproc {os.cpu_count()}, Python {platform.python_version()}, "
                  f"DuckDB {duckdb.__version__}")
            hdr = f"{'operation':<22}{'median s':>10}{'min s':>9}{'max s':>9}{'x baseline':>12}{'peak RSS MiB':>14}{'RSS growth MiB':>16}"
            print(hdr)
            print("-" * len(hdr))
            for label, key in (("freeze", "freeze"), ("verify", "verify"), ("baseline COPY (floor)", "baseline")):
                s = summ[key]
                ratio = f"{s['ratio_vs_baseline']:.2f}" if "ratio_vs_baseline" in s else "1.00"
                print(f"{label:<22}{s['median_s']:>10.3f}{s['min_s']:>9.3f}{s['max_s']:>9.3f}{ratio:>12}"
                      f"{s['peak_rss_mib']:>14.1f}{s['rss_growth_mib']:>16.1f}")
            print("freeze phases (median s): " + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))
            print(f"output: frozen {result['frozen_bytes'] / 2**20:.1f} MiB, "
                  f"baseline {result['baseline_bytes'] / 2**20:.1f} MiB")
            if args.profile:
                print_profile(prof_f, "freeze")
                print_profile(prof_v, "verify")
            print()
        print(json.dumps(result, sort_keys=False))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
