#!/usr/bin/env python3
"""A team at full speed (issue 29): N annotators, each signed in in their own Chromium
context, each pressing a grade on Judge every second, on one ``golden serve`` (DuckDB) and on
two servers sharing one PostgreSQL store, with and without a CPU-heavy job beside them; this
code and a baseline commit measured in the same run.

What it does, for each code (the baseline first, each a git worktree) and each cell
(servers x CPU job x N):

1. a fresh copy of one generated store (generated once, by the baseline code, through the
   store's own paths: corpus import, query import, a TREC run, ``pool build``, accounts
   admin + ann00..annNN): a DuckDB file copy, or on PostgreSQL a database made from the
   generated one as a template (``CREATE DATABASE ... TEMPLATE``), then ``golden migrate``;
2. ``golden serve`` (that code's, its own working directory) on port 8712, and for two
   servers a second on 8722 (README "Several app servers behind a proxy": no proxy needed
   here, each annotator is given one server, alternately);
3. N browser contexts in one headless Chromium (own cookies and storage each) sign in and
   open Judge; a page-side recorder is installed (below); then the CPU job starts
   (``--cpu-kind busy``: one busy-looping process per core, at the servers' priority;
   ``work``: a repeated corpus import + pool build + freeze on a store of its own) and
   every annotator presses a random grade key 0-3 every second from a jittered start, as
   real key presses (Playwright's keyboard), for ``--seconds``;
4. after the last key, up to ``--drain`` seconds for the surfaces to acknowledge what is
   pending (``unacked_after_drain``: labels made and not acknowledged then; ``acks`` counts
   those that came by the time the pages were read, a moment later); then the servers stop
   and the store is read.

The page-side recorder reads only what the surface exposes on its root element
(``data-uid``: the item painted; ``data-saved``/``data-refused``/``data-pending``: counts;
``data-state`` where the surface has it), never its internals; it is an init script, so it
is there on every load (a page the surface reloads keeps its record in sessionStorage): at
each grade keydown (a capture listener on ``window``, so it runs before the surface's own) it records the time and the ``data-uid`` painted, and right after
the surface handled the key whether the key made a label (pending + saved + refused grew);
a MutationObserver records the time of each acknowledgement (saved or refused grew). The
surface sends its outbox in order and acknowledges in order, so the m-th acknowledgement is
the m-th label's: key -> acknowledged = that time minus the label's keydown.

Measured per cell: ack p50/p95/max; labels unacknowledged ``--drain`` s after the last key;
from the store: lost (a key on a painted item with no grade stored for it), doubled (stored
more than once), misattributed (a stored grade on an item no key was pressed on, or with
another grade than the key's; only keys that made a label count); dry keys (pressed while
no item was painted: the surface empty or loading); keys without a label (an item was
painted but the surface made no label of the key); the servers' CPU seconds over the key phase + drain (their process
trees, /proc/PID/stat; PostgreSQL's postmaster tree reported apart) and peak RSS (VmHWM);
the browsers' CPU (Chromium and Playwright's driver, which share the cores). In a team the
annotators' browsers run on their own machines, so Chromium runs at niceness 10 by default
(``--browser-nice``; 0 puts it at the servers' priority and makes the browsers part of the load).

Aims (issue 29), printed met / not met: 12 annotators at 1 key/s on one server with the
cores shared (``--cpu-job on``): ack p95 <= 1 s, 0 lost, 0 dry (and nothing doubled,
misattributed or unacknowledged after the drain); two servers hold 24 (the same with N=24 on
2 servers, CPU job on).

The default run measures the aims' cells with the CPU job on (N=12 on one server, N=24 on two),
for the baseline and this code: four cells of 2.5-4 minutes each on 2 shared cores (server
start, sign-ins: 24 take ~1.5 min, 60 s of keys, the drain), about 13 minutes.
``--n 1,4,12,24 --cpu-job off,on`` runs every N on every server count (two servers: N >= 2)
with and without the job: 14 cells per code, over an hour with a baseline.

Usage::

    python scripts/bench_team_load.py [--n 1,4,12,24] [--seconds 60] [--servers 1,2] [--cpu-job off,on]
        [--cpu-kind busy|work] [--baseline main] [--code HEAD] [--pool 6000] [--drain 20] [--json] [--keep DIR]
    python scripts/bench_team_load.py --quick          # N=2, 10 s, one server, no CPU job, no baseline
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchlib import (  # noqa: E402
    PgCluster, child_flags, code_trees, git_head, percentile, remove_code_trees, run_child_process, tree_cpu_s,
    tree_hwm_mib, work_dir,
)

PASSWORD = "0123456789ab"
PORTS = (8712, 8722)  # this bench's ports (server A, server B)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
WORDS = ("leave policy vpn access expense travel pension laptop badge parking holiday contract payroll "
         "insurance training security password printer network onboarding").split()
AIM_P95_S = 1.0
AIM_CELLS = ((1, 12), (2, 24))  # (servers, annotators) of the aims: the default run


# ---- the store (a child, with the generating code on PYTHONPATH) -----------------------------------


def _write_corpus(path: Path, n_docs: int, rng: random.Random) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 160))) + "."
            fh.write(json.dumps({"doc_id": f"d{i:05d}", "text": text}) + "\n")


def child_generate(a: argparse.Namespace) -> dict:
    """Corpus, queries, one TREC run of depth 10 and a depth-10 pool: ``--pool`` items
    (pool / 10 questions x 10 passages), then accounts admin and ann00.. (``--users``)."""
    from annotator.evaluation import runs_import
    from annotator.people import identity
    from annotator.integration.corpus_import import import_paths
    from golden_store.db.store import Store
    from golden_store.live import queries

    rng = random.Random(int(a.seed))
    n_q = max(1, int(a.pool) // 10)
    n_docs = max(20, n_q // 2)
    work = Path(a.work)
    t0 = time.perf_counter()
    corpus = work / "corpus.jsonl"
    _write_corpus(corpus, n_docs, rng)
    qfile = work / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"q{i:05d}", "text": " ".join(rng.choice(WORDS) for _ in range(8)) + "?",
                                         "stratum": "lexical", "answerable": True}) + "\n" for i in range(n_q)),
                     encoding="utf-8")
    run = work / "sys0.trec"
    with run.open("w", encoding="ascii") as fh:
        for q in range(n_q):
            for r, d in enumerate(rng.sample(range(n_docs), 10)):
                fh.write(f"q{q:05d} Q0 d{d:05d} {r + 1} {100 - r} sys0\n")
    store = Store.open(a.out)
    try:
        admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
        for i in range(int(a.users)):
            identity.create_user(store, admin, f"ann{i:02d}", ["annotator"], password=PASSWORD)
        import_paths(store, admin, [corpus])
        recs = queries.parse_query_file("queries.jsonl", qfile.read_bytes(), queries.known_strata(store))
        queries.import_queries(store, recs, actor="admin")
        runs_import.import_run(store, admin, run, "sys0")
        runs_import.build_pool(store, admin, 10)
        pool = store.read_one("SELECT count(*) FROM pool_items")[0]
    finally:
        store.close()
    return {"pool_items": int(pool), "queries": n_q, "documents": n_docs, "annotators": int(a.users),
            "generate_s": round(time.perf_counter() - t0, 1)}


def child_work_loop(a: argparse.Namespace) -> dict:
    """``--cpu-kind work``: what a small team's server also does, over and over until killed,
    on a store of its own (so it competes for the cores and the disk, not for the served
    store's locks): a corpus import replacing every document with new text (a re-import of
    unchanged text would skip them), a pool build, a freeze.
    Prints one line per round to stderr."""
    from annotator.evaluation import runs_import
    from annotator.people import identity
    from annotator.versions import versioning
    from annotator.integration.corpus_import import import_paths
    from golden_store.db.store import Store

    work = Path(a.work)
    a.out = str(work / "work.duckdb")
    child_generate(a)  # corpus, queries, a run, a pool, accounts
    store = Store.open(a.out)
    admin = identity.get_user(store, "admin")
    assert admin is not None
    rounds = 0
    rng = random.Random(int(a.seed) + 1)
    n_docs = sum(1 for _ in (work / "corpus.jsonl").open(encoding="utf-8"))
    while True:
        t = time.perf_counter()
        _write_corpus(work / "corpus.jsonl", n_docs, rng)
        import_paths(store, admin, [work / "corpus.jsonl"], replace=True)
        runs_import.build_pool(store, admin, 10)
        try:
            versioning.freeze(store, admin, f"work-{rounds}")
        except Exception as exc:  # a refused freeze is still the work done before it
            print(f"freeze refused: {exc}"[:200], file=sys.stderr, flush=True)
        rounds += 1
        print(f"work round {rounds}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)


def run_child(op: str, code_root: Path, cwd: Path, **kw) -> dict:
    """``op`` in a fresh process with ``code_root``'s code, in ``cwd`` (a store's corpus search
    index goes into the working directory: never the checkout)."""
    return run_child_process(__file__, op, child_flags(kw, dashes=False), code_root=code_root, cwd=cwd)


def _cli(root: Path, db: str, cwd: Path, *args: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("GOLDEN_DB", None)
    proc = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", db, *args], capture_output=True, text=True,
                          env=env, cwd=str(cwd))
    if proc.returncode != 0:
        raise SystemExit(f"golden {' '.join(args)} failed: {proc.stderr[-2000:]}")


# ---- servers and the CPU job -----------------------------------------------------------------------


class App:
    """``golden serve`` of one code on ``db``, in its own working directory and on ``port``."""

    def __init__(self, root: Path, db: str, cwd: Path, port: int) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, GOLDEN_DB=db, PYTHONPATH=str(root))
        env.pop("GOLDEN_VERSIONS", None)
        self.log = cwd / "server.log"
        fh = self.log.open("ab")
        # golden serve execs streamlit: the pid is the server's
        self.proc = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", db, "serve", "--port", str(port)],
                                     cwd=str(cwd), env=env, stdout=fh, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        fh.close()
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"golden serve exited ({self.proc.returncode}):\n"
                                 f"{self.log.read_text(errors='replace')[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"golden serve not healthy after 180 s:\n{self.log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.25)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=20)


_BUSY = "while True:\n    pass\n"


def start_cpu_job(kind: str, root: Path, work: Path, pool: int) -> list[subprocess.Popen]:
    """``busy``: one busy-looping Python process per core (the cores shared with other work);
    ``work``: a repeated corpus import + pool build + freeze on a store of its own, five times
    the served pool's size (:func:`child_work_loop`, the code under test)."""
    if kind == "busy":
        return [subprocess.Popen([sys.executable, "-c", _BUSY], start_new_session=True)
                for _ in range(os.cpu_count() or 2)]
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(HERE)]))
    env.pop("GOLDEN_DB", None)
    log = (work / "work.log").open("ab")
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--_child", "work_loop", "--work",
                             str(work), "--pool", str(pool * 5), "--users", "1", "--seed", "7"], cwd=str(work), env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return [proc]


