"""Bringing in judgments people already have (issue 28): TREC qrels, BEIR qrels TSV, Label
Studio JSON and JSON-MIN exports, Prodigy ``db-out`` JSONL and Argilla v2 records (issue 38,
:mod:`golden_store.core.judgment_tools`), as grades by their source, so the pool counts them
and people are asked to judge only what nobody judged. A JSON or JSON Lines file is told by
the tool that wrote its records; one no reader fits is refused naming what it is.

Leads, engineers and admins (``Permission.IMPORT_JUDGMENTS``). All or nothing: the file is
read, parsed and placed on the store's queries and corpus whole
(:mod:`golden_store.core.judgment_formats`, :mod:`golden_store.live.judgment_imports`)
before one transaction writes it; any problem names the file and its line (or task) and
leaves the store as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core import judgment_formats as jf
from golden_store.core import textin
from golden_store.core.errors import ValidationError
from golden_store.core.progress import BYTES, Phase, Progress, step
from golden_store.db.store import Store
from golden_store.live import judgment_imports

# The steps of a judgments import told to ``progress`` (a qrels file of millions of lines
# takes seconds in each): the file read and checked, the judgments placed on the store's
# queries and documents, then written.
READING_JUDGMENTS = Phase("reading and checking the judgments file", BYTES)
PLACING_JUDGMENTS = Phase("placing judgments on the store's queries and documents", "judgments")
WRITING_JUDGMENTS = Phase("writing judgments to the store", "judgments")

FORMATS = jf.FORMATS
LabelStudioFields = jf.LabelStudioFields
shown_actor = jf.shown_actor
is_imported_actor = jf.is_imported_actor


@dataclass(frozen=True)
class JudgmentImport:
    """What an import did, for a person to read."""

    import_id: str
    source: str          # the grades' actor: import:FILE or assessor:NAME
    fmt: str
    n_judgments: int
    negative: int = 0    # negative grades left out (TREC: not judged / junk)
    unlabeled: int = 0   # Label Studio tasks nobody annotated
    duplicates: int = 0  # identical repeats kept once
    skipped: int = 0     # judgments for unknown ids left out (--skip-unknown)
    skipped_queries: tuple[str, ...] = ()
    skipped_docs: tuple[str, ...] = ()
    top_grade: int | None = None  # qrels read without --map whose grades are 0/1 (a binary dataset): said

    def summary(self) -> str:
        text = (f"Imported {self.n_judgments} judgment(s) from {self.fmt} as {self.source} "
                f"(import {self.import_id}, shown as {jf.shown_actor(self.source)}).")
        if self.negative:
            text += (f" Left out {self.negative} negative grade(s) (TREC: not judged / junk; --map=-1=0 grades "
                     "them).")
        if self.unlabeled:
            text += f" {self.unlabeled} task(s) had no annotation."
        if self.duplicates:
            text += f" {self.duplicates} identical repeat(s) kept once."
        if self.top_grade is not None:
            text += (" Note: every grade is 0 or 1; on the studio's 0-3 scale 1 means 'related, does "
                     "not answer' and binary measures count grade >= 2, so none of these is relevant to them. If 1 "
                     f"meant relevant, retract this import (golden judgments retract {self.import_id}) and import "
                     "again with --map 1=3 --again.")
        if self.skipped:
            some = ", ".join([*self.skipped_queries[:3], *self.skipped_docs[:3]])
            text += (f" Skipped {self.skipped} judgment(s) for {len(self.skipped_queries)} unknown query id(s) and "
                     f"{len(self.skipped_docs)} unknown doc id(s): {some}{' ...' if self.skipped > 6 else ''}.")
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"import_id": self.import_id, "source": self.source, "format": self.fmt,
                "n_judgments": self.n_judgments, "negative_left_out": self.negative, "unlabeled_tasks": self.unlabeled,
                "duplicates": self.duplicates, "skipped": self.skipped, "skipped_queries": list(self.skipped_queries),
                "skipped_docs": list(self.skipped_docs), "binary_scale_warning": self.top_grade is not None}


def import_judgments(store: Store, user: User, path: str | Path, fmt: str | None = None, *,
                     source: str | None = None, grade_map: str | None = None, skip_unknown: bool = False,
                     again: bool = False, fields: jf.LabelStudioFields | None = None,
                     name: str | None = None, progress: Progress | None = None) -> JudgmentImport:
    """Import a judgments file (all or nothing). ``fmt`` None: told from the content.
    ``source``: the assessor's name (the grades' actor is then ``assessor:SOURCE``; default
    ``import:FILE``). ``grade_map``: ``"VALUE=GRADE, ..."`` for values that are not 0-3
    (qrels) or whose meaning is not the default (Label Studio). ``name``: what messages call
    the file (an upload's own name, not its temporary copy's path). ``progress``: told each
    step (:data:`READING_JUDGMENTS`, :data:`PLACING_JUDGMENTS`, :data:`WRITING_JUDGMENTS`)."""
    require(user, Permission.IMPORT_JUDGMENTS)
    label = name or str(path)
    if fmt is not None and fmt not in jf.FORMATS:
        raise ValidationError(f"Unknown judgments format {fmt!r}; use one of {', '.join(jf.FORMATS)}.")
    mapping = jf.parse_map(grade_map)
    file_name = Path(label).name
    actor = jf.source_actor(file_name, source)
    data = textin.read_file(path, label)
    with step(progress, len(data), READING_JUDGMENTS):
        text = textin.decode(label, data)
        parsed = jf.parse(label, text, fmt, mapping, fields)

    def resolver() -> Any:
        from annotator.evidence.evidence_authoring import resolver as corpus_resolver

        return corpus_resolver(store)

    with step(progress, len(parsed.refs), PLACING_JUDGMENTS):
        placed = judgment_imports.place(store, parsed, skip_unknown=skip_unknown, resolver=resolver)
    with step(progress, len(placed.rows), WRITING_JUDGMENTS):
        import_id = judgment_imports.store_import(
            store, placed, actor=actor, source=actor, file_name=file_name,
            file_sha256=hashlib.sha256(data).hexdigest(), imported_by=user.username, again=again)
    top = max(parsed.grades, default=0)
    # a 0/1 qrels file (most of the field's) read as the studio's 0/1: worth a sentence (issue 38)
    binary = fmt_is_qrels(parsed.fmt) and not mapping and top == 1
    return JudgmentImport(import_id, actor, parsed.fmt, len(placed.rows), parsed.negative, parsed.unlabeled,
                          placed.duplicates, placed.skipped, tuple(placed.skipped_queries),
                          tuple(placed.skipped_docs), top if binary else None)


def fmt_is_qrels(fmt: str) -> bool:
    """Whether grades of this format are bare numbers (TREC, BEIR), not the studio's labels."""
    return fmt in ("trec", "beir")


def list_imports(store: Store, user: User):
    """Every import with its counts (written, still standing)."""
    require(user, Permission.VIEW_STORE)
    return judgment_imports.list_imports(store)


def retract_import(store: Store, user: User, import_id: str) -> int:
    """Withdraw an import's grades that still stand (retract events by its source; history
    kept). Returns how many were retracted."""
    require(user, Permission.IMPORT_JUDGMENTS)
    return judgment_imports.retract(store, import_id)


def pool_judged_counts(store: Store, user: User) -> dict[str, int]:
    """The pool's items by who graded them (people, imports, nobody), for leads and engineers."""
    from annotator.evaluation.runs_import import _require_coverage

    _require_coverage(user)
    # cached per store generation, as coverage: the page reruns on every widget change
    return dict(cache.cached(store, "pool_judged_counts", (), lambda: judgment_imports.pool_judged_counts(store)))
