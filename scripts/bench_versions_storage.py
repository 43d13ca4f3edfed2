#!/usr/bin/env python3
"""Frozen versions in object storage (issue 28): freeze and load through a local
S3-compatible server (moto, from the test dependencies) against the same into and from a
local folder (the baseline), on the demo project plus ``--docs`` generated documents of
``--doc-kb`` KB each (so the version carries a real corpus: ~``docs x doc-kb`` of text).

Per repeat (``--repeats``, medians printed): freeze into a new folder and into a new bucket;
``load_version`` + ``qrels()`` with an empty cache (``load_cold``: the object store's copy is
downloaded and re-hashed) and again (``load_warm``: the cache is re-hashed, nothing fetched).
Every version frozen must have the same data digest (the files' content; the manifest differs by name and time) (checked). The last line printed is JSON.

    python scripts/bench_versions_storage.py                       # 2,000 docs x 50 KB (~100 MB)
    python scripts/bench_versions_storage.py --docs 50 --doc-kb 2 --repeats 1   # smoke
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--doc-kb", type=float, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret", AWS_DEFAULT_REGION="us-east-1",
                      AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint, AWS_EC2_METADATA_DISABLED="true",
                      AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_CONFIG_FILE=os.devnull)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="bench",
                      aws_secret_access_key="bench-secret")

    from annotator.demo import load_demo
    from annotator.people.identity import cli_user
    from golden_store.db.store import Store
    from golden_store.freezing import freeze
    from golden_store.live.documents import import_paths
    from golden_store.versions import load_version

    root = Path(tempfile.mkdtemp(prefix="bench_vstore_"))
    try:
        store = Store.open(root / "golden.duckdb")
        load_demo(store, cli_user())
        rng = random.Random(args.seed)
        words = [f"w{i}" for i in range(5000)]
        corpus = root / "corpus.jsonl"
        with corpus.open("w", encoding="utf-8") as fh:
            n_words = int(args.doc_kb * 1024 / 6)
            for i in range(args.docs):
                fh.write(json.dumps({"doc_id": f"gen-{i:06d}", "text": " ".join(rng.choices(words, k=n_words))}) + "\n")
        import_paths(store, [corpus], actor="bench")
        res: dict[str, dict[str, list[float]]] = {k: {"freeze": [], "load_cold": [], "load_warm": []}
                                                  for k in ("folder", "s3")}
        digests: dict[str, set[str]] = {"folder": set(), "s3": set()}
        size = 0
        for i in range(args.repeats):
            bucket = f"bench-{uuid.uuid4().hex[:8]}"
            s3.create_bucket(Bucket=bucket)
            for kind, where in (("folder", str(root / f"v{i}")), ("s3", f"s3://{bucket}/versions")):
                name = f"golden.v{i}"
                t = time.perf_counter()
                freeze(store, name, actor="bench", versions_dir=where)
                res[kind]["freeze"].append(time.perf_counter() - t)
                os.environ["GOLDEN_VERSIONS_CACHE"] = str(root / f"cache-{uuid.uuid4().hex[:6]}")
                for phase in ("load_cold", "load_warm"):
                    t = time.perf_counter()
                    v = load_version(name, where)
                    v.qrels()
                    res[kind][phase].append(time.perf_counter() - t)
                    digests[kind].add(v.manifest["data_digest"])
                    size = sum(int(f["bytes"]) for f in v.manifest["files"].values())
        store.close()
    finally:
        server.stop()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    if len(digests["folder"]) != 1 or digests["folder"] != digests["s3"]:
        raise SystemExit(f"data digests differ: {digests}")
    med = {k: {p: statistics.median(v) for p, v in ph.items()} for k, ph in res.items()}
    out = {"docs": args.docs, "doc_kb": args.doc_kb, "repeats": args.repeats, "version_mib": round(size / 2**20, 1),
           "data_digest": digests["s3"].pop(),
           **{f"{k}_{p}_s": round(v, 3) for k, ph in med.items() for p, v in ph.items()},
           **{f"s3_over_folder_{p}": round(med["s3"][p] / med["folder"][p], 2) for p in ("freeze", "load_cold", "load_warm")}}
    print(f"version of {out['version_mib']} MiB; medians of {args.repeats}:")
    for p in ("freeze", "load_cold", "load_warm"):
        print(f"  {p:10s} folder {med['folder'][p]:.3f} s, S3 {med['s3'][p]:.3f} s ({out['s3_over_folder_' + p]}x)")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
