"""Where frozen versions live: the versions location (a folder, or object storage by URL),
listing the versions in it, a version's folder and manifest (a version in object storage
copied into the local cache first), and the temporary folders of freezes under way.

A freeze is written into a hidden ``.tmp-<name>-<hex>`` folder next to its target and
renamed into place; its owner is recorded so a later sweep (every listing runs one) removes
the folders of freezes that died. Sits on :mod:`~golden_store.versions.format`; never
imports the database.

Names with a leading underscore imported from a sibling module are this package's own
(shared among the modules of ``golden_store.versions``), not a public API.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golden_store.core.errors import NotFoundError, VerificationError
from golden_store.core.paths import default_db_path, is_versions_url, local_versions_dir, versions_dir_for
from golden_store.versions import signing
from golden_store.versions.format import _parse_manifest, _read_manifest, validate_name

if TYPE_CHECKING:
    from golden_store.versions.storage import RemoteVersions


# ---- reading versions -------------------------------------------------------------------------


def _resolve_dir(versions_dir: Path | str | None) -> Path:
    return Path(versions_dir) if versions_dir else Path(versions_dir_for(default_db_path()))


def _where(versions_dir: Path | str | None) -> Path | RemoteVersions:
    """The versions folder, or for a URL (``s3://bucket/prefix``, also from ``GOLDEN_VERSIONS``)
    the object-storage location (:mod:`golden_store.versions.storage`, imported only then)."""
    raw = versions_dir if versions_dir else versions_dir_for(default_db_path())
    folder = local_versions_dir(raw)
    if folder is not None:
        return folder
    from golden_store.versions import storage

    return storage.open_location(str(raw))


def split_version_url(name: str, versions_dir: Path | str | None = None) -> tuple[str, Path | str | None]:
    """(name, location) for ``load_version("s3://bucket/prefix/golden.v3")``: a URL names both,
    and so does a folder path (``versions/golden.v3``, ``/data/golden.v3``, ``./golden.v3``: it
    holds a path separator or starts with ``.`` or ``~``), as ``file://`` does, because that is
    what an engineer holding a copied version folder types (issue 38). A plain name keeps
    ``versions_dir``. Whoever takes names from others (the HTTP API, a recorded evaluation)
    checks :func:`validate_name` first, so a path there never reaches this."""
    if is_versions_url(name):
        base, _, last = name.rstrip("/").rpartition("/")
        if "://" in base and not base.endswith(":/"):
            return last, base
    elif "/" in name or os.sep in name or name.startswith((".", "~")):
        folder = Path(name).expanduser().absolute()  # a relative path means where it was asked from
        return folder.name, folder.parent
    return name, versions_dir


def version_exists(name: str, versions_dir: Path | str | None = None) -> bool:
    """Whether ``name`` is taken in the versions location: a folder of that name, or in object
    storage any file under it (a publish under way or interrupted holds the name too)."""
    loc = _where(versions_dir)
    if isinstance(loc, Path):
        return (loc / name).exists()
    return bool(loc.files(name))


def list_versions(versions_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Summaries of every version folder (newest first). A damaged folder (unreadable or
    malformed manifest) is listed by name with an ``error`` and never hides the others.
    Leftovers of interrupted freezes are cleaned up on the way (:func:`sweep_temp_folders`).
    In object storage only published versions (with a manifest) are listed."""
    vdir = _where(versions_dir)
    if not isinstance(vdir, Path):
        scanned = vdir.scan()
        out = [_remote_summary(vdir, n, scanned[n]) for n in vdir.version_names()]
        out.sort(key=lambda v: str(v.get("built_at") or ""), reverse=True)
        return out
    if not vdir.exists():
        return []
    sweep_temp_folders(vdir)
    out = [_summary(p) for p in sorted(vdir.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    out.sort(key=lambda v: str(v.get("built_at") or ""), reverse=True)
    return out


def version_names(versions_dir: Path | str | None = None) -> list[str]:
    """Every version folder's name, newest first, told from when its manifest was written
    (one ``stat`` per folder, no manifest read: a freeze writes the manifest last, then
    renames the folder into place, so that time is its build time; a folder without a
    manifest sorts last). Name descending breaks ties. Issue 19: the Versions page lists
    a page of these and reads only that page's manifests. In object storage: the names with a
    manifest (a publish writes it last), by the manifest's time."""
    vdir = _where(versions_dir)
    if not isinstance(vdir, Path):
        return vdir.version_names()
    if not vdir.exists():
        return []
    keyed = []
    for p in vdir.iterdir():
        if not p.is_dir() or p.name.startswith("."):
            continue
        try:
            mtime = (p / "manifest.json").stat().st_mtime_ns
        except OSError:
            mtime = -1
        keyed.append((mtime, p.name))
    return [name for _, name in sorted(keyed, reverse=True)]


def version_page(versions_dir: Path | str | None = None, *, offset: int = 0, limit: int = 20
                 ) -> tuple[int, list[dict[str, Any]]]:
    """(how many versions there are, the summaries of ``limit`` of them from ``offset``) in
    :func:`version_names`' order: only the shown page's manifests are read. Leftovers of
    interrupted freezes are cleaned up on the way, as :func:`list_versions` does."""
    vdir = _where(versions_dir)
    if not isinstance(vdir, Path):
        scanned = vdir.scan()
        names = vdir.version_names()
        offset = max(0, int(offset))
        return len(names), [_remote_summary(vdir, n, scanned.get(n, {}))
                            for n in names[offset:offset + max(0, int(limit))]]
    if not vdir.exists():
        return 0, []
    sweep_temp_folders(vdir)
    names = version_names(vdir)
    offset = max(0, int(offset))
    return len(names), [_summary(vdir / name) for name in names[offset:offset + max(0, int(limit))]]


def _summary(p: Path) -> dict[str, Any]:
    """One version folder's row in the list: what its manifest says, or its name and the
    reason the manifest cannot be read (``error``)."""
    try:
        m = _read_manifest(p)
    except VerificationError as exc:
        return {"name": p.name, "error": "; ".join(exc.problems) or str(exc)}
    except OSError as exc:
        return {"name": p.name, "error": f"unreadable manifest: {exc.strerror or exc}"}
    return _summary_row(p.name, m, (p / signing.SIGNATURE_FILE).exists())


def _remote_summary(loc: RemoteVersions, name: str, files: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`_summary` of a version in object storage (``files``: its folder's listing)."""
    try:
        data = loc.read_bytes(name, "manifest.json")
        m = _parse_manifest(data, loc.where(name))
    except VerificationError as exc:
        return {"name": name, "error": "; ".join(exc.problems) or str(exc)}
    return _summary_row(name, m, signing.SIGNATURE_FILE in loc.layout(dict(files), data))


def _summary_row(name: str, m: Mapping[str, Any], signed: bool) -> dict[str, Any]:
    return {
        "name": name,
        "built_at": m.get("built_at"),
        "frozen_by": m.get("frozen_by"),
        "n_queries": m.get("n_queries"),
        "n_spans": m.get("n_spans"),
        "n_judgments": m.get("n_judgments"),
        "n_left_out": (m.get("n_pending_judgments") or 0) or None,
        "data_digest": m.get("data_digest"),
        "corpus_digest": m.get("corpus_digest"),
        "content_digest": m.get("content_digest"),
        "note": m.get("note", ""),
        "signed": signed,
        "error": None,
    }


# ---- interrupted freezes ------------------------------------------------------------------------

TEMP_PREFIX = ".tmp-"
OWNER_FILE = ".freeze-owner.json"
STALE_TEMP_S = 30 * 60  # a temp folder untouched this long is an interrupted freeze
_ALIVE_LIMIT_S = 24 * 3600  # even a live owner's folder goes after a day (its pid was reused)


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # exists (another user's) or cannot tell: keep
    except OSError:
        return True
    return True


def _newest_mtime(folder: Path) -> float:
    newest = folder.stat().st_mtime
    for child in folder.iterdir():
        try:
            newest = max(newest, child.stat().st_mtime)
        except OSError:
            pass
    return newest


def _temp_is_stale(folder: Path, now: float, max_age_s: float) -> bool:
    age = now - _newest_mtime(folder)
    owner: dict[str, Any] = {}
    try:
        owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    pid, host = (owner.get("pid"), owner.get("host")) if isinstance(owner, dict) else (None, None)
    if isinstance(pid, int) and host == socket.gethostname():
        # this machine's freeze: stale as soon as its process is gone
        return not _pid_running(pid) or age > _ALIVE_LIMIT_S
    return age > max_age_s  # another machine's, or no owner recorded: by age only


def new_temp_folder(versions_dir: Path, name: str) -> Path:
    """A fresh ``.tmp-<name>-<hex>`` folder for a freeze in progress, its owner recorded."""
    tmp = versions_dir / f"{TEMP_PREFIX}{name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    # who is freezing: a later sweep removes this folder once that process is gone
    try:
        (tmp / OWNER_FILE).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}),
                                      encoding="utf-8")
    except BaseException:  # a full disk (probe F2): no folder left behind for a sweep to find in 30 minutes
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def sweep_temp_folders(versions_dir: Path | str, *, max_age_s: float = STALE_TEMP_S) -> list[str]:
    """Remove the ``.tmp-<name>-<hex>`` folders interrupted freezes left behind: those whose
    freezing process (on this machine) is gone, and any untouched for ``max_age_s``. A
    freeze still running is never touched. Returns the names removed; errors are ignored
    (a read-only versions folder is still listed). In object storage (a URL): the files of
    publishes interrupted before their manifest, untouched for ``max_age_s``."""
    if local_versions_dir(versions_dir) is None:
        from golden_store.versions import storage

        return storage.open_location(str(versions_dir)).sweep_partial(max_age_s=max_age_s)
    vdir = local_versions_dir(versions_dir) or Path(versions_dir)
    removed: list[str] = []
    try:
        candidates = [p for p in vdir.iterdir() if p.name.startswith(TEMP_PREFIX) and p.is_dir()
                      and not p.is_symlink()]
    except OSError:
        return removed
    now = time.time()
    for p in candidates:
        try:
            if _temp_is_stale(p, now, max_age_s):
                shutil.rmtree(p)
                removed.append(p.name)
        except OSError:
            continue
    return removed



def _remote_copy(loc: RemoteVersions, name: str, dest: Path | None, *, refetch: bool = False
                 ) -> tuple[Path, dict[str, Any]]:
    """A local copy of version ``name`` from object storage, and its manifest, for the
    folder checks to run on: into ``dest`` (a fresh folder: every file downloaded, for
    :func:`verify`), or with ``dest`` None into the cache folder named by the sha256 of this
    manifest's bytes (data files already there are reused: the checks re-hash them against
    this manifest before anything reads them, so a stale or tampered cache is caught like a
    tampered version). The files are those the manifest's bytes name
    (:meth:`~golden_store.versions.storage.RemoteVersions.layout`): a freeze that raced this one
    for the name left none of its files among them. Only published versions load: files
    without a manifest are an interrupted publish. With ``refetch`` the cache folder's data
    files are downloaded again whatever their size."""
    from golden_store.versions import storage

    validate_name(name)
    files = loc.files(name)
    if storage.MANIFEST not in files:
        if files:
            raise VerificationError(
                f"Version {name!r} at {loc.where(name)} is incomplete:",
                ["manifest.json is missing: its publish was interrupted or is still under way, so it is not a "
                 "version; freeze again (it is swept once stale: golden versions --sweep)"])
        known = ", ".join(loc.version_names()) or "none"
        raise NotFoundError(f"No frozen version {name!r} in {loc.url} (known: {known}).")
    data = loc.read_bytes(name, storage.MANIFEST)
    manifest = _parse_manifest(data, loc.where(name))
    folder = dest if dest is not None else storage.cache_root() / hashlib.sha256(data).hexdigest()
    storage.sync_copy(loc, name, folder, files, manifest=data, reuse=dest is None and not refetch)
    return folder, manifest


def _version_path(name: str, versions_dir: Path | str | None) -> Path:
    vdir = _resolve_dir(versions_dir)
    path = vdir / validate_name(name)
    if not path.is_dir():
        known = ", ".join(v["name"] for v in list_versions(vdir)) or "none"
        raise NotFoundError(f"No frozen version {name!r} in {vdir} (known: {known}).")
    return path


