"""The checks every load of a frozen version runs before anything reads it, all cheap:
the manifest's own digest, format and name, every listed file inside the folder and
re-hashed against its sha256, row counts from the Parquet footers, the data digest, no
unlisted file, and the signature. :func:`~golden_store.versions.reader.load_version` refuses
on them; :func:`~golden_store.versions.verification.verify` runs them and then re-derives
the content. Sits on :mod:`~golden_store.versions.format`; never imports the database.

Names with a leading underscore imported from a sibling module are this package's own
(shared among the modules of ``golden_store.versions``), not a public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from golden_store.versions import signing
from golden_store.versions.format import (
    DATA_FILES,
    FORMAT,
    ANSWER_CRITERIA_FILE,
    JUDGE_LABELS_FILE,
    REFERENCE_ANSWERS_FILE,
    QRELS_FILE,
    _NON_DATA_FILES,
    _sha256_file,
    data_digest,
    manifest_digest,
    short_repr,
)


def _inside(path: Path, fname: str) -> bool:
    """True when ``fname`` is a plain file name whose file lies in ``path`` (no folders,
    no '..', no link leading out)."""
    if not fname or fname in (".", "..") or "/" in fname or "\\" in fname or "\x00" in fname:
        return False
    try:
        return (path / fname).resolve().parent == path.resolve()
    except (OSError, RuntimeError):
        return False


def _check_files(path: Path, manifest: Mapping[str, Any], name: str | None = None, *,
                 verify_key: str | None = None) -> list[str]:
    return _cheap_checks(path, manifest, name, verify_key=verify_key)[0]


def _cheap_checks(path: Path, manifest: Mapping[str, Any], name: str | None = None, *,
                  verify_key: str | None = None) -> tuple[list[str], bool]:
    """What :func:`load_version` checks before anyone reads a version, all cheap: the
    manifest's own digest and name (= folder), every file inside the folder and matching its
    sha256, row counts from the Parquet footers against the manifest, the data digest, no
    unlisted file, and the signature (required when a verify key is configured). The full
    re-derivation of the content is :func:`verify`'s. Returns (problems, whether a file is
    missing or unreadable, which leaves nothing to re-derive)."""
    problems: list[str] = []
    blocking = False
    files = manifest.get("files") or {}
    if manifest.get("content_digest") != manifest_digest(manifest):
        problems.append("manifest.json: content_digest does not match the manifest (it was edited)")
    if manifest.get("format") != FORMAT:
        problems.append(f"manifest.json: format {short_repr(str(manifest.get('format')))} is not {FORMAT}")
    if name is not None and manifest.get("dataset_version") != name:
        problems.append(
            f"manifest dataset_version is {short_repr(str(manifest.get('dataset_version')))} but the folder is {name!r} "
            f"(a copied or renamed version)"
        )
    for fname in [*DATA_FILES, QRELS_FILE]:
        if fname not in files:
            problems.append(f"manifest.json: no entry for {fname}")
            blocking = True
    rows: dict[str, int] = {}
    for fname, meta in files.items():
        if not _inside(path, fname) or fname in _NON_DATA_FILES:
            problems.append(f"manifest.json: the entry {short_repr(fname)} is not a data file inside the version folder")
            continue
        p = path / fname
        if not p.is_file():
            problems.append(f"{fname}: missing")
            blocking = True
            continue
        actual = _sha256_file(p)
        if actual != meta.get("sha256"):
            problems.append(f"{fname}: sha256 {actual[:12]}... does not match the manifest ({str(meta.get('sha256'))[:12]}...)")
            blocking = True
            continue
        try:
            rows[fname] = pq.ParquetFile(p).metadata.num_rows
        except Exception as exc:  # noqa: BLE001 - any footer error means the same: not a readable table
            problems.append(f"{fname}: not a readable Parquet file ({exc.__class__.__name__})")
            blocking = True
            continue
        if meta.get("rows") != rows[fname]:
            problems.append(f"{fname}: holds {rows[fname]} rows but the manifest says {short_repr(str(meta.get('rows')))}")
    for key, fname in (("n_documents", "documents.parquet"), ("n_queries", "queries.parquet"),
                       ("n_spans", "spans.parquet"), ("n_judgments", "judgments.parquet")):
        if fname in rows and manifest.get(key) != rows[fname]:
            problems.append(f"manifest {key}={short_repr(str(manifest.get(key)))} but {fname} holds {rows[fname]} rows")
    if JUDGE_LABELS_FILE in rows:
        counts = manifest.get("label_counts")
        total = counts.get("judge_total") if isinstance(counts, Mapping) else None
        if total != rows[JUDGE_LABELS_FILE]:
            problems.append(f"manifest label_counts.judge_total={short_repr(str(total))} but {JUDGE_LABELS_FILE} "
                            f"holds {rows[JUDGE_LABELS_FILE]} rows")
    refs = manifest.get("reference_answers")
    for key, fname in (("approved", REFERENCE_ANSWERS_FILE), ("criteria", ANSWER_CRITERIA_FILE)):
        if fname in rows:
            said = refs.get(key) if isinstance(refs, Mapping) else None
            if said != rows[fname]:
                problems.append(f"manifest reference_answers.{key}={short_repr(str(said))} but {fname} holds "
                                f"{rows[fname]} rows")
    if not blocking:
        if manifest.get("data_digest") != data_digest(files):
            problems.append("manifest data_digest does not match the files' hashes")
    try:
        extra = sorted(p.name for p in path.iterdir() if p.name not in _NON_DATA_FILES and p.name not in files)
    except OSError:
        extra = []
    for fname in extra:
        problems.append(f"{fname}: file not listed in the manifest")
    if name is not None:
        sig_problems, _ = signing.check_signature(path, name, manifest, verify_key)
        problems += sig_problems
    return problems, blocking


