#!/usr/bin/env python3
"""Labeling-loop benchmark in real chromium: key -> next item painted, and key -> label
durable in the store, on a store holding ``--events`` grade events; the client-side labeling
surface (today's Judge page) side by side with the server-rerun Judge page it replaced
(``BASELINE_COMMIT``'s ``app_pages/judge.py``, served from the same checkout), measured in
the same run on the same store.

What it does, in order:

1. builds a store in a temporary folder with ``scripts/bench_judging.py``'s generators
   (documents, queries, runs, pool, ``--events`` grade events by 20 annotators; the
   benchmark's judge, here the single-user ``local``, has done half of their queue).
   Generation is not measured.
2. **surface**: ``streamlit run app.py`` on the store; chromium opens /judge and, once the
   first item is painted, presses ``--keys`` grade keys ``--gap-ms`` apart. Each key is a
   real keydown dispatched in the page; *painted* = from the keydown to the next animation
   frame after the surface has put the next item on screen; *durable* = from the keydown to
   the acknowledgement for that label (sent only after its transaction committed). Then a
   burst of 10 keys 50 ms apart.
3. **baseline**: the old page on the same store (fresh server). Each key is pressed when
   the page is idle; *painted* = from the keypress to the next item's caption on screen
   (the write happens in the same rerun, so durable = painted). Then the same 10-key burst.
4. after each phase the server is stopped and the store read: *lost* = keys with no event,
   *misattributed* = events on an item other than the one painted when the key went down.
5. prints medians / p95 and the ratios surface / baseline, then one JSON line.

Usage::

    python scripts/bench_browser_labeling.py [--events 1000000] [--keys 200] [--baseline-keys 200]
                                             [--gap-ms 250] [--docs 1500] [--queries 1000] [--json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from benchlib import free_port, git_head, refill_grade_state, work_dir  # noqa: E402  (scripts/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bench_judging as gen  # noqa: E402

BASELINE_COMMIT = "47b4c85"  # the last commit with the server-rerun Judge page
ACTOR = "local"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
PAINTED_AIM_MS, DURABLE_AIM_MS = 50.0, 1000.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def _stats(xs: list[float]) -> dict:
    return {"n": len(xs), "median_ms": round(statistics.median(xs), 1), "p95_ms": round(_pct(xs, 95), 1)} \
        if xs else {"n": 0}


def build(work: Path, events: int, docs: int, queries: int) -> dict:
    db = work / "golden.duckdb"
    facts = gen.generate_base(db, docs, queries, 5, 20, gen.SEED)
    from golden_store.live.pool import build_pool
    from golden_store.db.store import Store

    store = Store.open(db)
    try:
        build_pool(store, 20, actor="bench")
    finally:
        store.close()
    facts.update(gen.generate_events(db, events, 20, gen.SEED))
    store = Store.open(db)
    try:  # the benchmark labels as the single-user 'local' (no accounts: no sign-in to drive)

        def as_local(cur) -> None:
            cur.execute("UPDATE grade_events SET actor = ? WHERE actor = ?", [ACTOR, gen.JUDGE])
            refill_grade_state(cur)  # the state follows the rewritten log

        store.write(as_local)
    finally:
        store.close()
    return facts


class Server:
    def __init__(self, script: Path, db: Path, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, GOLDEN_DB=str(db), PYTHONPATH=str(ROOT))
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(self.port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=db.parent, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"server did not start: {log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self._log.close()


def _events(db: Path, since: int) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT query_id, doc_id, start, \"end\", op, grade FROM grade_events "
                           "WHERE actor = ? AND event_id > ? ORDER BY event_id", [ACTOR, since]).fetchall()


def _max_event(db: Path) -> int:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT coalesce(max(event_id), 0) FROM grade_events").fetchone()[0]


def _accuracy(painted: list[tuple], keys: list[int], events: list[tuple]) -> dict:
    """lost = keys without their grade; misattributed = grades on items not painted at the key."""
    want = [(*item, "grade", k) for item, k in zip(painted, keys)]
    got = list(events)
    lost = 0
    for w in want:
        if w in got:
            got.remove(w)
        else:
            lost += 1
    return {"keys": len(keys), "events": len(events), "lost": lost, "misattributed": len(got)}


# ---- the surface ------------------------------------------------------------------------------

_FIND_JS = """() => {
  if (!window.__gs || !window.__gs.isConnected) {
    const host = [...document.querySelectorAll('*')].find((e) => e.shadowRoot && e.shadowRoot.querySelector('.gs-root'));
    window.__gs = host ? host.shadowRoot.querySelector('.gs-root') : document.querySelector('.gs-root');
  }
  return window.__gs;
}"""

_PRESS_JS = """async (key) => {
  const gs = (""" + _FIND_JS + """)();
  const before = gs.dataset.uid;
  window.__keyTimes = window.__keyTimes || [];
  const t0 = performance.now();
  window.__keyTimes.push(t0);
  document.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true, composed: true}));
  await new Promise((r) => requestAnimationFrame(() => r()));
  return {painted_ms: performance.now() - t0, before, after: gs.dataset.uid};
}"""

_WATCH_JS = """() => {
  const gs = (""" + _FIND_JS + """)();
  window.__savedTimes = [];
  let seen = Number(gs.dataset.saved || 0);
  new MutationObserver(() => {
    const n = Number(gs.dataset.saved || 0);
    while (seen < n) { window.__savedTimes.push(performance.now()); seen += 1; }
  }).observe(gs, {attributes: true, attributeFilter: ['data-saved']});
}"""


def _uid_item(uid: str) -> tuple:
    d = json.loads(uid)
    return d["query_id"], d["doc_id"], d["start"], d["end"]


def _root_locator(page):
    return page.get_by_test_id("stMain").locator(".gs-root")


def run_surface(browser, db: Path, work: Path, n_keys: int, gap_ms: float) -> dict:
    since = _max_event(db)
    srv = Server(ROOT / "app.py", db, work / "surface.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{srv.url}/judge")
        root = _root_locator(page)
        root.wait_for(timeout=120_000)
        from playwright.sync_api import expect

        expect(root).to_have_attribute("data-uid", re.compile(r".+"), timeout=120_000)
        page.evaluate(_WATCH_JS)
        painted_ms, painted, keys = [], [], []
        for i in range(n_keys):
            t_start = time.monotonic()
            k = i % 4
            r = page.evaluate(_PRESS_JS, str(k))
            if not r["before"]:
                break  # queue exhausted
            painted.append(_uid_item(r["before"]))
            keys.append(k)
            painted_ms.append(r["painted_ms"])
            time.sleep(max(0.0, gap_ms / 1000 - (time.monotonic() - t_start)))
        expect(root).to_have_attribute("data-pending", "0", timeout=120_000)
        key_t = page.evaluate("window.__keyTimes")
        saved_t = page.evaluate("window.__savedTimes")
        durable_ms = [s - k for k, s in zip(key_t, saved_t)]
        # a burst: 10 keys 50 ms apart
        burst_painted, burst_keys = [], []
        for i in range(10):
            t_start = time.monotonic()
            r = page.evaluate(_PRESS_JS, str(i % 4))
            burst_painted.append(_uid_item(r["before"]))
            burst_keys.append(i % 4)
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t_start)))
        expect(root).to_have_attribute("data-pending", "0", timeout=120_000)
        page.close()
    finally:
        srv.stop()
    events = _events(db, since)
    return {"painted": _stats(painted_ms), "durable": _stats(durable_ms),
            "accuracy": _accuracy(painted + burst_painted, keys + burst_keys, events),
            "burst_recorded": len(events) - len(keys)}


# ---- the baseline page --------------------------------------------------------------------------


def _baseline_script(work: Path) -> Path:
    src = subprocess.run(["git", "show", f"{BASELINE_COMMIT}:app_pages/judge.py"], cwd=ROOT, capture_output=True,
                         text=True)
    if src.returncode != 0:
        raise SystemExit(f"cannot read the baseline page from git ({BASELINE_COMMIT}): {src.stderr.strip()}")
    script = work / "baseline_judge.py"
    from benchlib import today_annotator_names

    page = today_annotator_names(src.stdout)  # the old page's imports, in today's annotator rooms
    script.write_text(page.replace("from __future__ import annotations\n", "", 1), encoding="utf-8")
    return script


_CAPTION = '[data-testid="stCaptionContainer"]:has-text(" · passage from ")'


def _caption_item(text: str) -> tuple:
    import re

    m = re.match(r"^(\S+) · passage from (\S+) \[(\d+):(\d+)\]", text)
    return (m.group(1), m.group(2).replace("\\", ""), int(m.group(3)), int(m.group(4)))


def run_baseline(browser, db: Path, work: Path, n_keys: int) -> dict:
    from playwright.sync_api import expect

    since = _max_event(db)
    srv = Server(_baseline_script(work), db, work / "baseline.log")
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(srv.url)
        app = page.get_by_test_id("stApp")
        caption = page.locator(_CAPTION).first
        caption.wait_for(timeout=120_000)
        expect(page.get_by_label("Shortcut 3").first).to_be_visible(timeout=60_000)
        painted_ms, painted, keys = [], [], []
        for i in range(n_keys):
            expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=60_000)
            before = caption.inner_text()
            k = i % 4
            page.locator("h1").first.click()  # the focus on the page, not in the note
            t0 = time.perf_counter()
            page.keyboard.press(str(k))
            page.wait_for_function(
                "(b) => { const c = [...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
                ".find(e => e.innerText.includes(' · passage from ')); return c && c.innerText !== b; }",
                arg=before, timeout=60_000, polling="raf")
            painted_ms.append((time.perf_counter() - t0) * 1000)
            painted.append(_caption_item(before))
            keys.append(k)
        expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=60_000)
        for i in range(10):  # the same burst; what it records is counted from the store
            t_start = time.monotonic()
            page.keyboard.press(str(i % 4))
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t_start)))
        time.sleep(5)
        expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=60_000)
        page.close()
    finally:
        srv.stop()
    events = _events(db, since)
    paced = events[:len(keys)]
    return {"painted": _stats(painted_ms), "durable": _stats(painted_ms),
            "accuracy": _accuracy(painted, keys, paced), "burst_recorded": len(events) - len(paced)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--baseline-keys", type=int, default=200)
    ap.add_argument("--gap-ms", type=float, default=250.0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="build the store in this (empty) folder and keep it")
    args = ap.parse_args(argv)
    work, tmp = work_dir(ap, args.keep, "bench-browser-labeling-")
    exe = shutil.which("chromium")
    if exe is None:
        ap.error("chromium not found on PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    try:
        log(f"building a store with {args.events:,} grade events in {work} ...")
        facts = build(work, args.events, args.docs, args.queries)
        db = work / "golden.duckdb"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            try:
                log(f"surface: {args.keys} keys {args.gap_ms:g} ms apart, then a 10-key burst ...")
                surface = run_surface(browser, db, work, args.keys, args.gap_ms)
                log(f"baseline page: {args.baseline_keys} keys, each when the page is idle, then a burst ...")
                baseline = run_baseline(browser, db, work, args.baseline_keys)
            finally:
                browser.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    ratio = {k: round(surface[k]["p95_ms"] / baseline[k]["p95_ms"], 4) for k in ("painted", "durable")}
    result = {"bench": "browser_labeling", "git": git_head(ROOT), "store": facts, "surface": surface,
              "baseline": baseline, "p95_ratio_surface_over_baseline": ratio,
              "aims": {"painted_p95_ms": PAINTED_AIM_MS, "durable_p95_ms": DURABLE_AIM_MS,
                       "painted_met": surface["painted"]["p95_ms"] <= PAINTED_AIM_MS,
                       "durable_met": surface["durable"]["p95_ms"] <= DURABLE_AIM_MS,
                       "lost": surface["accuracy"]["lost"], "misattributed": surface["accuracy"]["misattributed"]}}
    if not args.json:
        for name, r in (("surface", surface), ("baseline page", baseline)):
            a = r["accuracy"]
            print(f"{name:14} painted median {r['painted']['median_ms']:8.1f} ms  p95 {r['painted']['p95_ms']:8.1f} ms"
                  f" | durable median {r['durable']['median_ms']:8.1f} ms  p95 {r['durable']['p95_ms']:8.1f} ms"
                  f" | keys {a['keys']} lost {a['lost']} misattributed {a['misattributed']}"
                  f" | 10-key burst recorded {r['burst_recorded']}")
        print(f"p95 ratio surface/baseline: painted {ratio['painted']:.4f}, durable {ratio['durable']:.4f}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
