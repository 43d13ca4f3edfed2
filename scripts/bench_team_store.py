#!/usr/bin/env python3
"""Team store on both engines (issue 16): the judging action, the Agreement page's refresh and
``golden freeze`` on a DuckDB store and on the same store copied into PostgreSQL, side by side
in one run. Aims: judging action p95 <= 150 ms and freeze <= 5 s on both engines.

What it does, in order:

1. starts a throwaway PostgreSQL cluster the way the tests do (``tests/pg.py``: initdb as the
   ``postgres`` user in a temp dir, loopback, durability off), or uses ``--pg-admin URL`` (a
   running server's maintenance database; the script creates and drops its own databases);
2. builds two DuckDB stores (fixed seed; generation time is not measured):

   * *team*: ``--docs`` documents (``golden_store.live.documents``), queries (``import_queries``), one
     run ranking ``depth + 5`` spans per query, the pool built at depth 5 (``pool.build_pool``),
     so the pool holds ~5 items per query, sized for ``--items`` x 1.2; users created through
     ``annotator.people.identity``; a rubric; then ``--annotators`` annotators each with a current
     grade on ``--items`` pool items (a random ``--items`` of the pool, so everyone still has
     items in their queue), ``--events`` grade events in all (the rest are earlier re-grades,
     skips and unsure marks of the same items), bulk-inserted in time order with the columns
     ``judging.insert_tx`` writes (document sha, rubric version) and the grading state refilled
     with ``grade_state.rebuild_tx``;
   * *freeze*: ``scripts/bench_store.py``'s generator (``--freeze-queries`` queries over the 7
     strata, ``--freeze-events`` label events: grades with disputes, re-grades, retractions,
     adjudications, and evidence spans that resolve on the corpus);

3. copies both into new PostgreSQL databases with ``golden copy``'s function
   (``store_copy.copy_checked``: every table, counts and digests compared before commit);
4. per engine, each in a fresh child process (the working directory and ``GOLDEN_VERSIONS`` in
   the temp folder):

   * *agreement refresh*: the lead's ``annotator.labeling.agreement.compute`` once cold (figures kept
     for the comparison between engines), then ``--agree-reps`` times: one new label through
     the Judge surface's submit path (so the store generation moves and the cache is stale),
     then ``compute`` timed;
   * *judging action*: ``--judges`` annotators take turns; each key press is what the Judge
     page's server does for it: ``annotator.labeling.judging.submit`` of one label (label id, digest of
     what was shown; the receipt and the grading state written in its transaction), then the
     queue fragment's rerun (``progress`` + ``next_items(12)``); ``--actions`` measured
     presses after 2 unmeasured per judge; the labels are then read back (receipt -> event)
     and compared with those sent;
   * *freeze*: ``annotator.versions.versioning.freeze`` (what ``golden freeze NAME`` calls),
     ``--freeze-reps`` times, each in a fresh child to a new name; the manifest's counts are
     compared with the store's and the ``data_digest`` between engines;

5. with ``--baseline REV``: the code of ``REV`` (a git worktree) on the same stores, after
   this code's measurements: 60 judging key presses on each engine, one PostgreSQL agreement
   refresh, one PostgreSQL freeze (stopped after ``--baseline-timeout`` seconds): before/after
   the PostgreSQL fixes, in the same run;
6. prints a table (median, p95, aims met) and one JSON line (``--json``: only the JSON line).

Usage::

    python scripts/bench_team_store.py [--events 1000000] [--annotators 20] [--items 20000]
        [--actions 200] [--judges 4] [--agree-reps 3] [--freeze-queries 10000]
        [--freeze-events 200000] [--freeze-reps 3] [--pg-admin URL] [--baseline REV]
        [--json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)  # runs from a checkout even without `pip install -e .`

from benchlib import log, set_quiet  # noqa: E402

SEED = 20240611
ACTOR = "bench"
PASSWORD = "0123456789ab"
POOL_DEPTH = 5
JUDGE_P95_AIM_MS = 150.0
FREEZE_AIM_S = 5.0
ENGINES = ("duckdb", "postgresql")


def annotators(n: int) -> list[str]:
    return [f"ann{i:02d}" for i in range(n)]


# ---- generation (DuckDB; PostgreSQL gets a checked copy) -----------------------------------------


def generate_team(db: Path, *, docs: int, items: int, n_annotators: int, events: int, seed: int) -> dict:
    """The judging + agreement store: every annotator has a current grade on ``items`` pool
    items; ``events`` grade events in all (see the module docstring)."""
    import numpy as np
    import pandas as pd

    from annotator.people import identity
    from bench_judging import generate_base
    from benchlib import refill_grade_state
    from golden_store.live.pool import build_pool
    from golden_store.live.rubric import add_rubric_version
    from golden_store.db.store import Store

    t0 = time.perf_counter()
    n_queries = max(2, -(-int(items * 1.2) // POOL_DEPTH))
    base = generate_base(db, docs, n_queries, 1, POOL_DEPTH, seed)
    people = annotators(n_annotators)
    store = Store.open(db, create=False)
    try:
        build_pool(store, POOL_DEPTH, actor=ACTOR)
        admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
        identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
        for p in people:
            identity.create_user(store, admin, p, ["annotator"], password=PASSWORD)
        add_rubric_version(store, "Grade 0-3: 0 irrelevant ... 3 fully answers.", "Initial rubric.", actor=ACTOR)
        pool = store.df("SELECT p.query_id, p.doc_id, p.start, p.\"end\", d.canonical_sha256 AS doc_sha256 "
                        "FROM pool_items p JOIN documents d USING (doc_id) ORDER BY ALL")
        n_pool = len(pool)
        if n_pool <= items:
            raise SystemExit(f"the pool has {n_pool} items, not more than --items {items}")
        rng = np.random.default_rng(seed)
        truth = rng.choice(4, size=n_pool, p=[0.4, 0.25, 0.2, 0.15])
        # labels: each annotator's current grade on a random `items` of the pool
        lab_item = np.concatenate([rng.choice(n_pool, size=items, replace=False) for _ in people])
        lab_actor = np.repeat(np.arange(len(people)), items)
        n_lab = len(lab_item)
        final = truth[lab_item]
        off = rng.random(n_lab) < 0.2  # a fifth of labels one grade off the item's true grade
        final = np.where(off, np.clip(final + rng.choice([-1, 1], size=n_lab), 0, 3), final)
        # earlier events on the same labels (re-grades, skips, unsure) up to `events` in all
        extra = max(0, events - n_lab)
        n_ev = 1 + np.bincount(rng.integers(0, n_lab, size=extra), minlength=n_lab)
        li = np.repeat(np.arange(n_lab), n_ev)
        last = np.cumsum(n_ev) - 1
        r = rng.random(len(li))
        op = np.where(r < 0.8, "grade", np.where(r < 0.9, "skip", "unsure")).astype(object)
        grade = rng.integers(0, 4, size=len(li))
        op[last] = "grade"
        grade[last] = final
        step = np.arange(len(li)) - np.repeat(last - n_ev + 1, n_ev)
        at_s = rng.uniform(0, 180 * 86400, size=n_lab)[li] + step * 60.0
        it = lab_item[li]
        ev = pd.DataFrame({
            "query_id": pool["query_id"].to_numpy()[it], "doc_id": pool["doc_id"].to_numpy()[it],
            "start": pool["start"].to_numpy()[it], "end": pool["end"].to_numpy()[it],
            "doc_sha256": pool["doc_sha256"].to_numpy()[it],
            "op": op, "grade": pd.array(np.where(op == "grade", grade, 0), dtype="Int16"),
            "actor": np.array(people, dtype=object)[lab_actor[li]],
            "created_at": pd.Timestamp("2026-01-05 08:00") + pd.to_timedelta(at_s, unit="s"),
        })
        ev.loc[ev["op"] != "grade", "grade"] = pd.NA
        ev = ev.sort_values("created_at", kind="stable").reset_index(drop=True)

        def tx(cur) -> None:
            # the columns judging.insert_tx writes (no round assigned these items), ids in time order
            cur.register("_ev", ev)
            cur.execute("INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, "
                        "created_at, rubric_version, round_id, note) SELECT query_id, doc_id, start, \"end\", "
                        "doc_sha256, op, grade, actor, created_at, 1, NULL, NULL FROM _ev ORDER BY created_at")
            cur.unregister("_ev")
            refill_grade_state(cur)

        store.write(tx)
        n_ge, n_cur, n_actors = store.read_one(
            "SELECT (SELECT count(*) FROM grade_events), (SELECT count(*) FROM current_grades), "
            "(SELECT count(DISTINCT actor) FROM current_grades)")
    finally:
        store.close()
    return {"documents": base["documents"], "queries": n_queries, "pool_items": n_pool, "grade_events": int(n_ge),
            "current_grades": int(n_cur), "annotators": int(n_actors), "items_per_annotator": items,
            "generation_s": round(time.perf_counter() - t0, 1), "mib": round(db.stat().st_size / 2**20, 1)}


def generate_freeze(db: Path, *, queries: int, events: int, docs: int, seed: int) -> dict:
    """The freeze store: scripts/bench_store.py's generator (the freeze benchmark's data)."""
    from bench_store import generate

    return generate(db, queries, events, docs, seed)


def copy_to_postgres(src_path: Path, url: str) -> dict:
    """``golden copy SRC DST``'s function: every table, checked by counts and digests."""
    from golden_store.db.store import Store
    from golden_store.db.store_copy import copy_checked

    t = time.perf_counter()
    with Store.open(src_path, create=False) as src, Store.open(url) as dst:
        checks = copy_checked(src, dst)
    return {"tables": len(checks), "rows": sum(c.dest_rows for c in checks if not c.table.startswith("(")),
            "all_ok": all(c.ok for c in checks), "copy_s": round(time.perf_counter() - t, 1)}


