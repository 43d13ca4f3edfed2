"""Frozen versions in object storage: ``GOLDEN_VERSIONS=s3://bucket/prefix`` (or any pyarrow or
fsspec filesystem URL: ``gs://``, ``file://``, ``memory://``, ...).

Layout, one "folder" per version: ``<prefix>/<name>/manifest.json``, and the data files (and
``signature.json``) under ``<prefix>/<name>/<sha256 of the manifest's bytes>/``. An object
store has no rename, so a freeze is published in an order that makes it atomic: the freeze is
written and checked in a local folder as always (digests, signature), its files are uploaded
under that key prefix, which belongs to this freeze alone (issue 37, V9: two freezes racing for
one name once published one's ``queries.parquet`` under the other's manifest), and
``manifest.json`` goes LAST, created only if absent. The manifest's PUT is the commit point:
listing and loading see only names that have a manifest, a reader takes the data files from
the prefix the manifest's bytes name, so whichever freeze wins, its manifest and its files go
together; a leftover without a manifest is swept once it is stale
(:meth:`RemoteVersions.sweep_partial`). Versions published before issue 37 keep their files
directly under ``<name>/`` and load and verify as before (:meth:`RemoteVersions.layout`).

Create-only: on ``s3://`` the manifest is PUT with ``If-None-Match: *`` (through boto3; S3,
MinIO and moto refuse the second writer with 412), so exactly one of two racing freezes is
told "Frozen" and the other that the name was taken and nothing of it was published under it.
Other filesystems (``gs://``, fsspec's) offer pyarrow no create-only write: there the manifest
is checked for, written and read back, which keeps every published version whole (its files
are its own) but two freezes racing within that window may both be told they won; keep one
freezer per name there.

Credentials come only from the environment and the standard configuration of the driver
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_PROFILE``/``AWS_ENDPOINT_URL``, instance
roles, ...); nothing here stores or prints them (a URL is shown without user info and query).

Folders keep their own code path in :mod:`golden_store.versions.folders` and
:mod:`golden_store.freezing`; this module is used only for a URL.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from golden_store.core.errors import GoldenError, VersionExistsError

MANIFEST = "manifest.json"
ENV = "GOLDEN_VERSIONS"
CACHE_ENV = "GOLDEN_VERSIONS_CACHE"
STALE_PARTIAL_S = 30 * 60  # a name without a manifest, untouched this long, is an interrupted publish
_CHUNK = 1 << 20
_ATTEMPT_RE = re.compile(r"^[0-9a-f]{64}$")  # a freeze's prefix under its name (attempt_prefix)

T = TypeVar("T")


class VersionsStorageError(GoldenError):
    """The versions location (a URL) cannot be opened, reached or written; the message names
    ``GOLDEN_VERSIONS`` and what to do, in one sentence."""


def display_url(url: str) -> str:
    """``url`` without user info (``key:secret@``) and query string: safe to print."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)(?:[^/@]*@)?([^?#]*)", url)
    return (m.group(1) + m.group(2)).rstrip("/") if m else url.split("?", 1)[0]


def _explain(url: str, what: str, exc: BaseException) -> VersionsStorageError:
    """One sentence for a failed call on the store, by what the driver said (AWS error codes
    are stable words in pyarrow's messages)."""
    shown = display_url(url)
    text = str(exc)
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text or "bucket does not exist" in text.lower():
        bucket = shown.split("://", 1)[-1].split("/", 1)[0]
        return VersionsStorageError(
            f"{ENV}={shown}: bucket {bucket!r} does not exist ({what}); create it, or set {ENV} to a bucket "
            f"that exists.")
    if any(code in text for code in ("INVALID_ACCESS_KEY_ID", "SIGNATURE_DOES_NOT_MATCH", "ACCESS_DENIED",
                                     "InvalidAccessKeyId", "AccessDenied", "credentials", "EXPIRED_TOKEN")):
        return VersionsStorageError(
            f"{ENV}={shown}: the object store refused the credentials ({what}); set AWS_ACCESS_KEY_ID and "
            f"AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) for an account that may read and write it.")
    if any(w in text for w in ("NETWORK_CONNECTION", "Couldn't connect", "Connection refused", "curlCode",
                               "Could not resolve", "Could not connect", "Timeout was reached")):
        return VersionsStorageError(
            f"{ENV}={shown}: the object store could not be reached ({what}); check the URL and "
            f"AWS_ENDPOINT_URL, and that the service is up.")
    first = text.split("(Request ID", 1)[0].strip().splitlines()[0] if text.strip() else type(exc).__name__
    return VersionsStorageError(f"{ENV}={shown}: {what} failed ({first[:200]}); check the URL and access.")