def stop_cpu_job(procs: list[subprocess.Popen]) -> float:
    """Stop the job; the CPU seconds it got (how much of the machine it took)."""
    used = 0.0
    for p in procs:
        used += tree_cpu_s(p.pid)
        p.kill()
        p.wait(timeout=10)
    return round(used, 1)


# ---- the browsers ----------------------------------------------------------------------------------

# Installed in each annotator's pages before any of the page's own scripts (an init script:
# its keydown listener on window comes before the surface's), on every load: a page the
# surface reloads (after a lost connection) keeps its record, which lives in the tab's
# sessionStorage. It reads the surface's root attributes only.
_RECORDER_JS = """(() => {
  const find = () => {
    if (!window.__gsRoot || !window.__gsRoot.isConnected) {
      const host = [...document.querySelectorAll('*')].find((e) => e.shadowRoot && e.shadowRoot.querySelector('.gs-root'));
      window.__gsRoot = host ? host.shadowRoot.querySelector('.gs-root') : document.querySelector('.gs-root');
    }
    return window.__gsRoot;
  };
  const num = (r, k) => Number((r && r.dataset[k]) || 0);
  let rec = null;
  try { rec = JSON.parse(window.sessionStorage.getItem('__bench') || 'null'); } catch (e) { rec = null; }
  if (!rec) rec = {keys: [], acks: [], roots: 0, resets: 0, loads: 0};
  rec.loads += 1;
  window.__bench = rec;
  const save = () => { try { window.sessionStorage.setItem('__bench', JSON.stringify(rec)); } catch (e) {} };
  let watched = null, seen = 0;
  const watch = () => {
    const r = find();
    if (!r || r === watched) return r;
    watched = r; rec.roots += 1;
    seen = num(r, 'saved') + num(r, 'refused');
    new MutationObserver(() => {
      const n = num(r, 'saved') + num(r, 'refused');
      if (n < seen) { rec.resets += 1; seen = n; }
      const t = performance.timeOrigin + performance.now();
      while (seen < n) { rec.acks.push(t); seen += 1; }
      save();
    }).observe(r, {attributes: true, attributeFilter: ['data-saved', 'data-refused']});
    return r;
  };
  window.setInterval(watch, 250);
  window.addEventListener('keydown', (e) => {
    if (!/^[0-3]$/.test(e.key)) return;
    const r = watch();
    const before = num(r, 'pending') + num(r, 'saved') + num(r, 'refused');
    // surfaces on the page (a second one, e.g. a stale element kept during a rerun, would take the key too)
    const n = [...document.querySelectorAll('*')].filter((x) => x.shadowRoot && x.shadowRoot.querySelector('.gs-root')
      && x.isConnected).length + document.querySelectorAll('.gs-root').length;
    const k = {t: performance.timeOrigin + performance.now(), key: e.key, uid: r ? (r.dataset.uid || '') : '',
               state: r ? (r.dataset.state || '') : 'no-surface', made: null, surfaces: n};
    rec.keys.push(k);
    window.setTimeout(() => {
      const r2 = watch();
      k.made = num(r2, 'pending') + num(r2, 'saved') + num(r2, 'refused') - before;
      // the counters restarted meanwhile (the component remounted): whether the surface took
      // the key (it prevents a grade key's default when it labels) says instead
      if (k.made < 0) { k.reset = true; k.made = e.defaultPrevented ? 1 : 0; }
      save();
    }, 0);
  }, true);
})();"""

