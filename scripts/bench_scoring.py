#!/usr/bin/env python3
"""Scoring benchmark: how long `golden score` takes to read and score a large TREC run,
against pytrec_eval (the usual dict-reading loop + RelevanceEvaluator) measured in the
same run; plus the paired bootstrap at 10,000 queries x 10,000 resamples.

What it does, in order:

1. generates (fixed seed, numpy, no Python loop per run line) into a temporary folder
   under /tmp (``--keep DIR``: into DIR, kept):

   * a TREC run ``qid Q0 docid rank score tag`` of ``--queries`` x ``--depth`` lines
     (10,000 x 1,000 = 10 M lines, about 330 MB). Document ids ``D<n>`` have varying
     widths (so string order differs from numeric order) and come from a pool of
     queries x depth / 2 ids, so most documents are retrieved for several queries. Each
     query lists distinct documents; scores have 3 decimals and ~15% of adjacent pairs
     tie (trec_eval breaks ties by document id, descending; the file's rank column is
     ignored by both tools).
   * qrels ``qid 0 docid grade``: about ``--judged`` judgments per query (uniform in
     [judged/2, 3*judged/2]); grades 0-3; ~80% on retrieved documents (biased to the top
     ranks), ~20% on documents the run never retrieved; 5% of the queries have no relevant
     document (all grades 0); 1% of the run's queries have no judgments (ignored by both
     tools); 0.5% extra judged queries are missing from the run (golden scores them 0,
     trec_eval ``-c``; pytrec_eval leaves them out: they are compared as 0).

2. runs, ``--reps`` times, interleaved (the order rotates each repetition), each in a
   fresh process, after one unmeasured warm-up of each (which also warms the page cache,
   writes the byte-code caches an installed package has, and produces the per-query values
   for the agreement check):

   * **golden**: ``golden score --qrels Q --run R -m nDCG@10 -m AP -m RR -m P@10 -m R@100
     -m Bpref --json`` (``python -m annotator.cli`` with this checkout's code first on
     ``PYTHONPATH``: interpreter start-up, imports, reading, scoring, JSON output);
   * **baseline**: the same command with the code of ``--baseline REV`` (default
     ``c33c183``, main before issue 41; a detached git worktree made for the run and
     removed after it; ``--baseline ''``: none);
   * **floor**: a fresh Python child that imports pyarrow and has Arrow's multi-threaded
     CSV reader tokenize the run (one short column converted): what reading the file with
     that reader costs at the least;
   * **pytrec_eval**: a fresh Python child that reads the qrels and the run into
     ``{qid: {docid: value}}`` dicts with the usual ``for line in f: line.split()`` loop,
     builds ``RelevanceEvaluator(qrels, {ndcg_cut_10, map, recip_rank, P_10, recall_100,
     bpref})`` and evaluates (it imports nothing else).

   Wall time = from the parent's ``subprocess.run`` to the child's exit (both include
   interpreter start-up); CPU time = the child's user + system seconds (``/usr/bin/time``),
   the steadier figure on a shared machine. Peak RSS = ``/usr/bin/time -f %M`` of the child (its own
   ``ru_maxrss``: the wrapper is a few MiB, so the exec-inheritance caveat of
   ``ru_maxrss`` does not matter); without ``/usr/bin/time`` each child reads its own
   ``VmHWM`` (``benchlib``). The pytrec_eval child also reports its read / evaluate split.

3. agreement: the warm-up ``golden score ... --per-query --json`` against the warm-up
   pytrec_eval child's per-query dump, for every query and every measure: max |diff|;
   and the baseline's warm-up output against this code's: the same JSON (``identical``).

4. golden's parts, not part of the ratio: in one fresh child, the imports of `golden
   score` and ``evaluate_trec`` on the two files (the run-file path the CLI takes); in
   another, ``read_qrels``, ``read_run``, ``evaluate_trec`` on the frames (the DataFrame
   path), with the peak RSS after each. ``--profile`` cProfiles the first child's
   ``evaluate_trec`` (the path `golden score` takes) and prints its top functions.

5. ``paired_bootstrap(a, b, n_boot=--boot)`` with len(a) = ``--queries``, median of
   ``--boot-reps`` calls in a fresh child, and the peak RSS growth of a call (VmHWM reset
   just before it); baseline: drawing the same resample indices in the same chunks and
   nothing else (the RNG floor).

Prints a table, then one JSON line (``--json``: only the JSON line).

Usage::

    python scripts/bench_scoring.py [--queries 5000] [--depth 1000] [--judged 10]
                                    [--reps 5] [--boot 10000] [--seed S] [--json]
                                    [--baseline c33c183] [--profile] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from benchlib import (  # noqa: E402  (scripts/ is on sys.path)
    _mark_before, _maxrss_kib, _status_kib, child_runner, code_tree, git_head, log, mib, print_profile,
    remove_code_trees, set_quiet)

run_child = child_runner(__file__)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
BASELINE = "c33c183"  # main before issue 41 (its judged@10 health check read and ranked the run twice)
# golden measure name -> pytrec_eval measure
MEASURES = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@10": "P_10",
            "R@100": "recall_100", "Bpref": "bpref"}
TAG = "bench"
TIE_SHARE = 0.15          # adjacent score pairs that tie
NOT_RETRIEVED_SHARE = 0.2  # judged documents the run never retrieved
NO_REL_SHARE = 0.05        # judged queries whose grades are all 0
UNJUDGED_SHARE = 0.01      # run queries with no judgments
QRELS_ONLY_SHARE = 0.005   # judged queries missing from the run
GRADE_P = [0.45, 0.25, 0.18, 0.12]
CHUNK_QUERIES = 500        # run lines are built this many queries at a time
TIME_BIN = "/usr/bin/time"


# ---- data generation ---------------------------------------------------------------------------


def _digits(v, width: int | None = None):
    """uint8 matrix of the decimal digits of the non-negative ints ``v`` (ASCII),
    right-aligned; leading positions are 0 bytes (dropped when written) unless ``width``
    is given, which zero-pads to that fixed width."""
    import numpy as np

    v = np.asarray(v, dtype=np.int64)
    w = max(1, len(str(int(v.max())))) if width is None else width
    powers = 10 ** np.arange(w - 1, -1, -1, dtype=np.int64)
    d = (v[:, None] // powers) % 10 + 48
    if width is None:
        d[(v[:, None] < powers) & (powers > 1)] = 0  # no leading zeros (0 itself stays "0")
    return d.astype(np.uint8)


def _lit(s: str, n: int):
    import numpy as np

    return np.broadcast_to(np.frombuffer(s.encode(), dtype=np.uint8), (n, len(s)))


def _write_lines(fh, cols: list) -> None:
    """Concatenate the uint8 column blocks side by side, drop the 0 pad bytes, write."""
    import numpy as np

    mat = np.concatenate(cols, axis=1).ravel()
    fh.write(mat[mat != 0].tobytes())


def generate(work: Path, nq: int, depth: int, judged: int, seed: int) -> dict:
    import numpy as np

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    pool = max(2 * depth, nq * depth // 2)        # retrievable documents D0 .. D<pool-1>
    outside = max(1000, pool // 10)               # never-retrieved judged docs: D<pool> ..
    n_qrels_only = int(round(nq * QRELS_ONLY_SHARE))
    qwidth = len(str(nq + n_qrels_only - 1))
    run_path, qrels_path = work / "run.trec", work / "qrels.trec"

    # which run queries are judged; which judged ones have no relevant document
    judged_q = rng.random(nq) >= UNJUDGED_SHARE
    if not judged_q.any():
        judged_q[0] = True
    qrels_parts: list[str] = []
    n_qrels = n_judged_retrieved = n_judged_outside = n_no_rel = n_ties = 0
    rank_w = 1.0 / (np.arange(depth) + 5.0)      # judgments favour the top of the ranking
    rank_w /= rank_w.sum()
    gap_hi = max(1, pool // depth)

    with open(run_path, "wb") as fh:
        for lo in range(0, nq, CHUNK_QUERIES):
            hi = min(nq, lo + CHUNK_QUERIES)
            m = hi - lo
            # distinct documents per query: increasing cumulative gaps (span < pool), rotated
            gaps = rng.integers(1, gap_hi + 1, size=(m, depth), dtype=np.int64)
            docs = (np.cumsum(gaps, axis=1) + rng.integers(0, pool, size=(m, 1))) % pool
            docs = rng.permuted(docs, axis=1)
            # scores, in thousandths: decreasing by 1-30, or tied with the one above
            dec = rng.integers(1, 31, size=(m, depth))
            dec[rng.random((m, depth)) < TIE_SHARE] = 0
            dec[:, 0] = 0
            n_ties += int((dec[:, 1:] == 0).sum())
            score = rng.integers(31_000, 90_000, size=(m, 1)) - np.cumsum(dec, axis=1)
            n = m * depth
            qid = np.repeat(np.arange(lo, hi), depth)
            rank = np.tile(np.arange(1, depth + 1), m)
            sc = score.ravel()
            _write_lines(fh, [
                _lit("q", n), _digits(qid, qwidth), _lit(" Q0 D", n), _digits(docs.ravel()), _lit(" ", n),
                _digits(rank), _lit(" ", n), _digits(sc // 1000), _lit(".", n), _digits(sc % 1000, 3),
                _lit(f" {TAG}\n", n),
            ])
            # qrels of these queries
            for i in range(m):
                q = lo + i
                if not judged_q[q]:
                    continue
                k = int(rng.integers(max(1, judged // 2), judged + judged // 2 + 1))
                k_out = int(rng.binomial(k, NOT_RETRIEVED_SHARE))
                k_in = min(k - k_out, depth)
                ranks = rng.choice(depth, size=k_in, replace=False, p=rank_w)
                dids = np.concatenate([docs[i, ranks], pool + rng.choice(outside, size=k_out, replace=False)])
                grades = rng.choice(4, size=dids.size, p=GRADE_P)
                if rng.random() < NO_REL_SHARE:
                    grades[:] = 0
                n_no_rel += int(not (grades > 0).any())
                n_judged_retrieved += k_in
                n_judged_outside += k_out
                n_qrels += dids.size
                qs = f"q{q:0{qwidth}d}"
                qrels_parts.append("".join(f"{qs} 0 D{d} {g}\n" for d, g in zip(dids.tolist(), grades.tolist())))
    for j in range(n_qrels_only):  # judged, never retrieved by the run
        qs = f"q{nq + j:0{qwidth}d}"
        dids = pool + rng.choice(outside, size=max(1, judged), replace=False)
        grades = rng.choice(4, size=dids.size, p=GRADE_P)
        n_no_rel += int(not (grades > 0).any())
        n_qrels += dids.size
        qrels_parts.append("".join(f"{qs} 0 D{d} {g}\n" for d, g in zip(dids.tolist(), grades.tolist())))
    qrels_path.write_text("".join(qrels_parts), encoding="ascii")
    return {
        "run_lines": nq * depth, "run_bytes": run_path.stat().st_size,
        "qrels_lines": n_qrels, "qrels_bytes": qrels_path.stat().st_size,
        "run_queries": nq, "judged_queries": int(judged_q.sum()) + n_qrels_only,
        "run_queries_without_judgments": int((~judged_q).sum()),
        "judged_queries_missing_from_run": n_qrels_only,
        "judged_queries_without_relevant": n_no_rel,
        "judgments_on_retrieved_docs": n_judged_retrieved, "judgments_on_unretrieved_docs": n_judged_outside,
        "doc_pool": pool, "tied_adjacent_pairs": n_ties, "generation_s": round(time.perf_counter() - t0, 2),
        "run": str(run_path), "qrels": str(qrels_path),
    }


# ---- children ---------------------------------------------------------------------------------


def child_pytrec(args: argparse.Namespace) -> None:
    """The baseline: the usual reading loop into dicts, then pytrec_eval."""
    t0 = time.perf_counter()
    import pytrec_eval

    t1 = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    with open(args.qrels, encoding="utf-8") as fh:
        for line in fh:
            qid, _, docid, rel = line.split()
            qrels.setdefault(qid, {})[docid] = int(rel)
    run: dict[str, dict[str, float]] = {}
    with open(args.run, encoding="utf-8") as fh:
        for line in fh:
            qid, _, docid, _, score, _ = line.split()
            run.setdefault(qid, {})[docid] = float(score)
    t2 = time.perf_counter()
    res = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values())).evaluate(run)
    t3 = time.perf_counter()
    means = {m: (sum(v[m] for v in res.values()) / len(res) if res else 0.0) for m in MEASURES.values()}
    out = {"import_s": t1 - t0, "read_s": t2 - t1, "evaluate_s": t3 - t2, "queries_scored": len(res),
           "mean": means, "vmhwm_kib": _maxrss_kib()}
    if args.dump:
        Path(args.dump).write_text(json.dumps(res))
    print(json.dumps(out))


def child_floor(args: argparse.Namespace) -> None:
    """The reading floor: Arrow's multi-threaded CSV reader over the run, every field
    tokenized, only the short ``Q0`` column converted (nothing to hash, rank or score)."""
    t0 = time.perf_counter()
    import pyarrow as pa
    import pyarrow.csv as pcsv

    t1 = time.perf_counter()
    table = pcsv.read_csv(
        args.run, read_options=pcsv.ReadOptions(column_names=["query_id", "q0", "doc_id", "rank", "score", "tag"]),
        parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False),
        convert_options=pcsv.ConvertOptions(include_columns=["q0"], column_types={"q0": pa.binary()}),
        memory_pool=pa.jemalloc_memory_pool())
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "lines": table.num_rows, "vmhwm_kib": _maxrss_kib()}))


def child_golden(args: argparse.Namespace, argv: list[str]) -> None:
    """Fallback without /usr/bin/time: the CLI's main() in this process, then its VmHWM."""
    from annotator.cli import main as golden_main

    rc = golden_main(argv)
    sys.stdout.flush()
    Path(args.hwm_to).write_text(str(_maxrss_kib()))
    sys.exit(rc)


