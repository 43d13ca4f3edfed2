"""Uploads all or nothing and size-limited; problem documents; version files as frozen and
nothing else (issue 28). Real HTTP on loopback against a real store file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import httpx

from annotator.people import api_tokens
from annotator.people.identity import LOCAL_USER
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth, freeze, run_file
from tests.waiting import wait_until


def _post_run(api: str, secret: str, path, **data) -> httpx.Response:
    return httpx.post(f"{api}/runs", headers=auth(secret), files={"file": (path.name, path.read_bytes())},
                      data={"system": "bm25", **data}, timeout=60)


def test_a_run_with_a_bad_line_near_its_end_is_refused_and_the_store_is_unchanged(demo_store, api, tokens, tmp_path):
    good = run_file(tmp_path, ["q001", "q002"], name="good.trec")
    assert _post_run(api, tokens["engineer"], good).status_code == 201
    before = table_snapshot(demo_store)
    bad = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 41)], name="nightly.trec", bad_line_at_end=True)
    r = _post_run(api, tokens["engineer"], bad, replace="true")
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert set(body) >= {"type", "title", "status", "detail", "instance"}
    assert body["status"] == 422 and body["instance"] == "/api/v1/runs"
    assert "nightly.trec" in body["detail"] and "line 120" in body["detail"], body["detail"]  # names the upload
    assert "golden-upload-" not in r.text and "Traceback" not in r.text  # not the temp copy's path, no trace
    after = table_snapshot(demo_store)
    after.pop("api_token_uses"), before.pop("api_token_uses")  # the request itself is audited
    after.pop("api_tokens"), before.pop("api_tokens")  # last_used_at moves
    assert after == before


def test_an_upload_over_the_limit_is_413_naming_the_limit_and_the_variable(demo_store, api, tokens, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("GOLDEN_API_MAX_UPLOAD_MB", "0.01")  # 10 KiB; the server reads it per request
    before = table_snapshot(demo_store)
    big = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 41)] * 10, name="big.trec")
    assert big.stat().st_size > 10 * 1024
    r = _post_run(api, tokens["engineer"], big)
    assert r.status_code == 413 and r.headers["content-type"] == "application/problem+json"
    assert "0.01 MB" in r.json()["detail"] and "GOLDEN_API_MAX_UPLOAD_MB" in r.json()["detail"]

    # without a Content-Length (chunked), refused as the bytes pass the limit
    boundary = "golden-test-boundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"system\"\r\n\r\nbm25\r\n--{boundary}\r\n"
            f"Content-Disposition: form-data; name=\"file\"; filename=\"big.trec\"\r\n\r\n").encode()

    def chunks() -> Iterator[bytes]:
        yield head
        data = big.read_bytes()
        for i in range(0, len(data), 4096):
            yield data[i:i + 4096]
        yield f"\r\n--{boundary}--\r\n".encode()

    r = httpx.post(f"{api}/runs", content=chunks(), timeout=60,
                   headers={**auth(tokens["engineer"]), "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 413, r.text
    assert "GOLDEN_API_MAX_UPLOAD_MB" in r.json()["detail"]
    after = table_snapshot(demo_store)
    for t in ("api_token_uses", "api_tokens"):
        after.pop(t), before.pop(t)
    assert after == before


def test_a_missing_field_is_422_naming_it(demo_store, api, tokens, tmp_path):
    f = run_file(tmp_path, ["q001"])
    r = httpx.post(f"{api}/runs", headers=auth(tokens["engineer"]), files={"file": (f.name, f.read_bytes())},
                   timeout=60)
    assert r.status_code == 422 and "system" in r.json()["detail"]
    r = httpx.get(f"{api}/pool", params={"k": "ten"}, headers=auth(tokens["engineer"]), timeout=60)
    assert r.status_code == 422 and r.json()["detail"].startswith("The request's k:")


def test_version_files_are_served_as_frozen_and_only_those(demo_store, api, tokens):
    freeze(demo_store, "golden.v1")
    h = auth(tokens["engineer"])
    m = httpx.get(f"{api}/versions/golden.v1", headers=h, timeout=60).json()
    assert m["files"]
    for name, meta in m["files"].items():
        r = httpx.get(f"{api}/versions/golden.v1/files/{name}", headers=h, timeout=60)
        assert r.status_code == 200
        assert hashlib.sha256(r.content).hexdigest() == meta["sha256"] == r.headers["x-golden-sha256"]
    assert json.loads(httpx.get(f"{api}/versions/golden.v1/files/manifest.json", headers=h,
                                timeout=60).content)["files"] == m["files"]
    # a file in the folder that the manifest does not list, and ways out of the folder: all 404
    from annotator.versions.versioning import versions_dir

    (versions_dir(demo_store) / "golden.v1" / "extra.txt").write_text("not frozen")
    (versions_dir(demo_store) / "secret.txt").write_text("outside")
    for probe in ("extra.txt", "..%2Fsecret.txt", "%2e%2e%2Fsecret.txt", "%2Fetc%2Fpasswd"):
        r = httpx.get(f"{api}/versions/golden.v1/files/{probe}", headers=h, timeout=60)
        assert r.status_code == 404, (probe, r.status_code)
        assert "outside" not in r.text and "not frozen" not in r.text
    r = httpx.get(f"{api}/versions/..%2F..%2Fetc/files/passwd", headers=h, timeout=60)
    assert r.status_code in (404, 422) and r.headers["content-type"] == "application/problem+json"
    r = httpx.get(f"{api}/versions/nope", headers=h, timeout=60)
    assert r.status_code == 404 and "nope" in r.json()["detail"]
    # probe A7: the body names the version, never the server's folder (the CLI may say it)
    where = str(versions_dir(demo_store).resolve())
    assert where not in r.text and str(versions_dir(demo_store)) not in r.text
    assert "the server's versions location" in r.json()["detail"]


def test_freezing_a_taken_name_is_409_with_the_clis_sentence(demo_store, api, tokens):
    h = auth(tokens["engineer"])
    assert httpx.post(f"{api}/versions", json={"name": "v1"}, headers=h, timeout=60).status_code == 201
    r = httpx.post(f"{api}/versions", json={"name": "v1"}, headers=h, timeout=60)
    assert r.status_code == 409 and "v1" in r.json()["detail"]


def test_every_answered_request_is_audited_with_its_status(demo_store, api, tokens):
    httpx.get(f"{api}/me", headers=auth(tokens["engineer"]), timeout=60)
    httpx.get(f"{api}/agreement", headers=auth(tokens["engineer"]), timeout=60)  # 403
    httpx.get(f"{api}/me", headers=auth("gst_nope"), timeout=60)  # 401
    info = next(t for t in api_tokens.list_tokens(demo_store, LOCAL_USER) if t.name == "t-engineer")
    expected = {(info.token_id, "GET", "/api/v1/me", 200, "ok", "127.0.0.1"),
                (info.token_id, "GET", "/api/v1/agreement", 403, "denied", "127.0.0.1"),
                (None, "GET", "/api/v1/me", 401, "unknown", "127.0.0.1")}
    _wait_for_audit(demo_store, expected)


def _wait_for_audit(store, expected: set) -> None:
    """Each use is audited once its answer has gone out: wait for the rows (bounded)."""
    wait_until(lambda: expected <= set(store.read("SELECT token_id, method, path, status, outcome, client "
                                                  "FROM api_token_uses")), f"the audit rows {expected}")


def _without_audit(snapshot: dict) -> dict:
    return {t: rows for t, rows in snapshot.items() if t not in ("api_token_uses", "api_tokens")}


def test_transcripts_answers_and_queries_refused_midway_leave_the_store_unchanged(demo_store, api, tokens, tmp_path):
    """Each importer behind the API is one transaction: a bad last line undoes the good ones."""
    from tests.http_api.conftest import transcripts_file

    t = transcripts_file(tmp_path, "ev-bad")
    t.write_text(t.read_text() + '{"evaluation_id": "ev-bad", "query_id": "q002"}\n')
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"query_id": "q001", "answer": "Twenty-five days."}\n'
                       '{"query_id": "q002", "answer": "Ask HR."}\n{"query_id": "no-such-query", "answer": "x"}\n')
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query_id": "n1", "text": "Where is the VPN guide?", "stratum": "lexical"}\n'
                       '{"query_id": "n2", "text": "", "stratum": "lexical"}\n')
    before = _without_audit(table_snapshot(demo_store))
    h = auth(tokens["engineer"])
    for endpoint, path, data in (("/transcripts", t, {}), ("/answers", answers, {"system": "bm25"}),
                                 ("/queries", queries, {})):
        r = httpx.post(f"{api}{endpoint}", headers=h, files={"file": (path.name, path.read_bytes())}, data=data,
                       timeout=60)
        assert r.status_code == 422, (endpoint, r.status_code, r.text)
        assert path.name in r.json()["detail"] or any(path.name in p for p in r.json().get("problems", [])), r.text
        assert _without_audit(table_snapshot(demo_store)) == before, endpoint


def test_concurrent_requests_share_the_store(demo_store, api, tokens):
    """Many callers at once on the one DuckDB handle (a CI fleet reading a manifest)."""
    from concurrent.futures import ThreadPoolExecutor

    freeze(demo_store, "v1")
    h = auth(tokens["engineer"])

    def get(i: int) -> int:
        path = ("/versions/v1", "/pool", "/evaluations", "/me")[i % 4]
        return httpx.get(f"{api}{path}", headers=h, timeout=60).status_code

    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(get, range(64)))
    assert codes == [200] * 64
    # each use is audited once its answer has gone out
    wait_until(lambda: demo_store.read("SELECT count(*) FROM api_token_uses WHERE status = 200")[0][0] >= 64,
               "every answered request to be audited")


def test_a_version_folder_path_loads_in_python_but_the_api_takes_names_only(demo_store, api, tokens, tmp_path,
                                                                              monkeypatch):
    """Issue 38 item 4: `load_version("some/folder/golden.v1")` (or ./golden.v1) opens a copied
    version folder, as `file://` did. The API must not: a name from a request that is a path
    would open a folder outside the versions location (probe A6), so its routes take names only
    (422), even where a real version folder sits at the path asked for."""
    import shutil

    from annotator.versions.versioning import versions_dir
    from golden_store.versions import load_version

    freeze(demo_store, "golden.v1")
    outside = tmp_path / "outside" / "golden.v1"  # a copy keeps its name (a renamed one fails its checks)
    shutil.copytree(versions_dir(demo_store) / "golden.v1", outside)
    assert load_version(str(outside)).manifest["dataset_version"] == "golden.v1"
    monkeypatch.chdir(outside.parent)
    assert load_version("./golden.v1").path == outside.parent / "golden.v1"
    monkeypatch.chdir(versions_dir(demo_store))  # the server's cwd: ../outside/golden.v1 would reach the copy
    rel = "..%2F" * len(versions_dir(demo_store).relative_to(tmp_path).parts) + "outside%2Fgolden.v1"
    h = auth(tokens["engineer"])
    for probe in (rel, str(outside).replace("/", "%2F"), "~%2Fgolden.v1", ".golden.v1"):
        for path in (f"/versions/{probe}", f"/versions/{probe}/files/manifest.json", f"/versions/{probe}/verify"):
            r = httpx.get(f"{api}{path}", headers=h, timeout=60)
            assert r.status_code in (404, 422), (path, r.status_code)
            assert "dataset_version" not in r.text
