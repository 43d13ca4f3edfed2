#!/usr/bin/env python3
"""Corpus at scale: import, resolver cold start, per-quote latency, Evidence search and
accuracy on generated corpora of 20 MB to 1 GB, for this code and for a baseline commit
(default: the commit before the persisted index, 6b8cdd5) measured in the same run where
it can finish.

For each ``--sizes`` value (MiB of raw UTF-8 text):

1. a child writes the corpus as one JSONL file (``bench_spans``'s generator: documents of
   2-8 KB of prose over a Zipf-Mandelbrot vocabulary with headings, lists, numbers, codes,
   curly quotes, dashes, ligatures, no-break spaces and line-break hyphenation);
2. **import** (a fresh child per code): ``golden corpus import`` of that file into a new
   store - wall time and peak RSS (VmHWM) of the process, for this code including the
   persisted index;
3. quotes: ``--quotes`` positives drawn from the store (8-40 words, 70% verbatim, 30%
   perturbed as in ``bench_spans``: whitespace, case, punctuation, typos, a dropped word)
   and ``--negatives`` fresh sentences; the ground truth is the raw span the words came
   from. A positive is kept only if its interior words occur as a phrase in exactly one
   document, a negative only if they occur in none (counted with a tantivy phrase query
   over the whole corpus: an index built for the check, independent of the resolver's
   own logic, which uses it only to name candidates);
4. **resolver** (a fresh child per code): cold start = open the store, get the resolver
   ready and resolve the first quote; then every quote timed one by one (median, p95);
   **Evidence search**: ``--searches`` queries of 2-4 corpus words, timed one by one;
   peak RSS of that process = what an app process serving Evidence holds;
5. accuracy: located (exact/fuzzy on the true document covering >= 80% of the true span),
   exact boundaries (both ends within 3 characters), false matches (a negative located).

The baseline runs only where ``--baseline-max`` allows (the old import keeps the corpus in
memory ~9x over; at 1 GB it needs > 20 GB). Prints a table and one JSON line.

Usage::

    python scripts/bench_corpus_scale.py [--sizes 20,200,1000] [--quotes 1000] [--negatives 200]
                                         [--searches 200] [--baseline REV] [--baseline-max 200]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

ACTOR = "bench"


def _hwm_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


# ---- children ----------------------------------------------------------------------------------


def child_generate(a: argparse.Namespace) -> dict:
    import bench_spans as bs

    rng = random.Random(a.seed)
    ws = bs.WordStream(bs.make_vocab(rng), a.seed)
    target = int(a.mb * 2**20)
    total = n = 0
    with open(a.out, "w", encoding="utf-8") as fh:
        while total < target:
            text = bs.make_document(rng, ws, n)
            fh.write(json.dumps({"doc_id": f"doc-{n:07d}", "text": text}, ensure_ascii=False) + "\n")
            total += len(text.encode("utf-8"))
            n += 1
    return {"docs": n, "bytes": total}


def child_import(a: argparse.Namespace) -> dict:
    from golden_store.corpus import sources
    from golden_store.live import documents
    from golden_store.db.store import Store

    t0 = time.perf_counter()
    with Store.open(a.store) as store:
        if a.code == "new":
            rep = documents.import_paths(store, [a.corpus], actor=ACTOR)
        else:
            rep = documents.import_documents(store, sources.load_paths([a.corpus]), actor=ACTOR)
    return {"seconds": time.perf_counter() - t0, "peak_mib": _hwm_mib(), "added": len(rep.added)}


def child_quotes(a: argparse.Namespace) -> dict:
    """Quotes with their ground truth, drawn from the store made by this code."""
    import bench_spans as bs

    from golden_store.live import documents
    from golden_store.core.canonical import canonical_text, canonicalize
    from golden_store.db.store import Store

    rng = random.Random(a.seed + 1)
    ws = bs.WordStream(bs.make_vocab(random.Random(a.seed)), a.seed + 2)
    with Store.open(a.store, create=False) as store:
        ix = documents.search_index(store)
        ids = [r[0] for r in store.read("SELECT doc_id FROM documents ORDER BY doc_id")]

        def phrase_count(text: str) -> int:
            words = ix.words(text)[1:-1]
            return ix.phrase_docs(words, 2)[0] if words else 2

        positives, negatives = [], []
        kinds = ["verbatim"] * round(a.quotes * bs.VERBATIM_SHARE)
        kinds += [bs.PERTURBATIONS[i % len(bs.PERTURBATIONS)] for i in range(a.quotes - len(kinds))]
        rng.shuffle(kinds)
        cache: dict[str, tuple] = {}
        for kind in kinds:
            while True:
                d = rng.choice(ids)
                if d not in cache:
                    raw = documents.raw_text(store, d)
                    c = canonicalize(raw)
                    cache[d] = (raw, c, [(m.start(), m.end()) for m in re.finditer(r"\S+", c.text)])
                raw, c, toks = cache[d]
                k = rng.randint(bs.MIN_WORDS, bs.MAX_WORDS)
                if len(toks) < k + 2:
                    continue
                i = rng.randrange(0, len(toks) - k + 1)
                cs, ce = toks[i][0], toks[i + k - 1][1]
                if phrase_count(c.text[cs:ce]) == 1:
                    break
            rs, re_ = c.to_raw(cs, ce)
            verbatim = raw[rs:re_]
            quote = verbatim if kind == "verbatim" else bs._perturb(rng, verbatim, kind)[0]
            positives.append({"quote": quote, "kind": kind, "doc": d, "start": rs, "end": re_})
        while len(negatives) < a.negatives:
            k = rng.randint(bs.MIN_WORDS, bs.MAX_WORDS)
            words: list[str] = []
            while len(words) < k + 1:
                words += bs._sentence(rng, ws).split(" ")
            s = rng.randrange(0, len(words) - k + 1)
            quote = " ".join(words[s:s + k])
            if phrase_count(canonical_text(quote)) == 0:
                negatives.append({"quote": quote, "kind": "fresh", "doc": None, "start": None, "end": None})
        vocab = [w for w in ws.vocab if len(w) > 3]
        searches = [" ".join(rng.sample(vocab[:4000], rng.randint(2, 4))) for _ in range(a.searches)]
    Path(a.out).write_text(json.dumps({"positives": positives, "negatives": negatives, "searches": searches}))
    return {"positives": len(positives), "negatives": len(negatives)}


def child_resolve(a: argparse.Namespace) -> dict:
    from golden_store.live import documents
    from golden_store.db.store import Store

    data = json.loads(Path(a.quotes_file).read_text())
    items = data["positives"] + data["negatives"]
    random.Random(5).shuffle(items)
    t0 = time.perf_counter()
    store = Store.open(a.store, create=False)
    if a.code == "new":
        from golden_store.corpus.resolver import IndexedResolver
        from golden_store.corpus.search import search_indexed

        ix = documents.search_index(store)
        resolver = IndexedResolver(ix)

        def search(text: str):
            return search_indexed(ix, text, limit=8)
    else:
        from golden_store.corpus.resolver import CorpusIndex, SpanResolver
        from golden_store.corpus.search import search as old_search

        index = CorpusIndex(documents.canonical_texts(store), lambda d: documents.raw_text(store, d))
        resolver = SpanResolver(index)

        def search(text: str):
            return old_search(index, text, limit=8)
    first = resolver.resolve(items[0]["quote"])
    cold = time.perf_counter() - t0
    results, times = [first.as_dict()], [cold]
    for it in items[1:]:
        t = time.perf_counter()
        results.append(resolver.resolve(it["quote"]).as_dict())
        times.append(time.perf_counter() - t)
    stimes = []
    for q in data["searches"]:
        t = time.perf_counter()
        search(q)
        stimes.append(time.perf_counter() - t)
    store.close()
    Path(a.out).write_text(json.dumps({"items": items, "results": results}))
    return {"cold_start_s": cold, "quote_ms_median": statistics.median(times[1:]) * 1e3,
            "quote_ms_p95": _pct(times[1:], 0.95) * 1e3, "search_ms_median": statistics.median(stimes) * 1e3,
            "search_ms_p95": _pct(stimes, 0.95) * 1e3, "serving_peak_mib": _hwm_mib()}


def child_folder(a: argparse.Namespace) -> dict:
    """``golden resolve --corpus DIR`` end to end (a subprocess: start-up, reading and
    indexing the folder, resolving, writing) against the naive scan: every quote aligned
    with rapidfuzz against every document (the best score so far as the cutoff), timed on
    a sample of quotes and scaled to all, plus reading and canonicalizing the folder."""
    import bench_spans as bs
    from rapidfuzz import fuzz

    from golden_store.core.canonical import canonical_text

    rng = random.Random(a.seed)
    ws = bs.WordStream(bs.make_vocab(rng), a.seed)
    raw = bs.generate_corpus(rng, ws, a.mb)
    folder = Path(a.out) / "docs"
    folder.mkdir(parents=True)
    for d, t in raw.items():
        (folder / d).write_text(t, encoding="utf-8")
    ids = sorted(raw)
    quotes = []
    for i in range(a.quotes):
        words = raw[rng.choice(ids)].split()
        k = rng.randint(bs.MIN_WORDS, bs.MAX_WORDS)
        st = rng.randrange(0, max(1, len(words) - k))
        q = " ".join(words[st:st + k])
        kind = "verbatim" if rng.random() < bs.VERBATIM_SHARE else rng.choice(bs.PERTURBATIONS)
        quotes.append(q if kind == "verbatim" else bs._perturb(rng, q, kind)[0])
    qfile = Path(a.out) / "quotes.jsonl"
    qfile.write_text("".join(json.dumps({"quote_id": f"q{i}", "quote": q}) + "\n" for i, q in enumerate(quotes)))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "annotator.cli", "resolve", "--corpus", str(folder), "--quotes", str(qfile),
                    "--out", str(Path(a.out) / "resolved.jsonl")], check=True, capture_output=True)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    docs = [canonical_text((folder / d).read_text(encoding="utf-8")).lower() for d in ids]
    prep = time.perf_counter() - t0
    sample = rng.sample(quotes, a.sample)
    t0 = time.perf_counter()
    for q in sample:
        cq, cut = canonical_text(q).lower(), 0.0
        for text in docs:
            al = fuzz.partial_ratio_alignment(cq, text, score_cutoff=cut)
            if al is not None and al.score > cut:
                cut = al.score
    per_quote = (time.perf_counter() - t0) / len(sample)
    naive = prep + per_quote * len(quotes)
    return {"mib": a.mb, "docs": len(raw), "quotes": len(quotes), "golden_resolve_s": ours,
            "naive_s_estimated": naive, "naive_per_quote_s": per_quote, "speedup": naive / ours}


def score(path: str) -> dict:
    data = json.loads(Path(path).read_text())
    pos = located = exact_b = neg = false = 0
    for it, r in zip(data["items"], data["results"]):
        if it["doc"] is None:
            neg += 1
            false += r["status"] in ("exact", "fuzzy")
            continue
        pos += 1
        if r["status"] in ("exact", "fuzzy") and r["doc_id"] == it["doc"]:
            ts, te = it["start"], it["end"]
            overlap = max(0, min(te, r["end"]) - max(ts, r["start"]))
            if overlap >= 0.8 * (te - ts):
                located += 1
                exact_b += abs(r["start"] - ts) <= 3 and abs(r["end"] - te) <= 3
    return {"located_pct": 100 * located / max(1, pos), "exact_boundaries_pct": 100 * exact_b / max(1, pos),
            "false_matches": false, "negatives": neg, "positives": pos}


# ---- parent ------------------------------------------------------------------------------------


def run_child(op: str, code_root: Path | None, **kw) -> dict:
    """``op`` in a fresh process with the code of ``code_root`` (None: this checkout)."""
    from benchlib import child_flags, run_child_process

    root = code_root or ROOT
    return run_child_process(__file__, op, child_flags(kw), code_root=root, cwd=root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="20,200,1000", help="corpus sizes in MiB, comma-separated")
    ap.add_argument("--quotes", type=int, default=1000)
    ap.add_argument("--negatives", type=int, default=200)
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--baseline", default="6b8cdd5", help="git revision measured as the baseline ('' for none)")
    ap.add_argument("--baseline-max", type=float, default=200, help="largest size (MiB) the baseline runs at")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--folder-mb", type=float, default=25, help="golden resolve --corpus DIR: folder size (0: skip)")
    ap.add_argument("--folder-quotes", type=int, default=2200)
    ap.add_argument("--sample", type=int, default=20, help=argparse.SUPPRESS)
    for k in ("mb", "out", "store", "corpus", "code", "quotes-file"):
        ap.add_argument(f"--{k}", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        from benchlib import old_layout_aliases

        old_layout_aliases()  # a baseline commit from before issue 26 keeps golden_store flat
        if a.mb is not None:
            a.mb = float(a.mb)
        ops = {"generate": child_generate, "import": child_import, "quotes": child_quotes, "resolve": child_resolve,
               "folder": child_folder}
        print(json.dumps(ops[a._child](a)))
        return 0
    from benchlib import code_tree, git_head, remove_code_trees, work_dir

    work, tmp = work_dir(ap, a.keep, "bench-corpus-")
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
    base = None
    try:
        if a.baseline:
            base = code_tree(ROOT, a.baseline, work, "baseline")
        rows = []
        for mb in [float(x) for x in a.sizes.split(",") if x]:
            d = work / f"{mb:g}MB"
            d.mkdir()
            gen = run_child("generate", None, mb=mb, out=d / "corpus.jsonl", seed=a.seed)
            say(f"[{mb:g} MiB] {gen['docs']} documents")
            row = {"mib": mb, "docs": gen["docs"]}
            codes = [("new", None)] + ([("baseline", base)] if base and mb <= a.baseline_max else [])
            for code, root in codes:
                store = d / f"{code}.duckdb"
                imp = run_child("import", root, store=store, corpus=d / "corpus.jsonl", code=code)
                say(f"  {code} import {imp['seconds']:.1f} s, peak {imp['peak_mib']:.0f} MiB")
                if code == "new":
                    run_child("quotes", None, store=store, out=d / "quotes.json", seed=a.seed,
                              quotes=a.quotes, negatives=a.negatives, searches=a.searches)
                res = run_child("resolve", root, store=store, quotes_file=d / "quotes.json", out=d / f"{code}.res.json",
                                code=code)
                sc = score(str(d / f"{code}.res.json"))
                say(f"  {code} cold start {res['cold_start_s']:.2f} s, quote p95 {res['quote_ms_p95']:.1f} ms, "
                    f"search p95 {res['search_ms_p95']:.1f} ms, serving peak {res['serving_peak_mib']:.0f} MiB, "
                    f"located {sc['located_pct']:.1f}%, false {sc['false_matches']}")
                row[code] = {"import": imp, "resolve": res, "accuracy": sc}
            if "baseline" in row:
                n, b = row["new"], row["baseline"]
                row["ratios"] = {
                    "import_time": n["import"]["seconds"] / b["import"]["seconds"],
                    "import_peak": n["import"]["peak_mib"] / b["import"]["peak_mib"],
                    "cold_start": n["resolve"]["cold_start_s"] / b["resolve"]["cold_start_s"],
                    "quote_p95": n["resolve"]["quote_ms_p95"] / b["resolve"]["quote_ms_p95"],
                    "search_p95": n["resolve"]["search_ms_p95"] / b["resolve"]["search_ms_p95"],
                    "serving_peak": n["resolve"]["serving_peak_mib"] / b["resolve"]["serving_peak_mib"],
                }
                say("  ratios new/baseline: " + ", ".join(f"{k} {v:.3f}" for k, v in row["ratios"].items()))
            rows.append(row)
        folder = None
        if a.folder_mb:
            folder = run_child("folder", None, mb=a.folder_mb, out=work / "folder", seed=a.seed,
                               quotes=a.folder_quotes, sample=a.sample)
            say(f"[golden resolve --corpus DIR, {a.folder_mb:g} MiB, {folder['quotes']} quotes] "
                f"{folder['golden_resolve_s']:.1f} s vs naive scan {folder['naive_s_estimated']:.0f} s "
                f"(estimated from {a.sample} quotes): {folder['speedup']:.0f}x")
        out = {"bench": "corpus_scale", "commit": git_head(ROOT), "baseline": a.baseline, "quotes": a.quotes,
               "negatives": a.negatives, "rows": rows, "folder": folder}
        print(json.dumps(out))
    finally:
        remove_code_trees(ROOT, [base])
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
