"""Chunk-level labels derived from span labels, for whatever chunker is under test.

Labels are spans; chunk ids are outputs of the chunker (METHODOLOGY §3.1), so chunk qrels
are computed at scoring time and never stored. The hit rule says when a chunk "contains"
a labeled span, and is recorded with every result:

* ``any_overlap``        - the chunk shares at least one character with the span;
* ``min_overlap(f)``     - the chunk covers at least fraction ``f`` of the span (0 < f <= 1);
* ``contains_span``      - the chunk covers the whole span.

The hit rule is for span-level labels. A grade on the whole document is not a span to hit:
:func:`split_document_grades` takes it out, and the scorer counts it as one unit (see
:mod:`golden_store.scoring.passage_units`), whatever the hit rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from golden_store.core.errors import ValidationError

_MIN_OVERLAP = re.compile(r"^min_overlap\(\s*(0(?:\.\d+)?|1(?:\.0+)?|\.\d+)\s*\)$")


@dataclass(frozen=True)
class HitRule:
    name: str             # canonical spelling, recorded in manifests and results
    min_fraction: float   # fraction of the span the chunk must cover; 0 means any overlap

    def hits(self, span_start: int, span_end: int, chunk_start: int, chunk_end: int) -> bool:
        overlap = min(span_end, chunk_end) - max(span_start, chunk_start)
        if overlap <= 0:
            return False
        if self.min_fraction <= 0:
            return True
        return overlap >= self.min_fraction * (span_end - span_start) - 1e-9


def parse_hit_rule(text: str) -> HitRule:
    t = (text or "").strip()
    if t == "any_overlap":
        return HitRule("any_overlap", 0.0)
    if t == "contains_span":
        return HitRule("contains_span", 1.0)
    m = _MIN_OVERLAP.match(t)
    if m:
        f = float(m.group(1))
        if 0 < f <= 1:
            return HitRule(f"min_overlap({f:g})", f)
    raise ValidationError(
        f"Unknown hit rule {text!r}: use any_overlap, contains_span or min_overlap(F) with 0 < F <= 1."
    )


class ChunkQrels(dict):
    """{query_id: {chunk_id: grade}} plus the hit rule that produced it."""

    def __init__(self, data: dict, hit_rule: str) -> None:
        super().__init__(data)
        self.hit_rule = hit_rule


def chunk_qrels(
    labels: Iterable[tuple[str, str, int, int, int]],
    chunks: Iterable[tuple[str, str, int, int]],
    rule: HitRule,
) -> ChunkQrels:
    """``labels``: (query_id, doc_id, start, end, grade) spans in raw offsets; ``chunks``:
    (chunk_id, doc_id, start, end) in raw offsets. A chunk's grade for a query is the
    highest grade among the spans it hits; chunks that hit nothing are not listed."""
    by_doc: dict[str, list[tuple[str, int, int]]] = {}
    for cid, doc, s, e in chunks:
        if e <= s:
            raise ValidationError(f"chunk {cid!r}: end ({e}) must be greater than start ({s})")
        by_doc.setdefault(doc, []).append((cid, int(s), int(e)))
    for lst in by_doc.values():
        lst.sort(key=lambda c: c[1])
    out: dict[str, dict[str, int]] = {}
    for qid, doc, s, e, grade in labels:
        for cid, cs, ce in by_doc.get(doc, ()):
            if cs >= e:
                break
            if rule.hits(int(s), int(e), cs, ce):
                q = out.setdefault(qid, {})
                q[cid] = max(q.get(cid, int(grade)), int(grade))
    return ChunkQrels(out, rule.name)


# ---- document-level grades on a passage run (issue 36, item 3) ---------------------------------
#
# A grade on a whole document (a pooled document-run result, a TREC/BEIR judgment import: both
# stored as (doc_id, 0, len(raw_text))) says "somewhere in this document", not "every part of
# it". Handed to ``chunk_qrels`` as a span, it made every chunk of the document a relevant
# unit, so recall's denominator grew with the number of chunks and a small chunker lost
# recall for cutting finely. Such a grade is one unit instead: it is split off here and
# credited to one chunk by the scorer (golden_store.scoring.passage_units).

EVIDENCE, PASSAGE, JUDGE = "evidence", "passage", "judge"


@dataclass(frozen=True)
class PassageLabels:
    """A version's labels as a passage run is scored on them.

    ``spans``: the span-level labels (query_id, doc_id, start, end, grade, kind), kind
    :data:`EVIDENCE` (evidence spans, grade 3), :data:`PASSAGE` (people's grades of passages
    that are not the whole document) or :data:`JUDGE` (the judge's, with ``human+judge``):
    they reach chunks through the hit rule. ``documents``: {(query_id, doc_id): grade} of the
    document-level grades that stand as one unit each. ``subsumed``: {(query_id, doc_id):
    grade} of the document-level grades whose document already has finer labels for the query
    reaching that grade (they add no unit)."""

    spans: tuple[tuple[str, str, int, int, int, str], ...]
    documents: dict[tuple[str, str], int]
    subsumed: dict[tuple[str, str], int]

    def span_rows(self) -> list[tuple[str, str, int, int, int]]:
        """The span-level labels as :func:`chunk_qrels` takes them."""
        return [r[:5] for r in self.spans]

    def counts(self, query_ids) -> dict[str, int]:
        """How many labels of each kind the questions ``query_ids`` have: for the ``_units``
        definition of a scoring (which labels its numbers used)."""
        keep = set(query_ids)
        out = {EVIDENCE: 0, PASSAGE: 0, JUDGE: 0}
        for r in self.spans:
            if r[0] in keep:
                out[r[5]] += 1
        out["documents"] = sum(1 for q, _ in self.documents if q in keep)
        out["subsumed"] = sum(1 for q, _ in self.subsumed if q in keep)
        return out


def split_document_grades(labels: Iterable[tuple[str, str, int, int, int, str]],
                          doc_lengths: Mapping[str, int]) -> PassageLabels:
    """Split ``labels`` (query_id, doc_id, start, end, grade, kind) into span-level labels and
    document-level grades. A grade is document-level when its span is the whole document
    (start 0, end the document's raw length in ``doc_lengths``) and it is a grade (kind
    :data:`PASSAGE` or :data:`JUDGE`): an evidence span is a quote, span-level whatever its
    length. Two grades of one (query, document) pair at document level keep the higher.

    Subsumed: a document-level grade on a document where the query has span-level labels is
    dropped when the finer labels reach its grade (their highest grade >= the document's):
    they say where in the document the relevance is, and counting the document too would
    count that relevance twice. When the document's grade is HIGHER than every finer label in
    it (the document graded 3, one passage of it graded 1 or 0), the finer labels do not say
    where the higher grade is, so the document grade stands as its own unit: dropping it would
    lose relevance a person (or a TREC qrels file) put on the document. An evidence span
    (grade 3, the highest) always subsumes."""
    spans: list[tuple[str, str, int, int, int, str]] = []
    whole: dict[tuple[str, str], int] = {}
    finer: dict[tuple[str, str], int] = {}
    for q, doc, s, e, g, kind in labels:
        s, e, g = int(s), int(e), int(g)
        if kind != EVIDENCE and s == 0 and doc in doc_lengths and e == int(doc_lengths[doc]):
            whole[(q, doc)] = max(whole.get((q, doc), g), g)
        else:
            spans.append((q, doc, s, e, g, kind))
            finer[(q, doc)] = max(finer.get((q, doc), g), g)
    documents = {k: g for k, g in whole.items() if k not in finer or finer[k] < g}
    subsumed = {k: g for k, g in whole.items() if k not in documents}
    return PassageLabels(tuple(spans), documents, subsumed)