def open_location(url: str, filesystem: Any = None) -> RemoteVersions:
    """The versions location at ``url``: pyarrow's own filesystem for its schemes (s3, gs,
    hdfs, file), else fsspec's (memory, az, ... when its driver is installed). ``filesystem``
    (a ``pyarrow.fs.FileSystem``) replaces the one the URL names, keeping the URL's path."""
    shown = display_url(url)
    if filesystem is not None:
        return RemoteVersions(shown, filesystem, url.split("://", 1)[1].split("?", 1)[0].rstrip("/"))
    try:
        fs, root = pafs.FileSystem.from_uri(url)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as pa_exc:
        try:
            import fsspec
            from pyarrow.fs import FSSpecHandler, PyFileSystem

            ffs, root = fsspec.core.url_to_fs(url)
            fs = PyFileSystem(FSSpecHandler(ffs))
        except (ImportError, ValueError) as exc:
            scheme = url.split("://", 1)[0]
            raise VersionsStorageError(
                f"{ENV}={shown} is neither a folder nor a filesystem URL this machine can open (no pyarrow or "
                f"fsspec driver for {scheme}://: {str(exc) or pa_exc}); use a folder, s3://bucket/prefix, "
                f"gs://bucket/prefix or file:///path, or install the fsspec driver for {scheme}.") from None
    except (OSError, pa.ArrowException) as exc:
        raise _explain(url, "opening it", exc) from None
    return RemoteVersions(shown, fs, str(root).rstrip("/"))


