"""Frozen versions on disk: the format, and reading it (list, load, verify, diff).

Layout: ``<versions dir>/<name>/manifest.json`` plus one Parquet file per table. A freeze
is written into a hidden temporary folder next to the target and renamed into place, so a
crash leaves either nothing or a complete version. The manifest lists every file's sha256
and row count, and ``content_digest`` hashes the manifest itself (minus that field), so
any change to any file, or to the manifest, is detected by :func:`verify`.

This module is the reader's side of the contract and never imports the database (a layering
test keeps it so): scorers and ``golden score`` load versions without DuckDB. Writing a
version from the live store is :func:`golden_store.freezing.freeze`.

Two digests, two jobs:

- ``data_digest`` identifies the *content*: a hash over the data files' hashes (labels,
  queries, corpus, qrels). Two freezes of identical content have the same ``data_digest``;
  this is the one to quote when asking "is this the same golden set?".
- ``content_digest`` identifies the *manifest*: it also covers the version name, note,
  ``built_at`` and who froze it, so it differs on every freeze. It is what a signature signs
  and what :func:`verify` uses to detect an edited manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow.parquet as pq

from golden_store.core.judgment_formats import is_imported_actor
from golden_store.core.canonical import canonical_text
from golden_store.core.digests import corpus_digest, sha256_text
from golden_store.core.errors import NotFoundError, ValidationError, VerificationError
from golden_store.core.paths import default_db_path, is_versions_url, local_versions_dir, versions_dir_for
from golden_store.versions import signing
from golden_store.versions.chunk_labels import (
    EVIDENCE, JUDGE, PASSAGE, ChunkQrels, PassageLabels, chunk_qrels, parse_hit_rule, split_document_grades)
from golden_store.versions.qrels import EVIDENCE_GRADE, derive_qrels

if TYPE_CHECKING:
    from golden_store.versions.storage import RemoteVersions

FORMAT = "golden-studio/frozen-version@1"
DEFAULT_HIT_RULE = "any_overlap"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # a version's name (the API's schema states it too)
_NAME_RE = re.compile(NAME_PATTERN)

# The data files of a version (one Parquet file per table), in the order a freeze writes them;
# golden_store.freezing holds the SELECT that makes each one.
DATA_FILES: tuple[str, ...] = (
    "documents.parquet", "queries.parquet", "spans.parquet", "judgments.parquet", "nuggets.parquet",
)
QRELS_FILE = "qrels.parquet"
# The judge's labels (issue 27): every pool passage whose latest judge decision is ``labeled``
# (route judge or sample), with who labeled it (model, rubric sha, calibration, job). An
# OPTIONAL data file: versions frozen before it existed do not list it and still load and
# verify; listed, it is hashed, counted and in ``data_digest`` like every other file. A judge
# label is never a person's grade: ``qrels.parquet`` and ``judgments.parquet`` stay human.
JUDGE_LABELS_FILE = "judge_labels.parquet"
OPTIONAL_DATA_FILES: tuple[str, ...] = (JUDGE_LABELS_FILE,)
JUDGE_LABEL_COLUMNS: tuple[str, ...] = (
    "query_id", "doc_id", "start", "end", "grade", "p_fail", "route", "model", "rubric_sha", "calibration_id",
    "job_id", "created_at",
)
# The label sets a scorer may be told to use: people's labels only (evidence spans and final
# human grades, the default), or those plus the judge's grade of every passage no person graded.
LABEL_SETS: tuple[str, ...] = ("human", "human+judge")
HUMAN = "human"
HUMAN_JUDGE = "human+judge"


def check_labels(labels: str) -> str:
    """``labels`` when it names a label set, else a ValidationError saying which exist."""
    if labels not in LABEL_SETS:
        raise ValidationError(
            f"Unknown label set {labels!r}: use 'human' (people's labels only: evidence spans and final human "
            f"grades) or 'human+judge' (those, plus the judge's grade of every passage no person graded)."
        )
    return labels


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_entry(path: Path) -> dict[str, Any]:
    """A data file's manifest entry: its sha256, row count (from the Parquet footer) and size."""
    return {
        "sha256": _sha256_file(path),
        "rows": pq.ParquetFile(path).metadata.num_rows,
        "bytes": path.stat().st_size,
    }


