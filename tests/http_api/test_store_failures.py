"""The API when its store cannot do the work (issue 37 item 7): PostgreSQL down answers 503
naming the server (probe P2: every endpoint, /health included, answered 500 "unexpected
error"), and 200 again once it is back, without restarting the API; a full disk answers 507
(probe F2's API side). Real HTTP on loopback; a real PostgreSQL cluster stopped and started;
a real small filesystem (``tests/small_disk.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from annotator.people import api_tokens
from annotator.people.identity import LOCAL_USER
from golden_store.db.store import Store
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth
from tests.small_disk import small_disk

ROOT = Path(__file__).resolve().parents[2]


def test_postgresql_down_answers_503_naming_the_server_and_200_once_it_is_back(pg_own_cluster, tmp_path,
                                                                              monkeypatch):
    from http_api.serving import ThreadedServer
    from tests import pg

    cluster = pg_own_cluster
    monkeypatch.chdir(tmp_path)  # a PostgreSQL store keeps its local files in the working directory
    plain = cluster.new_database()
    url = plain.replace(f"{cluster.user}@", f"{cluster.user}:s3cret-pw@")  # trust auth: the password is unused
    store = Store.open(url)
    _, secret = api_tokens.create_token(store, LOCAL_USER, "t-eng", ["engineer"])
    server = ThreadedServer(url, store=store).start()
    expected = (f"The database at 127.0.0.1:{cluster.port} is unreachable (PostgreSQL is stopped, restarting or not "
                "taking connections); retry once it is running again (the studio reconnects by itself).")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}/api/v1", timeout=60) as c:
            assert c.get("/health").status_code == 200
            assert c.get("/evaluations", headers=auth(secret)).status_code == 200

            pg.stop_server(cluster)  # pg_ctl stop -m fast: the pooled connections are ended (AdminShutdown)
            for method, path, headers in (("GET", "/health", {}), ("GET", "/evaluations", auth(secret)),
                                          ("POST", "/versions", auth(secret)), ("GET", "/health", {})):
                r = c.request(method, path, headers=headers, json={"name": "down.v1"} if method == "POST" else None)
                assert r.status_code == 503, (path, r.text)
                assert r.headers["content-type"] == "application/problem+json"
                assert r.headers["retry-after"] == "5"
                assert r.json()["detail"] == expected
                assert r.json()["type"] == "/api/v1/problems/store-unavailable"
                assert "s3cret" not in r.text and "postgresql://" not in r.text

            # the CLI on the same store: the same sentence, exit status 1 as for its other errors
            cli = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", url, "strata", "list"],
                                 capture_output=True, text=True, cwd=tmp_path,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert (cli.returncode, cli.stderr) == (2, f"golden: {expected}\n")

            pg.start_server(cluster)  # the same process answers again, from its first request on
            health = c.get("/health")
            assert health.status_code == 200 and health.json()["engine"] == "postgresql"
            assert c.get("/evaluations", headers=auth(secret)).status_code == 200
            kind = c.get("/problems/store-unavailable")
            assert kind.status_code == 200 and "Retry-After" in kind.json()["description"]
    finally:
        server.stop()
        store.close()


def test_a_full_versions_disk_answers_507_with_the_sentence_without_the_servers_folders(
        demo_store, api, tokens, tmp_path, monkeypatch):
    with small_disk(tmp_path / "disk", 8) as disk:
        versions = disk.root / "versions"
        versions.mkdir()
        monkeypatch.setenv("GOLDEN_VERSIONS", str(versions))
        before = table_snapshot(demo_store)
        disk.fill(0)
        with disk.in_this_process():
            r = httpx.post(f"{api}/versions", json={"name": "api.v1"}, headers=auth(tokens["engineer"]), timeout=120)
        assert r.status_code == 507, r.text
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["type"] == "/api/v1/problems/disk-full" and body["title"] == "Insufficient Storage"
        assert str(disk.root) not in r.text and "server's versions location" not in body["detail"]
        if disk.mechanism == "tmpfs":
            assert body["detail"] == (
                "No space left on the disk holding the versions folder; no version 'api.v1' was written and its "
                "partial files were removed: free space on that disk and retry, or point GOLDEN_VERSIONS at a "
                "folder on a disk with room.")
        assert list(versions.iterdir()) == []  # nothing published, no .tmp- folder
        disk.make_room()
        assert table_snapshot(demo_store) == before
        assert httpx.post(f"{api}/versions", json={"name": "api.v1"}, headers=auth(tokens["engineer"]),
                          timeout=120).status_code == 201