@dataclass(frozen=True, eq=False)
class RemoteVersions:
    """Versions under one prefix of a filesystem. ``url`` is for messages only (no secrets)."""

    url: str
    fs: Any  # pyarrow.fs.FileSystem
    root: str

    def __str__(self) -> str:
        return self.url

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts]) if self.root else "/".join(parts)

    def where(self, name: str, file: str | None = None) -> str:
        """The URL of a version (or one of its files), for messages."""
        return "/".join([self.url, name, *([file] if file else [])])

    @contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        try:
            yield
        except VersionsStorageError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise _explain(self.url, what, exc) from None

    def _guard(self, what: str, fn: Callable[[], T]) -> T:
        with self._calling(what):
            return fn()
        raise AssertionError("unreachable")  # pragma: no cover - _calling re-raises

    # ---- listing ------------------------------------------------------------------------------

    def _listing(self, path: str, recursive: bool, what: str) -> list[Any]:
        """FileInfos under ``path``; none when the prefix is absent, but a missing bucket is an
        error (``allow_not_found`` would list one as empty: "no versions" instead of the cause)."""
        def ls() -> list[Any]:
            try:
                return list(self.fs.get_file_info(pafs.FileSelector(path, recursive=recursive)))
            except FileNotFoundError as exc:
                if "NO_SUCH_BUCKET" in str(exc) or "NoSuchBucket" in str(exc):
                    raise
                return []
        return self._guard(what, ls)

    def scan(self) -> dict[str, dict[str, Any]]:
        """{version name: {path under the name: FileInfo}} for every folder directly under the
        prefix (names starting with '.' skipped), from one recursive listing. A data file of
        the current layout is ``<manifest sha256>/<file>``."""
        infos = self._listing(self.root, True, "listing the versions")
        out: dict[str, dict[str, Any]] = {}
        base = len(self.root) + 1 if self.root else 0
        for info in infos:
            rel = info.path[base:].strip("/")
            parts = rel.split("/", 1)
            if len(parts) != 2 or parts[0].startswith(".") or info.type != pafs.FileType.File:
                continue
            out.setdefault(parts[0], {})[parts[1]] = info
        return out

    def version_names(self) -> list[str]:
        """Published versions (those with a manifest), newest manifest first, name descending
        on ties: the order of the folder listing (:func:`golden_store.versions.version_names`)."""
        keyed = [(files[MANIFEST].mtime_ns or 0, name) for name, files in self.scan().items() if MANIFEST in files]
        return [name for _, name in sorted(keyed, reverse=True)]

    def files(self, name: str) -> dict[str, Any]:
        """{path under the name: FileInfo} of everything under one version's folder, the
        per-freeze prefixes included (empty when nothing is there)."""
        base = len(self._path(name)) + 1
        infos = self._listing(self._path(name), True, f"listing {name}")
        return {i.path[base:].strip("/"): i for i in infos if i.type == pafs.FileType.File}

    @staticmethod
    def layout(files: dict[str, Any], manifest: bytes) -> dict[str, str]:
        """{local file name: path under the version's name} of the files that make up the
        version whose manifest has these bytes: those under the prefix the manifest's sha256
        names, plus any other file directly beside the manifest (none is expected: the checks
        then report it as unlisted). A version published before issue 37 has no such prefix:
        its files are the ones beside the manifest. Other freezes' prefixes (a loser's, an
        interrupted one's) are never part of it."""
        prefix = attempt_prefix(manifest) + "/"
        out = {rel: rel for rel in files if "/" not in rel and rel != MANIFEST}
        out.update({rel[len(prefix):]: rel for rel in files
                    if rel.startswith(prefix) and "/" not in rel[len(prefix):]})
        return out

    def exists(self, name: str) -> bool:
        """Whether version ``name`` is published (its manifest is there)."""
        info = self._guard(f"looking for {name}", lambda: self.fs.get_file_info(self._path(name, MANIFEST)))
        return bool(info.type == pafs.FileType.File)

    # ---- reading ------------------------------------------------------------------------------

    def read_bytes(self, name: str, file: str) -> bytes:
        """One file's bytes (``file`` may be a path under the name: ``<prefix>/<file>``)."""
        def read() -> bytes:
            with self.fs.open_input_stream(self._path(name, file)) as fh:
                return bytes(fh.read())
        return self._guard(f"reading {name}/{file}", read)

    def download(self, name: str, file: str, dest: Path) -> None:
        """Copy one file (a path under the name) to ``dest`` (written beside it first and
        renamed: a reader of ``dest`` never sees half a file)."""
        part = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}.part")

        def copy() -> None:
            with self.fs.open_input_stream(self._path(name, file)) as src, part.open("wb") as out:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
            os.replace(part, dest)
        try:
            self._guard(f"downloading {name}/{file}", copy)
        finally:
            part.unlink(missing_ok=True)

    # ---- publishing ---------------------------------------------------------------------------

    def check_free(self, name: str, *, max_age_s: float = STALE_PARTIAL_S) -> None:
        """Refuse a name that is published, or being published (files without a manifest,
        touched within ``max_age_s``); a stale leftover of an interrupted publish is removed."""
        files = self.files(name)
        if MANIFEST in files:
            raise VersionExistsError(
                f"Version {name!r} already exists at {self.where(name)}; a frozen version never changes. "
                f"Pick a new name (e.g. {name}-2).")
        if files and not self._is_stale(files, max_age_s):
            raise VersionExistsError(
                f"Version {name!r} is being published at {self.where(name)} (files without a manifest, "
                f"written in the last {int(max_age_s // 60)} minutes); pick another name, or retry once that "
                f"freeze has finished or its leftovers are swept.")
        if files:
            self.delete(name)

    def publish(self, name: str, folder: Path, files: list[str]) -> None:
        """Upload ``files`` from ``folder`` to ``<prefix>/<name>/<sha256 of its manifest>/``,
        then ``manifest.json`` last (the commit point), created only if no manifest is there
        (:meth:`_create_manifest`). A freeze that loses the name to another is refused with
        :class:`VersionExistsError` and its own prefix removed: nothing of it is published under
        the name, and the winner's files (under the winner's prefix) were never touched. On a
        failure the files uploaded so far are removed (best effort; what is left has no manifest,
        is never listed and is swept when stale). A failed upload is closed, not aborted
        (pyarrow's streams have no abort): for a large file an S3 multipart upload may complete
        with the parts sent so far, as an object no manifest names, which is what this removes."""
        self.check_free(name)
        manifest = (folder / MANIFEST).read_bytes()
        prefix = attempt_prefix(manifest)
        if self.fs.type_name not in ("s3", "gcs"):  # a filesystem with real folders needs one
            self._guard(f"creating {name}/", lambda: self.fs.create_dir(self._path(name, prefix), recursive=True))
        uploaded: list[str] = []
        try:
            for fname in files:
                self._upload(folder / fname, name, fname, f"{prefix}/{fname}")
                uploaded.append(f"{prefix}/{fname}")
            won = self._create_manifest(name, manifest)
        except BaseException:
            self._remove(name, uploaded)
            raise
        if not won:
            try:
                theirs = self.read_bytes(name, MANIFEST)
            except VersionsStorageError:
                theirs = b""
            if attempt_prefix(theirs) != prefix:  # identical manifests share the prefix: keep it
                self._remove(name, uploaded)
            raise VersionExistsError(
                f"Version {name!r} was taken at {self.where(name)} by another freeze publishing at the same time; "
                f"nothing of this freeze was published under that name. Freeze again under a new name "
                f"(e.g. {name}-2).")

    def _create_manifest(self, name: str, manifest: bytes) -> bool:
        """PUT ``<name>/manifest.json`` only if it is absent; False when another freeze's is
        there. On S3 a conditional PUT (``If-None-Match: *``, through boto3, as pyarrow's S3
        client cannot send it): the store decides, atomically. Elsewhere (no create-only write
        in pyarrow) a check, the PUT and a read-back: every published version still has its
        own files, but two freezes racing inside that window may both be told they won."""
        if self.url.startswith("s3://"):
            return self._guard(f"uploading {name}/{MANIFEST}", lambda: self._s3_put_if_absent(name, manifest))
        if self.exists(name):
            return False
        self._guard(f"uploading {name}/{MANIFEST}", lambda: self._put_bytes(self._path(name, MANIFEST), manifest))
        return self.read_bytes(name, MANIFEST) == manifest

    def _s3_put_if_absent(self, name: str, body: bytes) -> bool:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, _, key = self._path(name, MANIFEST).partition("/")
        # a session per call: boto3's default session is not safe to make clients from in threads
        client = boto3.session.Session().client("s3", **_boto3_options(self.fs))
        try:
            client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*",
                              ContentType="application/json")
        except ClientError as exc:
            err = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if err.get("Code") in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
                return False
            raise OSError(f"{err.get('Code') or status}: {err.get('Message') or exc}") from None
        except BotoCoreError as exc:  # no endpoint, no credentials, ...: said in one sentence by _explain
            raise OSError(str(exc)) from None
        return True

    def _put_bytes(self, path: str, body: bytes) -> None:
        with self.fs.open_output_stream(path) as out:
            out.write(body)

    def _upload(self, local: Path, name: str, fname: str, rel: str | None = None) -> None:
        def put() -> None:
            with local.open("rb") as src, self.fs.open_output_stream(self._path(name, rel or fname)) as out:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
        self._guard(f"uploading {name}/{fname}", put)

    def _remove(self, name: str, files: list[str]) -> None:
        """Delete ``files`` (paths under ``name``; best effort), then the folder if nothing is
        left in it:
        pyarrow's S3 client leaves an empty ``name/`` marker object after deleting a folder's
        last file, and a name with no files should leave no trace."""
        try:
            for fname in files:
                self.fs.delete_file(self._path(name, fname))
            left = self.files(name)
            if not left:
                self.fs.delete_dir(self._path(name))
                return
            for sub in sorted({f.rsplit("/", 1)[0] for f in files if "/" in f}):  # a freeze's emptied prefix
                if not any(rel.startswith(sub + "/") for rel in left):
                    self.fs.delete_dir(self._path(name, sub))
        except (OSError, pa.ArrowException, VersionsStorageError):
            pass

    def delete(self, name: str) -> None:
        """Remove every file of ``name`` (a stale partial upload; never called on a published
        version by the studio)."""
        self._remove(name, sorted(self.files(name)))

    # ---- interrupted publishes ------------------------------------------------------------------

    @staticmethod
    def _is_stale(files: dict[str, Any], max_age_s: float) -> bool:
        times = [i.mtime_ns for i in files.values() if i.mtime_ns is not None]
        if not times:
            return max_age_s <= 0
        return time.time() - max(times) / 1e9 >= max_age_s

    def partial_names(self) -> list[str]:
        """Names with files but no manifest: interrupted (or running) publishes."""
        return sorted(name for name, files in self.scan().items() if MANIFEST not in files)

    def sweep_partial(self, *, max_age_s: float = STALE_PARTIAL_S) -> list[str]:
        """Remove the leftovers of interrupted publishes (names with files but no manifest,
        untouched for ``max_age_s``); a publish still running is left alone. Under a published
        name, a freeze's prefix its manifest does not name (one that lost the name and died
        before removing its files) is removed the same way once stale; the version's own files
        are never touched. Returns the names."""
        removed = []
        for name, files in self.scan().items():
            if MANIFEST not in files:
                if self._is_stale(files, max_age_s):
                    self._remove(name, sorted(files))
                    removed.append(name)
                continue
            own = attempt_prefix(self.read_bytes(name, MANIFEST))
            others: dict[str, dict[str, Any]] = {}
            for rel, info in files.items():
                head, sep, _ = rel.partition("/")
                if sep and head != own and _ATTEMPT_RE.match(head):
                    others.setdefault(head, {})[rel] = info
            stale = [rel for group in others.values() if self._is_stale(group, max_age_s) for rel in group]
            if stale:
                self._remove(name, sorted(stale))
                removed.append(name)
        return sorted(removed)


