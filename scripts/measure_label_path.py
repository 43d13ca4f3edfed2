#!/usr/bin/env python3
"""The server's work per label batch on the Judge surface, split into its parts, in-process
on a store with a team-size pool (issue 29 item 1).

A batch the browser sends runs, on the server: the component callback (``submit``: the
label's transaction), then the Judge fragment's body. Before issue 29 the body re-counted
``progress`` and re-queried ``next_items`` (the refill) on every batch; now it does so only
when the queue the browser holds runs low (``annotator.label_queue``). This script times
each part over ``--labels`` one-label batches as the old body did (submit + progress +
refill every batch) and as the new one does (submit, then the queue's decisions: refill and
recount only when due), on the same store, in the same run. Streamlit's own overhead (the
rerun, the websocket) is not in these figures: ``scripts/bench_team_load.py`` measures key
to acknowledgement in real browsers.

Usage::

    python scripts/measure_label_path.py [--docs 600] [--queries 300] [--labels 200] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import bench_judging as gen  # noqa: E402
from benchlib import work_dir  # noqa: E402


def _ms(xs: list[float]) -> dict:
    xs = sorted(x * 1000 for x in xs)
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median_ms": round(statistics.median(xs), 2),
            "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 2), "total_ms": round(sum(xs), 1)}


def build(db: Path, docs: int, queries: int) -> int:
    from golden_store.db.store import Store
    from golden_store.live import runs

    gen.generate_base(db, docs, queries, 5, 20, gen.SEED)
    store = Store.open(db)
    try:
        return runs.build_pool(store, 20, actor="bench").pool_size
    finally:
        store.close()


def measure(db: Path, n_labels: int) -> dict:
    from annotator import judging
    from annotator.identity import LOCAL_USER
    from annotator.label_queue import QueueAhead
    from golden_store.db.store import Store

    user = LOCAL_USER
    store = Store.open(db, create=False)
    out: dict = {}
    try:
        def label_for(card: dict, grade: int) -> dict:
            return {"id": uuid.uuid4().hex, "by": user.username, "item": card["item"], "digest": card["digest"],
                    "action": "grade", "value": grade, "note": "", "uid": json.dumps(card["item"], sort_keys=True)}

        # before: every batch = submit + progress + next_items (the refill)
        sub, prog, refill = [], [], []
        cards = [it.card() for it in judging.next_items(store, user, judging.QUEUE_AHEAD)]
        for i in range(n_labels):
            t0 = time.perf_counter()
            judging.submit(store, user, [label_for(cards[0], i % 4)])
            t1 = time.perf_counter()
            judging.progress(store, user)
            t2 = time.perf_counter()
            cards = [it.card() for it in judging.next_items(store, user, judging.QUEUE_AHEAD)]
            t3 = time.perf_counter()
            sub.append(t1 - t0)
            prog.append(t2 - t1)
            refill.append(t3 - t2)
        out["before"] = {"submit": _ms(sub), "progress": _ms(prog), "refill": _ms(refill),
                         "per_label": _ms([a + b + c for a, b, c in zip(sub, prog, refill)])}

        # after: submit, then the queue decides (refill when the browser's queue runs low, recount on a cadence)
        q = QueueAhead(ahead=judging.QUEUE_AHEAD)
        q.refill([it.card() for it in judging.next_items(store, user, judging.QUEUE_AHEAD)], exhausted=False)
        q.recounted(*judging.progress(store, user), now=time.monotonic())
        sub, body, n_refill, n_recount = [], [], 0, 0
        for i in range(n_labels):
            card = q.cards[0]
            batch = [label_for(card, i % 4)]
            t0 = time.perf_counter()
            acks = judging.submit(store, user, batch)
            q.note_acks(batch, acks)
            t1 = time.perf_counter()
            q.browser_left = len(q.cards) - 1  # the browser holds the server's cards minus the one on screen
            if q.refill_due(time.monotonic()):
                q.refill([it.card() for it in judging.next_items(store, user, judging.QUEUE_AHEAD)], exhausted=False)
                n_refill += 1
            if q.recount_due(time.monotonic()):
                q.recounted(*judging.progress(store, user), now=time.monotonic())
                n_recount += 1
            t2 = time.perf_counter()
            sub.append(t1 - t0)
            body.append(t2 - t1)
        exact = judging.progress(store, user)
        out["after"] = {"submit": _ms(sub), "queue_body": _ms(body), "per_label": _ms([a + b for a, b in zip(sub, body)]),
                        "refills": n_refill, "recounts": n_recount,
                        "progress_incremental": [q.done, q.total], "progress_exact": list(exact)}
    finally:
        store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=600)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--labels", type=int, default=200)
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work, tmp = work_dir(ap, args.keep, "measure_label_path")
    try:
        db = Path(work) / "golden.duckdb"
        pool = build(db, args.docs, args.queries)
        res = {"pool_items": pool, **measure(db, args.labels)}
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(json.dumps(res) if args.json else json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
