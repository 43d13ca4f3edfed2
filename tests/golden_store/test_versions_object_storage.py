"""Issue 28 item 5: frozen versions in object storage (``GOLDEN_VERSIONS=s3://bucket/prefix``).

Against a local S3-compatible server the tests start (moto, tests/s3_server.py) over real HTTP,
through pyarrow's S3 client as a team's S3 or MinIO would be; plus fsspec's ``memory://`` and
pyarrow's ``file://``. The manifest is published last, so a half-published freeze is never a
version; digests and signatures are those of a local freeze of the same store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from annotator.demo import DEMO_DIR
from golden_store import freezing
from golden_store.core.errors import NotFoundError, VerificationError, VersionExistsError
from golden_store.freezing import freeze
from golden_store.versions import list_versions, load_version, signing, storage, verify, version_names
from golden_store.versions.storage import VersionsStorageError

GOLDEN = Path(sys.executable).parent / "golden"
_real_open_location = storage.open_location
FIXED = datetime(2026, 12, 6, 1, 0, 0)
DATA = ("documents.parquet", "queries.parquet", "spans.parquet", "judgments.parquet", "nuggets.parquet",
        "qrels.parquet", "judge_labels.parquet", "reference_answers.parquet", "answer_criteria.parquet")


def _s3_objects(s3_server, url: str) -> dict[str, bytes]:
    """Every object under ``url`` (s3://bucket/prefix), read with boto3: what is really stored."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    client = s3_server.client()
    out = {}
    for obj in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
        if obj["Key"].endswith("/"):  # a folder marker pyarrow's S3 client may write: not a file
            continue
        out[obj["Key"][len(prefix) + 1:]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def _key(s3_server, url: str, name: str, fname: str) -> str:
    """Where a published version's file is, under its name: ``manifest.json`` beside the
    prefix its manifest's sha256 names (issue 37), the data files under it."""
    if fname == "manifest.json":
        return f"{name}/{fname}"
    return f"{name}/{hashlib.sha256(_s3_objects(s3_server, url)[f'{name}/manifest.json']).hexdigest()}/{fname}"


def _put(s3_server, url: str, key: str, body: bytes) -> None:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    s3_server.client().put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=body)


def _golden(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=120)


def test_freeze_list_and_load_in_a_fresh_process_score_as_the_local_version(demo_store, s3_server, s3_versions,
                                                                            tmp_path, monkeypatch):
    """Frozen to S3, listed, then loaded in a fresh process by URL (`golden score --version
    s3://.../golden.v1`): the same qrels and the same scores as the same store frozen to a folder,
    byte-identical files and manifest, and the same Ed25519 signature."""
    monkeypatch.setattr(freezing, "utcnow", lambda: FIXED)  # one built_at: equal manifests compare whole
    _, pub, _ = signing.keygen(tmp_path / "team.key")
    key = signing.load_private_key(tmp_path / "team.key")
    local = freeze(demo_store, "golden.v1", actor="eng", note="n", versions_dir=tmp_path / "local", signing_key=key)
    remote = freeze(demo_store, "golden.v1", actor="eng", note="n", versions_dir=s3_versions, signing_key=key)
    assert remote.path == f"{s3_versions}/golden.v1"

    stored = _s3_objects(s3_server, s3_versions)
    keys = {fname: _key(s3_server, s3_versions, "golden.v1", fname) for fname in (*DATA, "manifest.json", "signature.json")}
    assert sorted(stored) == sorted(keys.values())
    for fname in (*DATA, "manifest.json", "signature.json"):
        assert stored[keys[fname]] == (Path(local.path) / fname).read_bytes(), fname
    assert remote.manifest["content_digest"] == local.manifest["content_digest"]

    rows = list_versions(s3_versions)
    assert [(r["name"], r["signed"], r["error"]) for r in rows] == [("golden.v1", True, None)]
    assert rows[0]["data_digest"] == local.manifest["data_digest"]

    # a fresh process, another cache: `golden score` loads by URL (checks on: hashes, signature)
    run = str(DEMO_DIR / "runs" / "bm25.trec")
    env = {"GOLDEN_VERSIONS_CACHE": str(tmp_path / "fresh-cache"), "GOLDEN_VERIFY_KEY": str(pub)}
    by_url = _golden("score", "--version", f"{s3_versions}/golden.v1", "--run", run, "-m", "nDCG@10", "-m", "R@10",
                     "--json", "--per-query", env=env, cwd=tmp_path)
    assert by_url.returncode == 0, by_url.stderr
    env_local = {"GOLDEN_VERSIONS": str(tmp_path / "local"), "GOLDEN_VERIFY_KEY": str(pub)}
    by_folder = _golden("score", "--version", "golden.v1", "--run", run, "-m", "nDCG@10", "-m", "R@10", "--json",
                        "--per-query", env=env_local, cwd=tmp_path)
    assert by_folder.returncode == 0, by_folder.stderr
    assert json.loads(by_url.stdout) == json.loads(by_folder.stdout)
    assert json.loads(by_url.stdout)["per_query"], "scores per query, not an empty result"

    code = ("import json, sys; from golden_store.versions import load_version; "
            "v = load_version(sys.argv[1]); print(json.dumps({'qrels': v.qrels(), 'digest': v.manifest['data_digest']}))")
    fresh = subprocess.run([sys.executable, "-c", code, f"{s3_versions}/golden.v1"], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=120)
    assert fresh.returncode == 0, fresh.stderr
    got = json.loads(fresh.stdout)
    assert got == {"qrels": load_version("golden.v1", tmp_path / "local").qrels(),
                   "digest": local.manifest["data_digest"]}


class _DroppingHandler(pafs.FileSystemHandler):
    """The real S3 filesystem, except that upload number ``fail_at`` breaks after its first
    bytes (a dropped connection), and with ``dead`` every later call fails too: the freezing
    process is gone and cleans nothing up."""

    def __init__(self, fs: Any, fail_at: int, *, dead: bool = False) -> None:
        self.fs, self.fail_at, self.dead = fs, fail_at, dead
        self.uploads = 0
        self.broken = False

    def _alive(self) -> None:
        if self.broken and self.dead:
            raise OSError("connection reset by peer (the process is gone)")

    def get_type_name(self) -> str:
        return "dropping"

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[Any]:
        self._alive()
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> list[Any]:
        self._alive()
        return self.fs.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._alive()
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._alive()
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not in these tests")

    def delete_file(self, path: str) -> None:
        self._alive()
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        self._alive()
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        self._alive()
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        self._alive()
        self.uploads += 1
        if self.uploads != self.fail_at:
            return self.fs.open_output_stream(path, metadata=metadata)
        handler = self

        class Dropping:  # the connection drops on the first bytes: the object never completes
            closed = False

            def write(self, data: bytes) -> int:
                handler.broken = True
                raise OSError("connection reset by peer (injected on the first bytes)")

            def close(self) -> None:
                self.closed = True

            def flush(self) -> None:
                pass

        return pa.PythonFile(Dropping(), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        raise OSError("not in these tests")


def _dropping(monkeypatch, fail_at: int, *, dead: bool = False) -> list[_DroppingHandler]:
    """Make the next freezes publish through a connection that drops on upload ``fail_at``."""
    real = storage.open_location
    handlers: list[_DroppingHandler] = []

    def open_location(url: str, filesystem: Any = None) -> storage.RemoteVersions:
        loc = real(url)
        handlers.append(_DroppingHandler(loc.fs, fail_at, dead=dead))
        return storage.RemoteVersions(loc.url, pafs.PyFileSystem(handlers[-1]), loc.root)

    monkeypatch.setattr(storage, "open_location", open_location)
    return handlers


def test_a_publish_that_drops_midway_publishes_nothing(demo_store, s3_server, s3_versions, monkeypatch):
    """The 4th upload (of 7 data files, then the manifest) drops: the freeze fails with one
    sentence, the files already uploaded are removed, nothing is listed and loading says there
    is no such version; the same name then freezes fine."""
    handlers = _dropping(monkeypatch, fail_at=4)
    with pytest.raises(VersionsStorageError, match=r"GOLDEN_VERSIONS=s3://.*uploading golden\.v1/judgments\.parquet"):
        freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    assert handlers[0].uploads == 4
    monkeypatch.setattr(storage, "open_location", _real_open_location)  # the connection is fine again
    assert _s3_objects(s3_server, s3_versions) == {}
    assert list_versions(s3_versions) == [] and version_names(s3_versions) == []
    with pytest.raises(NotFoundError, match=r"No frozen version 'golden.v1' in s3://.*\(known: none\)"):
        load_version("golden.v1", s3_versions)
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    assert [r["name"] for r in list_versions(s3_versions)] == ["golden.v1"]


def test_a_publisher_killed_midway_leaves_an_invisible_partial_that_is_swept(demo_store, s3_server, s3_versions,
                                                                            monkeypatch):
    """The process dies after 3 data files (no cleanup): the files are in the bucket without a
    manifest, never listed; loading says the version is incomplete; the name is refused while
    the leftover is fresh, and once swept it freezes."""
    _dropping(monkeypatch, fail_at=4, dead=True)
    with pytest.raises(VersionsStorageError):
        freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    monkeypatch.setattr(storage, "open_location", _real_open_location)
    left = _s3_objects(s3_server, s3_versions)
    assert sorted(k.rsplit("/", 1)[1] for k in left) == ["documents.parquet", "queries.parquet", "spans.parquet"]
    assert len({k.rsplit("/", 1)[0] for k in left}) == 1  # under the freeze's own prefix of golden.v1/
    assert list_versions(s3_versions) == [] and version_names(s3_versions) == []
    with pytest.raises(VerificationError, match="incomplete") as err:
        load_version(f"{s3_versions}/golden.v1")
    assert "manifest.json is missing" in err.value.problems[0]
    with pytest.raises(VersionExistsError, match="being published"):
        freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    assert storage.open_location(s3_versions).sweep_partial() == []  # fresh: could be a freeze still running
    assert storage.open_location(s3_versions).sweep_partial(max_age_s=0) == ["golden.v1"]
    assert _s3_objects(s3_server, s3_versions) == {}
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    assert load_version(f"{s3_versions}/golden.v1").manifest["dataset_version"] == "golden.v1"


def test_an_existing_name_is_refused_and_left_unchanged(demo_store, s3_server, s3_versions):
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    before = _s3_objects(s3_server, s3_versions)
    with pytest.raises(VersionExistsError, match=r"Version 'golden.v1' already exists at s3://.*/golden.v1"):
        freeze(demo_store, "golden.v1", actor="someone-else", note="again", versions_dir=s3_versions)
    assert _s3_objects(s3_server, s3_versions) == before


def test_verify_and_load_detect_a_tampered_remote_file(demo_store, s3_server, s3_versions):
    """A data file rewritten in the bucket: verify re-hashes the remote files and names it;
    load_version refuses even with the untampered copy in its cache."""
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    url = f"{s3_versions}/golden.v1"
    load_version(url)
    assert verify(url).ok
    key = _key(s3_server, s3_versions, "golden.v1", "queries.parquet")
    queries = _s3_objects(s3_server, s3_versions)[key]
    _put(s3_server, s3_versions, key, queries + b"\0")
    rep = verify("golden.v1", s3_versions)
    assert not rep.ok and any(p.startswith("queries.parquet: sha256") for p in rep.problems), rep.problems
    with pytest.raises(VerificationError, match="failed its integrity check") as err:
        load_version(url)
    assert any(p.startswith("queries.parquet: sha256") for p in err.value.problems)


def test_a_damaged_cache_copy_is_fetched_again_not_a_dead_end(demo_store, s3_server, s3_versions):
    """Issue 37, V12: a byte flipped in the local cache copy (same size, so a size check keeps
    it) of a good version in the bucket: loading detects the digest mismatch, fetches the file
    again and loads, and the cache holds the bucket's bytes again (a damaged file in the bucket
    itself is still refused: test_verify_and_load_detect_a_tampered_remote_file)."""
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    url = f"{s3_versions}/golden.v1"
    good = load_version(url)
    qrels = good.qrels()
    stored = _s3_objects(s3_server, s3_versions)
    cached = Path(good.path) / "judgments.parquet"
    damaged = bytearray(cached.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    cached.write_bytes(bytes(damaged))
    again = load_version(url)
    assert again.path == good.path and again.qrels() == qrels
    assert cached.read_bytes() == stored[_key(s3_server, s3_versions, "golden.v1", "judgments.parquet")]
    assert load_version(url).manifest["data_digest"] == good.manifest["data_digest"]


def test_an_unlisted_file_in_the_bucket_is_reported(demo_store, s3_server, s3_versions):
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    _put(s3_server, s3_versions, "golden.v1/extra.parquet", b"PAR1")
    rep = verify(f"{s3_versions}/golden.v1")
    assert "extra.parquet: file not listed in the manifest" in rep.problems


def test_memory_and_file_urls(demo_store, tmp_path):
    """An fsspec URL (memory://) goes through object storage; a file:// URL is a folder on this
    machine and keeps the folder's code path (published by an atomic rename): both freeze,
    list, load by URL, verify and refuse an existing name."""
    bucket = f"golden-{uuid.uuid4().hex[:8]}"  # fsspec's memory filesystem lives as long as the process
    for url in (f"memory://{bucket}/versions", f"file://{tmp_path}/shared"):
        res = freeze(demo_store, "golden.v1", actor="eng", versions_dir=url)
        assert [r["name"] for r in list_versions(url)] == ["golden.v1"]
        assert load_version(f"{url}/golden.v1").qrels() == load_version("golden.v1", url).qrels()
        assert verify("golden.v1", url).ok and res.manifest["n_queries"] == 40
        with pytest.raises(VersionExistsError):
            freeze(demo_store, "golden.v1", actor="eng", versions_dir=url)
    assert res.path == tmp_path / "shared" / "golden.v1" and (res.path / "manifest.json").is_file()
    import fsspec

    memory = fsspec.filesystem("memory")
    assert sorted(p.rsplit("/", 1)[1] for p in memory.find(f"/{bucket}/versions/golden.v1")) == sorted(
        [*DATA, "manifest.json"])


def test_bad_locations_say_one_sentence_naming_golden_versions(s3_server, s3_versions, monkeypatch):
    with pytest.raises(VersionsStorageError, match=r"^GOLDEN_VERSIONS=nosuch://x/y is neither a folder nor a "
                                                   r"filesystem URL this machine can open .*install the fsspec"):
        list_versions("nosuch://x/y")
    with pytest.raises(VersionsStorageError,
                       match=r"^GOLDEN_VERSIONS=s3://no-such-bucket/v: bucket 'no-such-bucket' does not exist"):
        list_versions("s3://no-such-bucket/v")
    # credentials in the URL are never echoed
    with pytest.raises(VersionsStorageError) as err:
        list_versions("s3://AKIDSECRET:hunter2@no-such-bucket/v")
    assert "hunter2" not in str(err.value) and "AKIDSECRET" not in str(err.value)


def test_an_unreachable_endpoint_says_so(s3_versions, monkeypatch):
    """(Slow: the S3 client retries with backoff before giving up.)"""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(VersionsStorageError, match=r"could not be reached .*AWS_ENDPOINT_URL"):
        list_versions(s3_versions)


def test_refused_credentials_say_what_to_set(monkeypatch):
    from tests.s3_server import auth_server

    with auth_server("locked") as endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "not-a-key-this-store-knows")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-never-shown")
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        with pytest.raises(VersionsStorageError) as err:
            list_versions("s3://locked/versions")
    text = str(err.value)
    assert text.startswith("GOLDEN_VERSIONS=s3://locked/versions: the object store refused the credentials")
    assert "AWS_ACCESS_KEY_ID" in text and "wrong-secret-never-shown" not in text


def test_the_cli_with_golden_versions_in_s3(demo_store, s3_server, s3_versions, tmp_path):
    """`golden freeze / versions / verify / diff / export / versions --sweep` with GOLDEN_VERSIONS
    an s3:// URL, each a fresh process; then a bad bucket is one line on stderr naming it."""
    demo_store.close()  # the CLI processes open the store file
    env = {"GOLDEN_VERSIONS": s3_versions}
    for name in ("golden.v1", "golden.v2"):
        r = _golden("freeze", name, "--note", "ci", env=env, cwd=tmp_path)
        assert r.returncode == 0 and f"Frozen {name} at {s3_versions}/{name}:" in r.stdout, r.stderr
    r = _golden("versions", "--json", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(v["name"] for v in json.loads(r.stdout)) == ["golden.v1", "golden.v2"]
    r = _golden("verify", "golden.v1", env=env, cwd=tmp_path)
    assert r.returncode == 0 and "golden.v1: OK (all file hashes match" in r.stdout, r.stderr
    r = _golden("diff", "golden.v1", "golden.v2", "--json", env=env, cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["queries"] == {"added": [], "removed": [], "changed": []}
    r = _golden("export", "golden.v2", "--format", "trec", "--out", str(tmp_path / "out"), env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    qrels = (tmp_path / "out" / "qrels.txt").read_text()
    assert qrels and qrels.splitlines()[0].split()[1] == "0"
    r = _golden("freeze", "golden.v1", env=env, cwd=tmp_path)
    assert r.returncode == 2 and "already exists at s3://" in r.stderr
    _put(s3_server, s3_versions, "golden.v3/documents.parquet", b"PAR1")  # a leftover, fresh: not swept
    r = _golden("versions", "--sweep", env=env, cwd=tmp_path)
    assert r.returncode == 0 and "No stale leftovers" in r.stdout, r.stderr
    r = _golden("versions", env={"GOLDEN_VERSIONS": "s3://no-such-bucket/versions"}, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "GOLDEN_VERSIONS=s3://no-such-bucket/versions: bucket" in r.stderr


def test_the_versions_page_lists_verifies_and_freezes_into_s3(demo_store, s3_versions, monkeypatch):
    """The Versions page with GOLDEN_VERSIONS=s3://...: it says where versions live, lists the
    published one (not a half-published one), verifies it, and a freeze on the page lands there."""
    from annotator.process import context
    from tests.app_pages.test_app_roles import app_as

    monkeypatch.setenv("GOLDEN_VERSIONS", s3_versions)
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    demo_store.close()
    context.close_all()
    at = app_as(None).switch_page("app_pages/versions.py").run()
    assert not at.exception
    assert any(s3_versions in c.value.replace("\\", "") for c in at.caption)
    assert list(at.dataframe[0].value["name"]) == ["golden.v1"]
    at.button(key="v_verify_btn").click().run()
    assert not at.exception and any("golden.v1 verified" in s.value.replace("\\", "") for s in at.success)
    next(w for w in at.text_input if w.label == "Version name").input("golden.v2")
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception and any("Frozen golden.v2" in s.value.replace("\\", "") for s in at.success)
    # newest first (S3 times are whole seconds: on a tie the name descending decides, the same order)
    assert version_names(s3_versions) == ["golden.v2", "golden.v1"]


class _MeetingHandler(_DroppingHandler):
    """The real S3 filesystem, except that a freeze's first upload waits until the other freeze
    of its pair has reached its own first upload: both have passed the check that the name is
    free, as two freezes started in the same instant do (probe V9, 1 pair in 8). No upload fails."""

    def __init__(self, fs: Any, meet: threading.Barrier) -> None:
        super().__init__(fs, fail_at=0)
        self.meet = meet

    def get_type_name(self) -> str:
        return "meeting"

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        if self.uploads == 0:
            self.meet.wait(timeout=60)
        return super().open_output_stream(path, metadata)


def test_racing_freezes_of_one_name_publish_one_whole_version_and_tell_the_loser(
        demo_store, s3_server, s3_versions, _duckdb_templates, tmp_path, monkeypatch):
    """Issue 37, V9: 12 pairs of freezes of one name, with different content (the second store
    has one more question), into one bucket, each pair past the name check together. For every
    name: exactly one freeze is told "Frozen"; the other is refused with a sentence saying the
    name was taken and nothing of it was published there; the published version verifies and is
    the winner's (its note and question count); under the name there is nothing but the
    winner's manifest and files. Before the fix the loser's data files replaced the winner's
    (verify failed) and both could be told they won."""
    from golden_store.db.store import Store
    from golden_store.live import queries

    other_db = tmp_path / "other" / "golden.duckdb"
    other_db.parent.mkdir()
    shutil.copyfile(_duckdb_templates["demo"], other_db)
    other = Store.open(other_db)
    recs = queries.parse_query_file(
        "extra.csv", b"id,text,stratum\nq-extra,how long is the notice period for a contractor?,paraphrase\n",
        queries.known_strata(other))
    queries.import_queries(other, recs, actor="eng")
    meeting: dict[str, threading.Barrier] = {}

    def open_location(url: str, filesystem: Any = None) -> storage.RemoteVersions:
        loc = _real_open_location(url)
        return storage.RemoteVersions(loc.url, pafs.PyFileSystem(_MeetingHandler(loc.fs, meeting["pair"])), loc.root)

    monkeypatch.setattr(storage, "open_location", open_location)
    try:
        for i in range(12):
            name = f"race.v{i:02d}"
            meeting["pair"] = threading.Barrier(2)
            outcome: dict[str, Any] = {}

            def run(label: str, store: Any, name: str = name, outcome: dict[str, Any] = outcome) -> None:
                try:
                    outcome[label] = freeze(store, name, actor="eng", note=label, versions_dir=s3_versions)
                except VersionExistsError as exc:
                    outcome[label] = exc
            threads = [threading.Thread(target=run, args=(label, store))
                       for label, store in (("first", demo_store), ("second", other))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert sorted(outcome) == ["first", "second"], outcome
            won = [label for label, res in outcome.items() if isinstance(res, freezing.FreezeResult)]
            assert len(won) == 1, (name, outcome)
            lost = "second" if won == ["first"] else "first"
            message = str(outcome[lost])
            assert f"Version {name!r} was taken at {s3_versions}/{name} by another freeze" in message, message
            assert "nothing of this freeze was published under that name" in message

            rep = verify(name, s3_versions)
            assert rep.ok, (name, rep.problems)
            loaded = load_version(f"{s3_versions}/{name}")
            winner = outcome[won[0]].manifest
            assert loaded.manifest["note"] == won[0] and loaded.manifest["data_digest"] == winner["data_digest"]
            assert len(loaded.queries) == winner["n_queries"] == (41 if won == ["second"] else 40)
            stored = _s3_objects(s3_server, f"{s3_versions}/{name}")
            prefix = hashlib.sha256(stored["manifest.json"]).hexdigest()
            assert sorted(stored) == sorted(["manifest.json", *(f"{prefix}/{f}" for f in DATA)])
    finally:
        other.close()


def test_a_version_published_before_the_per_freeze_prefix_still_lists_loads_and_verifies(
        demo_store, s3_server, s3_versions, tmp_path, monkeypatch):
    """A version published by an older studio has its files beside the manifest
    (``<name>/queries.parquet``, no per-freeze prefix): it is listed as signed, loads with the
    verify key set and verifies; a file tampered there is still caught."""
    _, pub, _ = signing.keygen(tmp_path / "team.key")
    key = signing.load_private_key(tmp_path / "team.key")
    local = freeze(demo_store, "old.v1", actor="eng", versions_dir=tmp_path / "local", signing_key=key)
    for fname in (*DATA, "signature.json", "manifest.json"):
        _put(s3_server, s3_versions, f"old.v1/{fname}", (Path(local.path) / fname).read_bytes())
    assert [(r["name"], r["signed"], r["error"]) for r in list_versions(s3_versions)] == [("old.v1", True, None)]
    monkeypatch.setenv("GOLDEN_VERIFY_KEY", str(pub))
    url = f"{s3_versions}/old.v1"
    assert load_version(url).qrels() == load_version("old.v1", tmp_path / "local").qrels()
    assert verify(url).ok
    _put(s3_server, s3_versions, "old.v1/spans.parquet", (Path(local.path) / "spans.parquet").read_bytes() + b"\0")
    assert any(p.startswith("spans.parquet: sha256") for p in verify(url).problems)


def test_a_dead_losers_files_under_a_published_name_are_swept_once_stale(demo_store, s3_server, s3_versions):
    """A freeze that lost the name and died before removing its files leaves them under a
    prefix the published manifest does not name: loading and verify ignore them, a fresh one is
    kept (its freeze may still be cleaning up), a stale one is swept, and the version's own files
    stay and verify."""
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=s3_versions)
    before = _s3_objects(s3_server, s3_versions)
    loser = "0" * 64
    _put(s3_server, s3_versions, f"golden.v1/{loser}/queries.parquet", b"PAR1 the loser's")
    assert verify(f"{s3_versions}/golden.v1").ok
    loc = storage.open_location(s3_versions)
    assert loc.sweep_partial() == []
    assert f"golden.v1/{loser}/queries.parquet" in _s3_objects(s3_server, s3_versions)
    assert loc.sweep_partial(max_age_s=0) == ["golden.v1"]
    assert _s3_objects(s3_server, s3_versions) == before
    assert verify(f"{s3_versions}/golden.v1").ok and loc.sweep_partial(max_age_s=0) == []


def test_an_endpoint_named_in_the_url_takes_the_create_only_put_too(demo_store, s3_server, s3_versions, monkeypatch):
    """GOLDEN_VERSIONS=s3://bucket/prefix?endpoint_override=HOST:PORT&scheme=http with no
    AWS_ENDPOINT_URL in the environment: the manifest's conditional PUT goes to that endpoint
    (where the data files went), so the freeze publishes and a second freeze of the name is refused."""
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    host = s3_server.endpoint.removeprefix("http://")
    url = f"{s3_versions}?endpoint_override={host}&scheme=http"
    freeze(demo_store, "golden.v1", actor="eng", versions_dir=url)
    stored = _s3_objects(s3_server, s3_versions)
    assert "golden.v1/manifest.json" in stored and len(stored) == len(DATA) + 1
    assert verify("golden.v1", url).ok
    with pytest.raises(VersionExistsError, match="already exists"):
        freeze(demo_store, "golden.v1", actor="eng", versions_dir=url)
