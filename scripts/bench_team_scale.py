#!/usr/bin/env python3
"""Team scale (issue 19): the service calls behind every page on a store months of team work
produce (at ``--scale 1``: 20,000 queries and documents, 5 runs x 20 results = 2 M run rows, a
depth-5 pool of ~300 k items, ~5 M grade events by 20 annotators, a calibration round and a
split round, ~15% of the graded items in dispute, a fifth of those adjudicated), for this code
and a baseline commit measured in the same run.

1. a child running the *baseline* code generates the store through the store's own write
   paths: corpus import (JSONL), query import, TREC run import, pool build, users, a
   calibration round and a split round through ``annotator.labeling.rounds``; grade and adjudication
   events are bulk-inserted as ``judging.insert_tx`` / ``adjudication.decide_tx`` write them
   (same columns: the document's sha, the round that assigned the item to the annotator),
   ordered by time so event ids follow it (code with migration 13 then refills its grading
   state from the log, as ``grade_state.rebuild_tx`` does);
2. for each code (baseline, then this code; a git worktree each), a child opens a copy of
   that store once and closes it (``first_open``: the schema migration, when this code's
   schema is newer, e.g. migration 13's grading state filled from the log), then a fresh
   child opens it again and times, median of ``--repeat`` runs, each page's calls: Home
   (store_overview + live_problems), Agreement (compute + the first pair's intervals),
   Runs & pool (pool_status), Adjudication (queue counts + the first cards + decided count +
   history), Judge (progress + next item); the first call (cold) and a rerun with nothing
   written (what a widget interaction costs); then ``golden freeze`` (once, in process) and
   ``golden pool status`` (the CLI, a subprocess); peak RSS of the measuring process;
3. the figures each code reported (κ, α, counts) are compared: they must be equal;
4. with ``--browser``, after each code's measuring child, that code's app is served on its
   copy of the store by that code's own ``golden serve`` on a free port (with the Streamlit
   settings it passes) and driven in Debian's chromium through Playwright: admin signs in
   (``--typing`` seconds after the sign-in page showed; sign-in click -> Home's final
   elements = Home's first render), then every sidebar page
   is opened from its link ``--visits`` times in turn, timed from the click to the page's
   final elements (``stApp`` script state ``notRunning`` and the page's heading): the first
   visit (the page's first render after the server started) and the median of the others;
   then ann03 opens Judge and presses ``--keys`` one by one, each timed to the next item
   painted (the labeling surface's ``data-uid`` changes) and to the grade acknowledged
   (``data-saved``); the app server's peak RSS (``VmHWM`` from /proc).

Prints a table and one JSON line. Usage::

    python scripts/bench_team_scale.py [--scale 1] [--repeat 3] [--baseline aba9489] [--code HEAD]
        [--browser [--visits 3] [--pages Home,Judge] [--keys 21302] [--typing 10]] [--keep DIR | --reuse DIR]
    python scripts/bench_team_scale.py --pool-build [--pool-runs 20 --pool-queries 5000 --pool-depth 100]
        [--baseline 2ec1b25] [--code HEAD]   # golden pool build: time, peak RSS, pools equal
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FULL = {"queries": 20_000, "docs": 20_000, "systems": 5, "run_depth": 20, "pool_depth": 5, "annotators": 20}
STRATA = ("lexical", "paraphrase", "multi_hop", "negative")
WORDS = ("leave policy vpn access expense travel pension laptop badge parking holiday contract payroll "
         "insurance training security password printer network onboarding").split()


def _sizes(scale: float) -> dict:
    s = {k: max(2, int(round(v * scale))) for k, v in FULL.items() if k in ("queries", "docs")}
    return {**FULL, **s}


# ---- generation (runs with the baseline code) ------------------------------------------------------


def child_generate(a: argparse.Namespace) -> dict:
    import numpy as np
    import pandas as pd

    from annotator.evaluation import runs_import
    from annotator.labeling import rounds
    from annotator.people import identity
    from annotator.integration.corpus_import import import_paths
    from benchlib import refill_grade_state
    from golden_store.live import queries
    from golden_store.db.store import Store

    z = _sizes(float(a.scale))
    rng = random.Random(int(a.seed))
    nrng = np.random.default_rng(int(a.seed))
    work = Path(a.out).parent
    t0 = time.perf_counter()
    corpus = work / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(z["docs"]):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 120))) + "."
            fh.write(json.dumps({"doc_id": f"d{i:06d}", "text": text}) + "\n")
    qfile = work / "queries.jsonl"
    with qfile.open("w", encoding="utf-8") as fh:
        for i in range(z["queries"]):
            st = STRATA[i % len(STRATA)]
            fh.write(json.dumps({"id": f"q{i:06d}", "text": " ".join(rng.choice(WORDS) for _ in range(8)) + "?",
                                 "stratum": st, "answerable": st != "negative", "source": "expert",
                                 "date": "2026-01-12", "held_out": i % 10 == 0, "notes": ""}) + "\n")
    store = Store.open(a.out)
    admin = identity.create_user(store, None, "admin", ["admin"], password="0123456789ab")
    lead = identity.create_user(store, admin, "lead", ["lead"], password="0123456789ab")
    people = [f"ann{i:02d}" for i in range(z["annotators"])]
    for p in people:
        identity.create_user(store, admin, p, ["annotator"], password="0123456789ab")
    import_paths(store, admin, [corpus])
    recs = queries.parse_query_file("queries.jsonl", qfile.read_bytes(), queries.known_strata(store))
    queries.import_queries(store, recs, actor="admin")
    # runs: each query has 30 candidate documents; every system ranks 20 of them
    cands = nrng.integers(0, z["docs"], size=(z["queries"], 30))
    for s in range(z["systems"]):
        path = work / f"run{s}.trec"
        with path.open("w", encoding="ascii") as fh:
            for q in range(z["queries"]):
                picks = dict.fromkeys(int(x) for x in nrng.permutation(cands[q]))
                for r, d in enumerate(list(picks)[:z["run_depth"]]):
                    fh.write(f"q{q:06d} Q0 d{d:06d} {r + 1} {100 - r} sys{s}\n")
        runs_import.import_run(store, admin, path, f"sys{s}")
    runs_import.build_pool(store, admin, z["pool_depth"])
    rounds.start_calibration(store, lead, people[:5], n=max(10, min(10_000, int(2000 * float(a.scale)))), seed=1)
    # the workload splits before its calibration round is graded: below the agreement bar, which a
    # split since issue 25 goes ahead under only with a recorded reason (older codes take none)
    import inspect

    why = ({"override": "bench: generated before the calibration round is graded"}
           if "override" in inspect.signature(rounds.split_work).parameters else {})
    rounds.split_work(store, lead, people, 0.15, seed=2, **why)
    gen_s = time.perf_counter() - t0
    # grade events: each pool item graded by 1 + Binomial(8, .5) annotators (its assignees
    # first), each label 1 + Geometric re-grades/skips before the final grade; the final grade
    # is the item's true grade with p = .97, else a neighbour
    items = store.df("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY ALL")
    assigned = store.df("SELECT annotator, query_id, doc_id, start, \"end\" FROM round_assignments")
    n = len(items)
    truth = nrng.choice(4, size=n, p=[0.4, 0.25, 0.2, 0.15])
    # an unanswerable question's passages are at most related (1): a freeze refuses one graded
    # as answered (issue 29), and the people who grade them know the question has no answer
    unanswerable = set(store.df("SELECT query_id FROM queries WHERE NOT answerable")["query_id"])
    negative = items["query_id"].isin(unanswerable).to_numpy()
    truth = np.where(negative, np.minimum(truth, 1), truth)
    m = 1 + nrng.binomial(8, 0.5, size=n)
    it_idx = np.repeat(np.arange(n), m)
    actor_idx = np.concatenate([nrng.choice(len(people), size=k, replace=False) for k in m])
    key = items.assign(i=np.arange(n)).merge(assigned, on=["query_id", "doc_id", "start", "end"])
    by_item = key.groupby("i")["annotator"].first()
    first_pos = np.r_[0, np.cumsum(m)[:-1]]
    pos_map = {p: j for j, p in enumerate(people)}
    actor_idx[first_pos[by_item.index.to_numpy()]] = [pos_map[x] for x in by_item.to_numpy()]
    # keep annotators distinct within an item after forcing the assignee first
    labels = pd.DataFrame({"i": it_idx, "a": actor_idx}).drop_duplicates()
    final = truth[labels["i"].to_numpy()]
    flip = nrng.random(len(labels)) < 0.03
    final = np.where(flip, np.clip(final + nrng.choice([-1, 1], size=len(labels)), 0, 3), final)
    final = np.where(negative[labels["i"].to_numpy()], np.minimum(final, 1), final)
    n_ev = 1 + nrng.geometric(0.3, size=len(labels)) - 1
    n_ev = np.minimum(n_ev, 12)
    li = np.repeat(np.arange(len(labels)), n_ev)
    last = np.r_[np.cumsum(n_ev) - 1]
    grade = nrng.integers(0, 4, size=len(li))
    grade[last] = final
    op = np.where(nrng.random(len(li)) < 0.1, "skip", "grade")
    op[last] = "grade"
    base = pd.Timestamp("2026-01-05 08:00")
    hours = nrng.integers(0, 24 * 7 * 26, size=len(labels))
    step = np.arange(len(li)) - np.repeat(np.r_[0, np.cumsum(n_ev)[:-1]], n_ev)
    at = base + pd.to_timedelta(hours[li] * 3600 + step * 60, unit="s")
    ev = pd.DataFrame({"i": labels["i"].to_numpy()[li], "actor": np.array(people)[labels["a"].to_numpy()[li]],
                       "op": op, "grade": np.where(op == "grade", grade, -1), "created_at": at})
    ev = ev.join(items, on="i").drop(columns="i").sort_values("created_at", kind="stable")

    def insert(cur, frame: pd.DataFrame, note: str | None) -> None:
        cur.register("_ev", frame)
        cur.execute(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at, "
            "rubric_version, round_id, note) "
            "SELECT e.query_id, e.doc_id, e.start, e.\"end\", d.canonical_sha256, e.op, "
            "CASE WHEN e.grade >= 0 THEN e.grade END, e.actor, e.created_at, NULL, r.round_id, ? "
            "FROM _ev e JOIN documents d USING (doc_id) LEFT JOIN (SELECT ra.annotator, ra.query_id, ra.doc_id, "
            "ra.start, ra.\"end\", arg_max(ra.round_id, x.created_at) AS round_id FROM round_assignments ra "
            "JOIN rounds x USING (round_id) GROUP BY ALL) r ON r.annotator = e.actor AND r.query_id = e.query_id "
            "AND r.doc_id = e.doc_id AND r.start = e.start AND r.\"end\" = e.\"end\" ORDER BY e.created_at", [note])
        cur.unregister("_ev")

    for lo in range(0, len(ev), 1_000_000):
        store.write(lambda cur, part=ev.iloc[lo:lo + 1_000_000]: insert(cur, part, None))
    store.write(refill_grade_state)  # code with migration 13: the grading state follows the bulk insert
    pend = store.df("SELECT query_id, doc_id, start, \"end\" FROM pending_grades ORDER BY ALL")
    dec = pend.sample(frac=0.2, random_state=int(a.seed)).assign(
        actor="lead", op="adjudicate", grade=1, created_at=base + pd.Timedelta(days=200))
    if len(dec):
        store.write(lambda cur: insert(cur, dec, "bench rationale"))
        store.write(refill_grade_state)
    facts = store.read_one(
        "SELECT (SELECT count(*) FROM queries), (SELECT count(*) FROM documents), (SELECT count(*) FROM run_results), "
        "(SELECT count(*) FROM pool_items), (SELECT count(*) FROM grade_events), "
        "(SELECT count(DISTINCT actor) FROM grade_events WHERE op <> 'adjudicate'), (SELECT count(*) FROM rounds), "
        "(SELECT count(*) FROM pending_grades), (SELECT count(*) FROM adjudications)")
    store.close()
    names = ("queries", "documents", "run_results", "pool_items", "grade_events", "annotators", "rounds",
             "pending", "adjudicated")
    return {**dict(zip(names, map(int, facts))), "generate_s": round(time.perf_counter() - t0, 1),
            "app_paths_s": round(gen_s, 1), "mib": round(Path(a.out).stat().st_size / 2**20, 1)}


# ---- measuring (runs with each code) -------------------------------------------------------------


def _median(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def child_migrate(a: argparse.Namespace) -> dict:
    """Open the store once with this code (migrating it, if this code's schema is newer) and
    close it: the migration's time is reported on its own, and the measuring child that
    follows starts cold, as an app started on a migrated store does."""
    from golden_store.db.store import Store

    t = time.perf_counter()
    store = Store.open(a.store, create=False)
    version = store.schema_version()
    store.close()
    return {"open_s": round(time.perf_counter() - t, 2), "schema_version": version}


def child_measure(a: argparse.Namespace) -> dict:
    from annotator.evaluation import overview, runs_import
    from annotator.labeling import adjudication, agreement, judging
    from annotator.people import identity
    from annotator.versions import versioning
    from annotator.process.context import get_store
    from benchlib import _maxrss_kib, mib

    repeat = int(a.repeat)
    store = get_store(a.store, create=False)
    lead = identity.get_user(store, "lead")
    ann = identity.get_user(store, "ann03")
    paged = hasattr(adjudication, "pending_by_stratum")

    def home():
        return overview.store_overview(store, lead), versioning.live_problems(store, lead)

    def agree():
        rep = agreement.compute(store, lead)
        p = rep.group.pairs[0]
        return rep, rep.pair_intervals(p.a, p.b)

    def adjud():
        if paged:
            waiting = sum(adjudication.pending_by_stratum(store, lead).values())
        else:
            waiting = len(adjudication.queue(store, lead))
        return (waiting, len(adjudication.cards(store, lead)), adjudication.decided_count(store, lead),
                len(adjudication.history(store, lead)))

    def judge():
        return judging.progress(store, ann), judging.next_item(store, ann)

    pages = {"home": home, "agreement": agree, "pool": lambda: runs_import.pool_status(store, lead),
             "adjudication": adjud, "judge": judge}
    out: dict = {"calls": {}}
    results = {}
    for name, fn in pages.items():
        t = time.perf_counter()
        results[name] = fn()  # cold: the first visit after a start
        cold = time.perf_counter() - t
        rerun, _ = _median(fn, repeat)  # nothing written meanwhile: a widget interaction
        out["calls"][name] = {"cold_s": round(cold, 4), "rerun_s": round(rerun, 4)}
    ov, problems = results["home"]
    rep, ci = results["agreement"]
    g = rep.group
    out["figures"] = {
        "queries": ov["queries"], "pool_items": ov["judging"]["pool_items"], "pool_graded": ov["judging"]["pool_graded"],
        "double_graded": ov["judging"]["double_graded"], "pending": ov["judging"]["pending"], "problems": len(problems),
        "n_units": g.n_units, "annotators": len(g.annotators), "pairs": len(g.pairs),
        # a baseline from before issue 36 calls the linear kappa kappa_graded
        **{k: round(float(getattr(g, k) if hasattr(g, k) else getattr(g, "kappa_graded")), 10)
           for k in ("kappa_binary", "kappa_linear", "kappa_quadratic", "raw", "alpha_ordinal", "alpha_nominal_binary")},
        "per_stratum_units": int(rep.per_stratum["n_units"].sum()) if len(rep.per_stratum) else 0,
        "per_round_units": int(rep.per_round["n_units"].sum()) if len(rep.per_round) else 0,
        "weeks": len(rep.over_time),
        "pool_judged_at_10": {s: round(_graded(v, "10"), 10) for s, v in results["pool"]["runs"].items()},
        "pool_ap": {s: round(v.get("ap", 0.0), 10) for s, v in results["pool"]["runs"].items()},
        "adjudication": list(results["adjudication"]),
    }
    out["pool_relevance_level"] = results["pool"].get("relevance_level")  # None before issue 36's pool rule
    out["serving_peak_mib"] = mib(_maxrss_kib())
    if a.freeze:
        t = time.perf_counter()
        try:
            versioning.freeze(store, identity.get_user(store, "admin"), f"bench-{Path(a.store).stem}")
            out["freeze_s"] = round(time.perf_counter() - t, 2)
        except Exception as exc:  # a refused freeze (e.g. broken labels) is a finding, not a crash
            out["freeze_s"], out["freeze_error"] = None, f"{type(exc).__name__}: {exc}"[:300]
        out["freeze_peak_mib"] = mib(_maxrss_kib())
    store.close()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", a.store, "pool", "status"],
                          capture_output=True, text=True)
    out["cli_pool_status_s"] = round(time.perf_counter() - t, 2)
    out["cli_pool_status_rc"] = proc.returncode
    return out


# ---- real Chromium (--browser) -------------------------------------------------------------------

PASSWORD = "0123456789ab"  # every generated account's
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
HEADINGS = {"Home": "Golden-set studio"}  # a page's st.title, where it is not the sidebar title
# the page's final elements: the script run is over and the main area shows the page's heading
_SETTLED = """(h) => { const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const main = document.querySelector('[data-testid="stMain"]');
    return !!main && [...main.querySelectorAll('h1')].some(e => e.innerText.trim() === h); }"""


def _vm_hwm_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _start_app(root: Path, db: Path, work: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """``golden serve`` of ``root`` on ``db``: each code served with the Streamlit settings its
    own ``golden serve`` passes (``annotator.cli.SERVER_OPTIONS`` since issue 19's watcher and
    garbage-collection settings), as a team would start it."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, GOLDEN_DB=str(db), PYTHONPATH=str(root))
    env.pop("GOLDEN_VERSIONS", None)
    fh = log.open("ab")
    # golden serve execs streamlit in its own process: the pid is the server's
    proc = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", str(db), "serve", "--port", str(port)],
                            cwd=str(work), env=env, stdout=fh, stderr=subprocess.STDOUT)
    fh.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"streamlit exited ({proc.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return proc, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"streamlit not healthy after 120 s:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.25)


