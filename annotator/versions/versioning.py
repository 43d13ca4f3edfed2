"""Freezing, verifying, diffing and exporting versions, role-checked.

Everything but freezing reads frozen versions only (plain files), so these work while the
app holds the live store; they take the versions folder, not the store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotator.events import webhooks
from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.versions import export
from golden_store import freezing, versions
from golden_store.core.paths import local_versions_dir
from golden_store.core.progress import BYTES, Phase, Progress, step
from golden_store.db.store import Store, versions_dir_for

# The steps of an export told to ``progress``: the version's files read and checked against
# its manifest (bytes, a local folder), then the export's files written.
LOADING_VERSION = Phase("loading and checking the version", BYTES)


def versions_dir(store: Store) -> Path | str:
    """The versions folder, or the object-storage URL ``GOLDEN_VERSIONS`` names (s3://...)."""
    return versions_dir_for(store.path)


def freeze(store: Store, user: User, name: str, *, note: str = "", hit_rule: str | None = None,
           progress: Callable[[int, int, str], None] | None = None) -> freezing.FreezeResult:
    require(user, Permission.FREEZE)
    kwargs = {"hit_rule": hit_rule} if hit_rule else {}
    result = freezing.freeze(store, name, actor=user.username, note=note, progress=progress, **kwargs)
    webhooks.emit_frozen(store, result, user.username, signed=False)  # after the publish (see emit_frozen)
    return result


def judge_label_lines(manifest: Any) -> list[str]:
    """What a freeze kept of a judge's labels, in words (CLI and Versions page): how many, on
    how many passages no person graded, from which model and calibration, apart from
    people's labels; and any left out as stale."""
    counts, judges = manifest.get("label_counts") or {}, manifest.get("judge_labels") or {}
    out = []
    if counts.get("judge_total"):
        out.append(f"Judge labels: {counts['judge_total']} ({counts['judge']} on passages no person graded, "
                   f"{counts['standing_sample']} in the standing sample) from model {', '.join(judges['models'])}, "
                   f"calibration {', '.join(judges['calibration_ids'])}, kept apart from people's labels "
                   f"(qrels.parquet is human only); score on them with golden score --labels human+judge")
    if judges.get("left_out_stale"):
        out.append(f"Judge labels left out: {judges['left_out_stale']} made on an earlier text of their document")
    return out


def left_out(manifest: Any) -> list[str]:
    """What a freeze left out of the version, one sentence each (graded items where annotators
    disagree, quotes of unsettled evidence rounds), each pointing at the Adjudication page."""
    return [str(manifest[k]) for k in ("pending_reason", "evidence_pending_reason") if manifest.get(k)]


def list_versions(user: User, vdir: Path | str) -> list[dict[str, Any]]:
    require(user, Permission.VIEW_VERSIONS)
    return versions.list_versions(vdir)


def version_page(user: User, vdir: Path | str, *, offset: int = 0, limit: int = 20) -> tuple[int, list[dict[str, Any]]]:
    """(how many versions, one page of summaries, newest first): only that page's manifests
    are read (:func:`golden_store.versions.version_page`)."""
    require(user, Permission.VIEW_VERSIONS)
    return versions.version_page(vdir, offset=offset, limit=limit)


def version_names(user: User, vdir: Path | str) -> list[str]:
    """Every version's name, newest first, without reading a manifest."""
    require(user, Permission.VIEW_VERSIONS)
    return versions.version_names(vdir)


def verify(user: User, vdir: Path | str, name: str, *, live_corpus_digest: str | None = None) -> versions.VerifyReport:
    require(user, Permission.VIEW_VERSIONS)
    return versions.verify(name, vdir, live_corpus_digest=live_corpus_digest)


def diff(user: User, vdir: Path | str, a: str, b: str) -> dict[str, Any]:
    require(user, Permission.VIEW_VERSIONS)
    return versions.diff_versions(a, b, vdir)


def export_version(user: User, vdir: Path | str, name: str, fmt: str, out_dir: str | Path,
                   progress: Progress | None = None) -> list[Path]:
    """Export version ``name`` as ``fmt`` into ``out_dir``; ``progress`` is told each step
    (:data:`LOADING_VERSION`, then writing: a BEIR export counted in documents, the others in
    queries, the manifest's counts)."""
    require(user, Permission.EXPORT)
    with step(progress, _version_bytes(vdir, name), LOADING_VERSION):
        v = versions.load_version(name, vdir)
    unit = "documents" if fmt == "beir" else "queries"
    total = int(v.manifest.get(f"n_{unit}") or 0)
    with step(progress, total, Phase(f"writing the {fmt} export", unit)):
        return export.export_version(v, fmt, out_dir)


def _version_bytes(vdir: Path | str, name: str) -> int:
    """The size of a version's folder on this machine (0, no bar, in object storage or when
    it is missing: loading says so)."""
    folder = local_versions_dir(vdir)
    if folder is None or not (folder / name).is_dir():
        return 0
    return sum(f.stat().st_size for f in (folder / name).iterdir() if f.is_file())


def manifest(user: User, vdir: Path | str, name: str) -> dict[str, Any]:
    require(user, Permission.VIEW_VERSIONS)
    return versions.thaw(versions.load_version(name, vdir, check=False).manifest)


def version_folder(user: User, vdir: Path | str, name: str) -> tuple[Path, dict[str, Any]]:
    """A local folder holding version ``name``'s files, and its manifest: the version's own
    folder, or (object storage) its copy in the local cache, checked against the manifest's
    digests when it was copied. The HTTP API serves files from here."""
    require(user, Permission.VIEW_VERSIONS)
    v = versions.load_version(name, vdir, check=False)
    return v.path, versions.thaw(v.manifest)


def sweep(user: User, vdir: Path | str) -> list[str]:
    """Remove what interrupted freezes left (stale temporary folders; in object storage, stale
    uploads without a manifest); returns their names. Freezing does it too."""
    require(user, Permission.FREEZE)
    return versions.sweep_temp_folders(vdir)


def live_problems(store: Store, user: User) -> list[str]:
    """Labels in the live store that no longer sit on the corpus (what freeze would refuse).
    Leads (ADJUDICATE) and engineers (FREEZE) see every problem; anyone else only those about
    labels they may see, so a colleague's unsettled quote text or grade never shows in the
    broken-label notice (blind double annotation, issue 18)."""
    require(user, Permission.VIEW_STORE)
    sees_all = user.can(Permission.ADJUDICATE) or user.can(Permission.FREEZE)
    who = None if sees_all else user.username
    # cached per store generation: the check joins every span with its document's text and
    # windows over every grade event (seconds at team scale), and Home and Evidence ask on
    # every rerun
    return list(cache.cached(store, "live_problems", (who,), lambda: freezing.live_label_problems(store, who)))
