"""Writing a frozen version's files in the format: each data file's manifest entry (its
sha256, rows and size), the manifest with its two digests, the signature, and the temporary
folder put in place under the version's name.

The other side of :mod:`golden_store.freezing`, which reads the live store in one transaction
and writes the Parquet files into the temporary folder
(:func:`~golden_store.versions.folders.new_temp_folder`); it then calls these in order:
:func:`file_entries`, :func:`build_manifest`, :func:`seal`, and :func:`put_in_place` (or, for
object storage, publishes the files :func:`seal` names). What a manifest holds and how it is
digested is decided here and in :mod:`~golden_store.versions.format` only, so a change to the
format is made beside the code that reads it back. No SQL and no database (a layering test
keeps it so): the Parquet files come from the freeze, which needs the database to make them.

Names with a leading underscore imported from a sibling module are this package's own
(shared among the modules of ``golden_store.versions``), not a public API.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from golden_store.core.errors import VersionExistsError
from golden_store.versions import signing
from golden_store.versions.folders import OWNER_FILE
from golden_store.versions.format import FORMAT, _sha256_file, data_digest, manifest_digest
from golden_store.versions.qrels import QRELS_RULE


def file_entry(path: Path) -> dict[str, Any]:
    """A data file's manifest entry: its sha256, row count (from the Parquet footer) and size."""
    return {
        "sha256": _sha256_file(path),
        "rows": pq.ParquetFile(path).metadata.num_rows,
        "bytes": path.stat().st_size,
    }


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` into ``folder`` (strict JSON, flushed to disk)."""
    with (folder / "manifest.json").open("w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def file_entries(folder: Path, fnames: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The manifest's ``files``: :func:`file_entry` of each of ``fnames`` in ``folder``, in that order."""
    return {fname: file_entry(folder / fname) for fname in fnames}


def build_manifest(*, name: str, note: str, built_at: str, actor: str, studio_version: str,
                   store_schema_version: int, facts: Mapping[str, Any], hit_rule: str,
                   files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A version's manifest: who froze what and when, the facts the store states about the
    content (``facts``: counts, agreement, rubric, provenance), the rules, the files with the
    data digest, and last the content digest over all of it."""
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "dataset_version": name,
        "note": note,
        "built_at": built_at,
        "frozen_by": actor,
        "studio_version": studio_version,
        "store_schema_version": store_schema_version,
        **facts,
        "hit_rule": hit_rule,
        "qrels_rule": QRELS_RULE,
        "files": files,
        # the labels and corpus alone: equal for two freezes of identical content
        "data_digest": data_digest(files),
    }
    manifest["content_digest"] = manifest_digest(manifest)
    return manifest


def seal(tmp: Path, manifest: Mapping[str, Any], name: str, signing_key: Any = None) -> list[str]:
    """Finish the version in its temporary folder ``tmp``: write ``manifest.json``, sign it
    when a key is given, and remove the freeze's owner file (the folder is complete). Returns
    the files a publish to object storage uploads besides the manifest."""
    write_manifest(tmp, manifest)
    if signing_key is not None:
        signing.write_signature(tmp, signing_key, name, manifest["content_digest"])
    (tmp / OWNER_FILE).unlink()
    return [*manifest["files"], *([signing.SIGNATURE_FILE] if signing_key is not None else [])]


def put_in_place(tmp: Path, target: Path | str, name: str) -> None:
    """Rename the finished folder ``tmp`` to ``target``: the moment the version appears, whole.
    Refused, nothing overwritten, when a folder of that name appeared meanwhile."""
    try:
        os.rename(tmp, target)
    except OSError:
        raise VersionExistsError(
            f"Version {name!r} appeared at {target} while freezing; nothing was overwritten."
        ) from None