_STATE_JS = """() => { const r = window.__gsRoot; const b = window.__bench;
  return {pending: Number((r && r.dataset.pending) || 0), uid: r ? (r.dataset.uid || '') : '',
          made: b.keys.reduce((s, k) => s + (k.made > 0 ? 1 : 0), 0), acks: b.acks.length}; }"""


async def _sign_in_and_judge(browser, url: str, name: str, timeout_ms: int):
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await ctx.new_page()
    page.set_default_timeout(timeout_ms)
    page.__errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.__errors.append(str(exc)[:200]))  # type: ignore[attr-defined]
    await ctx.add_init_script(script=_RECORDER_JS)
    await page.goto(url)
    main = page.get_by_test_id("stMain")
    await main.get_by_role("textbox", name="Username").fill(name)
    await main.get_by_role("textbox", name="Password").fill(PASSWORD)
    await main.get_by_role("button", name="Sign in").click()
    await page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").wait_for()
    await page.goto(f"{url}/judge")
    await page.wait_for_function("() => { const h = [...document.querySelectorAll('*')].find((e) => e.shadowRoot && "
                                 "e.shadowRoot.querySelector('.gs-root')); const r = h ? h.shadowRoot.querySelector("
                                 "'.gs-root') : document.querySelector('.gs-root'); return !!r && !!r.dataset.uid; }",
                                 polling=100)
    return ctx, page


