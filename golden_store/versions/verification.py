"""Verifying a frozen version: :func:`load_version`'s integrity checks, then the content
re-derived from the frozen corpus (document hashes, corpus digest, every span's offsets and
text, qrels from the labels, the manifest's counts), in a :class:`VerifyReport`.

Named ``verification`` (not ``verify``) so the module never shadows the function
``golden_store.versions.verify`` on its package. Never imports the database.

Names with a leading underscore imported from a sibling module are this package's own
(shared among the modules of ``golden_store.versions``), not a public API.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from golden_store.core.canonical import canonical_text
from golden_store.core.digests import corpus_digest, sha256_text
from golden_store.versions import signing
from golden_store.versions.folders import _remote_copy, _version_path, _where, split_version_url
from golden_store.versions.format import (
    JUDGE_LABELS_FILE,
    _read_manifest,
    deep_freeze,
    judge_provenance,
    label_counts,
    span_problem,
    thaw,
)
from golden_store.versions.integrity import _cheap_checks
from golden_store.versions.qrels import derive_qrels
from golden_store.versions.reader import FrozenVersion


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


