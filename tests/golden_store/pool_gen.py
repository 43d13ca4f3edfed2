"""A generated store for the pool tests (issue 19): documents, queries, several runs of
passages (spans, several per document, so items differ by span and not only by document),
a pool, grades by three annotators (agreements and disputes) and adjudications, all written
through the store's own write paths. Small enough for a test, varied enough that pool
status and pool build meet every case: a judged query a run left out, items judged but never
retrieved, ties between runs on one item, queries with no relevant or no non-relevant item."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

from golden_store.live import adjudication, judging, runs
from golden_store.live.pool import build_pool
from golden_store.live import queries
from golden_store.live.documents import import_paths
from golden_store.db.store import Store

DOC_LEN = 400
SPAN = 40


def fill(store: Store, tmp: Path, *, seed: int = 7, n_queries: int = 30, n_docs: int = 25, n_runs: int = 4,
         depth: int = 25, pool_depth: int = 6, graded_share: float = 0.8, qprefix: str = "q") -> None:
    """Write the store (see the module's docstring); ``tmp`` holds the import files; query ids
    are ``qprefix`` and a number."""
    rng = random.Random(seed)
    corpus = tmp / "pool_gen_corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            fh.write(json.dumps({"doc_id": f"d{i:03d}", "text": "".join(rng.choice("abcdefgh ") for _ in range(DOC_LEN))
                                 + "."}) + "\n")
    import_paths(store, [corpus], actor="eng")
    qfile = tmp / "pool_gen_queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"{qprefix}{i:03d}", "text": f"question {i}?", "stratum": "lexical"}) + "\n"
                             for i in range(n_queries)), encoding="utf-8")
    if "lexical" not in queries.known_strata(store):
        queries.add_stratum(store, "lexical", "words in common", actor="eng")
    queries.import_queries(store, queries.parse_query_file("q.jsonl", qfile.read_bytes(), queries.known_strata(store)), actor="eng")
    spans = [(f"d{d:03d}", s, s + SPAN) for d in range(n_docs) for s in range(0, DOC_LEN - SPAN, 90)]
    for r in range(n_runs):
        rows = []
        for q in range(n_queries):
            if rng.random() < 0.15:  # this run leaves the query out
                continue
            picks = rng.sample(spans, rng.randint(1, depth))
            rows += [(f"{qprefix}{q:03d}", i + 1, 100.0 - i, d, s, e, "exact") for i, (d, s, e) in enumerate(picks)]
        frame = pd.DataFrame(rows, columns=["query_id", "rank", "score", "doc_id", "start", "end", "match_kind"])
        runs.store_run(store, runs.ParsedRun(f"sys{r}", "jsonl", f"run{r}.jsonl", f"{r:064d}", frame), actor="eng")
    build_pool(store, pool_depth, systems=[f"sys{r}" for r in range(n_runs - 1)], actor="eng")
    items = store.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")
    graded = rng.sample(items, int(len(items) * graded_share))

    def grade_all(cur) -> None:
        for q, d, s, e in graded:
            base = rng.choice([0, 0, 1, 2, 3]) if int(q[len(qprefix):]) % 7 else rng.choice([0, 1])  # some queries: no relevant
            for who in rng.sample(["ann", "bob", "cy"], rng.randint(1, 3)):
                g = base if rng.random() < 0.8 else rng.randint(0, 3)
                judging.insert_tx(cur, who, q, d, s, e, op="grade", grade=g)

    store.write(grade_all)
    disputed = store.read("SELECT query_id, doc_id, start, \"end\" FROM disputed_grades ORDER BY 1, 2, 3, 4")
    for q, d, s, e in disputed[: len(disputed) // 2]:
        adjudication.decide(store, "lead", q, d, s, e, rng.randint(0, 3), "checked against the rubric")
