"""Keyword search over the corpus (BM25 on the resolver's word index) with snippets whose
hits are marked, so an expert can find the passage to quote."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from golden_store.corpus.resolver import CorpusIndex, _lower

_WORD = re.compile(r"\w+")
K1, B = 1.2, 0.75
# Words too common to rank by (they still count when a query has nothing else).
STOPWORDS = frozenset(
    "a an the of per to in for on and or is are be been with at by from as it its this that these those "
    "i you we my our your do does did can could should would will what when where which who how why".split()
)


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    score: float
    snippet: tuple[tuple[str, bool], ...]  # (text, is_hit) segments of canonical text
    n_hits: int
    match: str = "words"  # how the document met the query: "phrase", "near" or "words" (index.Ranked)


def search(index: CorpusIndex, text: str, *, limit: int = 10, snippet_chars: int = 280,
           only_doc: str | None = None) -> list[SearchHit]:
    """Documents ranked by BM25 for the words of ``text`` (case-insensitive)."""
    words = list(dict.fromkeys(_WORD.findall(text.lower())))
    terms = [w for w in words if w not in STOPWORDS] or words
    if not terms or not index.doc_ids:
        return []
    n_docs = len(index.doc_ids)
    lengths = np.diff(index.doc_first).astype(float)
    avg = float(lengths.mean()) or 1.0
    scores = np.zeros(n_docs)
    hit_tokens: list[np.ndarray] = []
    hit_terms: list[np.ndarray] = []
    weight = [0.0] * len(terms)  # idf of each term: rare words decide where the snippet is
    for ti, t in enumerate(terms):
        g = index.postings(hash(t))
        if only_doc is not None:
            g = g[index.tok_doc[g] == index.doc_index[only_doc]]
        if g.size == 0:
            continue
        hit_tokens.append(g)
        hit_terms.append(np.full(g.size, ti))
        docs, tf = np.unique(index.tok_doc[g], return_counts=True)
        idf = math.log(1 + (n_docs - docs.size + 0.5) / (docs.size + 0.5))
        weight[ti] = idf
        dl = lengths[docs]
        scores[docs] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avg))
    if not hit_tokens:
        return []
    hits = np.concatenate(hit_tokens)
    term_of = np.concatenate(hit_terms)
    ranked = [int(d) for d in np.argsort(-scores, kind="stable")[:limit] if scores[d] > 0]
    out = []
    for d in ranked:
        mask = index.tok_doc[hits] == d
        order = np.argsort(hits[mask], kind="stable")
        g, tid = hits[mask][order], term_of[mask][order]
        spans = list(zip(index.tok_start[g].tolist(), index.tok_end[g].tolist()))
        out.append(SearchHit(index.doc_ids[d], float(scores[d]),
                             _snippet(index.texts[d], spans, [(t, weight[t]) for t in tid.tolist()], snippet_chars),
                             len(spans)))
    return out


def search_indexed(index, text: str, *, limit: int = 10, snippet_chars: int = 280,
                   only_doc: str | None = None) -> list[SearchHit]:
    """:func:`search` over the persisted index (golden_store.corpus.index), phrases first:
    documents holding the query as typed (its words adjacent, in order), then those holding
    its words in order close together, then BM25 on its words (``CorpusSearchIndex.ranked``);
    only the ranked documents are read to place the hits for the snippets."""
    typed = index.words(text)
    words = list(dict.fromkeys(typed))
    terms = [w for w in words if w not in STOPWORDS] or words
    if not terms:
        return []
    ranked = index.ranked(terms, limit, only_doc, phrase=typed)
    texts = index.texts(r.doc_id for r in ranked)
    weight = {t: _idf(index.n_docs, index.doc_freq(t)) for t in terms}
    # the terms as whole words (longest first, so a term is never cut by a shorter one)
    hit_re = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + r")(?!\w)")
    out = []
    for r in ranked:
        doc = texts.get(r.doc_id)
        if doc is None:
            continue
        spans, weights = [], []
        for m in hit_re.finditer(_lower(doc)):
            w = m.group()
            spans.append((m.start(), m.end()))
            weights.append((terms.index(w), weight[w]))
        if spans:
            out.append(SearchHit(r.doc_id, r.score, _snippet(doc, spans, weights, snippet_chars), len(spans),
                                 r.match))
    return out


def _idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def _snippet(text: str, spans: list[tuple[int, int]], weights: list[tuple[int, float]], width: int) -> tuple[tuple[str, bool], ...]:
    """The ``width``-character window whose distinct query words weigh most (idf: a rare
    word beats a frequent one), then with most hits; cut at word boundaries. ``weights``
    holds each hit's (term, weight)."""
    starts = [s for s, _ in spans]
    best_i, j = 0, 0
    best_key: tuple[float, int] = (0.0, 0)  # (weight of the distinct words, hits) of the best window
    for i, s in enumerate(starts):
        while starts[j] < s - width // 2:
            j += 1
        k = i
        while k + 1 < len(starts) and starts[k + 1] < s + width // 2:
            k += 1
        key = (round(sum(dict(weights[j:k + 1]).values()), 9), k - j + 1)
        if key > best_key:
            best_i, best_key = i, key
    centre = starts[best_i]
    a = max(0, centre - width // 2)
    b = min(len(text), a + width)
    while a > 0 and not text[a - 1].isspace() and centre - a < width:
        a -= 1
    while b < len(text) and not text[b].isspace() and b - a < width + 40:
        b += 1
    segs: list[tuple[str, bool]] = [("… ", False)] if a > 0 else []
    pos = a
    for s, e in spans:
        if e <= a or s >= b:
            continue
        s, e = max(s, a), min(e, b)
        if s > pos:
            segs.append((text[pos:s], False))
        segs.append((text[s:e], True))
        pos = e
    if pos < b:
        segs.append((text[pos:b], False))
    if b < len(text):
        segs.append((" …", False))
    return tuple(segs)


# ---- a question's terms in a passage, as whole tokens ----------------------------------------

_TOKEN = re.compile(r"\S+")
_EDGE = re.compile(r"^[^\w]+|[^\w]+$")


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """Whitespace-separated tokens with the punctuation at their edges left out ("Berlin?" is
    ``berlin``, "LIS-0.12" stays whole): (lower-cased token, start, end)."""
    out = []
    for m in _TOKEN.finditer(text):
        core = _EDGE.sub("", m.group())
        if core:
            s = m.start() + m.group().index(core)
            out.append((_lower(core), s, s + len(core)))
    return out


def question_terms(question: str) -> frozenset[str]:
    """The question's tokens worth lighting in a passage: whole tokens (an identifier such as
    ``LIS-0.12`` is one term, not ``lis``, ``0`` and ``12``), leaving out those made only of
    stopwords and single characters (``what's``, ``a``)."""
    return frozenset(t for t, _, _ in _tokens(question)
                     if any(w not in STOPWORDS and len(w) > 1 for w in _WORD.findall(t)))


def term_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """Where ``text`` holds one of ``terms`` as a whole token (case-insensitive): "12" from
    a question never lights the "12" of "12:30" (review L8)."""
    return [(s, e) for t, s, e in _tokens(text) if t in terms]
