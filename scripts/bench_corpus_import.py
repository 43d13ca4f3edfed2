#!/usr/bin/env python3
"""Corpus import: ``golden corpus import`` of one generated JSONL corpus into a new DuckDB
store, this code against a baseline commit (default ``c33c183``, main before issue 41 item 4)
in the same run, each import in a fresh process: wall time, CPU time, peak RSS, the time of
each progress phase, and whether both stores hold the same documents.

The corpus is ``bench_corpus_scale``'s (``bench_spans``'s generator: 2-8 KB documents of
prose with headings, lists, curly quotes, dashes, ligatures, no-break spaces and line-break
hyphenation) as one JSONL file of ``--sizes`` MiB each. Each size is imported ``--reps`` times
per code (``--reps-large`` above 300 MiB), the two codes interleaved and their order swapped
each repetition (the machine may be shared: the medians and ratios are the figures).

Peak RSS: the import's own process (VmHWM), and with the worker processes of this code added
(each one's VmHWM, read from /proc while the import runs: an upper bound of the tree's peak,
since the peaks need not coincide).

"Same stored result": after the first repetition of each size, the two stores' documents
(doc id, title, source path and format, raw and canonical text digests, lengths), their
corpus digests and their search indexes (document count; the stored texts of a sample of
documents; the documents a sample of phrase queries finds) are compared.

Usage::

    python scripts/bench_corpus_import.py [--sizes 200,1024] [--reps 3] [--reps-large 1]
                                          [--baseline c33c183] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ACTOR = "bench"


def _hwm_mib(pid: int | str = "self") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


# ---- children ----------------------------------------------------------------------------------


def child_generate(a: argparse.Namespace) -> dict:
    import bench_corpus_scale

    a.mb = float(a.mb)
    return bench_corpus_scale.child_generate(a)


def child_import(a: argparse.Namespace) -> dict:
    """One import, as ``golden corpus import`` runs it (the library call behind the command),
    with a progress callback recording when each phase was first and last told."""
    import golden_store
    from golden_store.db.store import Store
    from golden_store.live import documents

    phases: dict[str, list[float]] = {}
    t0 = time.perf_counter()

    def progress(done: int, total: int, phase: object = None) -> None:
        t = time.perf_counter() - t0
        span = phases.setdefault(str(phase), [t, t])
        span[1] = t

    workers_hwm: dict[int, float] = {}
    stop = threading.Event()

    def watch() -> None:  # the worker processes' peaks, read while they live
        me = os.getpid()
        while not stop.wait(0.2):
            try:
                kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
            except OSError:
                continue
            for k in kids:
                h = _hwm_mib(k)
                if h is not None:
                    workers_hwm[int(k)] = max(h, workers_hwm.get(int(k), 0.0))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    with Store.open(a.store) as store:
        rep = documents.import_paths(store, [a.corpus], actor=ACTOR, progress=progress)
        t_import = time.perf_counter() - t0
    seconds = time.perf_counter() - t0  # with closing the store (the command closes it before it ends)
    stop.set()
    watcher.join()
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = _hwm_mib() or 0.0
    return {"seconds": seconds, "import_call_s": t_import, "close_s": seconds - t_import,
            "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
            "cpu_workers_s": kids.ru_utime + kids.ru_stime, "peak_mib": peak,
            "workers": len(workers_hwm), "tree_peak_mib": peak + sum(workers_hwm.values()),
            "added": len(rep.added), "corpus_digest": rep.corpus_digest,
            "phases": {k: [round(v[0], 2), round(v[1], 2)] for k, v in phases.items()},
            "code": str(Path(golden_store.__file__).resolve().parents[1])}


def child_compare(a: argparse.Namespace) -> dict:
    """The two stores (and their search indexes) hold the same corpus: every column of every
    document compared through digests and lengths, the corpus digest, and the indexes."""
    import random

    from golden_store.db.store import Store
    from golden_store.live import documents

    cols = ("doc_id, title, source_path, source_format, raw_sha256, canonical_sha256, "
            "sha256(raw_text), sha256(canonical_text), length(raw_text), length(canonical_text)")
    out: dict[str, object] = {}
    got = []
    for path in (a.store, a.other):
        with Store.open(path, create=False) as store:
            rows = store.read(f"SELECT {cols} FROM documents ORDER BY doc_id")
            events = store.read("SELECT doc_id, action, new_canonical_sha256, source_path FROM corpus_events "
                                "ORDER BY event_id")
            ix = documents.search_index(store)
            rng = random.Random(3)
            sample = rng.sample([r[0] for r in rows], min(200, len(rows)))
            texts = ix.texts(sample)
            raws = {d: ix.raw(d) for d in sample[:50]}
            phrases = []
            for d in sample[:50]:
                words = ix.words(texts[d])
                k = rng.randrange(0, max(1, len(words) - 4))
                count, found = ix.phrase_docs(words[k:k + 4], 1000)
                phrases.append((count, sorted(found)))  # equal scores: in segment order
            got.append({"rows": rows, "events": events, "digest": documents.store_corpus_digest(store),
                        "n_index": ix.n_docs, "texts": texts, "raws": raws, "phrases": phrases})
    x, y = got
    out["documents"] = len(x["rows"])
    out["same_documents"] = x["rows"] == y["rows"]
    out["same_events"] = x["events"] == y["events"]
    out["same_digest"] = x["digest"] == y["digest"]
    out["same_index"] = (x["n_index"] == y["n_index"] == len(x["rows"]) and x["texts"] == y["texts"]
                         and x["raws"] == y["raws"] and x["phrases"] == y["phrases"])
    out["same"] = all(out[k] for k in ("same_documents", "same_events", "same_digest", "same_index"))
    return out


# ---- parent ------------------------------------------------------------------------------------


def run_child(op: str, code_root: Path | None, **kw) -> dict:
    from benchlib import child_flags, run_child_process

    root = code_root or ROOT
    return run_child_process(__file__, op, child_flags(kw), code_root=root, cwd=root)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200,1024", help="corpus sizes in MiB, comma-separated")
    ap.add_argument("--reps", type=int, default=3, help="imports per code at each size up to 300 MiB")
    ap.add_argument("--reps-large", type=int, default=1, help="imports per code at each size above 300 MiB")
    ap.add_argument("--baseline", default="c33c183", help="git revision measured as the baseline ('' for none)")
    ap.add_argument("--code", default="HEAD",
                    help="git revision measured as this code ('.': the working tree as it is)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    for k in ("mb", "out", "store", "other", "corpus"):
        ap.add_argument(f"--{k}", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        ops = {"generate": child_generate, "import": child_import, "compare": child_compare}
        print(json.dumps(ops[a._child](a)))
        return 0
    from benchlib import code_trees, git_head, remove_code_trees, work_dir

    work, tmp = work_dir(ap, a.keep, "bench-import-")
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
    made: list = []
    try:
        new, base = code_trees(ROOT, work, a.code, a.baseline or None, made)
        rows = []
        for mb in [float(x) for x in a.sizes.split(",") if x]:
            d = work / f"{mb:g}MB"
            d.mkdir()
            corpus = d / "corpus.jsonl"
            gen = run_child("generate", None, mb=mb, out=corpus, seed=a.seed)
            say(f"[{mb:g} MiB] {gen['docs']} documents")
            codes = [("new", new)] + ([("baseline", base)] if base else [])
            reps = a.reps if mb <= 300 else a.reps_large
            runs: dict[str, list[dict]] = {c: [] for c, _ in codes}
            row: dict[str, object] = {"mib": mb, "docs": gen["docs"]}
            for rep in range(reps):
                order = codes if rep % 2 == 0 else codes[::-1]
                for code, root in order:
                    store = d / f"{code}.duckdb"
                    for f in d.glob(f"{code}.duckdb*"):
                        if f.is_dir():
                            import shutil

                            shutil.rmtree(f)
                        else:
                            f.unlink()
                    r = run_child("import", root, store=store, corpus=corpus)
                    runs[code].append(r)
                    say(f"  {code} #{rep + 1}: {r['seconds']:.1f} s (cpu {r['cpu_s']:.1f} s), peak "
                        f"{r['peak_mib']:.0f} MiB (with workers {r['tree_peak_mib']:.0f}), close {r['close_s']:.1f} s, "
                        f"phases {r['phases']}")
                if rep == 0 and base:
                    cmp = run_child("compare", new, store=d / "new.duckdb", other=d / "baseline.duckdb")
                    row["compare"] = cmp
                    say(f"  same stored result: {cmp}")
            for code, _ in codes:
                rs = runs[code]
                row[code] = {"seconds": _median([r["seconds"] for r in rs]), "cpu_s": _median([r["cpu_s"] for r in rs]),
                             "peak_mib": _median([r["peak_mib"] for r in rs]),
                             "tree_peak_mib": _median([r["tree_peak_mib"] for r in rs]),
                             "runs": rs}
            if base:
                n, b = row["new"], row["baseline"]
                assert isinstance(n, dict) and isinstance(b, dict)
                row["ratios"] = {"wall": n["seconds"] / b["seconds"], "cpu": n["cpu_s"] / b["cpu_s"],
                                 "peak": n["tree_peak_mib"] / b["peak_mib"],
                                 "per_rep_wall": [x["seconds"] / y["seconds"]
                                                  for x, y in zip(runs["new"], runs["baseline"])]}
                say(f"  medians: new {n['seconds']:.1f} s / {n['tree_peak_mib']:.0f} MiB, baseline {b['seconds']:.1f} s / "
                    f"{b['peak_mib']:.0f} MiB; ratios {row['ratios']}")
            rows.append(row)
            for f in d.iterdir():  # a 1 GiB corpus and its stores: not kept past their size
                if a.keep is None:
                    import shutil

                    shutil.rmtree(f) if f.is_dir() else f.unlink()
        print(json.dumps({"bench": "corpus_import", "commit": git_head(new), "baseline": a.baseline,
                          "load_avg": os.getloadavg(), "rows": rows}))
    finally:
        remove_code_trees(ROOT, made)
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
