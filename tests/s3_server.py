"""A local S3-compatible server for the object-storage tests: moto's ``ThreadedMotoServer`` on
127.0.0.1 (a free port), spoken to over real HTTP by pyarrow's S3 client, as a team's S3 or
MinIO would be. Buckets are made with boto3 (installed with moto).

``python -m tests.s3_server --auth BUCKET`` runs one that checks credentials (moto's IAM: only
the first request goes unauthenticated, the bucket's creation), prints its endpoint and serves
until stdin closes: the credential-refusal test needs it, and moto reads that setting once per
process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FAKE_KEY = "testing-key-id"
FAKE_SECRET = "testing-secret-never-logged"
REGION = "us-east-1"


def aws_env(endpoint: str) -> dict[str, str]:
    """The environment a test's S3 client reads: fake credentials, the local endpoint, no
    instance metadata lookups and no shared config files of the machine running the tests."""
    return {"AWS_ACCESS_KEY_ID": FAKE_KEY, "AWS_SECRET_ACCESS_KEY": FAKE_SECRET, "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION, "AWS_ENDPOINT_URL": endpoint, "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_CONFIG_FILE": os.devnull}


def _atomic_puts() -> None:
    """moto checks a PutObject's ``If-None-Match: *`` and then stores the object, two steps
    another request's thread can run between; S3 and MinIO decide a create-only PUT atomically.
    One lock around moto's PutObject makes this server do the same (issue 37: the freeze race
    test counts on the store, not luck, refusing the second manifest)."""
    from moto.s3.responses import S3Response

    if getattr(S3Response.put_object, "_atomic", False):
        return
    original = S3Response.put_object
    lock = threading.Lock()

    def put_object(self: Any) -> Any:
        with lock:
            return original(self)

    put_object._atomic = True  # type: ignore[attr-defined]
    S3Response.put_object = put_object  # type: ignore[method-assign]


class S3Server:
    """A started moto server: ``endpoint`` (http://127.0.0.1:PORT) and ``make_bucket``."""

    def __init__(self) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        _atomic_puts()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request in test output
        self._server: Any = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_SECRET)

    def make_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def stop(self) -> None:
        self._server.stop()


@contextmanager
def auth_server(bucket: str) -> Iterator[str]:
    """A moto server in a subprocess that checks credentials, holding ``bucket``; yields its
    endpoint."""
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1", **aws_env("http://unused")}
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "tests.s3_server", "--auth", bucket], cwd=root, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().strip()
        if not endpoint.startswith("http://"):
            raise RuntimeError(f"the credential-checking S3 server did not start (said {endpoint!r})")
        yield endpoint
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve_with_auth(bucket: str) -> None:
    server = S3Server()
    server.make_bucket(bucket)  # the one unauthenticated request moto allows
    print(server.endpoint, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":  # pragma: no cover - run by auth_server
    if len(sys.argv) == 3 and sys.argv[1] == "--auth":
        _serve_with_auth(sys.argv[2])
    else:
        sys.exit("usage: python -m tests.s3_server --auth BUCKET")