def _stop_app(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _settle(page, heading: str, timeout_ms: int) -> None:
    page.wait_for_function(_SETTLED, arg=heading, timeout=timeout_ms, polling="raf")


def _sign_in_timed(page, url: str, name: str, timeout_ms: int, typing_s: float = 0.0) -> float:
    """Sign in as ``name``; seconds from the button's click to Home's final elements.
    ``typing_s``: seconds the sign-in page is open before the click, as a person types."""
    page.goto(url)
    main = page.get_by_test_id("stMain")
    main.get_by_role("textbox", name="Username").wait_for(timeout=timeout_ms)
    time.sleep(typing_s)
    main.get_by_role("textbox", name="Username").fill(name)
    main.get_by_role("textbox", name="Password").fill(PASSWORD)
    t = time.perf_counter()
    main.get_by_role("button", name="Sign in").click()
    page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").wait_for(timeout=timeout_ms)
    _settle(page, HEADINGS["Home"], timeout_ms)
    return time.perf_counter() - t


def _goto_page(page, title: str, timeout_ms: int) -> float:
    """Seconds from the sidebar link's click to the page's final elements (what a person waits)."""
    link = page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True)
    t = time.perf_counter()
    link.click()
    _settle(page, HEADINGS.get(title, title), timeout_ms)
    return time.perf_counter() - t


