#!/usr/bin/env python3
"""A CI job against the studio, as a team's pipeline runs it (issue 28): push a system's run
through the HTTP API, freeze a version, then load that version from the object store in a
FRESH process (no studio, no database credentials: only ``GOLDEN_VERSIONS``) and score the
run against it.

Against your own studio::

    export GOLDEN_TOKEN=gst_...                 # golden tokens create ci --role engineer
    export GOLDEN_VERSIONS=s3://bucket/golden    # the versions store the studio freezes into
    python scripts/ci_pipeline.py --server https://studio.example/ --run runs/bm25.trec \\
        --system bm25-nightly --freeze golden.nightly-2026-12-06 -m nDCG@10 -m R@100

Self-contained (``--self-contained``, what ``tests/test_scripts.py`` runs): a temporary
DuckDB store with the demo project, a local S3-compatible server (moto, from the test
dependencies) as ``GOLDEN_VERSIONS``, ``golden api`` in a subprocess and an engineer token
made with ``golden tokens create``; then the same steps. The last line printed is JSON:
what was imported and frozen, and the fresh process's scores, which are also checked
against the same version downloaded through the API (the two must be equal).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO_RUN = ROOT / "annotator" / "demo" / "data" / "runs" / "bm25.trec"

# What the fresh process runs: nothing of the studio but the library, the version's URL
# from the environment, the run from a file.
_SCORE_IN_FRESH_PROCESS = """
import json, sys
from golden_store import load_version, scoring
name, run_path, measures = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
gs = load_version(name)          # GOLDEN_VERSIONS names the object store
report = scoring.evaluate(gs, scoring.read_run(run_path), measures)
print(json.dumps({"version": name, "content_digest": gs.manifest["content_digest"],
                  "mean": {k: float(v) for k, v in report.mean.items()}}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _golden(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "annotator.cli", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"golden {' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout


def _wait_health(url: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"golden api exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(url.rstrip("/") + "/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the API at {url} did not answer within {timeout_s:.0f} s")


def score_in_fresh_process(name: str, run: Path, measures: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _SCORE_IN_FRESH_PROCESS, name, str(run), ",".join(measures)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"scoring {name} in a fresh process failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pipeline(server: str, token: str, run: Path, system: str, version: str, measures: list[str],
             env: dict[str, str]) -> dict:
    """The job's steps; returns what it did and the scores."""
    from golden_store import load_version, scoring
    from golden_store.client import Studio

    with Studio(server, token) as studio:
        who = studio.me()
        imported = studio.import_run(run, system, replace=True)
        frozen = studio.freeze(version, note=f"CI: {system}")
        fresh = score_in_fresh_process(version, run, measures, env)
        with tempfile.TemporaryDirectory() as tmp:  # the same version fetched through the API
            folder = studio.download_version(version, tmp)
            via_api = scoring.evaluate(load_version(version, folder.parent), scoring.read_run(str(run)), measures)
            via_api_mean = {k: float(v) for k, v in via_api.mean.items()}
    frozen_digest = frozen["manifest"]["content_digest"]
    if fresh["content_digest"] != frozen_digest:
        raise SystemExit(f"the fresh process loaded {fresh['content_digest']}, the studio froze {frozen_digest}")
    if fresh["mean"] != via_api_mean:
        raise SystemExit(f"the object store's version scored {fresh['mean']}, the API's copy {via_api_mean}")
    return {"token": who, "imported": imported, "frozen": {"name": frozen["name"], "content_digest": frozen_digest},
            "scores": fresh, "scores_via_api": via_api_mean}


def self_contained(measures: list[str]) -> dict:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per S3 request
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s3.start()
    host, port = s3.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="golden-ci-"))
    env = dict(os.environ, GOLDEN_DB=str(tmp / "store.duckdb"), GOLDEN_VERSIONS="s3://golden-ci/versions",
               AWS_ACCESS_KEY_ID="ci", AWS_SECRET_ACCESS_KEY="ci-secret", AWS_DEFAULT_REGION="us-east-1",
               AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint, AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_CONFIG_FILE=os.devnull,
               GOLDEN_VERSIONS_CACHE=str(tmp / "versions-cache"))
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "GOLDEN_SERVER", "GOLDEN_TOKEN"):
        env.pop(key, None)
    api = None
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="ci",
                     aws_secret_access_key="ci-secret").create_bucket(Bucket="golden-ci")
        _golden("demo", "--small", env=env)
        token = json.loads(_golden("tokens", "create", "ci", "--role", "engineer", "--json", env=env))["secret"]
        api_port = _free_port()
        api = subprocess.Popen([sys.executable, "-m", "annotator.cli", "api", "--port", str(api_port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        server = f"http://127.0.0.1:{api_port}"
        _wait_health(server, api)
        # the job itself sees only the server, its token and the versions store
        job_env = {k: v for k, v in env.items() if k != "GOLDEN_DB"}
        return pipeline(server, token, DEMO_RUN, "bm25-ci", "golden.ci-1", measures, job_env)
    finally:
        if api is not None:
            api.terminate()
            api.wait(timeout=30)
        s3.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--self-contained", action="store_true",
                   help="start a demo store, a local S3-compatible server and golden api, then run the job")
    p.add_argument("--server", default=os.environ.get("GOLDEN_SERVER"), help="the studio's URL (GOLDEN_SERVER)")
    p.add_argument("--run", type=Path, default=DEMO_RUN, help="the run to push (TREC or JSONL passages)")
    p.add_argument("--system", default="ci", help="the run's system name in the studio")
    p.add_argument("--freeze", dest="version", default=None, help="the version to freeze (default golden.ci-<time>)")
    p.add_argument("-m", "--measure", action="append", default=None, help="measures to score (default nDCG@10, R@10)")
    args = p.parse_args(argv)
    measures = args.measure or ["nDCG@10", "R@10"]
    if args.self_contained:
        out = self_contained(measures)
    else:
        token = os.environ.get("GOLDEN_TOKEN")
        if not args.server or not token:
            p.error("give --server (or GOLDEN_SERVER) and GOLDEN_TOKEN, or --self-contained")
        version = args.version or time.strftime("golden.ci-%Y%m%d-%H%M%S", time.gmtime())
        out = pipeline(args.server, token, args.run, args.system, version, measures, dict(os.environ))
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