# ---- PostgreSQL: a throwaway cluster, or databases on a given server -----------------------------


class Postgres:
    """Where the PostgreSQL stores live: a cluster started here (``tests/pg.py``) or the server
    behind ``--pg-admin``; databases made here are dropped in :meth:`close`."""

    def __init__(self, admin_url: str | None) -> None:
        from tests import pg

        self._pg = pg
        self.cluster = None
        if admin_url is None:
            why = pg.unavailable()
            if why:
                raise SystemExit(pg.HOW.format(why=why).replace("PostgreSQL tests skipped", "Cannot run"))
            self.cluster = pg.start_cluster()
            admin_url = self.cluster.url("postgres")
        self.admin_url = admin_url
        self.made: list[str] = []

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self, name: str) -> str:
        dbname = f"bench_team_store_{os.getpid()}_{name}"
        self._admin(f'CREATE DATABASE "{dbname}" TEMPLATE template0')
        self.made.append(dbname)
        return self.admin_url.rsplit("/", 1)[0] + "/" + dbname

    def server_version(self) -> str:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            return str(conn.execute("SHOW server_version").fetchone()[0])

    def close(self) -> None:
        for dbname in self.made:
            try:
                self._admin(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            except Exception:  # noqa: BLE001 - cleanup: the cluster goes anyway
                pass
        if self.cluster is not None:
            self._pg.stop_cluster(self.cluster)


# ---- measuring children ----------------------------------------------------------------------------


def _label(user, item, action: str, value) -> dict:
    """One label as the Judge surface sends it for the card it painted."""
    return {"id": uuid.uuid4().hex, "by": user.username, "item": item.key, "digest": item.digest,
            "action": action, "value": value, "note": ""}


def child_agree(a: argparse.Namespace) -> dict:
    from annotator.labeling import agreement, judging
    from annotator.people import identity
    from golden_store.db.store import Store

    store = Store.open(a.db, create=False)
    try:
        lead = identity.get_user(store, "lead")
        ann = identity.get_user(store, a.writer)
        t = time.perf_counter()
        rep = agreement.compute(store, lead)
        cold = time.perf_counter() - t
        g = rep.group
        figures = {"n_units": int(g.n_units), "annotators": len(g.annotators), "pairs": len(g.pairs),
                   **{k: round(float(getattr(g, k)), 10) for k in ("kappa_binary", "kappa_linear",
                                                                   "kappa_quadratic", "alpha_ordinal")}}
        times, saved = [], 0
        queue = judging.next_items(store, ann, judging.QUEUE_AHEAD)
        for i in range(int(a.reps)):
            item = queue.pop(0)
            acks = judging.submit(store, ann, [_label(ann, item, "grade", i % 4)])
            saved += sum(x.status == "saved" for x in acks)
            t = time.perf_counter()
            agreement.compute(store, lead)  # the generation moved: recomputed, not the cache
            times.append(time.perf_counter() - t)
            if not queue:
                queue = judging.next_items(store, ann, judging.QUEUE_AHEAD)
    finally:
        store.close()
    return {"cold_s": cold, "refresh_s": times, "labels_saved": saved, "figures": figures}


def child_judge(a: argparse.Namespace) -> dict:
    import random

    from annotator.labeling import judging
    from annotator.people import identity
    from golden_store.db.store import Store

    rnd = random.Random(int(a.seed))
    store = Store.open(a.db, create=False)
    try:
        users = [identity.get_user(store, n) for n in annotators(int(a.judges))]
        # each judge's page is open: the first render's queue (not measured)
        queues = {u.username: judging.next_items(store, u, judging.QUEUE_AHEAD) for u in users}
        for u in users:
            judging.progress(store, u)
        sent: dict[str, tuple] = {}
        submit_t, rerun_t, action_t = [], [], []
        statuses: dict[str, int] = {}
        warm = 2 * len(users)
        for i in range(warm + int(a.actions)):
            u = users[i % len(users)]
            item = queues[u.username][0]
            action, value = ("skip", None) if i % 10 == 9 else ("grade", rnd.randint(0, 3))
            lab = _label(u, item, action, value)
            sent[lab["id"]] = (u.username, item.query_id, item.doc_id, item.start, item.end, action, value)
            t0 = time.perf_counter()
            acks = judging.submit(store, u, [lab])  # the key press's label: receipt + event + state
            t1 = time.perf_counter()
            judging.progress(store, u)  # the queue fragment reruns: progress and the next items
            queues[u.username] = judging.next_items(store, u, judging.QUEUE_AHEAD)
            t2 = time.perf_counter()
            for ack in acks:
                statuses[ack.status] = statuses.get(ack.status, 0) + 1
            if i >= warm:
                submit_t.append(t1 - t0)
                rerun_t.append(t2 - t1)
                action_t.append(t2 - t0)
        # the labels written, read back: each receipt's event
        got = {r[0]: (r[1], r[2], r[3], int(r[4]), int(r[5]), r[6], None if r[7] is None else int(r[7]))
               for r in store.read("SELECT r.label_id, e.actor, e.query_id, e.doc_id, e.start, e.\"end\", e.op, "
                                   "e.grade FROM label_receipts r JOIN grade_events e USING (event_id) "
                                   "WHERE r.surface = 'judge'")}
        got = {k: v for k, v in got.items() if k in sent}
        progress = {u.username: list(judging.progress(store, u)) for u in users}
    finally:
        store.close()
    return {"submit_s": submit_t, "rerun_s": rerun_t, "action_s": action_t, "labels_sent": len(sent),
            "acks": statuses, "labels_read_back": len(got), "labels_equal": got == sent, "progress": progress}


def child_freeze(a: argparse.Namespace) -> dict:
    from annotator.people import identity
    from annotator.versions import versioning
    from golden_store.db.store import Store
    from golden_store.scoring.agreement_report import kappa_linear

    store = Store.open(a.db, create=False)
    try:
        t = time.perf_counter()
        res = versioning.freeze(store, identity.cli_user(), a.name)  # what `golden freeze NAME` calls
        secs = time.perf_counter() - t
        m = res.manifest
        live = dict(zip(("n_queries", "n_documents", "n_judgments", "n_spans", "n_pending_judgments"), map(int, store.read_one(
            "SELECT (SELECT count(*) FROM queries), (SELECT count(*) FROM documents), "
            "(SELECT count(*) FROM final_grades SEMI JOIN queries USING (query_id)), "
            "(SELECT count(*) FROM frozen_evidence SEMI JOIN queries USING (query_id)), "
            "(SELECT count(*) FROM pending_grades SEMI JOIN queries USING (query_id))"))))
    finally:
        store.close()
    frozen = {k: int(m[k]) for k in live}
    return {"seconds": secs, "frozen": frozen, "store": live, "data_digest": m["data_digest"],
            "kappa_linear": kappa_linear(m)}  # a manifest frozen before issue 36 names it kappa_graded


# ---- parent -----------------------------------------------------------------------------------------


def run_child(op: str, work: Path, code: Path = ROOT, timeout: float | None = None, **kw) -> dict:
    """``op`` in a fresh process running the studio code of ``code`` (this checkout, or the
    baseline's worktree); with ``timeout``, a child still running then is stopped and
    ``{"timed_out": True}`` comes back."""
    from benchlib import child_flags, run_child_process

    flags = ["--code", str(code), *child_flags(kw, dashes=False)]
    env = dict(os.environ, GOLDEN_VERSIONS=str(work / "versions"))
    try:
        return run_child_process(__file__, op, flags, code_root=code, cwd=work, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out": True, "timeout_s": timeout}


def _pct(xs: list[float], p: float) -> float:
    from benchlib import percentile  # nearest rank

    return percentile(xs, p)


def _ms(xs: list[float]) -> dict:
    return {"median_ms": round(statistics.median(xs) * 1000, 1), "p95_ms": round(_pct(xs, 95) * 1000, 1),
            "max_ms": round(max(xs) * 1000, 1), "n": len(xs)}


def _s(xs: list[float]) -> dict:
    return {"median_s": round(statistics.median(xs), 3), "p95_s": round(_pct(xs, 95), 3),
            "max_s": round(max(xs), 3), "n": len(xs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000, help="grade events in the team store")
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=20_000, help="items each annotator has graded")
    ap.add_argument("--docs", type=int, default=2_000, help="documents of the team store")
    ap.add_argument("--actions", type=int, default=200, help="measured judging key presses (all judges)")
    ap.add_argument("--judges", type=int, default=4, help="annotators taking turns at judging")
    ap.add_argument("--agree-reps", type=int, default=3)
    ap.add_argument("--freeze-queries", type=int, default=10_000)
    ap.add_argument("--freeze-events", type=int, default=200_000)
    ap.add_argument("--freeze-docs", type=int, default=2_000)
    ap.add_argument("--freeze-reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--pg-admin", default=None, metavar="URL",
                    help="a running PostgreSQL server's maintenance database (default: start a throwaway cluster)")
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep the DuckDB stores (must be empty)")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also freeze the PostgreSQL store with the code of git revision REV (a worktree), once")
    ap.add_argument("--baseline-timeout", type=float, default=300, help="seconds the baseline freeze may take")
    for k in ("db", "reps", "writer", "name", "code"):
        ap.add_argument(f"--{k}", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._child:
        sys.path.insert(0, a.code)  # the code measured: this checkout's or the baseline's
        from benchlib import old_layout_aliases

        old_layout_aliases()  # a baseline commit from before issue 26 keeps golden_store flat
        print(json.dumps({"agree": child_agree, "judge": child_judge, "freeze": child_freeze}[a._child](a),
                         default=str))
        return 0
    if min(a.annotators, a.items, a.docs, a.actions, a.judges, a.agree_reps, a.freeze_queries, a.freeze_docs,
           a.freeze_reps) < 1 or a.judges > a.annotators or a.annotators < 2:
        ap.error("sizes must be >= 1, --annotators >= 2 and --judges <= --annotators")
    set_quiet(a.json)

    import duckdb

    from benchlib import code_tree, git_head, remove_code_trees, work_dir

    work, tmp = work_dir(ap, a.keep, "bench-team-store-")
    pg = None
    try:
        t_all = time.perf_counter()
        log(f"PostgreSQL: {'starting a throwaway cluster (tests/pg.py)' if a.pg_admin is None else a.pg_admin}")
        pg = Postgres(a.pg_admin)
        team_db, freeze_db = work / "team.duckdb", work / "freeze.duckdb"
        log(f"team store: {a.annotators} annotators x {a.items} items, {a.events} grade events (seed {a.seed})")
        team = generate_team(team_db, docs=a.docs, items=a.items, n_annotators=a.annotators, events=a.events,
                             seed=a.seed)
        log(f"  {json.dumps(team)}")
        log(f"freeze store: {a.freeze_queries} queries, {a.freeze_events} label events (bench_store's generator)")
        frz = generate_freeze(freeze_db, queries=a.freeze_queries, events=a.freeze_events, docs=a.freeze_docs,
                              seed=a.seed)
        log(f"  {json.dumps(frz)}")
        where = {"duckdb": {"team": str(team_db), "freeze": str(freeze_db)}, "postgresql": {}}
        copies = {}
        for name, path in (("team", team_db), ("freeze", freeze_db)):
            url = pg.new_database(name)
            log(f"golden copy {path.name} -> PostgreSQL ({name})")
            copies[name] = copy_to_postgres(path, url)
            log(f"  {json.dumps(copies[name])}")
            where["postgresql"][name] = url
        res: dict[str, dict] = {}
        for engine in ENGINES:
            log(f"[{engine}] agreement refresh ({a.agree_reps} reps after a new label each)")
            ag = run_child("agree", work, db=where[engine]["team"], reps=a.agree_reps,
                           writer=annotators(a.annotators)[-1])
            log(f"  agreement refresh {statistics.median(ag['refresh_s']):.3f} s median (cold {ag['cold_s']:.3f} s)")
            log(f"[{engine}] judging: {a.actions} key presses by {a.judges} annotators")
            jd = run_child("judge", work, db=where[engine]["team"], actions=a.actions, judges=a.judges,
                           seed=a.seed)
            log(f"  judging action median {statistics.median(jd['action_s']) * 1000:.1f} ms, p95 "
                f"{_pct(jd['action_s'], 95) * 1000:.1f} ms")
            fz = []
            for rep in range(a.freeze_reps):
                fz.append(run_child("freeze", work, db=where[engine]["freeze"], name=f"{engine}-v{rep + 1}"))
                log(f"[{engine}] freeze rep {rep + 1}/{a.freeze_reps}: {fz[-1]['seconds']:.2f} s")
            res[engine] = {
                "judging_action": _ms(jd["action_s"]), "submit": _ms(jd["submit_s"]),
                "queue_rerun": _ms(jd["rerun_s"]),
                "labels_sent": jd["labels_sent"], "labels_read_back": jd["labels_read_back"],
                "labels_equal": jd["labels_equal"], "acks": jd["acks"],
                "agreement_refresh": _s(ag["refresh_s"]), "agreement_cold_s": round(ag["cold_s"], 3),
                "agreement_labels_saved": ag["labels_saved"], "agreement_figures": ag["figures"],
                "freeze": _s([f["seconds"] for f in fz]),
                "freeze_counts_equal": all(f["frozen"] == f["store"] for f in fz),
                "freeze_counts": fz[-1]["frozen"], "freeze_data_digest": fz[-1]["data_digest"],
            }
            r = res[engine]
            r["aims"] = {"judging_p95_met": r["judging_action"]["p95_ms"] <= JUDGE_P95_AIM_MS,
                         "freeze_met": r["freeze"]["median_s"] <= FREEZE_AIM_S}
        baseline = None
        if a.baseline:
            tree = work / "baseline"
            code_tree(ROOT, a.baseline, work, "baseline")
            try:
                baseline = {"rev": a.baseline}
                n_act = min(a.actions, 60)
                for engine in ENGINES:
                    log(f"[{engine}] judging with the baseline code ({a.baseline}): {n_act} key presses")
                    jb = run_child("judge", work, code=tree, db=where[engine]["team"], actions=n_act, judges=a.judges,
                                   seed=a.seed + 1)
                    baseline[f"{engine}_judging_action"] = _ms(jb["action_s"])
                    baseline[f"{engine}_labels_equal"] = jb["labels_equal"]
                log(f"[postgresql] agreement refresh with the baseline code, once")
                ab = run_child("agree", work, code=tree, db=where["postgresql"]["team"], reps=1,
                               writer=annotators(a.annotators)[-2])
                baseline["postgresql_agreement_refresh_s"] = round(ab["refresh_s"][0], 3)
                baseline["postgresql_agreement_cold_s"] = round(ab["cold_s"], 3)
                log(f"[postgresql] freeze with the baseline code ({a.baseline}), once, at most {a.baseline_timeout:.0f} s")
                t = time.perf_counter()
                b = run_child("freeze", work, code=tree, timeout=a.baseline_timeout, db=where["postgresql"]["freeze"],
                              name="baseline-v1")
                baseline.update({"postgresql_freeze_s": None if b.get("timed_out") else round(b["seconds"], 3),
                                 "timed_out": bool(b.get("timed_out")), "wall_s": round(time.perf_counter() - t, 1)})
                if not b.get("timed_out"):
                    baseline["counts_equal"] = b["frozen"] == b["store"]
                    baseline["data_digest_equal"] = b["data_digest"] == res["postgresql"]["freeze_data_digest"]
                log(f"  {json.dumps(baseline)}")
            finally:
                remove_code_trees(ROOT, [tree])
        d, p = res["duckdb"], res["postgresql"]
        out = {
            "bench": "team_store", "commit": git_head(ROOT), "seed": a.seed,
            "params": {"events": a.events, "annotators": a.annotators, "items": a.items, "docs": a.docs,
                       "actions": a.actions, "judges": a.judges, "agree_reps": a.agree_reps,
                       "freeze_queries": a.freeze_queries, "freeze_events": a.freeze_events,
                       "freeze_docs": a.freeze_docs, "freeze_reps": a.freeze_reps,
                       "baseline_timeout": a.baseline_timeout},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "duckdb": duckdb.__version__,
                        "postgresql": pg.server_version(), "platform": platform.platform()},
            "stores": {"team": team, "freeze": frz}, "copies": copies, **res,
            "ratios_pg_vs_duckdb": {
                "judging_action_median": round(p["judging_action"]["median_ms"] / d["judging_action"]["median_ms"], 2),
                "judging_action_p95": round(p["judging_action"]["p95_ms"] / d["judging_action"]["p95_ms"], 2),
                "agreement_refresh_median": round(p["agreement_refresh"]["median_s"]
                                                  / d["agreement_refresh"]["median_s"], 2),
                "freeze_median": round(p["freeze"]["median_s"] / d["freeze"]["median_s"], 2)},
            "agreement_figures_equal": d["agreement_figures"] == p["agreement_figures"],
            "freeze_data_digest_equal": d["freeze_data_digest"] == p["freeze_data_digest"],
            "aims": {"judging_p95_ms": JUDGE_P95_AIM_MS, "freeze_s": FREEZE_AIM_S,
                     "all_met": all(all(res[e]["aims"].values()) for e in ENGINES)},
            "baseline": baseline,
            "total_s": round(time.perf_counter() - t_all, 1),
        }
        if not a.json:
            _table(out)
        print(json.dumps(out, default=str))
    finally:
        if pg is not None:
            pg.close()
        if tmp is not None:
            tmp.cleanup()
    return 0


def _table(out: dict) -> None:
    d, p = out["duckdb"], out["postgresql"]
    t, f = out["stores"]["team"], out["stores"]["freeze"]
    print(f"\nTeam store on both engines: team store {t['grade_events']} grade events, {t['annotators']} annotators x "
          f"{t['items_per_annotator']} items (pool {t['pool_items']}); freeze store {f['queries']} queries, "
          f"{f['grade_events'] + f['evidence_events']} label events; nproc {out['machine']['nproc']}, "
          f"DuckDB {out['machine']['duckdb']}, PostgreSQL {out['machine']['postgresql']}")
    rows = [
        ("judging action (ms): submit + rerun", "judging_action", "median_ms", "p95_ms"),
        ("  submit (receipt, event, state)", "submit", "median_ms", "p95_ms"),
        ("  queue rerun (progress + next 12)", "queue_rerun", "median_ms", "p95_ms"),
        ("agreement refresh (s)", "agreement_refresh", "median_s", "p95_s"),
        ("freeze (s)", "freeze", "median_s", "p95_s"),
    ]
    hdr = f"{'':<38}{'DuckDB median':>14}{'p95':>9}{'PG median':>12}{'p95':>9}{'PG/DuckDB':>11}"
    print(hdr)
    print("-" * len(hdr))
    for label, key, med, p95 in rows:
        ratio = p[key][med] / d[key][med] if d[key][med] else float("nan")
        print(f"{label:<38}{d[key][med]:>14.3f}{d[key][p95]:>9.3f}{p[key][med]:>12.3f}{p[key][p95]:>9.3f}"
              f"{ratio:>11.2f}")
    for e, r in (("DuckDB", d), ("PostgreSQL", p)):
        print(f"{e}: judging p95 <= {JUDGE_P95_AIM_MS:.0f} ms {'met' if r['aims']['judging_p95_met'] else 'NOT met'}; "
              f"freeze <= {FREEZE_AIM_S:.0f} s {'met' if r['aims']['freeze_met'] else 'NOT met'}; labels "
              f"{r['labels_read_back']}/{r['labels_sent']} read back equal: {r['labels_equal']}; frozen counts = "
              f"store's: {r['freeze_counts_equal']}; agreement cold {r['agreement_cold_s']:.2f} s")
    b = out.get("baseline")
    if b:
        shown = f"did not finish in {out['params']['baseline_timeout']:.0f} s (stopped)" if b["timed_out"] else \
            f"{b['postgresql_freeze_s']:.3f} s"
        print(f"Baseline code {b['rev']} in the same run, same stores: PostgreSQL freeze {shown} (this code's median "
              f"{p['freeze']['median_s']:.3f} s); PostgreSQL agreement refresh {b['postgresql_agreement_refresh_s']:.3f} s "
              f"(this code {p['agreement_refresh']['median_s']:.3f} s); judging action median / p95 ms: DuckDB "
              f"{b['duckdb_judging_action']['median_ms']:.1f} / {b['duckdb_judging_action']['p95_ms']:.1f}, PostgreSQL "
              f"{b['postgresql_judging_action']['median_ms']:.1f} / {b['postgresql_judging_action']['p95_ms']:.1f} "
              f"({b['duckdb_judging_action']['n']} presses)")
    print(f"agreement figures equal on both engines: {out['agreement_figures_equal']}; frozen data_digest equal: "
          f"{out['freeze_data_digest_equal']}; total {out['total_s']} s\n")


if __name__ == "__main__":
    raise SystemExit(main())