def _key_to_next(page, keys: str, timeout_ms: int) -> tuple[list[float], list[float]]:
    """On Judge: for each key, seconds from the press to the next item painted (the surface's
    ``data-uid`` changes, tests/browser/test_browser_labeling.py) and to the grade acknowledged by the
    server (``data-saved`` counts it)."""
    root = page.get_by_test_id("stMain").locator(".gs-root")
    root.wait_for(timeout=timeout_ms)
    painted, acked = [], []
    deadline_s = timeout_ms / 1000
    for i, k in enumerate(keys):
        uid = root.get_attribute("data-uid") or ""
        saved0 = int(root.get_attribute("data-saved") or 0)
        t = time.perf_counter()
        page.keyboard.press(k)
        while (root.get_attribute("data-uid") or "") == uid:
            if time.perf_counter() - t > deadline_s:
                raise SystemExit(f"no next item painted {deadline_s} s after key {k!r}")
        painted.append(time.perf_counter() - t)
        while int(root.get_attribute("data-saved") or 0) <= saved0:
            if time.perf_counter() - t > deadline_s:
                raise SystemExit(f"grade for key {k!r} not acknowledged after {deadline_s} s")
        acked.append(time.perf_counter() - t)
        page.wait_for_function(_SETTLED, arg="Judge", timeout=timeout_ms, polling="raf")
    return painted, acked


