#!/usr/bin/env python3
"""Corpus import on PostgreSQL: the staged documents sent by COPY row by row (Python
tuples through psycopg's adapters) against COPY of Arrow-written CSV, in the same run.

Generates a JSONL corpus of ``--mb`` MiB (``bench_spans``' generator, as
``bench_corpus_scale`` does), starts a throwaway cluster (tests/pg.py: Debian's
postgresql, a temp dir, loopback) and imports the corpus ``--repeats`` times per variant,
alternating, each into a fresh database at the current schema. Reports the median wall
time of ``corpus.import_paths`` and of the staging load inside it (the temporary table
the three insert statements read), and the ratios.

Usage::

    python scripts/bench_pg_corpus_import.py [--mb 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def generate(path: Path, mb: float, seed: int = 11) -> dict:
    import bench_spans as bs

    rng = random.Random(seed)
    ws = bs.WordStream(bs.make_vocab(rng), seed)
    target, total, n = int(mb * 2**20), 0, 0
    with open(path, "w", encoding="utf-8") as fh:
        while total < target:
            text = bs.make_document(rng, ws, n)
            fh.write(json.dumps({"doc_id": f"doc-{n:07d}", "text": text}, ensure_ascii=False) + "\n")
            total += len(text.encode("utf-8"))
            n += 1
    return {"docs": n, "bytes": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()

    from golden_store import corpus, pg_store
    from golden_store.store import Store
    from tests import pg

    why = pg.unavailable()
    if why:
        sys.exit(f"cannot run: {why}")
    work = Path(tempfile.mkdtemp(prefix="bench-pg-import-"))
    src = work / "corpus.jsonl"
    made = generate(src, a.mb)
    cluster = pg.start_cluster()
    load_s: list[float] = []
    original = pg_store.PgCursor._load_temp

    def timed(self, name, table):
        t0 = time.perf_counter()
        original(self, name, table)
        load_s.append(time.perf_counter() - t0)

    pg_store.PgCursor._load_temp = timed
    fast = pg_store._all_text
    results: dict[str, dict[str, list[float]]] = {"rows": {"import": [], "load": []},
                                                   "csv": {"import": [], "load": []}}
    try:
        pg.make_migrated_template(cluster)
        for _ in range(a.repeats):
            for variant in ("rows", "csv"):
                pg_store._all_text = fast if variant == "csv" else (lambda schema: False)
                url = cluster.new_database(pg.MIGRATED_TEMPLATE)
                load_s.clear()
                with Store.open(url) as store:
                    t0 = time.perf_counter()
                    rep = corpus.import_paths(store, [src], actor="bench")
                    took = time.perf_counter() - t0
                    assert len(rep.added) == made["docs"]
                    n = store.read_one("SELECT count(*), sum(length(raw_text)) FROM documents")
                assert n[0] == made["docs"]
                results[variant]["import"].append(took)
                results[variant]["load"].append(sum(load_s))
                cluster.drop_database(url)
    finally:
        pg_store._all_text = fast
        pg_store.PgCursor._load_temp = original
        pg.stop_cluster(cluster)
    med = {v: {k: statistics.median(xs) for k, xs in r.items()} for v, r in results.items()}
    print(f"corpus: {made['docs']} documents, {made['bytes'] / 2**20:.1f} MiB; {a.repeats} imports per variant, alternating")
    print(f"{'':22}{'rows (before)':>14}{'csv (after)':>14}{'ratio':>8}")
    for k, label in (("import", "import_paths, s"), ("load", "staging load, s")):
        print(f"{label:22}{med['rows'][k]:>14.2f}{med['csv'][k]:>14.2f}{med['rows'][k] / med['csv'][k]:>7.1f}x")
    print(json.dumps({"corpus": made, "median": med, "all": results}))


if __name__ == "__main__":
    main()
