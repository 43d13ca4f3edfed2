"""Benchmark: ``golden import-beir`` of a generated BEIR-shaped dataset, against the corpus
import of the same texts (issue 38 item 2).

Generates a BEIR folder (``corpus.jsonl`` with ``_id``/``title``/``text``, ``queries.jsonl``,
``qrels/test.tsv``; by default 100,000 documents of about 100 words, 1,000 queries, 3 qrels
rows each) and, beside it, the same documents as a plain studio corpus file (``doc_id``,
``title``, ``text``). Each repetition, into fresh DuckDB stores, in turn:

* baseline: ``golden corpus import plain.jsonl`` (the corpus import as it was: documents only);
* candidate: ``golden import-beir DIR --map 1=3`` (documents, queries and qrels, every file
  checked before anything is written);
* again: the same ``golden import-beir`` on the store it just filled (nothing changes).

Every run is the real command in a process of its own; its wall time and its peak memory
(VmHWM-like: ``ru_maxrss`` of the reaped child, whose floor is this script's own small
footprint) are measured from outside. Printed: the median of each, and the candidate/baseline
ratios taken pair by pair (the machine's speed drifts; a pair shares it). ``--json``: one JSON
object on the last line.

    .venv/bin/python scripts/bench_beir_import.py                 # 100k documents, 3 repetitions
    .venv/bin/python scripts/bench_beir_import.py --docs 300 --queries 20 --reps 1 --json   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _vocabulary(rng: random.Random, n: int = 6000) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf-like frequencies, so texts look like text to the index."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(n)})
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return words, weights


def _text(rng: random.Random, words: list[str], weights: list[float], n_words: int) -> str:
    """``n_words`` words in sentences of 8-20 words."""
    out: list[str] = []
    picked = rng.choices(words, weights, k=n_words)
    i = 0
    while i < n_words:
        k = rng.randint(8, 20)
        sentence = picked[i:i + k]
        out.append(sentence[0].capitalize() + " " + " ".join(sentence[1:]) + ".")
        i += k
    return " ".join(out)


def generate(folder: Path, *, docs: int, queries: int, words: int, seed: int = 7) -> dict[str, int]:
    """The BEIR folder and, beside it, ``plain.jsonl`` (the same documents for the corpus
    import). Written line by line: this process stays small, so the children's peaks are theirs."""
    rng = random.Random(seed)
    vocab, weights = _vocabulary(rng)
    beir = folder / "dataset"
    (beir / "qrels").mkdir(parents=True)
    n_bytes = 0
    with (beir / "corpus.jsonl").open("w", encoding="utf-8") as fb, \
            (folder / "plain.jsonl").open("w", encoding="utf-8") as fp:
        for i in range(docs):
            n = max(20, int(rng.gauss(words, words * 0.2)))
            title = _text(rng, vocab, weights, rng.randint(3, 8)).rstrip(".")
            text = _text(rng, vocab, weights, n)
            line = json.dumps({"_id": f"D{i}", "title": title, "text": text}, ensure_ascii=False)
            n_bytes += len(line) + 1
            fb.write(line + "\n")
            fp.write(json.dumps({"doc_id": f"D{i}", "title": title, "text": text}, ensure_ascii=False) + "\n")
    rows = 0
    with (beir / "queries.jsonl").open("w", encoding="utf-8") as fq, \
            (beir / "qrels" / "test.tsv").open("w", encoding="utf-8") as fr:
        fr.write("query-id\tcorpus-id\tscore\n")
        for q in range(queries):
            fq.write(json.dumps({"_id": f"Q{q}", "text": _text(rng, vocab, weights, rng.randint(5, 12))}) + "\n")
            for d in rng.sample(range(docs), k=min(3, docs)):
                fr.write(f"Q{q}\tD{d}\t{1 if rng.random() < 0.7 else 0}\n")
                rows += 1
    return {"docs": docs, "queries": queries, "qrels_rows": rows, "corpus_bytes": n_bytes}


