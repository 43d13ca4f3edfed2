"""The frozen-version format on disk: what a version's folder holds and how it is named and digested.

Layout: ``<versions dir>/<name>/manifest.json`` plus one Parquet file per table. A freeze
is written into a hidden temporary folder next to the target and renamed into place, so a
crash leaves either nothing or a complete version. The manifest lists every file's sha256
and row count, and ``content_digest`` hashes the manifest itself (minus that field), so
any change to any file, or to the manifest, is detected by
:func:`golden_store.versions.verification.verify`.

The bottom of :mod:`golden_store.versions`: file names and columns, the label sets, the
name rule, the two digests, the manifest's shape and reading it, and the
facts a manifest states that the files re-derive (label counts, judge provenance). It
imports nothing of the package but ``signing`` (the signature's file name); the reader,
the checks, verify and diff sit on it. Never imports the database (a layering test keeps it so).

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
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from golden_store.core.judgment_formats import is_imported_actor
from golden_store.core.canonical import canonical_text
from golden_store.core.errors import ValidationError, VerificationError
from golden_store.versions import signing

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
# The answer layer's labels (issue 40): each live question's approved reference answer (short
# and/or full, its evidence anchors as JSON, who wrote the revision and when) and the current
# criteria answers are marked by (per question or stratum). Optional like the judge's labels:
# a version frozen before them does not list them and has none.
REFERENCE_ANSWERS_FILE = "reference_answers.parquet"
ANSWER_CRITERIA_FILE = "answer_criteria.parquet"
OPTIONAL_DATA_FILES: tuple[str, ...] = (JUDGE_LABELS_FILE, REFERENCE_ANSWERS_FILE, ANSWER_CRITERIA_FILE)
REFERENCE_ANSWER_COLUMNS: tuple[str, ...] = (
    "query_id", "revision", "short_answer", "full_answer", "evidence", "source", "author", "written_at",
)
ANSWER_CRITERION_COLUMNS: tuple[str, ...] = (
    "scope", "scope_id", "criterion_id", "text", "example", "weight", "scale_max", "position",
)
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


def data_digest(files: Mapping[str, Mapping[str, Any]]) -> str:
    """The content's digest: sha256 over the data files' hashes, by file name."""
    return "sha256:" + hashlib.sha256(
        "".join(f"{f}\t{files[f]['sha256']}\n" for f in sorted(files)).encode("utf-8")
    ).hexdigest()


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



# ---- the manifest's shape ----------------------------------------------------------------------

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


