"""Token-level chunking metrics (METHODOLOGY §5.2, the Chroma formulation) and the
chunking report card (§5.4).

Tokens are *positional* identities (document, token index), never vocabulary ids: the
word "the" in an irrelevant chunk is not a hit. Excerpt tokens count once in the
numerator; retrieved tokens count with multiplicity in the precision denominator, so
overlapping chunkers pay for their redundancy.

The tokenizer here is a word/punctuation splitter (``\\w+`` or one symbol): the metrics are
ratios of token counts, so any reasonable tokenizer ranks chunkers the same way; pass
``count_tokens`` to :func:`retrieve_at_budget` to budget in the model's own tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np

from golden_store.scoring.types import ChunkingRow, TokenMetrics

_TOKEN = re.compile(r"\w+|[^\w\s]")
T = TypeVar("T")  # a ranked item: a chunk id, a passage...


def token_metrics(excerpt_tokens: set, retrieved_tokens: Sequence) -> TokenMetrics:
    """recall = |E ∩ R| / |E|, precision = |E ∩ R| / |R| (R with repeats), IoU = |E ∩ R| / |E ∪ R|."""
    unique = set(retrieved_tokens)
    inter = len(excerpt_tokens & unique)
    return {
        "recall": inter / max(len(excerpt_tokens), 1),
        "precision": inter / max(len(retrieved_tokens), 1),
        "iou": inter / max(len(excerpt_tokens | unique), 1),
    }


def precision_omega(excerpt_tokens: set, chunks: Iterable[Sequence]) -> float:
    """Precision when every chunk containing an excerpt token is retrieved: the token
    efficiency ceiling of the chunking itself (no retriever can do better)."""
    hit = [c for c in chunks if excerpt_tokens.intersection(c)]
    return token_metrics(excerpt_tokens, [t for c in hit for t in c])["precision"] if hit else 0.0


def take_at_budget(ranked: Sequence[T], budget_tokens: int, count_tokens: Callable[[T], int]) -> tuple[list[T], int]:
    """The ranked prefix that fits in ``budget_tokens`` (stopping at the first item that would
    overflow it) and the tokens it used: compare chunkers at a fixed token budget, not a fixed
    k (§5.1)."""
    out: list[T] = []
    used = 0
    for c in ranked:
        n = count_tokens(c)
        if used + n > budget_tokens:
            break
        out.append(c)
        used += n
    return out, used


def retrieve_at_budget(ranked_chunks: Sequence[T], budget_tokens: int, count_tokens: Callable[[T], int]) -> list[T]:
    """§5.1's ``retrieve_at_budget``: :func:`take_at_budget` without the count."""
    return take_at_budget(ranked_chunks, budget_tokens, count_tokens)[0]


class DocTokens:
    """Positional tokens of a set of documents: token ``i`` of document ``d`` has the global
    id ``offset[d] + i``; character spans map to the tokens they overlap."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.offset: dict[str, int] = {}
        self._starts: dict[str, np.ndarray] = {}
        self._ends: dict[str, np.ndarray] = {}
        n = 0
        for doc_id in sorted(documents):
            spans = [m.span() for m in _TOKEN.finditer(documents[doc_id])]
            self.offset[doc_id] = n
            self._starts[doc_id] = np.array([s for s, _ in spans], dtype=np.int64)
            self._ends[doc_id] = np.array([e for _, e in spans], dtype=np.int64)
            n += len(spans)

    def tokens(self, doc_id: str, start: int, end: int) -> range:
        """Global ids of the tokens of ``doc_id`` that overlap ``[start, end)``."""
        if doc_id not in self.offset:
            return range(0)
        lo = int(np.searchsorted(self._ends[doc_id], start, "right"))
        hi = int(np.searchsorted(self._starts[doc_id], end, "left"))
        base = self.offset[doc_id]
        return range(base + lo, base + max(lo, hi))


@dataclass(frozen=True)
class Chunking:
    """One chunker's output: chunks (chunk_id, doc_id, start, end) in raw offsets, and
    optionally a retriever's ranking of them per query ({query_id: [chunk_id, ...]})."""

    chunks: Sequence[tuple[str, str, int, int]]
    run: Mapping[str, Sequence[str]] | None = None