async def _annotate(page, start: float, offset: float, seconds: int, rng: random.Random) -> float:
    """Press a random grade key at start + offset + k s, k = 0..seconds-1; the largest lag
    (s) of a press behind its schedule (the driver's own delay, not the page's)."""
    lag = 0.0
    for k in range(seconds):
        due = start + offset + k
        now = time.monotonic()
        if due > now:
            await asyncio.sleep(due - now)
        lag = max(lag, time.monotonic() - due)
        await page.keyboard.press(str(rng.randrange(4)))
    return lag


def niced(exe: str, nice: int, folder: Path) -> str:
    """``exe`` itself, or (``nice`` > 0) a wrapper that starts it at that niceness: Chromium
    and every renderer it forks then yield the cores to the servers and the CPU job. On a
    team the annotators' browsers run on their own machines; here they share the server's two
    cores, so at the servers' priority they would be part of the load the aims are about."""
    if nice <= 0:
        return exe
    wrapper = folder / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n {int(nice)} "{exe}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return str(wrapper)


async def drive(urls: list[str], n: int, seconds: int, drain_s: float, cpu_job, seed: int,
                server_pids: list[int], pg_pid: int | None, timeout_s: float, say, browser_nice: int = 0,
                folder: Path | None = None) -> dict:
    """Sign in ``n`` annotators (annotator i on urls[i % len(urls)]), then the key phase and
    the drain; the page-side records, the servers' CPU over key phase + drain."""
    from playwright.async_api import async_playwright

    exe = shutil.which("chromium")
    if exe is None:
        raise SystemExit("needs Debian's chromium on PATH (apt-get install chromium)")
    out: dict = {}
    async with async_playwright() as pw:
        launch_exe = niced(exe, browser_nice, folder) if folder is not None else exe
        browser = await pw.chromium.launch(executable_path=launch_exe, args=CHROMIUM_ARGS)
        try:
            gate = asyncio.Semaphore(4)  # sign-ins a few at a time (each is a few script runs)

            async def one(i: int):
                async with gate:
                    return await _sign_in_and_judge(browser, urls[i % len(urls)], f"ann{i:02d}", int(timeout_s * 1000))

            t = time.perf_counter()
            opened = await asyncio.gather(*(one(i) for i in range(n)))
            out["sign_in_s"] = round(time.perf_counter() - t, 1)
            pages = [p for _, p in opened]
            loads = [await p.evaluate("() => window.__bench.loads") for p in pages]  # sign-in and Judge
            rng = random.Random(seed)
            offsets = [rng.random() for _ in range(n)]
            rngs = [random.Random(seed * 1000 + i) for i in range(n)]
            job = cpu_job() if cpu_job else []
            try:
                cpu0 = [tree_cpu_s(p) for p in server_pids]
                pg0 = tree_cpu_s(pg_pid) if pg_pid else None
                job0, own0 = sum(tree_cpu_s(p.pid) for p in job), tree_cpu_s(os.getpid())
                start = time.monotonic() + 0.5
                lags = await asyncio.gather(*(_annotate(p, start, offsets[i], seconds, rngs[i])
                                              for i, p in enumerate(pages)))
                last_key = time.monotonic()
                unacked = None
                while True:
                    states = await asyncio.gather(*(p.evaluate(_STATE_JS) for p in pages))
                    waiting = sum(s["made"] - s["acks"] for s in states)
                    waited = time.monotonic() - last_key
                    if waiting <= 0 or waited >= drain_s:
                        unacked = max(0, waiting)
                        break
                    await asyncio.sleep(0.5)
                out["drained_s"] = round(waited, 1)
                out["unacked_after_drain"] = unacked
                out["key_phase_s"] = round(last_key - start, 1)
                out["cpu_s"] = [round(tree_cpu_s(p) - c, 1) for p, c in zip(server_pids, cpu0)]
                # this process's tree: the servers, the CPU job, Playwright's driver and Chromium
                own = tree_cpu_s(os.getpid()) - own0 - (sum(tree_cpu_s(p.pid) for p in job) - job0)
                out["browser_cpu_s"] = round(own - sum(out["cpu_s"]), 1)
                out["postgres_cpu_s"] = round(tree_cpu_s(pg_pid) - pg0, 1) if pg_pid and pg0 is not None else None
                out["window_s"] = round(time.monotonic() - start, 1)
            finally:
                out["cpu_job_cpu_s"] = stop_cpu_job(job) if job else None
            out["driver_max_lag_s"] = round(max(lags), 3)
            out["records"] = [await p.evaluate("() => window.__bench") for p in pages]
            out["page_loads_during_keys"] = sum(r["loads"] - loads0 for r, loads0 in zip(out["records"], loads))
            out["page_errors"] = sorted({e for p in pages for e in p.__errors})[:5]
            for ctx, _ in opened:
                await ctx.close()
        finally:
            await browser.close()
    return out


