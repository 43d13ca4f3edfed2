#!/usr/bin/env python3
"""N annotators at a grade key a second on one ``golden serve`` (DuckDB), driven through the
label channel's HTTP endpoint with real label passes, the cores shared with a CPU-bound job;
this code and a baseline commit measured in the same run (issue 41 item 1).

Why not browsers: 50 Chromium contexts do not fit on a 2-core machine (issue 29's bench,
``bench_team_load.py``, drives real browsers up to 24). Here each annotator is a thread that
does what the Judge surface does on the wire (``app_pages/labeling_surface/surface.js``): it
holds the cards the channel gave it, makes a label ``{id, by, uid, item, digest, action,
value}`` of the card on screen at each key, keeps it in an outbox, sends the outbox as one
batch when no batch is on its way (``POST /surface/v1/batch`` with its pass), drops what is
acknowledged, takes new cards when the answer brings them. A key with no card left is a dry key.

The passes are real: for each code, ``golden serve`` runs on a fresh copy of one generated
store (bench_team_load's generator: a 6,000-item pool, accounts ann00..), and one headless
Chromium signs in as each account in turn, opens Judge and presses one grade key; the
surface's POST to the channel carries the pass its page was given (captured from the
request; that first label counts in no cell). Then, for each N: the CPU job starts
(``--cpu-procs`` processes of ``while True: pass`` at the server's priority; default one, one
core of two), annotators ann00..ann(N-1) press a random grade every second from a jittered
start for ``--seconds``, up to ``--drain`` seconds pass for the acknowledgements, the job stops.
The load generator runs at niceness 10 (in a team the keys come from other machines).

Measured per cell: ack p50/p95/max (key -> the answer acknowledging its label), labels not
acknowledged after the drain, the server's CPU seconds over keys + drain (its process tree,
/proc/PID/stat) per acknowledged label, and the audit against the store: lost (acknowledged
'saved' or 'duplicate' with no receipt and event), doubled (an annotator's item graded more
than once in the cell), misattributed (the receipt's event on another item, grade or
annotator), dry keys, refused acks.

Usage::

    python scripts/bench_label_load.py [--n 12,24,50] [--seconds 60] [--baseline c33c183] [--code HEAD]
        [--cpu-procs 1] [--pool 6000] [--drain 20] [--json] [--keep DIR]
    python scripts/bench_label_load.py --quick      # N=4, 10 s, no CPU job, no baseline
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_team_load import CHROMIUM_ARGS, PASSWORD, App, run_child  # noqa: E402
from benchlib import code_tree, code_trees, git_head, percentile, remove_code_trees, tree_cpu_s, work_dir  # noqa: E402

AIM_P95_S = 0.25
AIM_CPU_MS = 5.0
PORT = 8732
BUSY = "while True:\n    pass\n"


# ---- passes: one real sign-in per account, in Chromium ---------------------------------------------


async def _one_pass(browser, url: str, name: str, timeout_ms: int) -> dict:
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await ctx.new_page()
        page.set_default_timeout(timeout_ms)
        posts: list[tuple[str, str]] = []
        page.on("request", lambda r: posts.append((r.url, r.post_data or "")) if "/surface/v1/batch" in r.url else None)
        await page.goto(url)
        main = page.get_by_test_id("stMain")
        await main.get_by_role("textbox", name="Username").fill(name)
        await main.get_by_role("textbox", name="Password").fill(PASSWORD)
        await main.get_by_role("button", name="Sign in").click()
        await page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").wait_for()
        await page.goto(f"{url}/judge")
        await page.wait_for_function(
            "() => { const h = [...document.querySelectorAll('*')].find((e) => e.shadowRoot && "
            "e.shadowRoot.querySelector('.gs-root')); const r = h ? h.shadowRoot.querySelector('.gs-root') : "
            "document.querySelector('.gs-root'); return !!r && !!r.dataset.uid && r.dataset.channel === 'direct'; }",
            polling=100)
        await page.keyboard.press("2")
        deadline = time.monotonic() + timeout_ms / 1000
        while not posts and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if not posts:
            raise RuntimeError(f"{name}: the surface sent nothing to the channel")
        body = json.loads(posts[0][1])
        return {"user": name, "pass": body["pass"], "port": int(urlsplit(posts[0][0]).port or 0)}
    finally:
        await ctx.close()


async def _passes(url: str, names: list[str], parallel: int, timeout_s: float) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        sem = asyncio.Semaphore(parallel)

        async def one(name: str) -> dict:
            async with sem:
                return await _one_pass(browser, url, name, int(timeout_s * 1000))

        try:
            return list(await asyncio.gather(*(one(n) for n in names)))
        finally:
            await browser.close()


# ---- the simulated surfaces ----------------------------------------------------------------------


class Annotator:
    """One surface on the wire (see the module's docstring); its records for the audit."""

    def __init__(self, name: str, pass_: str, host: str, port: int, rng: random.Random) -> None:
        self.name, self.pass_ = name, pass_
        self.conn = http.client.HTTPConnection(host, port, timeout=120)
        self.rng = rng
        self.cards: list[dict] = []
        self.done: set[str] = set()  # uids labeled (never shown again, as the surface's doneHere)
        self.outbox: list[dict] = []
        self.key_at: dict[str, float] = {}
        self.acked: dict[str, tuple[str, float]] = {}  # label id -> (status, when)
        self.sent: dict[str, dict] = {}
        self.dry = 0
        self.inflight = False
        self.lock = threading.Lock()
        self.errors: list[str] = []

    def post(self, labels: list[dict]) -> dict:
        body = json.dumps({"pass": self.pass_, "labels": labels, "left": len(self.cards)})
        for attempt in range(3):
            try:
                self.conn.request("POST", "/surface/v1/batch", body=body,
                                  headers={"Content-Type": "text/plain;charset=UTF-8"})
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"{self.name}: HTTP {resp.status}: {data[:200]!r}")
                return json.loads(data)
            except (OSError, http.client.HTTPException) as exc:
                self.conn.close()
                if attempt == 2:
                    raise
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
        raise AssertionError("unreachable")

    def take(self, answer: dict) -> None:
        now = time.time()
        for ack in answer.get("acks") or []:
            self.acked[ack["label_id"]] = (ack["status"], now)
            self.outbox = [x for x in self.outbox if x["id"] != ack["label_id"]]
        if isinstance(answer.get("items"), list):
            pending = {x["uid"] for x in self.outbox}
            shown = {self.cards[0]["uid"]} if self.cards else set()
            fresh = [c for c in answer["items"] if c["uid"] not in self.done and c["uid"] not in pending
                     and c["uid"] not in shown]
            self.cards = self.cards[:1] + fresh

    def start(self) -> None:
        self.take(self.post([]))

    def key(self) -> None:
        """A grade key: label the card on screen, show the next, send if nothing is on its way."""
        with self.lock:
            if not self.cards:
                self.dry += 1
                return
            card = self.cards.pop(0)
            label = {"id": uuid.uuid4().hex, "by": self.name, "uid": card["uid"], "item": card["item"],
                     "digest": card["digest"], "action": "grade", "value": self.rng.randint(0, 3), "note": ""}
            self.done.add(card["uid"])
            self.outbox.append(label)
            self.sent[label["id"]] = label
            self.key_at[label["id"]] = time.time()
            if self.inflight:
                return
            self.inflight = True
        threading.Thread(target=self._send_loop, daemon=True).start()

    def _send_loop(self) -> None:
        while True:
            with self.lock:
                batch = list(self.outbox)
                if not batch:
                    self.inflight = False
                    return
            try:
                answer = self.post(batch)
            except Exception as exc:  # reported; the labels stay in the outbox (unacknowledged)
                with self.lock:
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
                    self.inflight = False
                return
            with self.lock:
                self.take(answer)


