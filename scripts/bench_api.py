#!/usr/bin/env python3
"""HTTP API benchmark (issue 28): a run import of ``--lines`` lines over HTTP against the
same import by the CLI on the same store, and ``--readers`` concurrent reads of a manifest.

What it does, in order:

1. builds a DuckDB store in a temporary folder (fixed seed): ``--docs`` documents and
   ``--queries`` queries, and writes a TREC run of ``--lines`` lines (``lines / queries``
   results per query). Not measured.
2. **CLI import** (the baseline): ``golden runs import RUN --system cli --replace`` in a fresh
   child process; its time and the child's own peak RSS (VmHWM). ``--repeats`` times.
3. **HTTP import**: ``golden api`` started on the store (a subprocess; an engineer token made
   with ``golden tokens create``), the same file uploaded with ``POST /api/v1/runs``
   (multipart, streamed from disk by httpx; system ``http``, replace) ``--repeats`` times: the
   wall time from the first byte sent to the answer, and the server process's RSS before and
   its peak (VmHWM, reset before each upload through /proc/PID/clear_refs) during the upload.
   Both paths store the same number of results (checked).
4. **Concurrent reads**: a version is frozen (``POST /api/v1/versions``), then
   ``GET /api/v1/versions/NAME`` from one client 200 times in a row (the baseline), then from
   ``--readers`` clients at once (httpx.AsyncClient, one connection each): per-request latency
   p50/p95 and the wall time. Every answer must be 200 with the frozen content digest.

Medians and ratios (HTTP / CLI, concurrent / sequential) are printed; the last line is JSON.

    python scripts/bench_api.py                    # 1 M lines, 200 readers (a few minutes)
    python scripts/bench_api.py --lines 20000 --queries 200 --readers 20 --repeats 1   # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import _mark_before, _maxrss_kib, free_port, mib, numbered_corpus_and_questions, work_dir  # noqa: E402


def _proc_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def _reset_peak(pid: int) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass  # not allowed here: the peak then covers the server's life so far (said in the output)


def _golden(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "annotator.cli", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"golden {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def build(work: Path, args: argparse.Namespace) -> Path:
    """The store (documents, queries) and the run file; returns the run's path."""
    from golden_store.db.store import Store

    rng = random.Random(args.seed)
    store = Store.open(work / "golden.duckdb")
    numbered_corpus_and_questions(store, work, args.docs, args.queries)
    store.close()
    depth = max(1, args.lines // args.queries)
    run = work / "run.trec"
    with run.open("w", encoding="ascii") as fh:
        for q in range(args.queries):
            for rank, d in enumerate(rng.sample(range(args.docs), depth), 1):
                fh.write(f"Q{q:06d} Q0 D{d:07d} {rank} {100 - rank * 0.01:.4f} bench\n")
    return run


def child_cli_import(run: str) -> None:
    """In a fresh process: the CLI's import, timed, with this process's own peak RSS."""
    from annotator.cli import main

    _mark_before()
    t0 = time.perf_counter()
    rc = main(["runs", "import", run, "--system", "cli", "--replace"])
    elapsed = time.perf_counter() - t0
    print(json.dumps({"rc": rc, "s": elapsed, "peak_kib": _maxrss_kib()}))


def cli_import(run: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--_child-cli-import", str(run)], capture_output=True, text=True,
                          env=env)
    if proc.returncode != 0:
        raise SystemExit(f"CLI import failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["rc"] != 0:
        raise SystemExit(f"CLI import returned {out['rc']}:\n{proc.stderr[-3000:]}")
    return out


def http_import(base: str, token: str, run: Path, pid: int) -> dict:
    import httpx

    rss_before = _proc_kib(pid, "VmRSS")
    _reset_peak(pid)
    t0 = time.perf_counter()
    with run.open("rb") as fh:
        r = httpx.post(f"{base}/api/v1/runs", headers={"Authorization": f"Bearer {token}"},
                       files={"file": (run.name, fh, "text/plain")}, data={"system": "http", "replace": "true"},
                       timeout=3600)
    elapsed = time.perf_counter() - t0
    if r.status_code != 201:
        raise SystemExit(f"HTTP import answered {r.status_code}: {r.text[:2000]}")
    return {"s": elapsed, "n_results": r.json()["n_results"], "server_rss_before_kib": rss_before,
            "server_peak_kib": _proc_kib(pid, "VmHWM")}


async def _reads(base: str, token: str, name: str, n: int, concurrent: bool) -> tuple[list[float], float, set]:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    digests: set = set()
    lat: list[float] = []

    async def one(client: httpx.AsyncClient) -> None:
        t = time.perf_counter()
        r = await client.get(f"{base}/api/v1/versions/{name}", headers=headers)
        lat.append(time.perf_counter() - t)
        if r.status_code != 200:
            raise SystemExit(f"manifest read answered {r.status_code}: {r.text[:500]}")
        digests.add(r.json()["content_digest"])

    limits = httpx.Limits(max_connections=n if concurrent else 1, max_keepalive_connections=n if concurrent else 1)
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        await one(client)  # warm-up (not counted): the first read of a version loads it
        lat.clear()
        t0 = time.perf_counter()
        if concurrent:
            await asyncio.gather(*(one(client) for _ in range(n)))
        else:
            for _ in range(n):
                await one(client)
        wall = time.perf_counter() - t0
    return lat, wall, digests


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--readers", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--keep", default=None, help="build in this (empty) folder and keep it")
    ap.add_argument("--_child-cli-import", dest="child_run", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_run:
        child_cli_import(args.child_run)
        return 0

    work, tmp = work_dir(ap, args.keep, "bench_api_")
    api = None
    try:
        run = build(work, args)
        env = {k: v for k, v in os.environ.items() if k not in ("GOLDEN_SERVER", "GOLDEN_TOKEN", "GOLDEN_VERSIONS")}
        env.update(GOLDEN_DB=str(work / "golden.duckdb"), GOLDEN_VERSIONS=str(work / "versions"))
        n_lines = sum(1 for _ in run.open("rb"))

        cli = [cli_import(run, env) for _ in range(args.repeats)]

        token = json.loads(_golden(env, "tokens", "create", "bench", "--role", "engineer", "--json"))["secret"]
        port = free_port()
        api = subprocess.Popen([sys.executable, "-m", "annotator.cli", "api", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        base = f"http://127.0.0.1:{port}"
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if api.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"golden api did not start: {api.stderr.read() if api.stderr else ''}")
            time.sleep(0.2)
        http = [http_import(base, token, run, api.pid) for _ in range(args.repeats)]
        n_http = {h["n_results"] for h in http}
        if n_http != {n_lines}:
            raise SystemExit(f"the HTTP import stored {n_http} results for a run of {n_lines} lines")

        r = httpx.post(f"{base}/api/v1/versions", headers={"Authorization": f"Bearer {token}"},
                       json={"name": "bench.v1"}, timeout=3600)
        if r.status_code != 201:
            raise SystemExit(f"freeze answered {r.status_code}: {r.text[:2000]}")
        digest = r.json()["manifest"]["content_digest"]
        seq_lat, seq_wall, seq_d = asyncio.run(_reads(base, token, "bench.v1", args.readers, concurrent=False))
        con_lat, con_wall, con_d = asyncio.run(_reads(base, token, "bench.v1", args.readers, concurrent=True))
        if seq_d != {digest} or con_d != {digest} or len(con_lat) != args.readers:
            raise SystemExit(f"manifest reads gave {seq_d | con_d}, frozen {digest}")
        server_peak = _proc_kib(api.pid, "VmHWM")
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=60)
        if tmp is not None:
            tmp.cleanup()

    cli_s = statistics.median(c["s"] for c in cli)
    http_s = statistics.median(h["s"] for h in http)
    out = {
        "lines": n_lines, "queries": args.queries, "documents": args.docs, "repeats": args.repeats,
        "cli_import_s": [round(c["s"], 2) for c in cli], "cli_import_median_s": round(cli_s, 2),
        "cli_peak_rss_mib": round(mib(max(c["peak_kib"] for c in cli)), 0),
        "http_import_s": [round(h["s"], 2) for h in http], "http_import_median_s": round(http_s, 2),
        "http_over_cli": round(http_s / cli_s, 2),
        "server_rss_before_upload_mib": round(mib(min(h["server_rss_before_kib"] for h in http)), 0),
        "server_peak_during_upload_mib": round(mib(max(h["server_peak_kib"] for h in http)), 0),
        "manifest_reads": args.readers,
        "sequential_p50_ms": round(1000 * _pct(seq_lat, 0.5), 1), "sequential_wall_s": round(seq_wall, 2),
        "concurrent_p50_ms": round(1000 * _pct(con_lat, 0.5), 1),
        "concurrent_p95_ms": round(1000 * _pct(con_lat, 0.95), 1), "concurrent_wall_s": round(con_wall, 2),
        "concurrent_over_sequential_wall": round(con_wall / seq_wall, 2),
        "server_peak_overall_mib": round(mib(server_peak), 0),
    }
    print(f"run import, {n_lines:,} lines: CLI median {cli_s:.2f} s, HTTP median {http_s:.2f} s "
          f"(HTTP/CLI {out['http_over_cli']}x); CLI peak {out['cli_peak_rss_mib']:.0f} MiB, server "
          f"{out['server_rss_before_upload_mib']:.0f} -> peak {out['server_peak_during_upload_mib']:.0f} MiB")
    print(f"{args.readers} manifest reads: sequential {seq_wall:.2f} s (p50 {out['sequential_p50_ms']} ms), "
          f"concurrent {con_wall:.2f} s (p50 {out['concurrent_p50_ms']} ms, p95 {out['concurrent_p95_ms']} ms)")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