# ---- figures ---------------------------------------------------------------------------------------


def _item(uid: str) -> tuple:
    d = json.loads(uid)
    return d["query_id"], d["doc_id"], d["start"], d["end"]


def tally(records: list[dict], stored: dict[str, list[tuple]]) -> dict:
    """Latencies from the page records; lost / doubled / misattributed against the store.
    ``records[i]`` is ann{i}'s page; ``stored`` maps an annotator to its stored (item, grade)s.
    A lost label is ``lost_acked`` when the surface had acknowledged it (the store broke its
    word) and ``lost_pending`` when it was still waiting in the page's outbox at the end."""
    lat: list[float] = []
    keys = dry = made = acks = lost = lost_acked = doubled = misattributed = resets = no_label = multi = 0
    dry_states: dict[str, int] = {}
    examples: list[dict] = []
    for i, rec in enumerate(records):
        actor = f"ann{i:02d}"
        ks = rec["keys"]
        keys += len(ks)
        dry += sum(1 for k in ks if not k["uid"])
        for k in ks:
            if not k["uid"]:  # what the surface said it was doing (data-state, where it says)
                dry_states[k.get("state") or "-"] = dry_states.get(k.get("state") or "-", 0) + 1
        no_label += sum(1 for k in ks if k["uid"] and not (k["made"] or 0) > 0)
        multi += sum(1 for k in ks if k.get("surfaces", 1) > 1)
        labels = [k for k in ks if (k["made"] or 0) > 0]
        made += len(labels)
        acks += len(rec["acks"])
        resets += rec.get("resets", 0)
        lat += [(t - k["t"]) / 1000 for k, t in zip(labels, rec["acks"])]
        acked = {id(k) for k in labels[:len(rec["acks"])]}
        want: dict[tuple, list[dict]] = {}
        for k in labels:  # a key that made no label is counted apart (keys_without_label)
            if k["uid"]:
                want.setdefault(_item(k["uid"]), []).append(k)
        got: dict[tuple, list[int]] = {}
        for item, grade in stored.get(actor, []):
            got.setdefault(item, []).append(grade)
        for item, pressed in want.items():
            have = list(got.get(item, []))
            unmatched = []
            for k in pressed:  # the same grade first, whatever the order
                if int(k["key"]) in have:
                    have.remove(int(k["key"]))
                else:
                    unmatched.append(k)
            for k in unmatched:
                if have:
                    misattributed += 1  # stored on this item with another grade
                    examples.append({"actor": actor, "item": item, "pressed": int(k["key"]), "stored": have.pop(),
                                     "why": "another grade"})
                else:
                    lost += 1
                    lost_acked += id(k) in acked
            doubled += len(have)  # stored more often than pressed
            if have:
                own = [k for k in ks if k["uid"] and _item(k["uid"]) == item]
                examples.append({"actor": actor, "item": item, "why": "doubled", "stored": got[item],
                                 "keys": [{"key": k["key"], "made": k["made"], "state": k.get("state")} for k in own]})
        for item, v in got.items():
            if item not in want:
                misattributed += len(v)
                pressed_by = sorted(f"ann{j:02d}" for j, r in enumerate(records)
                                    if any(k["uid"] and _item(k["uid"]) == item for k in r["keys"]))
                examples.append({"actor": actor, "item": item, "stored": v, "why": "no key on it",
                                 "pressed_by": pressed_by})
    return {"keys": keys, "dry_keys": dry, "keys_without_label": no_label, "labels_made": made, "acks": acks,
            "lost": lost, "lost_acked": lost_acked, "lost_pending": lost - lost_acked, "doubled": doubled,
            "misattributed": misattributed, "examples": examples[:8], "counter_resets": resets,
            "keys_with_several_surfaces": multi,
            "dry_states": dry_states,
            "ack_p50_s": round(statistics.median(lat), 3) if lat else None,
            "ack_p95_s": round(percentile(lat, 95), 3) if lat else None,
            "ack_max_s": round(max(lat), 3) if lat else None}