def drive(anns: list[Annotator], seconds: int, drain_s: float, seed: int) -> dict:
    rng = random.Random(seed)
    start = time.monotonic() + 1.0
    offsets = [rng.random() for _ in anns]
    lag = 0.0

    def run(a: Annotator, offset: float) -> None:
        nonlocal lag
        for k in range(seconds):
            at = start + offset + k
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            else:
                lag = max(lag, -wait)
            a.key()

    threads = [threading.Thread(target=run, args=(a, o)) for a, o in zip(anns, offsets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    last_key = time.monotonic()
    while time.monotonic() - last_key < drain_s and any(a.outbox or a.inflight for a in anns):
        time.sleep(0.1)
    return {"driver_max_lag_s": round(lag, 3)}


# ---- the audit -------------------------------------------------------------------------------------


def audit(db: Path, anns: list[Annotator]) -> dict:
    """The store (read after the server stopped) against what each annotator was told."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        receipts = {r[0]: r[1:] for r in con.execute(
            "SELECT r.label_id, r.actor, e.actor, e.query_id, e.doc_id, e.start, e.\"end\", e.op, e.grade "
            "FROM label_receipts r LEFT JOIN grade_events e USING (event_id)").fetchall()}
        per_item = {}
        for actor, q, d, s, e, n in con.execute(
                "SELECT actor, query_id, doc_id, start, \"end\", count(*) FROM grade_events "
                "WHERE op = 'grade' GROUP BY ALL").fetchall():
            per_item[(actor, q, d, s, e)] = n
    finally:
        con.close()
    lost = doubled = misattributed = refused = 0
    for a in anns:
        for lid, (status, _) in a.acked.items():
            label = a.sent.get(lid)
            if label is None:
                continue
            if status == "refused":
                refused += 1
                continue
            got = receipts.get(lid)
            it = label["item"]
            if got is None or got[1] is None:
                lost += 1
                continue
            if got[0] != a.name or got[1:] != (a.name, it["query_id"], it["doc_id"], it["start"], it["end"], "grade",
                                              label["value"]):
                misattributed += 1
            if per_item.get((a.name, it["query_id"], it["doc_id"], it["start"], it["end"]), 0) > 1:
                doubled += 1
    return {"lost": lost, "doubled": doubled, "misattributed": misattributed, "refused": refused}


# ---- one code: a server, its passes, its cells ----------------------------------------------------


def _latencies(anns: list[Annotator]) -> list[float]:
    return [a.acked[lid][1] - a.key_at[lid] for a in anns for lid in a.sent if lid in a.acked]


def run_code(code: str, root: Path, ns: list[int], a: argparse.Namespace, work: Path, gen_db: Path, say) -> list[dict]:
    cwd = work / f"serve-{code.replace(' ', '-')}"
    cwd.mkdir(parents=True, exist_ok=True)
    db = cwd / "golden.duckdb"
    shutil.copy(gen_db, db)
    app = App(root, str(db), cwd, PORT)
    cells: list[dict] = []
    try:
        t = time.perf_counter()
        passes = asyncio.run(_passes(app.url, [f"ann{i:02d}" for i in range(max(ns))], a.sign_in_parallel,
                                     a.timeout))
        say(f"[{code}] {len(passes)} passes by sign-in in {time.perf_counter() - t:.0f} s")
        for n in ns:
            rng = random.Random(a.seed + n)
            # the channel's port: where the surface posted (the API beside the app)
            anns = [Annotator(p["user"], p["pass"], "127.0.0.1", p["port"], random.Random(rng.random()))
                    for p in passes[:n]]
            for x in anns:
                x.start()
            jobs = [subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True)
                    for _ in range(a.cpu_procs)]
            try:
                cpu0 = tree_cpu_s(app.proc.pid)
                w0 = time.perf_counter()
                info = drive(anns, a.seconds, a.drain, a.seed + n)
                cpu = tree_cpu_s(app.proc.pid) - cpu0
                wall = time.perf_counter() - w0
            finally:
                for j in jobs:
                    j.kill()
                    j.wait(timeout=10)
            lat = _latencies(anns)
            keys = sum(len(x.sent) for x in anns) + sum(x.dry for x in anns)
            acked = sum(len(x.acked) for x in anns)
            cells.append({"code": code, "n": n, "keys": keys, "labels": sum(len(x.sent) for x in anns),
                          "acked": acked, "unacked": sum(len(x.outbox) for x in anns),
                          "dry": sum(x.dry for x in anns),
                          "ack_p50_s": round(statistics.median(lat), 3) if lat else None,
                          "ack_p95_s": round(percentile(lat, 95), 3) if lat else None,
                          "ack_max_s": round(max(lat), 3) if lat else None,
                          "server_cpu_s": round(cpu, 1), "cpu_ms_per_label": round(cpu / acked * 1000, 1) if acked else None,
                          "wall_s": round(wall, 1), "cpu_procs": a.cpu_procs,
                          "errors": sorted({e for x in anns for e in x.errors})[:5], "_anns": anns, **info})
            c = cells[-1]
            say(f"[{code}] N={n}: {c['labels']} labels, ack p50/p95/max {c['ack_p50_s']}/{c['ack_p95_s']}/"
                f"{c['ack_max_s']} s, unacked {c['unacked']}, dry {c['dry']}, server CPU {c['server_cpu_s']} s "
                f"({c['cpu_ms_per_label']} ms/label)")
            for x in anns:
                x.conn.close()
    finally:
        app.stop()
    for c in cells:  # the audit reads the store once the server let go of it
        c.update(audit(db, c.pop("_anns")))
    return cells


def table(cells: list[dict], say) -> None:
    say("| code | N | keys | ack p50 / p95 / max (s) | unacked | lost / doubled / misattributed | dry | refused "
        "| server CPU s (ms per label) |")
    say("|---|---:|---:|---|---:|---|---:|---:|---|")
    for c in cells:
        if "error" in c:
            say(f"| {c['code']} | {c['n']} | failed: {c['error']} |")
            continue
        say(f"| {c['code']} | {c['n']} | {c['keys']:,} | {c['ack_p50_s']} / {c['ack_p95_s']} / {c['ack_max_s']} | "
            f"{c['unacked']} | {c['lost']} / {c['doubled']} / {c['misattributed']} | {c['dry']} | {c['refused']} | "
            f"{c['server_cpu_s']} ({c['cpu_ms_per_label']}) |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="12,24,50", help="annotator counts, comma-separated, each a cell on the same server")
    ap.add_argument("--seconds", type=int, default=60, help="seconds of keys (one key per second each)")
    ap.add_argument("--baseline", default="c33c183", help="git revision measured as the baseline ('' for none)")
    ap.add_argument("--code", default="HEAD", help="git revision measured as this code ('.': the working tree)")
    ap.add_argument("--also", action="append", default=[], metavar="REV",
                    help="another git revision measured in the same run, as 'also <REV>' (repeatable: an "
                         "earlier pass of this work beside the baseline)")
    ap.add_argument("--cpu-procs", type=int, default=1, help="busy-looping processes beside the server (0: none)")
    ap.add_argument("--pool", type=int, default=6000, help="pool items in the generated store")
    ap.add_argument("--drain", type=float, default=20.0, help="seconds after the last key for acknowledgements")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a sign-in may take")
    ap.add_argument("--sign-in-parallel", type=int, default=3, help="sign-ins under way at once")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--quick", action="store_true", help="a smoke run: N=4, 10 s, no CPU job, no baseline")
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    a = ap.parse_args(argv)
    if a.quick:
        a.n, a.seconds, a.cpu_procs, a.pool, a.drain, a.baseline, a.also = "4", 10, 0, 600, 20.0, "", []
    ns = sorted({int(x) for x in a.n.split(",") if x.strip()})
    if not ns or min(ns) < 1 or max(ns) > 99:
        ap.error("--n: counts from 1 to 99")
    try:
        os.nice(10)  # the load generator stands for other machines' browsers
    except OSError:
        pass
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
    work, tmp = work_dir(ap, a.keep, "bench-label-load-")
    trees: list[Path] = []
    try:
        new, base = code_trees(ROOT, work, a.code, a.baseline, trees)
        others: list[tuple[str, Path]] = []
        for i, rev in enumerate(a.also):
            others.append((f"also {rev}", code_tree(ROOT, rev, work, f"also{i}")))
            trees.append(others[-1][1])
        gen_dir = work / "gen"
        gen_dir.mkdir()
        gen = run_child("generate", base or new, gen_dir, out=gen_dir / "golden.duckdb", work=gen_dir, pool=a.pool,
                        users=max(ns), seed=a.seed)
        say("[store] " + ", ".join(f"{k} {v}" for k, v in gen.items()))
        cells: list[dict] = []
        for code, root in ([("baseline", base)] if base else []) + others + [("new", new)]:
            try:
                cells += run_code(code, root, ns, a, work, gen_dir / "golden.duckdb", say)
            except Exception as exc:  # reported; the other code is still measured
                say(f"[{code}] FAILED: {type(exc).__name__}: {exc}"[:600])
                cells.append({"code": code, "n": 0, "error": f"{type(exc).__name__}: {exc}"[:300]})
        ratios = {}
        for c in cells:
            b = next((x for x in cells if x["code"] == "baseline" and x.get("n") == c.get("n") and "error" not in x),
                     None)
            if c["code"] != "baseline" and b is not None and "error" not in c:
                for f in ("ack_p50_s", "ack_p95_s", "cpu_ms_per_label"):
                    if b.get(f) and c.get(f) is not None:
                        who = "" if c["code"] == "new" else f"{c['code']}_"
                        ratios[f"{who}n{c['n']}_{f}"] = round(c[f] / b[f], 3)
        aims = {f"n{c['n']}": {"p95_le_250ms": c["ack_p95_s"] is not None and c["ack_p95_s"] <= AIM_P95_S,
                               "cpu_le_5ms": c["cpu_ms_per_label"] is not None and c["cpu_ms_per_label"] <= AIM_CPU_MS,
                               "audit_clean": not (c["lost"] or c["doubled"] or c["misattributed"] or c["dry"]
                                                   or c["unacked"])}
                for c in cells if c["code"] == "new" and "error" not in c}
        out = {"bench": "label_load", "commit": git_head(ROOT), "code": a.code, "baseline": a.baseline, "also": a.also,
               "cores": os.cpu_count(), "cpu_procs": a.cpu_procs, "seconds": a.seconds, "store": gen, "cells": cells,
               "ratios_new_over_baseline": ratios, "aims_new": aims}
        if not a.json:
            table(cells, say)
            say("ratios new/baseline: " + ", ".join(f"{k} {v}" for k, v in ratios.items()))
            say("aims (new): " + json.dumps(aims))
        print(json.dumps(out, default=str))
        return 1 if any("error" in c for c in cells) else 0
    finally:
        remove_code_trees(ROOT, trees)
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