def chunking_report(documents: Mapping[str, str], spans: Iterable[tuple[str, str, int, int]],
                    chunkings: Mapping[str, Chunking], *, budget_tokens: int = 1000) -> list[ChunkingRow]:
    """The §5.4 report card, one row per chunker. ``spans``: (query_id, doc_id, start,
    end) evidence spans (raw offsets). With a run, recall / precision / IoU are measured on
    the ranked prefix that fits ``budget_tokens``; without one those columns are None."""
    tok = DocTokens(documents)
    excerpt: dict[str, set[int]] = {}
    span_list = list(spans)
    for qid, doc, s, e in span_list:
        excerpt.setdefault(qid, set()).update(tok.tokens(doc, s, e))
    rows: list[ChunkingRow] = []
    for name, ch in chunkings.items():
        chunk_tokens = {cid: list(tok.tokens(doc, s, e)) for cid, doc, s, e in ch.chunks}
        sizes = [len(t) for t in chunk_tokens.values()]
        by_doc: dict[str, list[tuple[int, int, str]]] = {}
        for cid, doc, s, e in ch.chunks:
            by_doc.setdefault(doc, []).append((s, e, cid))
        per_span = [sum(1 for cs, ce, _ in by_doc.get(doc, ()) if cs < e and s < ce) for _, doc, s, e in span_list]
        omega = [precision_omega(ex, chunk_tokens.values()) for ex in excerpt.values()]
        row = ChunkingRow(
            chunker=name,
            chunks=len(sizes),
            mean_chunk_tokens=float(np.mean(sizes)) if sizes else 0.0,
            precision_omega=float(np.mean(omega)) if omega else 0.0,
            p95_chunks_per_answer_span=float(np.percentile(per_span, 95)) if per_span else 0.0,
            recall_at_budget=None, precision_at_budget=None, iou_at_budget=None,
            tokens_per_answer_at_budget=None, budget_tokens=budget_tokens,
        )
        if ch.run is not None:
            stats: list[tuple[TokenMetrics, int]] = []
            for qid, ex in excerpt.items():
                ranked = [c for c in ch.run.get(qid, []) if c in chunk_tokens]
                kept = retrieve_at_budget(ranked, budget_tokens, lambda c: len(chunk_tokens[c]))
                got = [t for c in kept for t in chunk_tokens[c]]
                stats.append((token_metrics(ex, got), len(got)))
            row["recall_at_budget"] = _mean_of(stats, "recall")
            row["precision_at_budget"] = _mean_of(stats, "precision")
            row["iou_at_budget"] = _mean_of(stats, "iou")
            row["tokens_per_answer_at_budget"] = float(np.mean([n for _, n in stats])) if stats else math.nan
        rows.append(row)
    return rows


def _mean_of(stats: list[tuple[TokenMetrics, int]], key: Literal["recall", "precision", "iou"]) -> float:
    """Mean of one token metric over the queries (NaN with none: no query had evidence)."""
    return float(np.mean([m[key] for m, _ in stats])) if stats else math.nan


def version_chunking_report(version, chunkings: Mapping[str, Chunking], *,
                            budget_tokens: int = 1000) -> list[ChunkingRow]:
    """:func:`chunking_report` over a frozen version's documents and evidence spans."""
    docs = dict(zip(version.documents["doc_id"], version.documents["raw_text"]))
    sp = version.spans
    spans = zip(sp["query_id"], sp["doc_id"], sp["start"].astype(int), sp["end"].astype(int))
    rows = chunking_report(docs, spans, chunkings, budget_tokens=budget_tokens)
    for r in rows:
        r["dataset_version"] = version.manifest.get("dataset_version")
    return rows
