"""Chunk-level labels derived from span labels, for whatever chunker is under test.

Labels are spans; chunk ids are outputs of the chunker (METHODOLOGY §3.1), so chunk qrels
are computed at scoring time and never stored. The hit rule says when a chunk "contains"
a labeled span, and is recorded with every result:

* ``any_overlap``        - the chunk shares at least one character with the span;
* ``min_overlap(f)``     - the chunk covers at least fraction ``f`` of the span (0 < f <= 1);
* ``contains_span``      - the chunk covers the whole span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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