def _boto3_options(fs: Any) -> dict[str, str]:
    """What the URL told pyarrow's S3 client beyond the environment (``?endpoint_override=``,
    ``scheme``, ``region``, ``key:secret@``), for the boto3 client that sends the create-only
    PUT to the same store with the same identity; the environment and AWS configuration supply
    the rest, as they do for pyarrow."""
    try:
        kw = fs.__reduce__()[1][0] if isinstance(fs, pafs.S3FileSystem) else {}
    except (AttributeError, IndexError, TypeError):
        kw = {}
    if not isinstance(kw, dict):
        return {}
    out: dict[str, str] = {}
    if kw.get("region"):
        out["region_name"] = str(kw["region"])
    endpoint = str(kw.get("endpoint_override") or "")
    if endpoint:
        out["endpoint_url"] = endpoint if "://" in endpoint else f"{kw.get('scheme') or 'https'}://{endpoint}"
    if kw.get("access_key") and kw.get("secret_key"):
        out["aws_access_key_id"], out["aws_secret_access_key"] = str(kw["access_key"]), str(kw["secret_key"])
        if kw.get("session_token"):
            out["aws_session_token"] = str(kw["session_token"])
    return out


def attempt_prefix(manifest: bytes) -> str:
    """The key prefix (under the version's name) of the freeze whose manifest has these bytes:
    their sha256. Every freeze's manifest differs (``built_at``, the content's digests), so no
    other freeze writes there; a reader computes it from the manifest it read."""
    return hashlib.sha256(manifest).hexdigest()