def _golden() -> list[str]:
    exe = Path(sys.executable).with_name("golden")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "annotator.cli"]


def measured(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``cmd`` under a fresh measuring child (``--_one``), so its peak is its own and not
    a running maximum over earlier runs."""
    one = [sys.executable, str(Path(__file__).resolve()), "--_one", "--", *cmd]
    proc = subprocess.run(one, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    return res["wall_s"], res["peak_mib"], res["stdout"]


def _one(cmd: list[str]) -> None:
    """In the measuring child: run ``cmd`` once, print wall, peak and its output as JSON."""
    import resource

    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "peak_mib": peak, "stdout": proc.stdout[-2000:]}))


def bench(args: argparse.Namespace) -> dict:
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-beir-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        sizes = generate(work, docs=args.docs, queries=args.queries, words=args.words)
        gen_s = time.perf_counter() - t0
        golden = _golden()
        base, cand, again, ratios_t, ratios_m = [], [], [], [], []
        for rep in range(args.reps):
            b_db, c_db = work / f"base{rep}.duckdb", work / f"cand{rep}.duckdb"
            b = measured([*golden, "corpus", "import", str(work / "plain.jsonl"), "--db", str(b_db)], work)
            c = measured([*golden, "import-beir", str(work / "dataset"), "--map", "1=3", "--db", str(c_db),
                          "--json"], work)
            a = measured([*golden, "import-beir", str(work / "dataset"), "--map", "1=3", "--db", str(c_db),
                          "--json"], work)
            rep_c, rep_a = json.loads(c[2]), json.loads(a[2])
            assert rep_c["documents"]["added"] == args.docs and rep_c["judgments"][0]["imported"], rep_c
            assert not rep_a["changed"], rep_a
            base.append(b)
            cand.append(c)
            again.append(a)
            ratios_t.append(c[0] / b[0])
            ratios_m.append(c[1] / b[1])
            for p in work.glob(f"*{rep}.duckdb*"):
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    def med(rows: list, i: int) -> float:
        return statistics.median(r[i] for r in rows)

    return {"sizes": sizes, "generate_s": round(gen_s, 2), "reps": args.reps,
            "baseline_corpus_import": {"median_s": round(med(base, 0), 3), "peak_mib": round(med(base, 1), 1)},
            "import_beir": {"median_s": round(med(cand, 0), 3), "peak_mib": round(med(cand, 1), 1)},
            "import_beir_again": {"median_s": round(med(again, 0), 3), "peak_mib": round(med(again, 1), 1)},
            "ratio_time_vs_baseline": round(statistics.median(ratios_t), 3),
            "ratio_peak_vs_baseline": round(statistics.median(ratios_m), 3),
            "docs_per_s": round(args.docs / med(cand, 0), 1)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["--_one", "--"]:
        _one(argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=1_000)
    p.add_argument("--words", type=int, default=100, help="mean words per document")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workdir", default=None, help="keep the generated files and stores here")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    res = bench(args)
    if not args.json:
        s = res["sizes"]
        print(f"{s['docs']:,} documents ({s['corpus_bytes'] / 2**20:.1f} MiB corpus.jsonl), {s['queries']:,} queries, "
              f"{s['qrels_rows']:,} qrels rows; median of {res['reps']} run(s), each a fresh DuckDB store")
        for key, label in (("baseline_corpus_import", "golden corpus import (baseline)"),
                           ("import_beir", "golden import-beir"), ("import_beir_again", "golden import-beir again")):
            print(f"  {label:<34} {res[key]['median_s']:8.2f} s   peak {res[key]['peak_mib']:7.1f} MiB")
        print(f"  import-beir / corpus import: time x{res['ratio_time_vs_baseline']}, peak "
              f"x{res['ratio_peak_vs_baseline']}; {res['docs_per_s']:,.0f} documents/s")
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
