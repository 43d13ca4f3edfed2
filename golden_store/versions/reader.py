"""Reading a frozen version: :class:`FrozenVersion` (its tables, qrels and chunk labels, read-only)
and :func:`load_version`, which opens one after the cheap integrity checks.

This is the reader's side of the contract and never imports the database (a layering
test keeps it so): scorers and ``golden score`` load versions without DuckDB. Writing a
version from the live store is :func:`golden_store.freezing.freeze`.

Sits on :mod:`~golden_store.versions.format`, :mod:`~golden_store.versions.folders` and
:mod:`~golden_store.versions.integrity`.

Names with a leading underscore imported from a sibling module are this package's own
(shared among the modules of ``golden_store.versions``), not a public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from golden_store.core.errors import VerificationError
from golden_store.versions import signing
from golden_store.versions.chunk_labels import (
    EVIDENCE, JUDGE, PASSAGE, ChunkQrels, PassageLabels, chunk_qrels, parse_hit_rule, split_document_grades)
from golden_store.versions.qrels import EVIDENCE_GRADE
from golden_store.versions.folders import _remote_copy, _version_path, _where, split_version_url
from golden_store.versions.format import (
    DATA_FILES,
    DEFAULT_HIT_RULE,
    HUMAN,
    HUMAN_JUDGE,
    JUDGE_LABEL_COLUMNS,
    ANSWER_CRITERIA_FILE,
    ANSWER_CRITERION_COLUMNS,
    JUDGE_LABELS_FILE,
    OPTIONAL_DATA_FILES,
    REFERENCE_ANSWER_COLUMNS,
    REFERENCE_ANSWERS_FILE,
    QRELS_FILE,
    _read_manifest,
    check_labels,
    deep_freeze,
)
from golden_store.versions.integrity import _check_files


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

    def _optional(self, fname: str, columns: tuple[str, ...]) -> pd.DataFrame:
        if fname in self._tables:
            return self._table(fname)
        return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})

    @property
    def reference_answers(self) -> pd.DataFrame:
        """Each question's approved reference answer (:data:`REFERENCE_ANSWER_COLUMNS`;
        ``evidence`` is a JSON list of spans). Empty for a version frozen before the file."""
        return self._optional(REFERENCE_ANSWERS_FILE, REFERENCE_ANSWER_COLUMNS)

    @property
    def answer_criteria(self) -> pd.DataFrame:
        """The criteria answers are marked by, per question or stratum
        (:data:`ANSWER_CRITERION_COLUMNS`). Empty for a version frozen before the file."""
        return self._optional(ANSWER_CRITERIA_FILE, ANSWER_CRITERION_COLUMNS)

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


