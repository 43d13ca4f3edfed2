"""Reading a JSONL passage run: one reader and placer for every use (``golden runs
import`` against the live store, ``golden score`` and ``golden chunking`` against a frozen
version). No database here: the caller says which query ids and documents exist.

Each line is a JSON object with ``query_id``, a numeric ``score`` or an integer ``rank``,
``doc_id``, and the passage either as ``start`` and ``end`` (character offsets in the
document's stored text, the offsets evidence spans use: ``text[start:end]`` is the passage)
or as ``text``, placed on the document by the quote resolver (exact, then fuzzy). A passage
the resolver cannot place, or finds at several equally good places, is refused with its
file and line and what to do. With both, the offsets place the passage and the text must
match them (when the document text is at hand).

The file is checked whole in a first, cheap pass (syntax, fields, numbers, known ids)
before any passage is placed, so a bad last line is refused at once; every problem is
listed, naming the file and the line.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

import pandas as pd

from golden_store.core import textin
from golden_store.core.errors import OptionRequiredError, ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.core.textin import shown

MAX_PROBLEMS = 50
SKIP_ADVICE = "Pass --skip-unknown to import the rest and leave those results out."
SKIP_DOCS_ADVICE = "Pass --skip-unknown-docs to import the rest and leave those results out."
SKIP_BOTH_ADVICE = "Pass --skip-unknown and --skip-unknown-docs to import the rest and leave those results out."
COLUMNS = ["query_id", "rank", "score", "doc_id", "start", "end", "match_kind"]


@dataclass
class PassageRows:
    """The placed passages, ranked per query (``rank`` 1, 2, ... in the run's order: by
    ``rank`` when every line gives one, else by score descending, ties in file order), and
    what was left out for unknown query ids."""
    rows: pd.DataFrame  # COLUMNS and the file's line; match_kind: offsets, exact or fuzzy
    skipped_lines: int = 0
    skipped_queries: list[str] = field(default_factory=list)
    skipped_doc_lines: int = 0  # lines left out for unknown doc ids (skip_unknown_docs)
    skipped_docs: list[str] = field(default_factory=list)


def _offset(v: Any) -> TypeGuard[int]:
    """A character offset: a non-negative int (a bool is not one)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def read_passages(label: str, text: str, queries: Container[str], doc_lengths: Mapping[str, int],
                  resolver: Callable[[], Any], *, raw_of: Callable[[str], str] | None = None,
                  progress: Callable[[int, int], None] | None = None, skip_unknown: bool = False,
                  skip_unknown_docs: bool = False, docs_option: bool = True, skip_advice: str = SKIP_ADVICE,
                  refused: str = "Run import refused", nothing: str = "nothing was imported",
                  knower: str = "the store") -> PassageRows:
    """Read and place the passages of a JSONL run (``text``: the file's decoded text,
    ``label``: what messages call the file). ``queries``: known query ids; ``doc_lengths``:
    {doc_id: length of its stored text}; ``resolver()``: the quote resolver (an object with
    ``resolve(text, doc_id=...)``), asked for only when some line gives text without
    offsets; ``raw_of(doc_id)``: a document's stored text, to check a line's text against
    its offsets. ``skip_unknown``: lines for unknown query ids are left out and counted
    instead of refusing the file; ``skip_unknown_docs``: the same for unknown doc ids
    (``docs_option`` False: the caller has no such option to offer). One ValidationError
    lists every problem."""
    problems: list[str] = []
    items = []
    skipped: dict[str, int] = {}
    skipped_docs: dict[str, int] = {}
    unknown_lines = unknown_doc_lines = 0
    for lineno, obj in iter_objects(label, text, problems):
        where = f"{label} line {lineno}"
        qid, doc, passage = obj.get("query_id"), obj.get("doc_id"), obj.get("text")
        score, rank = obj.get("score"), obj.get("rank")
        start, end = obj.get("start"), obj.get("end")
        has_offsets = start is not None or end is not None
        span: tuple[int, int] | None = (start, end) if _offset(start) and _offset(end) else None
        if isinstance(qid, str) and qid not in queries and skip_unknown:
            skipped[qid] = skipped.get(qid, 0) + 1
        elif not isinstance(qid, str) or qid not in queries:
            problems.append(f"{where}: unknown query id {shown(qid)}")
            unknown_lines += isinstance(qid, str)
        elif isinstance(doc, str) and doc not in doc_lengths and skip_unknown_docs:
            skipped_docs[doc] = skipped_docs.get(doc, 0) + 1
        elif not isinstance(doc, str) or doc not in doc_lengths:
            problems.append(f"{where}: unknown doc id {shown(doc)}")
            unknown_doc_lines += isinstance(doc, str)
        elif has_offsets and span is None:
            problems.append(f"{where}: 'start' and 'end' must both be given, as non-negative integers, got "
                            f"start={shown(start)}, end={shown(end)}")
        elif span is not None and not span[0] < span[1] <= doc_lengths[doc]:
            problems.append(f"{where}: the passage [{start}, {end}) is not inside {shown(doc)} (need start < end <= "
                            f"{doc_lengths[doc]}, the document's length in characters)")
        elif not has_offsets and (not isinstance(passage, str) or not passage.strip()):
            problems.append(f"{where}: field 'text' is missing or empty (give the passage's 'text', or its "
                            "'start' and 'end' offsets)")
        elif passage is not None and not isinstance(passage, str):
            problems.append(f"{where}: 'text' must be a string, got {shown(passage)}")
        elif score is not None and not textin.finite(score):
            problems.append(f"{where}: 'score' must be a finite number, got {shown(score)}")
        elif rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            problems.append(f"{where}: 'rank' must be a positive integer, got {shown(rank)}")
        elif score is None and rank is None:
            problems.append(f"{where}: give a numeric 'score' or an integer 'rank'")
        else:
            items.append((lineno, qid, doc, passage, score, rank, start if has_offsets else None,
                          end if has_offsets else None))
    if not items and not problems:
        problems.append(f"{label}: every result names a query id or doc id {knower} does not know "
                        f"({len(skipped) + len(skipped_docs)} of them); {nothing}." if skipped or skipped_docs else
                        f"{label}: the file has no results (a run needs at least one line)")
    reason = f"{refused}: {{}} problem(s); {nothing}."
    if problems:
        skippable = unknown_lines + (unknown_doc_lines if docs_option else 0)
        if skippable == len(problems):  # only unknown ids: skipping them lets it through
            opts = (["--skip-unknown"] if unknown_lines else []) + (["--skip-unknown-docs"] if unknown_doc_lines else [])
            advice_for: dict[tuple[str, ...], str] = {("--skip-unknown",): skip_advice,
                                                      ("--skip-unknown-docs",): SKIP_DOCS_ADVICE}
            advice = advice_for.get(tuple(opts), SKIP_BOTH_ADVICE)
            raise OptionRequiredError(reason.format(len(problems)), option=" ".join(opts), advice=advice,
                                      problems=problems[:MAX_PROBLEMS])
        raise ValidationError(reason.format(len(problems)), problems[:MAX_PROBLEMS])
    # Second pass: place each passage given as text on its document.
    res_ = None
    out = []
    for i, (lineno, qid, doc, passage, score, rank, start, end) in enumerate(items):
        if progress and i % 200 == 0:
            progress(i, len(items))
        where = f"{label} line {lineno}"
        if start is not None:
            if passage is not None and raw_of is not None:
                from golden_store.core.canonical import canonical_text

                if canonical_text(passage) != canonical_text(raw_of(doc)[start:end]):
                    problems.append(f"{where}: 'text' is not the document's text at [{start}, {end}) of {shown(doc)} "
                                    f"(which reads {shown(raw_of(doc)[start:end])}); fix the offsets, or drop them "
                                    "to have the text placed")
                    continue
            out.append((qid, rank, float(score) if score is not None else None, doc, start, end, "offsets", lineno))
            continue
        if res_ is None:
            res_ = resolver()
            if res_ is None:
                raise ValidationError("A passage run needs the corpus index.")
        try:
            res = res_.resolve(passage, doc_id=doc)
        except ValidationError as exc:
            problems.append(f"{where}: {exc.summary}")
            continue
        if res.status == "ambiguous":
            at = ", ".join(f"[{c.start}, {c.end})" for c in res.candidates[:3])
            problems.append(f"{where}: the passage could not be placed in {shown(doc)} (ambiguous: it reads the same "
                            f"at {len(res.candidates)} places, e.g. {at}); give 'start' and 'end' to say which, or a "
                            "longer text")
            continue
        if not res.located:
            problems.append(f"{where}: the passage could not be placed in {shown(doc)} ({res.status}); is it from "
                            "another version of the document? Give its exact text, or 'start' and 'end' offsets")
            continue
        b = res.best
        out.append((qid, rank, float(score) if score is not None else None, doc, b.start, b.end, res.status, lineno))
    if progress:
        progress(len(items), len(items))
    if problems:
        raise ValidationError(reason.format(len(problems)), problems[:MAX_PROBLEMS])
    df = pd.DataFrame(out, columns=[*COLUMNS, "_line"])
    if df["rank"].notna().all():
        df = df.sort_values(["query_id", "rank", "_line"], kind="stable")
    else:
        df = df.sort_values(["query_id", "score", "_line"], ascending=[True, False, True], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return PassageRows(df.rename(columns={"_line": "line"}).reset_index(drop=True), sum(skipped.values()),
                       sorted(skipped), sum(skipped_docs.values()), sorted(skipped_docs))


def read_version_passages(version: Any, path: str | Path, *, purpose: str = "scored") -> PassageRows:
    """A JSONL passage run read against a frozen version (``golden score``, ``golden
    chunking``): offsets and placed texts are in the version's document texts (the ones its
    spans index). Lines for query ids the version does not have are left out and counted
    (a run may cover more questions than the golden set); a passage repeated for a query is
    refused, as trec_eval refuses duplicate documents."""
    p = Path(path)
    label = str(p)
    data = textin.read_file(p, label)
    text = textin.decode(label, data)
    docs = version.documents
    raw = dict(zip(docs["doc_id"], docs["raw_text"]))

    def resolver():
        from golden_store.corpus.resolver import CorpusIndex, SpanResolver

        return SpanResolver(CorpusIndex(dict(zip(docs["doc_id"], docs["canonical_text"])), raw.__getitem__))

    got = read_passages(label, text, set(version.query_ids), {d: len(t) for d, t in raw.items()}, resolver,
                        raw_of=raw.__getitem__, skip_unknown=True, docs_option=False, refused="Passage run refused",
                        nothing=f"nothing was {purpose}", knower="the version")
    rows = got.rows
    dup = rows.duplicated(["query_id", "doc_id", "start", "end"])
    if dup.any():
        problems = [f"{label} line {r.line}: {shown(r.doc_id)} [{r.start}, {r.end}) repeats a passage given for "
                    f"{shown(r.query_id)} on an earlier line; list each passage once per query"
                    for r in rows[dup].sort_values("line").itertuples()]
        raise ValidationError(f"Passage run refused: {len(problems)} problem(s); nothing was {purpose}.",
                              problems[:MAX_PROBLEMS])
    return got