def browser_measure(root: Path, db: Path, work: Path, visits: int, only: list[str] | None, keys: str,
                    timeout_s: float, typing_s: float = 0.0) -> dict:
    """The app of ``root`` served on ``db`` in Debian's chromium: sign-in to Home, then every
    sidebar page (or ``only``) visited ``visits`` times in turn from its link (the first visit
    is each page's first render after the server started; later visits: median), then Judge
    as ann03 and ``keys`` pressed one after another; the server's peak RSS (VmHWM)."""
    from playwright.sync_api import sync_playwright

    from benchlib import percentile

    exe = shutil.which("chromium")
    if exe is None:
        raise SystemExit("--browser needs Debian's chromium on PATH (apt-get install chromium)")
    ms = int(timeout_s * 1000)
    log = work / f"server-{root.name}.log"
    t = time.perf_counter()
    proc, url = _start_app(root, db, work, log)
    out: dict = {"server_start_s": round(time.perf_counter() - t, 2), "pages": {}}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            try:
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = ctx.new_page()
                page.set_default_timeout(ms)
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)[:200]))
                home_first = _sign_in_timed(page, url, "admin", ms, typing_s)
                # a link's text is its icon's ligature name, then its title
                titles = [x.strip().splitlines()[-1].strip() for x in
                          page.get_by_test_id("stSidebarNav").get_by_role("link").all_inner_texts() if x.strip()]
                titles = [x for x in titles if x and (not only or x in only)]
                times: dict[str, list[float]] = {x: [] for x in titles}
                for _ in range(max(1, visits)):
                    for title in titles:
                        if title == "Home" and not times["Home"]:
                            times["Home"].append(home_first)  # its first render came with the sign-in
                            continue
                        times[title].append(_goto_page(page, title, ms))
                for title, ts in times.items():
                    out["pages"][title] = {"first_s": round(ts[0], 3),
                                           "again_s": round(statistics.median(ts[1:]), 3) if len(ts) > 1 else None}
                ctx.close()
                if keys:
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = ctx.new_page()
                    page.set_default_timeout(ms)
                    page.on("pageerror", lambda exc: errors.append(str(exc)[:200]))
                    _sign_in_timed(page, url, "ann03", ms)
                    out["judge_ann03_first_s"] = round(_goto_page(page, "Judge", ms), 3)
                    painted, acked = _key_to_next(page, keys, ms)
                    out["key_to_next"] = {"keys": len(keys), "painted_median_s": round(statistics.median(painted), 3),
                                          "painted_p95_s": round(percentile(painted, 95), 3),
                                          "painted_max_s": round(max(painted), 3),
                                          "acked_median_s": round(statistics.median(acked), 3)}
                    ctx.close()
                out["page_errors"] = errors[:5]
            finally:
                browser.close()
        out["server_peak_mib"] = _vm_hwm_mib(proc.pid)
    finally:
        _stop_app(proc)
    return out


