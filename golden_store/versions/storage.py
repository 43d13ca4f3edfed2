"""Frozen versions in object storage: ``GOLDEN_VERSIONS=s3://bucket/prefix`` (or any pyarrow or
fsspec filesystem URL: ``gs://``, ``file://``, ``memory://``, ...).

The layout is the folder layout, one "folder" per version: ``<prefix>/<name>/manifest.json``
beside the data files. An object store has no rename, so a freeze is published in an order
that makes it atomic for readers: the freeze is written and checked in a local folder as
always (digests, signature), every data file (and ``signature.json``) is uploaded, and
``manifest.json`` goes LAST. The manifest's PUT is the commit point: listing and loading see
only names that have a manifest, so a half-published freeze is invisible, and a leftover
without a manifest is swept once it is stale (:meth:`RemoteVersions.sweep_partial`).

Credentials come only from the environment and the standard configuration of the driver
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_PROFILE``/``AWS_ENDPOINT_URL``, instance
roles, ...); nothing here stores or prints them (a URL is shown without user info and query).

Folders keep their own code path in :mod:`golden_store.versions.frozen` and
:mod:`golden_store.freezing`; this module is used only for a URL.
"""

from __future__ import annotations

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
                               "Could not resolve", "Timeout was reached")):
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
        """{version name: {file name: FileInfo}} for every folder directly under the prefix
        (names starting with '.' skipped), from one recursive listing."""
        infos = self._listing(self.root, True, "listing the versions")
        out: dict[str, dict[str, Any]] = {}
        base = len(self.root) + 1 if self.root else 0
        for info in infos:
            rel = info.path[base:].strip("/")
            parts = rel.split("/")
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
        """{file name: FileInfo} of one version's folder (empty when nothing is there)."""
        infos = self._listing(self._path(name), False, f"listing {name}")
        return {i.base_name: i for i in infos if i.type == pafs.FileType.File}

    def exists(self, name: str) -> bool:
        """Whether version ``name`` is published (its manifest is there)."""
        info = self._guard(f"looking for {name}", lambda: self.fs.get_file_info(self._path(name, MANIFEST)))
        return bool(info.type == pafs.FileType.File)

    # ---- reading ------------------------------------------------------------------------------

    def read_bytes(self, name: str, file: str) -> bytes:
        def read() -> bytes:
            with self.fs.open_input_stream(self._path(name, file)) as fh:
                return bytes(fh.read())
        return self._guard(f"reading {name}/{file}", read)

    def download(self, name: str, file: str, dest: Path) -> None:
        """Copy one file to ``dest`` (written beside it first and renamed: a reader of ``dest``
        never sees half a file)."""
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
        """Upload ``files`` from ``folder`` to ``<prefix>/<name>/``, then ``manifest.json``
        last (the commit point). On a failure the files uploaded so far are removed (best
        effort; what is left has no manifest, is never listed and is swept when stale). A failed
        upload is closed, not aborted (pyarrow's streams have no abort): for a large file an S3
        multipart upload may complete with the parts sent so far, as an object under a name with
        no manifest, which is what this removes."""
        self.check_free(name)
        if self.fs.type_name not in ("s3", "gcs"):  # a filesystem with real folders needs one
            self._guard(f"creating {name}/", lambda: self.fs.create_dir(self._path(name), recursive=True))
        uploaded: list[str] = []
        try:
            for fname in [*files, MANIFEST]:
                if fname == MANIFEST and self.exists(name):  # another freeze won the name meanwhile
                    raise VersionExistsError(
                        f"Version {name!r} appeared at {self.where(name)} while publishing; nothing was "
                        f"overwritten.")
                self._upload(folder / fname, name, fname)
                uploaded.append(fname)
        except VersionExistsError:
            raise  # the files under the name may now be the winner's: never remove them
        except BaseException:
            if MANIFEST not in uploaded:
                self._remove(name, uploaded)
            raise
        # No conditional PUT in pyarrow (S3's If-None-Match): two publishers of one name racing
        # past the check above both PUT a manifest; the one whose manifest is not the last
        # written learns it here instead of reporting success.
        if self.read_bytes(name, MANIFEST) != (folder / MANIFEST).read_bytes():
            raise VersionExistsError(
                f"Version {name!r} was published at {self.where(name)} by another freeze at the same time; "
                f"this freeze's manifest was overwritten. Run `golden verify {name}` and freeze under a new name.")

    def _upload(self, local: Path, name: str, fname: str) -> None:
        def put() -> None:
            with local.open("rb") as src, self.fs.open_output_stream(self._path(name, fname)) as out:
                while chunk := src.read(_CHUNK):
                    out.write(chunk)
        self._guard(f"uploading {name}/{fname}", put)

    def _remove(self, name: str, files: list[str]) -> None:
        """Delete ``files`` of ``name`` (best effort), then the folder if nothing is left in it:
        pyarrow's S3 client leaves an empty ``name/`` marker object after deleting a folder's
        last file, and a name with no files should leave no trace."""
        try:
            for fname in files:
                self.fs.delete_file(self._path(name, fname))
            if not self.files(name):
                self.fs.delete_dir(self._path(name))
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
        untouched for ``max_age_s``); a publish still running is left alone. Returns the names."""
        removed = []
        for name, files in self.scan().items():
            if MANIFEST not in files and self._is_stale(files, max_age_s):
                self._remove(name, sorted(files))
                removed.append(name)
        return sorted(removed)


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
    """Make ``dest`` hold what ``<prefix>/<name>/`` holds: every file of the remote folder
    (listed or not: an unlisted one is then reported by the checks), none it lacks (a missing
    file is then reported). With ``reuse`` a data file already in ``dest`` with the remote
    size is kept: the checks re-hash it against the manifest before anything reads it.
    ``manifest`` is written as given (the bytes the caller parsed, not a second read that
    could differ); ``signature.json`` is always fetched afresh."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.iterdir():
        if p.name not in remote_files and not p.name.startswith("."):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    part = dest / f".{MANIFEST}.{uuid.uuid4().hex[:8]}.part"
    part.write_bytes(manifest)
    os.replace(part, dest / MANIFEST)
    for fname, info in sorted(remote_files.items()):
        if "/" in fname or fname in (".", "..", MANIFEST) or fname.startswith("."):
            continue
        local = dest / fname
        fresh = fname == "signature.json"
        if reuse and not fresh and local.is_file() and local.stat().st_size == info.size:
            continue
        loc.download(name, fname, local)