def data_digest(files: Mapping[str, Mapping[str, Any]]) -> str:
    """The content's digest: sha256 over the data files' hashes, by file name."""
    return "sha256:" + hashlib.sha256(
        "".join(f"{f}\t{files[f]['sha256']}\n" for f in sorted(files)).encode("utf-8")
    ).hexdigest()


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` into ``folder`` (strict JSON, flushed to disk)."""
    with (folder / "manifest.json").open("w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def _canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """sha256 of the manifest without its ``content_digest`` field (which lists file hashes)."""
    body = {k: v for k, v in manifest.items() if k != "content_digest"}
    return "sha256:" + hashlib.sha256(_canonical_json(body)).hexdigest()


def deep_freeze(obj: Any) -> Any:
    """Read-only view of JSON data: mappings become MappingProxyType, lists tuples."""
    if isinstance(obj, Mapping):
        return MappingProxyType({k: deep_freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(deep_freeze(v) for v in obj)
    return obj


def thaw(obj: Any) -> Any:
    """Plain, JSON-serialisable copy of data made read-only by :func:`deep_freeze`."""
    if isinstance(obj, Mapping):
        return {k: thaw(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [thaw(v) for v in obj]
    return obj


def validate_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name or ""):  # not match: its $ also matches before a final newline
        raise ValidationError(
            f"Version name {name!r} must start with a letter or digit and use only letters, "
            f"digits, '.', '_' and '-' (e.g. golden.v3)."
        )
    return name


# ---- labels on the corpus ---------------------------------------------------------------------


def span_problem(raw: str, start: int | None, end: int | None, quote: str | None,
                 match_kind: str | None) -> str | None:
    """Why an evidence span no longer sits on its document, or None if it does.

    Every span must lie inside the document; an exact span must still cover its quote up to
    canonicalization. The raw slice is compared first, as most exact spans are verbatim,
    which keeps freezing a large set fast (canonicalizing is the costly step)."""
    if start is None or end is None or not 0 <= start < end <= len(raw):
        return f"span [{start}, {end}) is outside the document"
    if match_kind != "exact":
        return None
    piece = raw[start:end]
    if piece == quote or canonical_text(piece) == canonical_text(quote or ""):
        return None
    return f"the text at [{start}, {end}) no longer matches the quote"


def short_repr(quote: str | None, n: int = 60) -> str:
    q = " ".join((quote or "").split())
    return repr(q if len(q) <= n else q[: n - 1] + "…")


# ---- who labeled what (issue 27) --------------------------------------------------------------


def label_counts(judgments: pd.DataFrame, judge_labels: pd.DataFrame) -> dict[str, int]:
    """The manifest's ``label_counts`` from the frozen files: ``human`` passages with a final
    human grade, then how many of them by basis (``adjudicated``, ``agreed``, any other by
    name), and ``imported`` (when any: agreed grades given only by judgment imports); ``judge`` passages the judge labeled and no person graded; ``judge_total`` every
    judge label; ``standing_sample`` the judge labels in the standing human sample.
    (:mod:`golden_store.freezing` counts the same in SQL; :func:`verify` compares.)"""
    out: dict[str, int] = {"human": int(len(judgments)), "adjudicated": 0, "agreed": 0}
    for basis, n in judgments["basis"].value_counts().sort_index().items():
        out[str(basis)] = int(n)
    imported = sum(1 for basis, who in zip(judgments["basis"], judgments["decided_by"])  # imports alone (issue 28)
                   if basis == "agreed" and all(is_imported_actor(a) for a in str(who).split(",")))
    if imported:
        out["imported"] = imported
    human = set(zip(judgments["query_id"], judgments["doc_id"], judgments["start"].astype(int),
                    judgments["end"].astype(int)))
    keys = list(zip(judge_labels["query_id"], judge_labels["doc_id"], judge_labels["start"], judge_labels["end"]))
    out["judge"] = sum(1 for q, d, s, e in keys if (q, d, int(s), int(e)) not in human)
    out["judge_total"] = int(len(judge_labels))
    out["standing_sample"] = int((judge_labels["route"] == "sample").sum())
    return out


def judge_provenance(judge_labels: pd.DataFrame) -> dict[str, list[str]]:
    """Who the judge labels came from: the sorted distinct calibration ids, models, rubric
    shas and jobs (empty lists when there are none): the manifest's ``judge_labels``."""
    return {key: sorted({str(x) for x in judge_labels[col].dropna()})
            for key, col in (("calibration_ids", "calibration_id"), ("models", "model"),
                             ("rubric_shas", "rubric_sha"), ("jobs", "job_id"))}


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


@dataclass(frozen=True)
class FrozenVersion:
    """A frozen version, read-only. Tables come back as fresh DataFrame copies, so changing
    one in memory cannot change what another caller (or the files) see."""

    name: str
    path: Path
    manifest: Mapping[str, Any] = field(repr=False)

    def _table(self, fname: str) -> pd.DataFrame:
        return self._tables[fname].copy()

    @cached_property
    def _tables(self) -> dict[str, pd.DataFrame]:
        listed = self.manifest.get("files") or {}
        optional = [f for f in OPTIONAL_DATA_FILES if f in listed]
        return {
            f: pq.read_table(self.path / f).to_pandas() for f in [*DATA_FILES, QRELS_FILE, *optional]
        }

    @property
    def queries(self) -> pd.DataFrame:
        return self._table("queries.parquet")

    @property
    def documents(self) -> pd.DataFrame:
        return self._table("documents.parquet")

    @property
    def spans(self) -> pd.DataFrame:
        return self._table("spans.parquet")

    @property
    def judgments(self) -> pd.DataFrame:
        return self._table("judgments.parquet")

    @property
    def nuggets(self) -> pd.DataFrame:
        return self._table("nuggets.parquet")

    @property
    def qrels_table(self) -> pd.DataFrame:
        return self._table(QRELS_FILE)

    @property
    def judge_labels(self) -> pd.DataFrame:
        """The judge's labels frozen with this version (:data:`JUDGE_LABEL_COLUMNS`): every pool
        passage whose latest judge decision was ``labeled``, people's grades or not. Empty, with
        those columns, for a version frozen before the file existed."""
        if JUDGE_LABELS_FILE in self._tables:
            return self._table(JUDGE_LABELS_FILE)
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "p_fail" else "object")
                             for c in JUDGE_LABEL_COLUMNS})

    @property
    def has_judge_labels_file(self) -> bool:
        """Whether this version's format has the judge-labels file (frozen after issue 27)."""
        return JUDGE_LABELS_FILE in (self.manifest.get("files") or {})

    def judge_only_labels(self) -> pd.DataFrame:
        """The judge labels of passages no person graded (no final human grade in
        ``judgments.parquet``): the ones ``labels='human+judge'`` adds. Where people graded a
        passage, their grade wins and the judge's is not used."""
        jl = self.judge_labels
        if jl.empty:
            return jl
        j = self._tables["judgments.parquet"]
        human = set(zip(j["query_id"], j["doc_id"], j["start"].astype(int), j["end"].astype(int)))
        keep = [(q, d, int(s), int(e)) not in human
                for q, d, s, e in zip(jl["query_id"], jl["doc_id"], jl["start"], jl["end"])]
        return jl[keep].reset_index(drop=True)

    def qrels(self, *, include_held_out: bool = True, labels: str = HUMAN) -> dict[str, dict[str, int]]:
        """{query_id: {doc_id: grade}} as trec_eval reads it.

        ``labels='human'`` (default): the frozen ``qrels.parquet``, people's labels only.
        ``labels='human+judge'``: per passage, the people's final grade where they graded it,
        else the judge's; a document's grade is the max over its evidence (grade 3), its human
        passage grades and the judge grades of passages no person graded. A version without
        judge labels (or frozen before they existed) gives the human qrels."""
        check_labels(labels)
        held = set(self._tables["queries.parquet"].query("held_out")["query_id"])
        out: dict[str, dict[str, int]] = {}
        for q, d, g in self._tables[QRELS_FILE].itertuples(index=False):
            if include_held_out or q not in held:
                out.setdefault(q, {})[d] = int(g)
        if labels == HUMAN_JUDGE:
            for q, d, g in self.judge_only_labels()[["query_id", "doc_id", "grade"]].itertuples(index=False):
                if include_held_out or q not in held:
                    docs = out.setdefault(q, {})
                    docs[d] = max(docs.get(d, int(g)), int(g))
        return out

    @cached_property
    def doc_lengths(self) -> dict[str, int]:
        """{doc_id: length of the raw text in characters}: a grade whose span is (0, length)
        is a grade on the whole document (see :meth:`passage_labels`)."""
        d = self._tables["documents.parquet"]
        return {doc: len(raw) for doc, raw in zip(d["doc_id"], d["raw_text"]) if raw is not None}

    def passage_labels(self, *, include_judgments: bool = True, labels: str = HUMAN) -> PassageLabels:
        """This version's labels split for scoring a passage run (issue 36): span-level labels
        (evidence spans grade 3; judged passages that are not the whole document, with
        ``include_judgments``; with ``labels='human+judge'`` also such judge labels of
        passages no person graded) and document-level grades (a judgment or judge label whose
        span is the whole raw document, as pooled document-run results and TREC/BEIR judgment
        imports are stored), each one unit unless the query's finer labels in that document
        subsume it (:func:`~golden_store.versions.chunk_labels.split_document_grades`)."""
        rows = self._label_rows(include_judgments, labels)
        return split_document_grades(rows, self.doc_lengths)

    def chunk_qrels(self, chunks, hit_rule: str | None = None, *, include_judgments: bool = True,
                    labels: str = HUMAN, span_level_only: bool = False) -> ChunkQrels:
        """Relevance of any chunker's chunks, derived from this version's spans.

        ``chunks``: iterable of (chunk_id, doc_id, start, end) in raw character offsets of
        the frozen documents. Evidence spans count as grade 3; judged passages (with
        ``include_judgments``) as their grade, and with ``labels='human+judge'`` also the
        judge's grade of passages no person graded. ``hit_rule`` defaults to the manifest's;
        the rule used is on the result (``.hit_rule``).

        ``span_level_only``: leave out the grades on whole documents (:meth:`passage_labels`):
        as spans they would make every chunk of the document relevant, N units for one grade;
        the scorer (``golden_store.scoring.golden.evaluate``) counts each as one unit itself.
        Without it every label is a span, as before issue 36."""
        check_labels(labels)
        rule = parse_hit_rule(hit_rule or self.manifest.get("hit_rule") or DEFAULT_HIT_RULE)
        rows = self._label_rows(include_judgments, labels)
        kept = split_document_grades(rows, self.doc_lengths).spans if span_level_only else rows
        return chunk_qrels([r[:5] for r in kept], chunks, rule)

    def _label_rows(self, include_judgments: bool, labels: str) -> list[tuple[str, str, int, int, int, str]]:
        """Every label a passage run can be scored on, as (query_id, doc_id, start, end, grade,
        kind): evidence spans (grade 3), people's final grades (``include_judgments``), and
        with ``labels='human+judge'`` the judge's grades of passages no person graded."""
        check_labels(labels)
        rows = [(s.query_id, s.doc_id, int(s.start), int(s.end), EVIDENCE_GRADE, EVIDENCE)
                for s in self._tables["spans.parquet"].itertuples(index=False)]
        if include_judgments:
            rows += [(j.query_id, j.doc_id, int(j.start), int(j.end), int(j.grade), PASSAGE)
                     for j in self._tables["judgments.parquet"].itertuples(index=False)]
            if labels == HUMAN_JUDGE:
                rows += [(j.query_id, j.doc_id, int(j.start), int(j.end), int(j.grade), JUDGE)
                         for j in self.judge_only_labels().itertuples(index=False)]
        return rows

    @property
    def strata(self) -> dict[str, str]:
        """{query_id: stratum}."""
        q = self._tables["queries.parquet"]
        return dict(zip(q["query_id"], q["stratum"]))

    @property
    def query_ids(self) -> tuple[str, ...]:
        return tuple(self._tables["queries.parquet"]["query_id"])


_NON_DATA_FILES = ("manifest.json", signing.SIGNATURE_FILE)


def _manifest_shape(m: Any) -> list[str]:
    """Why a parsed manifest cannot be read as one (empty when it can)."""
    if not isinstance(m, dict):
        return [f"manifest.json is not a JSON object (it holds a {type(m).__name__})"]
    files = m.get("files")
    if not isinstance(files, dict):
        return [f"manifest.json: 'files' is not an object of file entries (it is {type(files).__name__})"]
    problems = []
    for fname, meta in files.items():
        if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
            problems.append(f"manifest.json: the entry for {short_repr(fname)} is not an object with a sha256")
    return problems


def _read_manifest(path: Path) -> dict[str, Any]:
    mpath = path / "manifest.json"
    if not mpath.exists():
        raise VerificationError(f"Version at {path} is incomplete:", ["manifest.json is missing"])
    return _parse_manifest(mpath.read_bytes(), path)


def _parse_manifest(data: bytes, where: Path | str) -> dict[str, Any]:
    try:
        m = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise VerificationError(f"Version at {where} is damaged:",
                                [f"manifest.json is not valid JSON ({str(exc)[:200]})"]) from None
    problems = _manifest_shape(m)
    if problems:
        raise VerificationError(f"Version at {where} is damaged:", problems)
    return m


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


def load_version(name: str, versions_dir: Path | str | None = None, *, check: bool = True,
                 verify_key: str | Path | None = None) -> FrozenVersion:
    """Open a frozen version read-only. With ``check`` (default) the cheap checks of
    :func:`_check_files` run first (hashes, names, counts, the signature), so nobody scores
    against a tampered, copied or unsigned version by accident. ``verify_key``: the trusted
    public key (or its file); default ``GOLDEN_VERIFY_KEY``; none configured: unsigned
    versions load.

    ``name`` may be a URL naming the location too (``s3://bucket/prefix/golden.v3``); a version
    in object storage is copied into the local cache (``GOLDEN_VERSIONS_CACHE``) and the same
    checks run on that copy, the bytes then read (:func:`_remote_copy`). A cached copy that
    fails them is fetched again once and checked again before anything is refused (issue 37,
    V12: a damaged cache file, of the remote size, blocked a good version for good)."""
    name, versions_dir = split_version_url(name, versions_dir)
    loc = _where(versions_dir)
    if isinstance(loc, Path):
        path = _version_path(name, loc)
        manifest = _read_manifest(path)
    else:
        path, manifest = _remote_copy(loc, name, None)
    if check:
        problems = _check_files(path, manifest, name, verify_key=signing.resolve_verify_key(verify_key))
        if problems and not isinstance(loc, Path):
            path, manifest = _remote_copy(loc, name, None, refetch=True)
            problems = _check_files(path, manifest, name, verify_key=signing.resolve_verify_key(verify_key))
        if problems:
            raise VerificationError(f"Version {name!r} failed its integrity check; run `golden verify {name}`:", problems)
    return FrozenVersion(name, path, deep_freeze(manifest))


@dataclass
class VerifyReport:
    name: str
    problems: list[str]
    warnings: list[str]
    checked: dict[str, int]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify(name: str, versions_dir: Path | str | None = None, *, live_corpus_digest: str | None = None,
           verify_key: str | Path | None = None) -> VerifyReport:
    """Run :func:`load_version`'s checks, then re-check the content against the frozen
    corpus: document hashes, corpus digest, every span's offsets and text, qrels re-derived
    from the labels. ``live_corpus_digest`` (when given) adds a warning if the live corpus
    has moved on. ``verify_key`` as for :func:`load_version`. A version in object storage is
    downloaded whole into a temporary folder first (no cache): its remote files are re-hashed."""
    name, versions_dir = split_version_url(name, versions_dir)
    loc = _where(versions_dir)
    if isinstance(loc, Path):
        path = _version_path(name, loc)
        return _verify_at(name, path, _read_manifest(path), live_corpus_digest, verify_key)
    with tempfile.TemporaryDirectory(prefix="golden-verify-") as tmp:
        path, manifest = _remote_copy(loc, name, Path(tmp) / name)
        return _verify_at(name, path, manifest, live_corpus_digest, verify_key)


def _verify_at(name: str, path: Path, manifest: dict[str, Any], live_corpus_digest: str | None,
               verify_key: str | Path | None) -> VerifyReport:
    trusted = signing.resolve_verify_key(verify_key)
    problems, blocking = _cheap_checks(path, manifest, name, verify_key=trusted)
    warnings: list[str] = []
    checked: dict[str, int] = {}
    if blocking:
        return VerifyReport(name, problems, warnings, checked)
    _, signer = signing.check_signature(path, name, manifest, trusted)
    if signer and trusted:
        checked["signature"] = 1
    elif signer:
        warnings.append(f"signed by {signer}, but no verify key is configured ({signing.VERIFY_KEY_ENV} or --key): "
                        "the signature shows the version is unchanged since signing, not who signed it")
    v = FrozenVersion(name, path, deep_freeze(manifest))
    docs = v.documents
    raw_by_id: dict[str, str] = {}
    for d in docs.itertuples(index=False):
        raw_by_id[d.doc_id] = d.raw_text
        if sha256_text(d.raw_text) != d.raw_sha256:
            problems.append(f"documents.parquet: raw text of {d.doc_id!r} does not match its raw_sha256")
        canon = canonical_text(d.raw_text)
        if canon != d.canonical_text or sha256_text(canon) != d.canonical_sha256:
            problems.append(
                f"documents.parquet: canonical text of {d.doc_id!r} does not re-derive from its raw text"
            )
    digest = corpus_digest(zip(docs["doc_id"], docs["canonical_sha256"]))
    if digest != manifest.get("corpus_digest"):
        problems.append(f"corpus_digest {digest} does not match the manifest ({manifest.get('corpus_digest')})")
    checked["documents"] = len(docs)
    spans = v.spans
    for s in spans.itertuples(index=False):
        where = f"spans.parquet: query {s.query_id} evidence {s.evidence_id}"
        raw = raw_by_id.get(s.doc_id)
        if raw is None:
            problems.append(f"{where}: document {s.doc_id!r} is not in the frozen corpus")
        elif why := span_problem(raw, int(s.start), int(s.end), s.quote, s.match_kind):
            problems.append(f"{where}: {why} in {s.doc_id!r}")
    checked["spans"] = len(spans)
    judg = v.judgments
    for j in judg.itertuples(index=False):
        raw = raw_by_id.get(j.doc_id)
        if raw is None or not 0 <= j.start < j.end <= len(raw):
            problems.append(f"judgments.parquet: query {j.query_id} passage {j.doc_id}[{j.start}:{j.end}] is not in the corpus")
    checked["judgments"] = len(judg)
    jl = v.judge_labels
    for j in jl.itertuples(index=False):
        where = f"{JUDGE_LABELS_FILE}: query {j.query_id} passage {j.doc_id}[{j.start}:{j.end}]"
        raw = raw_by_id.get(j.doc_id)
        if raw is None or not 0 <= j.start < j.end <= len(raw):
            problems.append(f"{where} is not in the corpus")
        if pd.isna(j.grade) or int(j.grade) not in (0, 1, 2, 3) or j.route not in ("judge", "sample"):
            problems.append(f"{where}: a judge label is labeled (route judge or sample) with a grade 0-3, not "
                            f"route {j.route!r} grade {j.grade!r}")
    if v.has_judge_labels_file:
        checked["judge_labels"] = len(jl)
        derived_counts = label_counts(judg, jl)
        if thaw(manifest.get("label_counts")) != derived_counts:
            problems.append(f"manifest label_counts={thaw(manifest.get('label_counts'))!r} but the files give "
                            f"{derived_counts!r}")
        said = thaw(manifest.get("judge_labels"))
        said = {k: v for k, v in said.items() if k != "left_out_stale"} if isinstance(said, dict) else said
        if said != judge_provenance(jl):
            problems.append(f"manifest judge_labels={said!r} but {JUDGE_LABELS_FILE} gives {judge_provenance(jl)!r}")
    qids = set(v.query_ids)
    for label, df in (("spans", spans), ("judgments", judg), ("judge_labels", jl)):
        orphan = sorted(set(df["query_id"]) - qids)
        if orphan:
            problems.append(f"{label}.parquet: labels for unknown queries {orphan[:5]}")
    expected = derive_qrels(
        zip(spans["query_id"], spans["doc_id"]), zip(judg["query_id"], judg["doc_id"], judg["grade"])
    )
    if expected != v.qrels():
        problems.append("qrels.parquet: does not match the qrels derived from spans and judgments")
    checked["qrels"] = sum(len(d) for d in expected.values())
    q = v.queries
    derived = {
        "n_documents": len(docs),
        "n_queries": len(qids),
        "n_answerable": int(q["answerable"].sum()),
        "n_held_out": int(q["held_out"].sum()),
        "strata": {k: int(n) for k, n in q["stratum"].value_counts().sort_index().items()},
        "n_spans": len(spans),
        "n_judgments": len(judg),
        "raw_corpus_digest": corpus_digest(zip(docs["doc_id"], docs["raw_sha256"])),
    }  # data_digest and the row counts were checked with the files
    for key, value in derived.items():
        if manifest.get(key) != value and not any(p.startswith(f"manifest {key}=") for p in problems):
            problems.append(f"manifest {key}={manifest.get(key)!r} but the files give {value!r}")
    if live_corpus_digest and live_corpus_digest != manifest.get("corpus_digest"):
        warnings.append(
            "the live store's corpus has changed since this version was frozen "
            f"({live_corpus_digest} vs {manifest.get('corpus_digest')}); the version is still "
            "self-consistent, but new labels belong in a new version"
        )
    return VerifyReport(name, problems, warnings, checked)


# ---- diff ---------------------------------------------------------------------------------------


def _jsonable(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:  # a missing value (e.g. no tier) read back as NaN
        return None
    return v


def diff_versions(a: str, b: str, versions_dir: Path | str | None = None) -> dict[str, Any]:
    """What changed from version ``a`` to ``b``: queries added/removed/changed (field by
    field), and per query the evidence spans and graded judgments added/removed/changed, the
    judge's labels apart (a version without them has none), and the approved nuggets
    added/removed/changed (text, importance, supporting quote)."""
    va, vb = load_version(a, versions_dir), load_version(b, versions_dir)
    fields = ["text", "stratum", "answerable", "source", "held_out", "notes"]
    if "tier" in va.queries.columns and "tier" in vb.queries.columns:  # versions frozen before tiers have none
        fields.append("tier")
    qa = va.queries.set_index("query_id")
    qb = vb.queries.set_index("query_id")
    added = sorted(set(qb.index) - set(qa.index))
    removed = sorted(set(qa.index) - set(qb.index))
    changed = []
    for qid in sorted(set(qa.index) & set(qb.index)):
        delta = {
            f: {"from": _jsonable(qa.at[qid, f]), "to": _jsonable(qb.at[qid, f])}
            for f in fields
            if qa.at[qid, f] != qb.at[qid, f] and not (f == "tier" and pd.isna(qa.at[qid, f]) and pd.isna(qb.at[qid, f]))
        }
        if delta:
            changed.append({"query_id": qid, "fields": delta})

    def span_keys(v: FrozenVersion) -> set[tuple]:
        return {(s.query_id, s.doc_id, int(s.start), int(s.end)) for s in v.spans.itertuples(index=False)}

    sa, sb = span_keys(va), span_keys(vb)
    ja = {(j.query_id, j.doc_id, int(j.start), int(j.end)): int(j.grade) for j in va.judgments.itertuples(index=False)}
    jb = {(j.query_id, j.doc_id, int(j.start), int(j.end)): int(j.grade) for j in vb.judgments.itertuples(index=False)}

    def span_dict(k: tuple) -> dict:
        return {"query_id": k[0], "doc_id": k[1], "start": k[2], "end": k[3]}

    def judge_keys(v: FrozenVersion) -> dict[tuple, dict[str, Any]]:  # empty for a version without the file
        return {(j.query_id, j.doc_id, int(j.start), int(j.end)): {"grade": int(j.grade), "route": j.route,
                                                                   "model": j.model}
                for j in v.judge_labels.itertuples(index=False)}

    la, lb = judge_keys(va), judge_keys(vb)
    na, nb = nugget_rows(va), nugget_rows(vb)

    return {
        "from": a,
        "to": b,
        "corpus_changed": va.manifest.get("corpus_digest") != vb.manifest.get("corpus_digest"),
        "queries": {"added": added, "removed": removed, "changed": changed},
        "spans": {
            "added": [span_dict(k) for k in sorted(sb - sa)],
            "removed": [span_dict(k) for k in sorted(sa - sb)],
        },
        "judgments": {
            "added": [{**span_dict(k), "grade": jb[k]} for k in sorted(set(jb) - set(ja))],
            "removed": [{**span_dict(k), "grade": ja[k]} for k in sorted(set(ja) - set(jb))],
            "changed": [
                {**span_dict(k), "from": ja[k], "to": jb[k]}
                for k in sorted(set(ja) & set(jb)) if ja[k] != jb[k]
            ],
        },
        # the judge's labels (issue 27), apart from people's judgments
        "judge_labels": {
            "added": [{**span_dict(k), **lb[k]} for k in sorted(set(lb) - set(la))],
            "removed": [{**span_dict(k), **la[k]} for k in sorted(set(la) - set(lb))],
            "changed": [{**span_dict(k), "from": la[k], "to": lb[k]}
                        for k in sorted(set(la) & set(lb)) if la[k] != lb[k]],
        },
        # the approved nuggets per question (issue 29, M12): what a generation score is measured against
        "nuggets": diff_nuggets(na, nb),
    }


# what a nugget is, for a diff: its content (not its position in the list, nor who wrote it)
NUGGET_FIELDS: tuple[str, ...] = ("text", "importance", "quote")


def _nugget_order(key: tuple[str, str]) -> tuple[str, int, str]:
    """Sort (query_id, nugget_id) with n2 before n10 (ids are ``n<number>``)."""
    qid, nid = key
    digits = nid[1:] if nid[:1] == "n" else ""
    return qid, int(digits) if digits.isdigit() else -1, nid


def _missing(v: Any) -> bool:
    """None, NaN/NA, or an empty string (a nugget without a quote)."""
    return v is None or v == "" or (not isinstance(v, str) and bool(pd.isna(v)))


def nugget_rows(v: FrozenVersion) -> dict[tuple[str, str], dict[str, Any]]:
    """The approved nuggets a version froze, by (query_id, nugget_id): text, importance, quote.
    A version whose nugget file lacks a column (or has no rows) gives what it has, so diffs of
    old versions keep working."""
    table = v.nuggets
    if table.empty or not {"query_id", "nugget_id"} <= set(table.columns):
        return {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in table.to_dict("records"):
        out[(str(row["query_id"]), str(row["nugget_id"]))] = {
            f: None if _missing(row.get(f)) else _jsonable(row.get(f)) for f in NUGGET_FIELDS}
    return out


def diff_nuggets(na: Mapping[tuple[str, str], Mapping[str, Any]],
                 nb: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Nuggets added, removed and changed (field by field) from ``na`` to ``nb``, in question
    order. Pure: the rows come from :func:`nugget_rows`. A nugget is matched by its id within
    its question (ids are never reused: a deleted nugget's id stays retired)."""
    def key(k: tuple[str, str]) -> dict[str, Any]:
        return {"query_id": k[0], "nugget_id": k[1]}

    changed = []
    for k in sorted(set(na) & set(nb), key=_nugget_order):
        fields = {f: {"from": na[k].get(f), "to": nb[k].get(f)} for f in NUGGET_FIELDS if na[k].get(f) != nb[k].get(f)}
        if fields:  # the nugget as it is in ``b``, and what changed
            changed.append({**key(k), **dict(nb[k]), "fields": fields})
    return {
        "added": [{**key(k), **dict(nb[k])} for k in sorted(set(nb) - set(na), key=_nugget_order)],
        "removed": [{**key(k), **dict(na[k])} for k in sorted(set(na) - set(nb), key=_nugget_order)],
        "changed": changed,
    }


def _nugget_line(sign: str, x: Mapping[str, Any]) -> str:
    quote = f' (quote: {x["quote"]!r})' if x.get("quote") else ""
    return f"  {sign} {x['query_id']} {x['nugget_id']} [{x['importance']}] {x['text']!r}{quote}"


def nugget_diff_rows(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per nugget change of a :func:`diff_versions` result, for a table: ``change``
    (added / removed / changed), question, nugget, and each field as it is in the newer
    version ("old -> new" spelled out in ``was`` for a change). Empty for a diff made before
    nuggets were diffed."""
    n = d.get("nuggets") or {}
    rows = [{"change": kind, "query_id": x["query_id"], "nugget_id": x["nugget_id"], "importance": x["importance"],
             "text": x["text"], "quote": x["quote"], "was": ""}
            for kind in ("added", "removed") for x in n.get(kind, [])]
    for c in n.get("changed", []):
        f = c["fields"]
        rows.append({"change": "changed", "query_id": c["query_id"], "nugget_id": c["nugget_id"],
                     "importance": c["importance"], "text": c["text"], "quote": c["quote"],
                     "was": "; ".join(f"{k}: {v['from']!r}" for k, v in f.items())})
    return sorted(rows, key=lambda r: (*_nugget_order((r["query_id"], r["nugget_id"])), r["change"]))


def format_nugget_diff(n: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The nugget part of :func:`format_diff`: a count line, then each change under it."""
    lines = [f"nuggets (approved): +{len(n['added'])} -{len(n['removed'])} ~{len(n['changed'])}"]
    lines += [_nugget_line("+", x) for x in n["added"]]
    lines += [_nugget_line("-", x) for x in n["removed"]]
    for c in n["changed"]:
        for f, ft in c["fields"].items():
            lines.append(f"  ~ {c['query_id']} {c['nugget_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    return lines


def format_diff(d: dict[str, Any]) -> str:
    lines = [f"{d['from']} -> {d['to']}" + ("  (corpus changed)" if d["corpus_changed"] else "")]
    q = d["queries"]
    lines.append(f"queries: +{len(q['added'])} -{len(q['removed'])} ~{len(q['changed'])}")
    lines += [f"  + {qid}" for qid in q["added"]]
    lines += [f"  - {qid}" for qid in q["removed"]]
    for c in q["changed"]:
        for f, ft in c["fields"].items():
            lines.append(f"  ~ {c['query_id']} {f}: {ft['from']!r} -> {ft['to']!r}")
    s = d["spans"]
    lines.append(f"evidence spans: +{len(s['added'])} -{len(s['removed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]" for x in s["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]" for x in s["removed"]]
    j = d["judgments"]
    lines.append(f"judgments: +{len(j['added'])} -{len(j['removed'])} ~{len(j['changed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']}" for x in j["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']}" for x in j["removed"]]
    lines += [
        f"  ~ {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]: {x['from']} -> {x['to']}" for x in j["changed"]
    ]
    jl = d.get("judge_labels") or {"added": [], "removed": [], "changed": []}
    lines.append(f"judge labels (not people's): +{len(jl['added'])} -{len(jl['removed'])} ~{len(jl['changed'])}")
    lines += [f"  + {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']} ({x['route']}, {x['model']})"
              for x in jl["added"]]
    lines += [f"  - {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}] = {x['grade']} ({x['route']}, {x['model']})"
              for x in jl["removed"]]
    lines += [f"  ~ {x['query_id']} {x['doc_id']}[{x['start']}:{x['end']}]: {x['from']['grade']} ({x['from']['model']}) "
              f"-> {x['to']['grade']} ({x['to']['model']})" for x in jl["changed"]]
    lines += format_nugget_diff(d.get("nuggets") or {"added": [], "removed": [], "changed": []})
    return "\n".join(lines)