def _browser_table(res: dict, say) -> None:
    """Markdown table of the chromium figures, baseline and this code side by side."""
    codes = [c for c in ("baseline", "new") if "browser" in res.get(c, {})]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    say("| page (chromium, s) | " + " | ".join(f"{c} first / again" for c in codes)
        + (" | ratio first / again |" if len(codes) == 2 else " |"))
    say("|---|" + "---:|" * (len(codes) + (len(codes) == 2)))
    pages = list(res[codes[-1]]["browser"]["pages"])
    for p in pages:
        cells = []
        for c in codes:
            v = res[c]["browser"]["pages"].get(p) or {"first_s": None, "again_s": None}
            cells.append(f"{fmt(v['first_s'])} / {fmt(v['again_s'])}")
        if len(codes) == 2:
            b, n = res["baseline"]["browser"]["pages"].get(p), res["new"]["browser"]["pages"][p]
            r = [f"{n[k] / b[k]:.2f}" if b and n[k] and b[k] else "-" for k in ("first_s", "again_s")]
            cells.append(" / ".join(r))
        say(f"| {p} | " + " | ".join(cells) + " |")
    if all("key_to_next" in res[c]["browser"] for c in codes):
        say("| Judge: key -> next item painted (median / p95) / acknowledged (median) | " + " | ".join(
            f"{res[c]['browser']['key_to_next']['painted_median_s']:.3f} / "
            f"{res[c]['browser']['key_to_next'].get('painted_p95_s', float('nan')):.3f} / "
            f"{res[c]['browser']['key_to_next']['acked_median_s']:.3f}" for c in codes) + " |"
            + (" |" if len(codes) == 2 else ""))
    say("| app server peak RSS (VmHWM, MiB) | " + " | ".join(str(res[c]["browser"]["server_peak_mib"]) for c in codes)
        + " |" + (" |" if len(codes) == 2 else ""))


# ---- golden pool build (--pool-build) -------------------------------------------------------------
#
# The pool build case (the store generated by the baseline code, migrated by each code
# before its build): 20 runs x 5,000 queries x depth 100 (``--pool-runs``,
# ``--pool-queries``, ``--pool-depth``). Each query has 300 candidate documents; every run ranks
# 100 of them, so the runs overlap as real systems do (~1.4 M distinct items, 10 M top-100
# rows). A first pool at depth 10 of half the runs exists and some of it is graded, so the
# measured build extends a pool (only new items added, new unjudged counted). Each code builds
# the depth-``--pool-depth`` pool of every run on its own copy of the store in a fresh process
# (time, peak RSS = VmHWM); a further child digests both pools (order-free over every row of
# pool_items, less its time, and pool_sources): they must be equal.