def cache_root() -> Path:
    """Where loaded versions are kept locally: ``GOLDEN_VERSIONS_CACHE``, else
    ``$XDG_CACHE_HOME/golden-studio/versions`` (``~/.cache/...``)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "golden-studio" / "versions"


def sync_copy(loc: RemoteVersions, name: str, dest: Path, remote_files: dict[str, Any], *, manifest: bytes,
              reuse: bool) -> None:
    """Make ``dest`` hold the version whose manifest is ``manifest``: every file of it in the
    store (:meth:`RemoteVersions.layout` of ``remote_files``, the name's listing; an unlisted one
    is then reported by the checks), none it lacks (a missing file is then reported). With
    ``reuse`` a data file already in ``dest`` with the remote size is kept: the checks re-hash
    it against the manifest before anything reads it (and a copy that fails is fetched again:
    :func:`golden_store.versions.reader.load_version`). ``manifest`` is written as given (the
    bytes the caller parsed, not a second read that could differ); ``signature.json`` is always
    fetched afresh."""
    wanted = RemoteVersions.layout(remote_files, manifest)
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.iterdir():
        if p.name not in wanted and p.name != MANIFEST and not p.name.startswith("."):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    part = dest / f".{MANIFEST}.{uuid.uuid4().hex[:8]}.part"
    part.write_bytes(manifest)
    os.replace(part, dest / MANIFEST)
    for fname, rel in sorted(wanted.items()):
        if "/" in fname or fname in (".", "..", MANIFEST) or fname.startswith("."):
            continue
        local = dest / fname
        fresh = fname == "signature.json"
        if reuse and not fresh and local.is_file() and local.stat().st_size == remote_files[rel].size:
            continue
        loc.download(name, rel, local)