def child_files(args: argparse.Namespace) -> None:
    """What `golden score` does, in-process and split: its imports (numpy set up as the CLI
    sets it up), then ``evaluate_trec`` on the two files with the health figure (the run-file
    path); ``--profile-to``: cProfile of that call."""
    t0 = time.perf_counter()
    from annotator.cli import _numpy_for_scoring

    _numpy_for_scoring()
    from golden_store.scoring.trec import evaluate_trec

    t1 = time.perf_counter()
    prof = None
    if args.profile_to:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    res = evaluate_trec(args.qrels, args.run, list(MEASURES), health=True)
    t2 = time.perf_counter()
    if prof:
        prof.disable()
        prof.dump_stats(args.profile_to)
    print(json.dumps({"import_s": t1 - t0, "evaluate_s": t2 - t1, "peak_kib": _maxrss_kib(),
                      "n_queries": res.n_queries}))


def child_phases(args: argparse.Namespace) -> None:
    """golden's parts one by one (same code the CLI runs), peak RSS after each."""
    out: dict = {}
    t = time.perf_counter()
    from golden_store.scoring.trec import evaluate_trec, read_qrels, read_run

    out["import_s"] = time.perf_counter() - t
    out["rss_after_import_kib"] = _status_kib("VmRSS")
    prof = None
    if args.profile_to:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    phases = {}
    for name, fn in (("read_qrels", lambda: read_qrels(args.qrels)), ("read_run", lambda: read_run(args.run))):
        t = time.perf_counter()
        phases[name] = fn()
        out[name + "_s"] = time.perf_counter() - t
        out[name + "_peak_kib"] = _maxrss_kib()
        out[name + "_rss_kib"] = _status_kib("VmRSS")
    t = time.perf_counter()
    res = evaluate_trec(phases["read_qrels"], phases["read_run"], list(MEASURES))
    out["evaluate_trec_s"] = time.perf_counter() - t
    out["evaluate_trec_peak_kib"] = _maxrss_kib()
    if prof:
        prof.disable()
        prof.dump_stats(args.profile_to)
    out["run_frame_mib"] = round(phases["read_run"].memory_usage(deep=True).sum() / 2**20, 1)
    out["n_queries"] = res.n_queries
    print(json.dumps(out))