def child_pool_generate(a: argparse.Namespace) -> dict:
    import numpy as np
    import pandas as pd

    from golden_store.live import judging, runs
    from golden_store.live.pool import build_pool
    from golden_store.live.documents import import_paths
    from golden_store.live import queries
    from golden_store.db.store import Store

    n_runs, n_q, depth = int(a.pool_runs), int(a.pool_queries), int(a.pool_depth)
    n_docs, n_cand = max(1000, n_q), 3 * depth
    rng = np.random.default_rng(int(a.seed))
    work = Path(a.out).parent
    t0 = time.perf_counter()
    corpus = work / "pool_corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            fh.write(json.dumps({"doc_id": f"d{i:06d}", "text": f"document {i} " + "word " * 40}) + "\n")
    qfile = work / "pool_queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"q{i:06d}", "text": f"question {i}?", "stratum": STRATA[i % 4]})
                             + "\n" for i in range(n_q)), encoding="utf-8")
    store = Store.open(a.out)
    import_paths(store, [corpus], actor="eng")
    queries.import_queries(store, queries.parse_query_file("q.jsonl", qfile.read_bytes(), queries.known_strata(store)),
                      actor="eng")
    lengths = dict(store.read("SELECT doc_id, length(raw_text) FROM documents"))
    cands = rng.integers(0, n_docs, size=(n_q, n_cand))
    qids = np.repeat([f"q{i:06d}" for i in range(n_q)], depth)
    for r in range(n_runs):
        picks = np.argsort(rng.random((n_q, n_cand)), axis=1)[:, :depth]
        docs = np.take_along_axis(cands, picks, axis=1).ravel()
        doc_ids = np.char.add("d", np.char.zfill(docs.astype(str), 6))
        frame = pd.DataFrame({"query_id": qids, "rank": np.tile(np.arange(1, depth + 1), n_q),
                              "score": np.tile(np.arange(depth, 0, -1, dtype=np.float64), n_q), "doc_id": doc_ids})
        # a document twice in one ranking: keep its first place, as a TREC import would refuse it
        frame = frame.drop_duplicates(["query_id", "doc_id"])
        frame["rank"] = frame.groupby("query_id").cumcount() + 1
        frame = frame.assign(start=0, end=frame["doc_id"].map(lengths), match_kind="document")
        runs.store_run(store, runs.ParsedRun(f"sys{r:02d}", "trec", f"run{r}.trec", f"{r:064d}", frame), actor="eng")
    build_pool(store, 10, systems=[f"sys{r:02d}" for r in range(0, n_runs, 2)], actor="eng")
    items = store.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3, 4")
    graded = [items[i] for i in rng.choice(len(items), size=min(len(items), int(a.pool_grades)), replace=False)]
    store.write(lambda cur: [judging.insert_tx(cur, "ann", q, d, s_, e, op="grade", grade=int(rng.integers(0, 4)))
                             for q, d, s_, e in graded])
    sizes = dict(zip(("run_results", "pool_items", "graded"), store.read_one(
        "SELECT (SELECT count(*) FROM run_results), (SELECT count(*) FROM pool_items), "
        "(SELECT count(*) FROM grade_item_state)")))
    store.close()
    return {**sizes, "generate_s": round(time.perf_counter() - t0, 1),
            "file_mib": round(Path(a.out).stat().st_size / 2 ** 20, 1)}


def _graded(figures: dict, k: str) -> float:
    """The pool's graded@k from either code: the baseline commit may predate the figure's rename
    (issue 25: `judged_at_*` became `graded_at_*`), and both codes must be read the same way."""
    return figures[f"graded_at_{k}"] if f"graded_at_{k}" in figures else figures[f"judged_at_{k}"]


def child_pool_build(a: argparse.Namespace) -> dict:
    from benchlib import _maxrss_kib, _status_kib, mib
    from golden_store.live.pool import build_pool
    from golden_store.db.store import Store

    store = Store.open(a.store, create=False)
    before = mib(_status_kib("VmRSS") or 0)
    t = time.perf_counter()
    rep = build_pool(store, int(a.pool_depth), actor="eng")
    took = time.perf_counter() - t
    store.close()
    return {"build_s": round(took, 2), "peak_mib": mib(_maxrss_kib()), "rss_before_mib": before,
            "report": {**rep.as_dict(), "per_run": {k: {"graded_at_k": round(_graded(v, "k"), 10), "k": v["k"]}
                                                    for k, v in rep.per_run.items()}}}


def child_pool_digest(a: argparse.Namespace) -> dict:
    from golden_store.db.store import Store

    store = Store.open(a.store, create=False)
    items = store.read_one("SELECT count(*), sum(hash(query_id, doc_id, start, \"end\", depth, added_by) % 1000000007) "
                           "FROM pool_items")
    sources = store.read_one("SELECT count(*), sum(hash(query_id, doc_id, start, \"end\", system, rank) % 1000000007) "
                             "FROM pool_sources")
    store.close()
    return {"pool_items": list(map(int, items)), "pool_sources": list(map(int, sources))}


