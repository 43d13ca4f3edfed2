#!/usr/bin/env python3
"""The server's work per label batch on the Judge surface, split into its parts, in-process
on a store with a team-size pool (issue 29 item 1).

A batch the browser sends runs, on the server: the component callback (``submit``: the
label's transaction), then the Judge fragment's body. Before issue 29 the body re-counted
``progress`` and re-queried ``next_items`` (the refill) on every batch; now it does so only
when the queue the browser holds runs low (``annotator.labeling.label_queue``). This script times
each part over ``--labels`` one-label batches as the old body did (submit + progress +
refill every batch) and as the new one does (submit, then the queue's decisions: refill and
recount only when due), on the same store, interleaved (two annotators, turn about) so both
see the same load. Streamlit's own overhead (the
rerun, the websocket) is not in the in-process figures; ``--browser N`` adds, on the same
store, N keys at one per second in chromium on today's page and on ``BEFORE_COMMIT``'s (its
checkout served from a temporary folder): key -> acknowledgement, whose median minus the
server's work is Streamlit's share. ``scripts/bench_team_load.py`` measures many annotators.

Usage::

    python scripts/measure_label_path.py [--docs 600] [--queries 150] [--labels 200] [--browser 0]
                                         [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
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
    from golden_store.live.pool import build_pool

    gen.generate_base(db, docs, queries, 5, 20, gen.SEED)
    store = Store.open(db)
    try:
        return build_pool(store, 20, actor="bench").pool_size
    finally:
        store.close()


def measure(db: Path, n_labels: int) -> dict:
    """Interleaved, so both see the same machine: label i is made the old way by one
    annotator and the new way by another, in the same store, turn about."""
    from annotator.labeling import judging
    from annotator.people.identity import User
    from annotator.labeling.label_queue import QueueAhead
    from annotator.people.roles import Role
    from golden_store.db.store import Store

    old_user, new_user = User("bench-old", "Old path", frozenset(Role)), User("bench-new", "New path", frozenset(Role))
    store = Store.open(db, create=False)
    try:
        def label_for(user: User, card: dict, grade: int) -> dict:
            return {"id": uuid.uuid4().hex, "by": user.username, "item": card["item"], "digest": card["digest"],
                    "action": "grade", "value": grade, "note": ""}

        o_sub, o_prog, o_refill, n_sub, n_body, ch_batch = [], [], [], [], [], []
        # the direct channel (annotator/labeling/label_channel.py): the whole server side of a batch but HTTP
        from annotator.labeling import label_channel
        from annotator.people.identity import LOCAL_USER

        channel = label_channel.Channel()
        pass_ = label_channel.issue(LOCAL_USER, mode="local", session=None, surface=judging.SURFACE, scope="random",
                                    page="bench")
        ch_cards = channel.batch(store, {"pass": pass_, "labels": [], "left": 0}, local_client=True)["items"]
        old_cards = [it.card() for it in judging.next_items(store, old_user, judging.QUEUE_AHEAD)]
        q = QueueAhead(ahead=judging.QUEUE_AHEAD)
        q.refill([it.card() for it in judging.next_items(store, new_user, judging.QUEUE_AHEAD)], exhausted=False)
        q.recounted(*judging.progress(store, new_user), now=time.monotonic())
        for i in range(n_labels):
            # before: every batch = submit + progress + next_items (the refill)
            t0 = time.perf_counter()
            judging.submit(store, old_user, [label_for(old_user, old_cards[0], i % 4)])
            t1 = time.perf_counter()
            judging.progress(store, old_user)
            t2 = time.perf_counter()
            old_cards = [it.card() for it in judging.next_items(store, old_user, judging.QUEUE_AHEAD)]
            t3 = time.perf_counter()
            o_sub.append(t1 - t0)
            o_prog.append(t2 - t1)
            o_refill.append(t3 - t2)
            # after: submit, then the queue decides (refill when the browser runs low, recount on a cadence)
            batch = [label_for(new_user, q.cards[0], i % 4)]
            t0 = time.perf_counter()
            q.note_acks(batch, judging.submit(store, new_user, batch))
            t1 = time.perf_counter()
            q.browser_left = len(q.cards) - 1  # the browser holds the server's cards minus the one on screen
            if q.refill_due(time.monotonic()):
                q.refill([it.card() for it in judging.next_items(store, new_user, judging.QUEUE_AHEAD)],
                         exhausted=False)
            if q.recount_due(time.monotonic()):
                q.recounted(*judging.progress(store, new_user), now=time.monotonic())
            t2 = time.perf_counter()
            n_sub.append(t1 - t0)
            n_body.append(t2 - t1)
            # the channel: one batch of one label, the browser holding the rest of its cards
            card = ch_cards.pop(0)
            t0 = time.perf_counter()
            answer = channel.batch(store, {"pass": pass_, "labels": [label_for(LOCAL_USER, card, i % 4)],
                                           "left": len(ch_cards)}, local_client=True)
            json.dumps(answer)  # what the endpoint sends
            ch_batch.append(time.perf_counter() - t0)
            if answer["items"] is not None:
                ch_cards = answer["items"]
        return {
            "before": {"submit": _ms(o_sub), "progress": _ms(o_prog), "refill": _ms(o_refill),
                       "per_label": _ms([a + b + c for a, b, c in zip(o_sub, o_prog, o_refill)])},
            "after": {"submit": _ms(n_sub), "queue_body": _ms(n_body),
                      "per_label": _ms([a + b for a, b in zip(n_sub, n_body)]),
                      "refills": q.refills, "recounts": q.recounts,
                      "progress_incremental": [q.done, q.total],
                      "progress_exact": list(judging.progress(store, new_user))},
            "channel": {"per_label": _ms(ch_batch)}}
    finally:
        store.close()


BEFORE_COMMIT = "ec55f82"  # main before issue 29's label path: refill + progress on every batch


def _serve(app_root: Path, db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, GOLDEN_DB=str(db), PYTHONPATH=str(app_root))
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(app_root / "app.py"), "--server.port",
                             str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=app_root, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return proc, url
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise RuntimeError(f"server did not start: {log}")


def browser_acks(app_root: Path, db: Path, n_keys: int, log: Path) -> dict:
    """N grade keys one per second on /judge (single-user store): key -> acknowledgement."""
    import shutil

    from bench_browser_labeling import CHROMIUM_ARGS, _PRESS_JS, _WATCH_JS
    from playwright.sync_api import expect, sync_playwright

    proc, url = _serve(app_root, db, log)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/judge")
            root = page.get_by_test_id("stMain").locator(".gs-root")
            expect(root).to_have_attribute("data-uid", re.compile(r".+"), timeout=120_000)
            page.evaluate(_WATCH_JS)
            for i in range(n_keys):
                t0 = time.monotonic()
                page.evaluate(_PRESS_JS, str(i % 4))
                time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
            expect(root).to_have_attribute("data-pending", "0", timeout=120_000)
            keys, saved = page.evaluate("window.__keyTimes"), page.evaluate("window.__savedTimes")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return _ms([(s - k) / 1000 for k, s in zip(keys, saved)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=600)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--labels", type=int, default=200)
    ap.add_argument("--browser", type=int, default=0, metavar="N",
                    help="also N keys at 1/s in chromium, before and after (key -> acknowledgement)")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work, tmp = work_dir(ap, args.keep, "measure_label_path")
    try:
        db = Path(work) / "golden.duckdb"
        pool = build(db, args.docs, args.queries)
        res = {"pool_items": pool, **measure(db, args.labels)}
        if args.browser:
            before = Path(work) / "before"
            before.mkdir()
            subprocess.run(f"git archive {BEFORE_COMMIT} | tar -x -C {before}", shell=True, cwd=ROOT, check=True)
            res["browser_before"] = browser_acks(before, db, args.browser, Path(work) / "before.log")
            res["browser_after"] = browser_acks(ROOT, db, args.browser, Path(work) / "after.log")
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(json.dumps(res) if args.json else json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