def child_bootstrap(args: argparse.Namespace) -> None:
    import numpy as np

    from golden_store.scoring import stats

    rng = np.random.default_rng(args.seed)
    a = rng.beta(2, 3, size=args.n)
    b = np.clip(a + rng.normal(0.01, 0.1, size=args.n), 0, 1)
    stats.paired_bootstrap(a[:100], b[:100], n_boot=100)  # warm-up (imports, first-call costs)
    calls, floor = [], []
    for _ in range(args.boot_reps):
        _, before = _mark_before()
        t = time.perf_counter()
        r = stats.paired_bootstrap(a, b, n_boot=args.boot)
        calls.append({"seconds": time.perf_counter() - t, "growth_kib": _maxrss_kib() - before})
        # the floor: the same resample indices, drawn in the same chunks, nothing else
        t = time.perf_counter()
        g = np.random.default_rng(0)
        rows = max(1, stats._CHUNK_ELEMENTS // args.n)
        for start in range(0, args.boot, rows):
            g.integers(0, args.n, size=(min(rows, args.boot - start), args.n), dtype=np.int32)
        floor.append(time.perf_counter() - t)
    print(json.dumps({"calls": calls, "floor_s": floor, "result": r.as_dict(), "vmhwm_kib": _maxrss_kib()}))


# ---- parent: running the children --------------------------------------------------------------


def _golden_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "golden"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("golden")
    return [found] if found else [sys.executable, "-m", "annotator.cli"]


def _child_env(code_root: Path | None = None) -> dict[str, str]:
    """The children's environment: byte-code caches written and read as an installed package
    has them (a PYTHONDONTWRITEBYTECODE in this shell would have every run compile the
    studio's modules again, ~0.1 s), and with ``code_root`` that tree's code first."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("GOLDEN_DB", None)
    if code_root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code_root), str(Path(__file__).resolve().parent)])
    return env


def _timed(cmd: list[str], what: str, hwm_file: Path | None = None, env: dict[str, str] | None = None) -> dict:
    """Run ``cmd``; wall seconds from here, peak RSS and CPU seconds (user + system) via
    /usr/bin/time (or ``hwm_file``, CPU then not known)."""
    tfile = Path(tempfile.mkstemp(prefix="bench_scoring-time-")[1])
    full = [TIME_BIN, "-f", "%M %U %S", "-o", str(tfile), *cmd] if hwm_file is None else cmd
    try:
        t = time.perf_counter()
        proc = subprocess.run(full, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"{what} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
        src = hwm_file if hwm_file is not None else tfile
        fields = src.read_text().strip().splitlines()[-1].split()
        peak = int(fields[0])
        cpu = float(fields[1]) + float(fields[2]) if len(fields) == 3 else None
    finally:
        tfile.unlink(missing_ok=True)
    return {"seconds": wall, "peak_kib": peak, "cpu_s": cpu, "stdout": proc.stdout}


def run_golden(data: dict, work: Path, per_query: bool = False, code_root: Path | None = None) -> dict:
    """`golden score` as a subprocess: ``python -m annotator.cli`` with ``code_root``'s code
    (this checkout or the baseline's worktree) first on the path."""
    argv = ["score", "--qrels", data["qrels"], "--run", data["run"]]
    for m in MEASURES:
        argv += ["-m", m]
    argv += ["--json"] + (["--per-query"] if per_query else [])
    if code_root is not None and os.path.exists(TIME_BIN):
        r = _timed([sys.executable, "-m", "annotator.cli", *argv], "golden score", env=_child_env(code_root))
    elif os.path.exists(TIME_BIN):
        r = _timed([*_golden_cmd(), *argv], "golden score", env=_child_env())
    else:
        hwm = work / "golden.hwm"
        r = _timed([sys.executable, str(Path(__file__).resolve()), "--_child", "golden", "--hwm-to", str(hwm),
                    "--", *argv], "golden score", hwm_file=hwm)
    r["result"] = json.loads(r.pop("stdout"))
    return r


def run_pytrec(data: dict, work: Path, dump: Path | None = None) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", "pytrec", "--qrels", data["qrels"],
           "--run", data["run"]] + (["--dump", str(dump)] if dump else [])
    if os.path.exists(TIME_BIN):
        r = _timed(cmd, "pytrec_eval child", env=_child_env())
        r["result"] = json.loads(r.pop("stdout").strip().splitlines()[-1])
    else:
        r = {"seconds": 0.0}
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        r["seconds"] = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"pytrec_eval child failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
        r["result"] = json.loads(proc.stdout.strip().splitlines()[-1])
        r["peak_kib"] = r["result"]["vmhwm_kib"]
        r["cpu_s"] = None
    return r


def run_floor(data: dict) -> dict:
    """The reading floor child (see :func:`child_floor`), timed as the others."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", "floor", "--run", data["run"]]
    if os.path.exists(TIME_BIN):
        r = _timed(cmd, "reading floor child", env=_child_env())
        r["result"] = json.loads(r.pop("stdout").strip().splitlines()[-1])
        return r
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_child_env())
    if proc.returncode != 0:
        raise SystemExit(f"reading floor child failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"seconds": time.perf_counter() - t, "peak_kib": res["vmhwm_kib"], "cpu_s": None, "result": res}


def agreement(golden_pq: dict, ref: dict) -> dict:
    """Max |golden - pytrec_eval| per measure over every query golden scored (a query
    pytrec_eval leaves out, i.e. one missing from the run, is expected to be 0)."""
    worst = {m: 0.0 for m in MEASURES}
    where = {m: None for m in MEASURES}
    for qid, row in golden_pq.items():
        theirs = ref.get(qid)
        for ours, key in MEASURES.items():
            expected = theirs[key] if theirs is not None else 0.0
            diff = abs(row[ours] - expected)
            if diff > worst[ours]:
                worst[ours], where[ours] = diff, qid
    extra = sorted(set(ref) - set(golden_pq))
    return {"queries_compared": len(golden_pq), "queries_scored_by_pytrec_eval": len(ref),
            "pytrec_only_queries": len(extra), "max_abs_diff": worst, "worst_query": where,
            "max_abs_diff_all": max(worst.values()) if worst else 0.0}


# ---- parent -----------------------------------------------------------------------------------


def _summary(runs: list[dict]) -> dict:
    secs = [r["seconds"] for r in runs]
    cpu = [r["cpu_s"] for r in runs if r.get("cpu_s") is not None]
    return {"median_s": round(statistics.median(secs), 3), "min_s": round(min(secs), 3),
            "max_s": round(max(secs), 3), "cpu_s_median": round(statistics.median(cpu), 3) if cpu else None,
            "peak_rss_mib": mib(max(r["peak_kib"] for r in runs)),
            "peak_rss_mib_median": mib(statistics.median(r["peak_kib"] for r in runs))}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:  # golden wrapper child: what follows "--" is golden's own argv
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=5_000)
    ap.add_argument("--depth", type=int, default=1_000, help="retrieved documents per query")
    ap.add_argument("--judged", type=int, default=10, help="judgments per query (mean)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--baseline", default=BASELINE,
                    help=f"git revision measured as the baseline in the same run (default {BASELINE}; '' for none)")
    ap.add_argument("--boot", type=int, default=10_000, help="bootstrap resamples")
    ap.add_argument("--boot-reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile evaluate_trec on the files (golden score's path) and print the top functions")
    ap.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (default: a temp dir, removed)")
    # internal: child mode
    ap.add_argument("--_child", dest="op", choices=["pytrec", "golden", "files", "phases", "bootstrap", "floor"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--qrels", help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    ap.add_argument("--hwm-to", help=argparse.SUPPRESS)
    ap.add_argument("--profile-to", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.op == "pytrec":
        child_pytrec(args)
        return 0
    if args.op == "golden":
        child_golden(args, passthrough)
        return 0
    if args.op == "files":
        child_files(args)
        return 0
    if args.op == "phases":
        child_phases(args)
        return 0
    if args.op == "bootstrap":
        child_bootstrap(args)
        return 0
    if args.op == "floor":
        child_floor(args)
        return 0
    if min(args.queries, args.depth, args.judged, args.reps, args.boot, args.boot_reps) < 1:
        ap.error("--queries, --depth, --judged, --reps, --boot and --boot-reps must be >= 1")
    set_quiet(args.json)

    import numpy as np
    import pandas as pd
    import pytrec_eval

    from golden_store.scoring import trec

    est = int(args.queries * args.depth * 34 * 1.1) + 2**20  # ~34 bytes a run line, plus qrels
    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        if any(work.iterdir()):
            ap.error(f"--keep {work}: folder is not empty")
        tmp = None
    else:
        base = "/tmp" if os.path.isdir("/tmp") else None
        tmp = tempfile.TemporaryDirectory(prefix="bench_scoring-", dir=base)
        work = Path(tmp.name)
    free = shutil.disk_usage(work).free
    if free < 2 * est:
        raise SystemExit(f"{work}: {free / 2**30:.1f} GiB free, need about {2 * est / 2**30:.1f} GiB")
    trees: list = []
    try:
        base_root = None
        if args.baseline and os.path.exists(TIME_BIN):
            log(f"baseline: the code of {args.baseline} in a detached worktree")
            try:
                base_root = code_tree(ROOT, args.baseline, work, "baseline")
                trees.append(base_root)
            except subprocess.CalledProcessError as exc:  # e.g. a shallow clone without that commit
                why = (exc.stderr or b"").decode(errors="replace").strip()[-200:]
                log(f"baseline left out: no worktree of {args.baseline} ({why})")
        elif args.baseline:
            log("baseline left out: it is timed through /usr/bin/time, which this machine lacks")
        log(f"generating {args.queries} queries x {args.depth} docs, ~{args.judged} judgments/query "
            f"(seed {args.seed}) in {work}")
        data = generate(work, args.queries, args.depth, args.judged, args.seed)
        log(f"  done in {data['generation_s']} s: run {data['run_bytes'] / 2**20:.0f} MiB "
            f"({data['run_lines']:,} lines), qrels {data['qrels_lines']:,} lines")

        # warm-up (not measured): page cache, and the per-query values for the agreement check
        log("warm-up: golden score --per-query --json, pytrec_eval with a per-query dump (not measured)")
        wg = run_golden(data, work, per_query=True, code_root=ROOT)
        same_as_baseline = None
        if base_root is not None:
            wb = run_golden(data, work, per_query=True, code_root=base_root)
            same_as_baseline = wb["result"] == wg["result"]
            if not same_as_baseline:
                raise SystemExit("golden score's output differs from the baseline's on the same files")
            log("  the baseline's output (--per-query --json) is identical to this code's")
        run_floor(data)
        dump = work / "pytrec_per_query.json"
        wp = run_pytrec(data, work, dump=dump)
        agree = agreement(wg["result"]["per_query"], json.loads(dump.read_text()))
        dump.unlink()
        log(f"  agreement over {agree['queries_compared']} queries: max |diff| {agree['max_abs_diff_all']:.3g}")

        runs: dict[str, list[dict]] = {"golden": [], "pytrec": [], "baseline": [], "floor": []}
        measure = {"pytrec": lambda: run_pytrec(data, work), "golden": lambda: run_golden(data, work, code_root=ROOT),
                   "floor": lambda: run_floor(data)}
        if base_root is not None:
            measure["baseline"] = lambda: run_golden(data, work, code_root=base_root)
        names = list(measure)
        for rep in range(1, args.reps + 1):
            turn = names[rep % len(names):] + names[:rep % len(names)]  # the order rotates: drift spreads evenly
            for name in turn:
                runs[name].append(measure[name]())
            log(f"rep {rep}/{args.reps}: " + ", ".join(
                f"{name} {runs[name][-1]['seconds']:.2f} s ({mib(runs[name][-1]['peak_kib']):.0f} MiB)" for name in names))
        # the timed golden runs (and the baseline's) print the same means as the warm-up
        for r in runs["golden"] + runs["baseline"]:
            for m, v in r["result"]["mean"].items():
                if abs(v - wg["result"]["mean"][m]) > 1e-12:
                    raise SystemExit(f"golden mean {m} changed between runs: {v} vs {wg['result']['mean'][m]}")

        log("golden score's parts (imports, evaluate_trec on the files) in a fresh child")
        prof_path = str(work / "golden.prof") if args.profile else None
        fl = run_child("files", qrels=data["qrels"], run=data["run"], profile_to=prof_path)
        log("golden phases (read_qrels, read_run, evaluate_trec) in a fresh child")
        ph = run_child("phases", qrels=data["qrels"], run=data["run"])

        log(f"paired_bootstrap: {args.queries} queries x {args.boot} resamples, {args.boot_reps} reps")
        bs = run_child("bootstrap", n=args.queries, boot=args.boot, boot_reps=args.boot_reps, seed=args.seed)

        g, p, fl_s = _summary(runs["golden"]), _summary(runs["pytrec"]), _summary(runs["floor"])
        b = _summary(runs["baseline"]) if runs["baseline"] else None
        ratio = _ratio(g["median_s"], p["median_s"])
        ratios = {
            "golden_vs_pytrec": ratio, "golden_cpu_vs_pytrec_cpu": _ratio(g["cpu_s_median"], p["cpu_s_median"]),
            "golden_peak_vs_pytrec_peak": _ratio(g["peak_rss_mib"], p["peak_rss_mib"]),
            "floor_vs_pytrec": _ratio(fl_s["median_s"], p["median_s"]),
            "golden_vs_floor": _ratio(g["median_s"], fl_s["median_s"]),
        }
        if b is not None:
            ratios.update({
                "baseline_vs_pytrec": _ratio(b["median_s"], p["median_s"]),
                "baseline_cpu_vs_pytrec_cpu": _ratio(b["cpu_s_median"], p["cpu_s_median"]),
                "baseline_peak_vs_pytrec_peak": _ratio(b["peak_rss_mib"], p["peak_rss_mib"]),
                "golden_vs_baseline": _ratio(g["median_s"], b["median_s"]),
                "golden_cpu_vs_baseline_cpu": _ratio(g["cpu_s_median"], b["cpu_s_median"]),
                "golden_peak_vs_baseline_peak": _ratio(g["peak_rss_mib"], b["peak_rss_mib"]),
            })
        p["read_s_median"] = round(statistics.median(r["result"]["read_s"] for r in runs["pytrec"]), 3)
        p["evaluate_s_median"] = round(statistics.median(r["result"]["evaluate_s"] for r in runs["pytrec"]), 3)
        p["import_s_median"] = round(statistics.median(r["result"]["import_s"] for r in runs["pytrec"]), 3)
        b_secs = [c["seconds"] for c in bs["calls"]]
        boot = {"queries": args.queries, "n_boot": args.boot, "reps": args.boot_reps,
                "median_s": round(statistics.median(b_secs), 3), "min_s": round(min(b_secs), 3),
                "max_s": round(max(b_secs), 3),
                "growth_mib": mib(statistics.median(c["growth_kib"] for c in bs["calls"])),
                "floor_median_s": round(statistics.median(bs["floor_s"]), 3)}
        boot["ratio_vs_floor"] = round(boot["median_s"] / boot["floor_median_s"], 2) if boot["floor_median_s"] else None
        phases = {
            "cli_import_s": round(fl["import_s"], 3), "evaluate_trec_files_s": round(fl["evaluate_s"], 3),
            "evaluate_trec_files_peak_mib": mib(fl["peak_kib"]), "evaluate_trec_files_n_queries": fl["n_queries"],
            "import_s": round(ph["import_s"], 3),
            "read_qrels_s": round(ph["read_qrels_s"], 3), "read_run_s": round(ph["read_run_s"], 3),
            "evaluate_trec_s": round(ph["evaluate_trec_s"], 3),
            "rss_after_import_mib": mib(ph["rss_after_import_kib"]),
            "peak_after_read_run_mib": mib(ph["read_run_peak_kib"]),
            "rss_after_read_run_mib": mib(ph["read_run_rss_kib"]),
            "peak_after_evaluate_mib": mib(ph["evaluate_trec_peak_kib"]),
            "run_frame_deep_mib": ph["run_frame_mib"],
        }
        targets = {
            "golden_time_ratio_le_0.1": bool(ratio is not None and ratio <= 0.1),
            "golden_peak_rss_le_half_pytrec": bool(g["peak_rss_mib"] <= 0.5 * p["peak_rss_mib"]),
            "golden_peak_rss_lt_1GB": bool(g["peak_rss_mib"] * 2**20 < 1e9),
            "bootstrap_lt_1s": bool(boot["median_s"] < 1.0),
            "agreement_le_1e-9": bool(agree["max_abs_diff_all"] <= 1e-9),
        }
        result = {
            "bench": "scoring",
            "date": date.today().isoformat(),
            "params": {"queries": args.queries, "depth": args.depth, "judged": args.judged, "reps": args.reps,
                       "boot": args.boot, "boot_reps": args.boot_reps, "seed": args.seed,
                       "baseline": args.baseline if base_root is not None else None},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                        "pandas": pd.__version__, "pytrec_eval": getattr(pytrec_eval, "__version__", None),
                        "platform": platform.platform()},
            "code": {"git_head": git_head(ROOT),
                     "trec_sha256_16": hashlib.sha256(Path(trec.__file__).read_bytes()).hexdigest()[:16]},
            "data": {k: v for k, v in data.items() if k not in ("run", "qrels")},
            "measures": MEASURES,
            "golden": g, "pytrec_eval": p, "baseline": b, "reading_floor": fl_s, "ratio_golden_vs_pytrec": ratio,
            "ratios": ratios, "identical_to_baseline": same_as_baseline,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "golden_phases": phases,
            "golden_mean": wg["result"]["mean"], "golden_n_queries": wg["result"]["n_queries"],
            "pytrec_mean_over_its_queries": wp["result"]["mean"],
            "agreement": agree, "bootstrap": boot, "targets_met": targets,
            "rss_metric": ("peak_rss_mib = max over reps of the child's peak RSS (/usr/bin/time %M, i.e. its own "
                           "ru_maxrss; VmHWM when /usr/bin/time is missing): the whole process"),
            "peak_rss_source": "/usr/bin/time" if os.path.exists(TIME_BIN) else "VmHWM",
        }

        if not args.json:
            print(f"\nScoring benchmark: {args.queries:,} queries x {args.depth:,} docs "
                  f"({data['run_lines']:,} run lines, {data['run_bytes'] / 2**20:.0f} MiB), "
                  f"{data['qrels_lines']:,} qrels lines; {args.reps} reps; nproc {os.cpu_count()}, "
                  f"Python {platform.python_version()}, pytrec_eval {result['machine']['pytrec_eval']}")
            hdr = (f"{'command':<30}{'median s':>10}{'min s':>9}{'max s':>9}{'x pytrec_eval':>15}{'CPU s':>8}"
                   f"{'x CPU':>7}{'peak RSS MiB':>14}{'x peak':>8}")
            print(hdr)
            print("-" * len(hdr))
            rows = [("golden score (this code)", g), *([(f"golden score ({args.baseline})", b)] if b else []),
                    ("pytrec_eval (read+eval)", p), ("reading floor (Arrow CSV)", fl_s)]
            for label, row in rows:
                cpu = row["cpu_s_median"]
                print(f"{label:<30}{row['median_s']:>10.3f}{row['min_s']:>9.3f}{row['max_s']:>9.3f}"
                      f"{_ratio(row['median_s'], p['median_s']) or 0:>15.3f}{cpu if cpu is not None else float('nan'):>8.2f}"
                      f"{_ratio(cpu, p['cpu_s_median']) or float('nan'):>7.3f}{row['peak_rss_mib']:>14.1f}"
                      f"{_ratio(row['peak_rss_mib'], p['peak_rss_mib']) or 0:>8.3f}")
            if b:
                print(f"this code vs {args.baseline}: time {ratios['golden_vs_baseline']}x, CPU "
                      f"{ratios['golden_cpu_vs_baseline_cpu']}x, peak {ratios['golden_peak_vs_baseline_peak']}x; "
                      f"output identical: {same_as_baseline}")
            print(f"pytrec_eval split (median s): import {p['import_s_median']}, read {p['read_s_median']}, "
                  f"evaluate {p['evaluate_s_median']}")
            print("golden phases (one child, s / MiB): " + ", ".join(f"{k} {v}" for k, v in phases.items()))
            print(f"agreement: {agree['queries_compared']} queries x {len(MEASURES)} measures, max |diff| "
                  f"{agree['max_abs_diff_all']:.3g} " + json.dumps(agree["max_abs_diff"]))
            print(f"paired_bootstrap {args.queries} x {args.boot}: median {boot['median_s']:.3f} s "
                  f"({boot['min_s']:.3f}-{boot['max_s']:.3f}), growth {boot['growth_mib']} MiB; "
                  f"RNG floor {boot['floor_median_s']:.3f} s ({boot['ratio_vs_floor']}x)")
            print("targets: " + ", ".join(f"{k} {'MET' if v else 'NOT met'}" for k, v in targets.items()))
            if args.profile:
                print_profile(prof_path, "evaluate_trec on the two files, health figure included (golden score's path)")
            print()
        print(json.dumps(result, sort_keys=False))
    finally:
        remove_code_trees(ROOT, trees)
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