def pool_build_main(a: argparse.Namespace, say) -> dict:
    """``--pool-build``: generate the store once (this code), then each code builds the pool
    on its own copy in a fresh process; digests compared."""
    from benchlib import code_trees, git_head, remove_code_trees, work_dir

    work, tmp = work_dir(argparse.ArgumentParser(), a.keep, "bench-pool-")
    trees: list[Path] = []
    try:
        new, base = code_trees(ROOT, work, a.code, a.baseline, trees)
        kw = {"pool-runs": a.pool_runs, "pool-queries": a.pool_queries, "pool-depth": a.pool_depth}
        gen = run_child("pool_generate", base or new, out=work / "pool.duckdb", seed=a.seed, **{"pool-grades": a.pool_grades},
                        **kw)
        say(f"[pool build] {a.pool_runs} runs x {a.pool_queries} queries x depth {a.pool_depth}: "
            + ", ".join(f"{k} {v}" for k, v in gen.items()))
        res: dict = {}
        for code, root in ([("baseline", base)] if base else []) + [("new", new)]:
            path = work / f"pool-{code}.duckdb"
            shutil.copyfile(work / "pool.duckdb", path)
            opened = run_child("migrate", root, store=path)  # a newer schema migrates here, not in the build
            res[code] = run_child("pool_build", root, store=path, **kw)
            res[code]["first_open"] = opened
            res[code]["digest"] = run_child("pool_digest", new, store=path)
            path.unlink()
            say(f"  {code}: build {res[code]['build_s']} s, peak {res[code]['peak_mib']} MiB "
                f"(before the build {res[code]['rss_before_mib']} MiB); pool {res[code]['report']['pool_size']} items, "
                f"{res[code]['report']['new_items']} new ({res[code]['report']['new_unjudged']} unjudged)")
        out = {"bench": "team_scale_pool_build", "commit": git_head(ROOT), "code": a.code, "baseline": a.baseline,
               "store": gen, **res}
        if base:
            b, n = res["baseline"], res["new"]
            out["ratios"] = {"build_s": round(n["build_s"] / b["build_s"], 4),
                             "peak_mib": round(n["peak_mib"] / b["peak_mib"], 4)}
            out["pools_equal"] = b["digest"] == n["digest"]
            out["reports_equal"] = b["report"] == n["report"]
            say(f"  ratios new/baseline: build {out['ratios']['build_s']:.3f}, peak {out['ratios']['peak_mib']:.3f}; "
                f"pools equal: {out['pools_equal']}; reports equal: {out['reports_equal']}")
        return out
    finally:
        remove_code_trees(ROOT, trees)
        if tmp is not None:
            tmp.cleanup()


# ---- parent --------------------------------------------------------------------------------------