def read_store(db: str) -> dict[str, list[tuple]]:
    """Every grade an annotator stored: {actor: [(item, grade), ...]}."""
    sql = ("SELECT actor, query_id, doc_id, start, \"end\", grade FROM grade_events "
           "WHERE op = 'grade' AND actor LIKE 'ann%' ORDER BY event_id")
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as con:
            rows = con.execute(sql).fetchall()
    else:
        import duckdb

        with duckdb.connect(db, read_only=True) as con:
            rows = con.execute(sql).fetchall()
    out: dict[str, list[tuple]] = {}
    for actor, q, d, s, e, g in rows:
        out.setdefault(actor, []).append(((q, d, int(s), int(e)), int(g)))
    return out


# ---- one cell --------------------------------------------------------------------------------------


def run_cell(root: Path, code: str, servers: int, n: int, cpu: bool, a: argparse.Namespace, work: Path,
             gen_duck: Path, pg: PgCluster | None, say) -> dict:
    name = f"{code}-s{servers}-n{n}-{'cpu' if cpu else 'quiet'}"
    cell_dir = work / name
    cell_dir.mkdir()
    if servers == 1:
        db = str(cell_dir / "golden.duckdb")
        shutil.copyfile(gen_duck, db)
    else:
        assert pg is not None
        dbname = name.replace("-", "_")
        pg.admin(f'CREATE DATABASE "{dbname}" TEMPLATE "generated"')
        db = pg.url(dbname)
    _cli(root, db, cell_dir, "migrate")
    apps: list[App] = []
    try:
        for s in range(servers):
            apps.append(App(root, db, cell_dir / f"server{s}", PORTS[s]))
        job = (lambda: start_cpu_job(a.cpu_kind, root, cell_dir / "cpu-job", int(a.pool))) if cpu else None
        res = asyncio.run(drive([x.url for x in apps], n, int(a.seconds), float(a.drain), job, int(a.seed), [x.proc.pid for x in apps],
                                pg.postmaster_pid() if pg and servers > 1 else None, float(a.timeout), say,
                                browser_nice=int(a.browser_nice), folder=cell_dir))
        res["server_peak_mib"] = [tree_hwm_mib(x.proc.pid) for x in apps]
    finally:
        for x in apps:
            x.stop()
    records = res.pop("records")
    fig = tally(records, read_store(db))
    if servers > 1 and pg is not None:
        pg.admin(f'DROP DATABASE IF EXISTS "{name.replace("-", "_")}" WITH (FORCE)')
    else:
        shutil.rmtree(cell_dir / "server0", ignore_errors=True)
    cpu_total = sum(res["cpu_s"])
    out = {"code": code, "servers": servers, "store": "postgresql" if servers > 1 else "duckdb", "n": n,
           "cpu_job": a.cpu_kind if cpu else "off", "seconds": int(a.seconds), **fig, **res,
           "server_cpu_s": round(cpu_total, 1),
           "server_cpu_ms_per_label": round(1000 * cpu_total / fig["labels_made"], 1) if fig["labels_made"] else None}
    say(f"  {code:8} {servers} server(s) {out['store']:10} N={n:2} cpu job {out['cpu_job']:4}: keys {fig['keys']}, "
        f"ack p50 {fig['ack_p50_s']} s p95 {fig['ack_p95_s']} s, unacked {res['unacked_after_drain']} after "
        f"{res['drained_s']} s, lost {fig['lost']} ({fig['lost_acked']} acknowledged), keys without a label "
        f"{fig['keys_without_label']}, doubled {fig['doubled']}, misattributed {fig['misattributed']}, "
        f"dry {fig['dry_keys']}, server CPU {out['server_cpu_s']} s (postgres {res['postgres_cpu_s']}, browsers "
        f"{res['browser_cpu_s']}; sign-ins took {res['sign_in_s']} s)")
    if res["driver_max_lag_s"] > 1.0:
        say(f"    (the driver fell behind its schedule by up to {res['driver_max_lag_s']} s: the machine could not "
            f"press {n} keys a second; read this cell as a slower team on a busier machine)")
    return out