def run_child(op: str, code_root: Path, **kw) -> dict:
    """``op`` in a fresh process with the code of ``code_root`` (this checkout's or a baseline's)."""
    from benchlib import child_flags, run_child_process

    return run_child_process(__file__, op, child_flags(kw, dashes=False), code_root=code_root, cwd=code_root)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="share of the team-scale sizes (1/50 = 0.02)")
    ap.add_argument("--repeat", type=int, default=3, help="reruns per page (median)")
    ap.add_argument("--baseline", default="aba9489", help="git revision measured as the baseline ('' for none)")
    ap.add_argument("--code", default="HEAD", help="git revision measured as this code ('.': the working tree)")
    ap.add_argument("--no-freeze", action="store_true", help="skip golden freeze")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--reuse", default=None,
                    help="measure the store a former run generated and kept (its --keep folder) instead of "
                         "generating one (same --scale and --seed expected; saves the generation)")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--browser", action="store_true",
                    help="also serve each code's store with streamlit and time every page in real chromium")
    ap.add_argument("--visits", type=int, default=3, help="--browser: visits per page (first + median of the rest)")
    ap.add_argument("--pages", default="", help="--browser: comma-separated sidebar titles (default: all)")
    ap.add_argument("--keys", default="21302", help="--browser: grade keys pressed on Judge ('' for none)")
    ap.add_argument("--browser-timeout", type=float, default=300, help="--browser: seconds a page may take")
    ap.add_argument("--typing", type=float, default=0.0,
                    help="--browser: seconds the first sign-in page stays open before the click, as a person "
                         "types (0: at once, the server's warm-up still running)")
    ap.add_argument("--pool-build", action="store_true",
                    help="measure golden pool build instead (its own store: --pool-runs x --pool-queries x "
                         "--pool-depth)")
    ap.add_argument("--pool-runs", type=int, default=20)
    ap.add_argument("--pool-queries", type=int, default=5000)
    ap.add_argument("--pool-depth", type=int, default=100)
    ap.add_argument("--pool-grades", type=int, default=5000, help="--pool-build: items graded before the build")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    for k in ("out", "store"):
        ap.add_argument(f"--{k}", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--freeze", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        from benchlib import old_layout_aliases

        old_layout_aliases()  # a baseline commit from before issue 26 keeps golden_store flat
        print(json.dumps({"generate": child_generate, "migrate": child_migrate, "measure": child_measure,
                          "pool_generate": child_pool_generate, "pool_build": child_pool_build,
                          "pool_digest": child_pool_digest}[a._child](a), default=str))
        return 0
    if a.pool_build:
        say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
        print(json.dumps(pool_build_main(a, say), default=str))
        return 0
    from benchlib import code_trees, git_head, remove_code_trees, work_dir

    work, tmp = work_dir(ap, a.keep, "bench-team-")
    say = (lambda *x: None) if a.json else (lambda *x: print(*x, file=sys.stderr, flush=True))
    trees: list[Path] = []
    try:
        new, base = code_trees(ROOT, work, a.code, a.baseline, trees)
        gen_root = base or new
        if a.reuse:  # a kept store: copied, never changed (each code measures its own copy)
            shutil.copyfile(Path(a.reuse) / "team.duckdb", work / "team.duckdb")
            facts = Path(a.reuse) / "team.json"
            gen = {**(json.loads(facts.read_text()) if facts.exists() else {}), "reused": str(a.reuse)}
        else:
            gen = run_child("generate", gen_root, out=work / "team.duckdb", scale=a.scale, seed=a.seed)
            (work / "team.json").write_text(json.dumps(gen))
        say(f"[scale {a.scale:g}] " + ", ".join(f"{k} {v}" for k, v in gen.items()))
        codes = ([("baseline", base)] if base else []) + [("new", new)]
        res = {}
        for code, root in codes:
            path = work / f"{code}.duckdb"
            shutil.copyfile(work / "team.duckdb", path)
            opened = run_child("migrate", root, store=path)
            res[code] = run_child("measure", root, store=path, repeat=a.repeat, freeze=not a.no_freeze)
            res[code]["first_open"] = opened
            if a.browser:
                only = [x.strip() for x in a.pages.split(",") if x.strip()] or None
                res[code]["browser"] = br = browser_measure(root, path, work, a.visits, only, a.keys,
                                                            a.browser_timeout, a.typing)
                say(f"  {code} in chromium: " + ", ".join(f"{k} {v['first_s']:.2f}/{v['again_s'] or 0:.2f} s"
                                                          for k, v in br["pages"].items())
                    + (f"; key -> next painted {br['key_to_next']['painted_median_s']:.3f} s (acked "
                       f"{br['key_to_next']['acked_median_s']:.3f} s)" if "key_to_next" in br else "")
                    + f"; server peak {br['server_peak_mib']} MiB; server start {br['server_start_s']} s")
            c = res[code]["calls"]
            say(f"  {code}: " + ", ".join(f"{k} {v['cold_s']:.3f}/{v['rerun_s']:.3f} s" for k, v in c.items())
                + f"; freeze {res[code].get('freeze_s')} s; CLI pool status {res[code]['cli_pool_status_s']} s; "
                  f"peak {res[code]['serving_peak_mib']} MiB; first open (schema v{opened['schema_version']}, "
                  f"migration included) {opened['open_s']} s")
        out = {"bench": "team_scale", "commit": git_head(ROOT), "code": a.code, "baseline": a.baseline,
               "scale": a.scale, "repeat": a.repeat, "store": gen, **res}
        if "baseline" in res:
            b, n = res["baseline"], res["new"]
            out["ratios"] = {f"{p}_{w}": round(n["calls"][p][w] / b["calls"][p][w], 4)
                             for p in n["calls"] for w in ("cold_s", "rerun_s") if b["calls"][p][w] > 0}
            if b.get("freeze_s") and n.get("freeze_s"):
                out["ratios"]["freeze"] = round(n["freeze_s"] / b["freeze_s"], 4)
            out["ratios"]["cli_pool_status"] = round(n["cli_pool_status_s"] / b["cli_pool_status_s"], 4)
            # pool AP changed its definition in issue 36 (unanswerable questions left out): a
            # baseline from before it gives another number by design, so it is compared only
            # when the baseline already carries the new definition (its pool says its level)
            same_pool_rule = b.get("pool_relevance_level") == n.get("pool_relevance_level")
            differ = {k for k in set(b["figures"]) | set(n["figures"]) if b["figures"].get(k) != n["figures"].get(k)}
            out["figures_equal"] = not (differ - ({"pool_ap"} if not same_pool_rule else set()))
            out["figures_differing_by_definition"] = sorted(differ & ({"pool_ap"} if not same_pool_rule else set()))
            if "browser" in b and "browser" in n:
                bb, nb = b["browser"], n["browser"]
                for p, v in nb["pages"].items():
                    w = bb["pages"].get(p)
                    for k in ("first_s", "again_s"):
                        if w and v[k] and w[k]:
                            out["ratios"][f"browser_{p}_{k}"] = round(v[k] / w[k], 4)
                if "key_to_next" in bb and "key_to_next" in nb:
                    out["ratios"]["browser_key_to_next_painted"] = round(
                        nb["key_to_next"]["painted_median_s"] / bb["key_to_next"]["painted_median_s"], 4)
                if bb.get("server_peak_mib") and nb.get("server_peak_mib"):
                    out["ratios"]["browser_server_peak"] = round(nb["server_peak_mib"] / bb["server_peak_mib"], 4)
            say("  ratios new/baseline: " + ", ".join(f"{k} {v:.3f}" for k, v in out["ratios"].items()))
            say(f"  figures equal: {out['figures_equal']}")
        if a.browser and not a.json:
            _browser_table(res, say)
        print(json.dumps(out, default=str))
    finally:
        remove_code_trees(ROOT, trees)
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