def aims(cells: list[dict], code: str) -> dict:
    """Issue 29's aims for one code: met, not met, or not measured (None)."""

    def ok(c: dict | None) -> bool | None:
        if c is None:
            return None
        if "error" in c:
            return False
        return (c["ack_p95_s"] is not None and c["ack_p95_s"] <= AIM_P95_S and c["lost"] == 0 and c["dry_keys"] == 0
                and c["keys_without_label"] == 0 and c["doubled"] == 0 and c["misattributed"] == 0
                and not c["unacked_after_drain"])

    def find(servers: int, n: int) -> dict | None:
        return next((c for c in cells if c["code"] == code and c["servers"] == servers and c["n"] == n
                     and c["cpu_job"] != "off"), None)

    return {"one_server_12_cores_shared": ok(find(1, 12)), "two_servers_24_cores_shared": ok(find(2, 24))}


def table(cells: list[dict], say) -> None:
    say("| code | servers | N | CPU job | keys | ack p50 / p95 / max (s) | unacked after drain | lost | doubled "
        "| misattributed | dry | keys without label | server CPU s (ms/label) | postgres CPU s | browsers CPU s "
        "| peak RSS MiB | driver lag s |")
    say("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|")
    for c in cells:
        if "error" in c:
            say(f"| {c['code']} | {c['servers']} | {c['n']} | {c['cpu_job']} | failed: {c['error'][:120]} |")
            continue
        say(f"| {c['code']} | {c['servers']} ({c['store']}) | {c['n']} | {c['cpu_job']} | {c['keys']} | "
            f"{c['ack_p50_s']} / {c['ack_p95_s']} / {c['ack_max_s']} | {c['unacked_after_drain']} | {c['lost']} | "
            f"{c['doubled']} | {c['misattributed']} | {c['dry_keys']} | {c['keys_without_label']} | {c['server_cpu_s']} "
            f"({c['server_cpu_ms_per_label']}) | {c['postgres_cpu_s'] if c['postgres_cpu_s'] is not None else '-'} | "
            f"{c['browser_cpu_s']} | "
            f"{' + '.join(str(x) for x in c['server_peak_mib'])} | {c['driver_max_lag_s']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="",
                    help="annotator counts, comma-separated (e.g. 1,4,12,24), each on every --servers count; "
                         "default: the aims' cells only (N=12 on one server, N=24 on two)")
    ap.add_argument("--seconds", type=int, default=60, help="seconds of keys (one key per second each)")
    ap.add_argument("--servers", default="1,2", help="1 (one golden serve, DuckDB) and/or 2 (two on PostgreSQL)")
    ap.add_argument("--cpu-job", default="on", help="off and/or on (e.g. off,on): a CPU-heavy job beside the servers")
    ap.add_argument("--cpu-kind", default="busy", choices=("busy", "work"),
                    help="the CPU job: busy (one busy-looping process per core) or work (a repeated corpus import "
                         "+ pool build + freeze on a store of its own)")
    ap.add_argument("--baseline", default="main", help="git revision measured as the baseline ('' for none)")
    ap.add_argument("--code", default="HEAD", help="git revision measured as this code ('.': the working tree)")
    ap.add_argument("--pool", type=int, default=6000, help="pool items in the generated store")
    ap.add_argument("--browser-nice", type=int, default=10,
                    help="niceness of Chromium (0: the servers' priority); the annotators' browsers are "
                         "on their own machines in a team, here they share the cores")
    ap.add_argument("--drain", type=float, default=20.0, help="seconds after the last key for acknowledgements")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a sign-in or page may take")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: N=2, 10 s, one server, no CPU job, 300-item pool, no baseline (overrides those options)")
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    for k in ("out", "work", "users"):
        ap.add_argument(f"--{k}", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        from benchlib import old_layout_aliases

        old_layout_aliases()
        print(json.dumps({"generate": child_generate, "work_loop": child_work_loop}[a._child](a), default=str))
        return 0
    if a.quick:
        a.n, a.seconds, a.servers, a.cpu_job, a.pool, a.drain, a.baseline = "2", 10, "1", "off", 300, 30.0, ""
    try:
        ns = sorted({int(x) for x in a.n.split(",") if x.strip()}) or [12, 24]
        server_counts = sorted({int(x) for x in a.servers.split(",") if x.strip()})
    except ValueError:
        ap.error("--n and --servers take comma-separated whole numbers, e.g. --n 1,4,12,24")
    cpus = [x.strip() for x in a.cpu_job.split(",") if x.strip()]
    if not ns or min(ns) < 1 or any(s not in (1, 2) for s in server_counts) or not set(cpus) <= {"off", "on"}:
        ap.error("--n: counts >= 1; --servers: 1 and/or 2; --cpu-job: off and/or on")
    if max(ns) > 99:
        ap.error("--n: at most 99 annotators (accounts ann00..ann98)")
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
    work, tmp = work_dir(ap, a.keep, "bench-team-load-")
    trees: list[Path] = []
    pg: PgCluster | None = None
    try:
        new, base = code_trees(ROOT, work, a.code, a.baseline, trees)
        gen_root = base or new
        gen_dir = work / "gen"
        gen_dir.mkdir()
        gen = run_child("generate", gen_root, gen_dir, out=gen_dir / "golden.duckdb", work=gen_dir, pool=a.pool,
                        users=max(ns), seed=a.seed)
        if 2 in server_counts:
            pg = PgCluster()
            pg.admin('CREATE DATABASE "generated" TEMPLATE template0')
            run_child("generate", gen_root, gen_dir, out=pg.url("generated"), work=gen_dir, pool=a.pool, users=max(ns),
                      seed=a.seed)
        say("[store] " + ", ".join(f"{k} {v}" for k, v in gen.items()))
        plan = [(s, c == "on", n) for s in server_counts for c in cpus for n in ns
                if n >= s and (a.n or (s, n) in AIM_CELLS)]
        cells: list[dict] = []
        for code, root in ([("baseline", base)] if base else []) + [("new", new)]:
            for servers, cpu, n in plan:
                try:
                    cells.append(run_cell(root, code, servers, n, cpu, a, work, gen_dir / "golden.duckdb", pg, say))
                except Exception as exc:  # a cell that fails (a sign-in timing out) is reported; the run goes on
                    err = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
                    say(f"  {code} {servers} server(s) N={n} cpu job {'on' if cpu else 'off'}: FAILED: {err}")
                    cells.append({"code": code, "servers": servers, "n": n,
                                  "cpu_job": a.cpu_kind if cpu else "off", "error": err})
        out: dict = {"bench": "team_load", "commit": git_head(ROOT), "code": a.code, "baseline": a.baseline,
                     "cpu_kind": a.cpu_kind, "cores": os.cpu_count(), "store": gen, "cells": cells,
                     "aims": {c: aims(cells, c) for c in ("baseline", "new") if any(x["code"] == c for x in cells)}}
        if base:
            ratios = {}
            for c in cells:
                if c["code"] != "new" or "error" in c:
                    continue
                b = next(x for x in cells if x["code"] == "baseline" and (x["servers"], x["n"], x["cpu_job"])
                         == (c["servers"], c["n"], c["cpu_job"]))
                if "error" in b:
                    continue
                key = f"s{c['servers']}_n{c['n']}_{c['cpu_job']}"
                for f in ("ack_p50_s", "ack_p95_s", "server_cpu_s"):
                    if b[f] and c[f] is not None:
                        ratios[f"{key}_{f}"] = round(c[f] / b[f], 3)
            out["ratios_new_over_baseline"] = ratios
        if not a.json:
            table(cells, say)
            for code, res in out["aims"].items():
                for aim, met in res.items():
                    say(f"aim {aim} ({code}): " + {True: "met", False: "NOT met", None: "not measured"}[met])
            if "ratios_new_over_baseline" in out:
                say("ratios new/baseline: " + ", ".join(f"{k} {v}" for k, v in out["ratios_new_over_baseline"].items()))
        print(json.dumps(out, default=str))
        failed = any("error" in c for c in cells)
    finally:
        if pg is not None:
            pg.stop()
        remove_code_trees(ROOT, trees)
        if tmp is not None:
            tmp.cleanup()
    return 1 if failed else 0  # the figures of the other cells are printed all the same


if __name__ == "__main__":
    raise SystemExit(main())
