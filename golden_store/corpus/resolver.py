"""Quote -> span resolution over a canonical corpus, with a word index so that no quote
scans the whole corpus.

Order (DESIGN "Quote -> span"): the canonical quote is searched exactly in the canonical
text; failing that, candidate windows found through the index are aligned with rapidfuzz
and the best one is kept if its score reaches the threshold (default 90); several equally
good places make the quote ``ambiguous``; nothing good enough is ``unresolved``.

The index: every word of every document (lower-cased, ``\\w+``) with its hash, document
and canonical offsets, sorted by hash, so a word's postings are one binary search away.
*Exact* search anchors on the rarest interior word of the quote (interior words are whole
words in any occurrence; the first and last may be cut) and checks each anchor position
with ``startswith``. *Fuzzy* search lets every quote word vote for where the quote would
start if that word were in place; positions with most votes (tolerant to a few dropped or
inserted words) become windows that are aligned character by character.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np
from rapidfuzz import fuzz

from golden_store.core.canonical import SpanMap, canonical_text, canonicalize_compact
from golden_store.core.errors import NotFoundError, ValidationError

DEFAULT_THRESHOLD = 90.0
STATUSES = ("exact", "fuzzy", "ambiguous", "unresolved")
_WORD = re.compile(r"\w+")
_WORD_SPLIT = re.compile(r"(\w+)")
_MAX_CANDIDATES = 10
_WINDOWS = 4            # candidate windows aligned per quote
_COMMON = 20000         # words with more postings than this do not vote (unless all do)
_VOTERS = 12            # only the rarest words vote: common ones add cost, not information
_MIN_FUZZY_CHARS = 12   # shorter quotes must match exactly (one long rare word is no match)
_TIE = 0.5              # scores this close to the best count as equally good (ambiguous)


def _lower(text: str) -> str:
    """Lower-case without changing length (offsets must survive); rare characters whose
    lower-case form is longer keep their case."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


_PUNCT_RUN = 3  # punctuation characters a span may take in beyond its first or last word


def _punct_after(text: str, end: int) -> int:
    """``end`` moved over the punctuation right after it (``.``, ``)``, ``.”``: not letters,
    digits or space), at most :data:`_PUNCT_RUN` characters."""
    e = end
    while e < len(text) and e - end < _PUNCT_RUN and not text[e].isalnum() and not text[e].isspace() \
            and text[e] != "_":
        e += 1
    return e


def _punct_before(text: str, start: int) -> int:
    """``start`` moved back over the punctuation right before it (``(``, ``“``)."""
    s = start
    while s > 0 and start - s < _PUNCT_RUN and not text[s - 1].isalnum() and not text[s - 1].isspace() \
            and text[s - 1] != "_":
        s -= 1
    return s


def _nearest(bounds: np.ndarray, pos: int, slack: int, k: int = 4) -> list[int]:
    """The ``k`` word boundaries closest to ``pos`` within ``slack`` characters."""
    near = bounds[np.abs(bounds - pos) <= slack]
    if near.size > k:
        near = near[np.argsort(np.abs(near - pos), kind="stable")[:k]]
    return [int(x) for x in near]


@dataclass(frozen=True)
class Candidate:
    doc_id: str
    start: int            # raw offsets: raw_text[start:end] is the matched passage
    end: int
    canonical_start: int
    canonical_end: int
    score: float

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end,
                "canonical_start": self.canonical_start, "canonical_end": self.canonical_end,
                "score": round(self.score, 2)}


@dataclass(frozen=True)
class Resolution:
    quote: str
    status: str
    best: Candidate | None          # the located span (exact / fuzzy); None otherwise
    candidates: tuple[Candidate, ...] = field(default=())  # ambiguous places, or near misses

    @property
    def located(self) -> bool:
        return self.status in ("exact", "fuzzy")

    @property
    def span(self) -> Candidate:
        """``best`` of a located resolution (exact or fuzzy always carry it): ask
        :attr:`located` first; asking an unlocated one is a bug, said as one."""
        if not self.located or self.best is None:
            raise ValueError(f"the quote is {self.status}: it has no located span")
        return self.best

    def as_dict(self) -> dict:
        b = self.best
        return {
            "status": self.status,
            "doc_id": b.doc_id if b else None,
            "start": b.start if b else None,
            "end": b.end if b else None,
            "canonical_start": b.canonical_start if b else None,
            "canonical_end": b.canonical_end if b else None,
            "score": round(b.score, 2) if b else (round(self.candidates[0].score, 2) if self.candidates else None),
            "candidates": [c.as_dict() for c in self.candidates],
        }


def _words_of(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hashes, canonical start and end offsets of the words (``\\w+`` of the lower-cased
    text) of one document. ``split`` keeps the words (odd items) between the gaps (even
    items): the offsets are running sums of the lengths, with no Python loop over the words."""
    parts = _WORD_SPLIT.split(_lower(text))
    words = parts[1::2]
    k = len(words)
    hashes = np.fromiter(map(hash, words), np.int64, k)
    lens = np.fromiter(map(len, parts), np.int64, len(parts))
    s = np.cumsum(lens)[0::2][:k]
    return hashes, s, s + lens[1::2]


def _span_map_of(raw: str, text: str, doc_id: str) -> SpanMap:
    canon, m = canonicalize_compact(raw)
    if canon != text:
        raise ValueError(f"document {doc_id!r} changed under the index")
    return m


class DocCache:
    """What a batch of quotes needs of a document once, not once per quote: its canonical
    text, its words with their offsets and its canonical -> raw offset map. Scoped to one
    batch (it grows with the documents the batch touches)."""

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self.texts: dict[str, str] = dict(texts or {})
        self.maps: dict[str, SpanMap] = {}
        self._words: dict[str, tuple[str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def words(self, doc_id: str, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        got = self._words.get(doc_id)
        if got is not None and (got[0] is text or got[0] == text):
            return got[1]
        arrays = _words_of(text)
        self._words[doc_id] = (text, arrays)
        return arrays


class CorpusIndex:
    """Word index over canonical documents. ``raw_of(doc_id)`` gives a document's raw text
    when a span must be mapped back to raw offsets (loaded lazily: most documents never
    need it)."""

    def __init__(self, canonical: dict[str, str], raw_of: Callable[[str], str],
                 maps: dict[str, SpanMap] | None = None, cache: DocCache | None = None,
                 per_quote: bool = False) -> None:
        self.doc_ids: list[str] = sorted(canonical)
        self.doc_index = {d: i for i, d in enumerate(self.doc_ids)}
        self.texts: list[str] = [canonical[d] for d in self.doc_ids]
        self._raw_of = raw_of
        hashes, docs, starts, ends, firsts = [], [], [], [], []
        n = 0
        for i, (doc_id, text) in enumerate(zip(self.doc_ids, self.texts)):
            h, s, e = _words_of(text) if cache is None else cache.words(doc_id, text)
            k = h.size
            firsts.append(n)
            hashes.append(h)
            starts.append(s)
            ends.append(e)
            docs.append(np.full(k, i, np.int32))
            n += k
        firsts.append(n)
        self.tok_hash = np.concatenate(hashes) if hashes else np.zeros(0, np.int64)
        self.tok_doc = np.concatenate(docs) if docs else np.zeros(0, np.int32)
        self.tok_start = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        self.tok_end = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        self.doc_first = np.asarray(firsts, np.int64)
        # the postings: tokens sorted by word hash. An index made for one quote's candidate
        # documents (``per_quote``) sorts only the quote's words (:meth:`prepare`)
        self._order_all: np.ndarray | None = None
        self._sorted_all: np.ndarray | None = None
        self._some: tuple[set[int], np.ndarray, np.ndarray] | None = None
        self._per_quote = per_quote
        if not per_quote:
            self._sort_all()
        # canonical -> raw maps: given (built with the text), or made on first use and kept
        # (compact: a few entries per line, not per character); with a cache, shared by
        # every index made over the same documents
        self._maps: dict[str, SpanMap] = cache.maps if cache is not None else {}
        if maps:
            self._maps.update(maps)
        self._maps_lock = threading.Lock()

    # ---- construction helpers ------------------------------------------------------------------
    @classmethod
    def from_raw(cls, raw_docs: dict[str, str]) -> "CorpusIndex":
        """Index documents given as raw text (canonicalized here, offset maps included)."""
        canon, maps = {}, {}
        for d, t in raw_docs.items():
            canon[d], maps[d] = canonicalize_compact(t)
        return cls(canon, raw_docs.__getitem__, maps)

    @property
    def n_tokens(self) -> int:
        return int(self.tok_hash.size)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self.doc_index

    def postings(self, word_hash: int) -> np.ndarray:
        """Global token indices of every occurrence of the word, in corpus order (the
        argsort is stable, so equal hashes keep their corpus order: no sort needed)."""
        some = self._some
        if some is not None and word_hash in some[0]:
            order, keys = some[1], some[2]
        else:
            order, keys = self._sort_all()
        lo = np.searchsorted(keys, word_hash, "left")
        hi = np.searchsorted(keys, word_hash, "right")
        return order[lo:hi]

    def _sort_all(self) -> tuple[np.ndarray, np.ndarray]:
        if self._order_all is None or self._sorted_all is None:
            order = np.argsort(self.tok_hash, kind="stable")
            self._sorted_all = self.tok_hash[order]
            self._order_all = order
        return self._order_all, self._sorted_all

    def prepare(self, word_hashes: Iterable[int]) -> None:
        """A ``per_quote`` index: sort just the tokens of these words (the quote's), so
        :meth:`postings` of them does not sort the whole index; the same arrays (tokens in
        corpus order). Nothing for an index sorted whole."""
        if not self._per_quote or self._order_all is not None or not self.tok_hash.size:
            return
        wanted = np.unique(np.fromiter(word_hashes, np.int64))
        if not wanted.size:
            return
        at = np.minimum(np.searchsorted(wanted, self.tok_hash), wanted.size - 1)
        idx = np.flatnonzero(wanted[at] == self.tok_hash)
        sub = self.tok_hash[idx]
        order = np.argsort(sub, kind="stable")
        self._some = (set(wanted.tolist()), idx[order], sub[order])

    def span_map(self, doc_id: str) -> SpanMap:
        m = self._maps.get(doc_id)
        if m is None:
            m = _span_map_of(self._raw_of(doc_id), self.texts[self.doc_index[doc_id]], doc_id)
            with self._maps_lock:
                self._maps[doc_id] = m
        return m

    def candidate(self, doc: int, cstart: int, cend: int, score: float) -> Candidate:
        doc_id = self.doc_ids[doc]
        rs, re_ = self.span_map(doc_id).to_raw(cstart, cend)
        return Candidate(doc_id, rs, re_, cstart, cend, score)


def _resolve_many(resolve: Callable[[str, str | None], Resolution], items: Iterable[tuple[str, str | None]],
                  progress: Callable[[int, int], None] | None, total: int) -> list[Resolution]:
    out = []
    for i, (quote, doc) in enumerate(items):
        out.append(resolve(quote, doc))
        if progress and (i % 200 == 0):
            progress(i, total)
    if progress:
        progress(total, total)
    return out


@dataclass(frozen=True)
class _Hit:
    doc: int
    start: int
    end: int
    score: float


class SpanResolver:
    """Resolves quotes against a :class:`CorpusIndex`."""

    def __init__(self, index: CorpusIndex, threshold: float = DEFAULT_THRESHOLD) -> None:
        if not 0 < threshold <= 100:
            raise ValidationError(f"threshold must be in (0, 100], got {threshold}")
        self.index = index
        self.threshold = float(threshold)

    @overload
    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: Literal[False] = False) -> Resolution: ...

    @overload
    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: bool) -> Resolution | None: ...

    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: bool = False) -> Resolution | None:
        """Place ``quote`` in the corpus (only in ``doc_id`` when given). ``exact_only``:
        None instead of a fuzzy search when the quote is not found exactly."""
        cq = canonical_text(quote or "")
        if not cq:
            raise ValidationError("The quote is empty (nothing left after canonicalization); type or paste the passage.")
        only: int | None = None
        if doc_id is not None:
            if doc_id not in self.index:
                raise ValidationError(f"Unknown doc_id hint {doc_id!r}: no such document in the corpus.")
            only = self.index.doc_index[doc_id]
        lowq = _lower(cq)
        qtoks = [(hash(m.group()), m.start(), m.end()) for m in _WORD.finditer(lowq)]
        self.index.prepare(h for h, _, _ in qtoks)
        exact = self._exact(cq, qtoks, only)
        if len(exact) == 1:
            return Resolution(quote, "exact", self._cand(exact[0]))
        if len(exact) > 1:
            return Resolution(quote, "ambiguous", None, tuple(self._cand(h) for h in exact[:_MAX_CANDIDATES]))
        if exact_only:
            return None
        hits = self._fuzzy(lowq, qtoks, only) if len(cq) >= _MIN_FUZZY_CHARS else []
        good = [h for h in hits if h.score >= self.threshold]
        if not good:
            near = tuple(self._cand(h) for h in hits[:3])
            return Resolution(quote, "unresolved", None, near)
        best = good[0]
        ties = [h for h in good if best.score - h.score <= _TIE]
        if len(ties) > 1:
            return Resolution(quote, "ambiguous", None, tuple(self._cand(h) for h in ties[:_MAX_CANDIDATES]))
        return Resolution(quote, "fuzzy", self._cand(best), tuple(self._cand(h) for h in good[1:3]))

    def resolve_many(self, items: Iterable[tuple[str, str | None]],
                     progress: Callable[[int, int], None] | None = None, total: int = 0) -> list[Resolution]:
        return _resolve_many(self.resolve, items, progress, total)

    # ---- internals ---------------------------------------------------------------------------
    def _cand(self, h: _Hit) -> Candidate:
        return self.index.candidate(h.doc, h.start, h.end, h.score)

    def _restricted(self, g: np.ndarray, only: int | None) -> np.ndarray:
        return g if only is None else g[self.index.tok_doc[g] == only]

    def _exact(self, cq: str, qtoks: list[tuple[int, int, int]], only: int | None) -> list[_Hit]:
        ix = self.index
        hits: list[_Hit] = []
        if len(qtoks) >= 3:
            best = None
            for h, s, _ in qtoks[1:-1]:  # interior words are whole words wherever the quote occurs
                g = self._restricted(ix.postings(h), only)
                if best is None or g.size < best[0].size:
                    best = (g, s)
                if g.size == 0:
                    return []
            assert best is not None  # len(qtoks) >= 3: at least one interior word set it
            g, offset = best
            for d, ts in zip(ix.tok_doc[g].tolist(), ix.tok_start[g].tolist()):
                start = ts - offset
                if start >= 0 and ix.texts[d].startswith(cq, start):
                    hits.append(_Hit(d, start, start + len(cq), 100.0))
            return hits
        docs = range(len(ix.texts)) if only is None else [only]
        for d in docs:  # one or two words: scan (a partial word has no postings of its own)
            text = ix.texts[d]
            i = text.find(cq)
            while i != -1:
                hits.append(_Hit(d, i, i + len(cq), 100.0))
                i = text.find(cq, i + 1)
        return hits

    def _fuzzy(self, lowq: str, qtoks: list[tuple[int, int, int]], only: int | None) -> list[_Hit]:
        ix = self.index
        n = len(qtoks)
        if n == 0:
            return []
        lists = [self._restricted(ix.postings(h), only) for h, _, _ in qtoks]
        usable = [i for i, g in enumerate(lists) if 0 < g.size <= _COMMON]
        if not usable:
            usable = sorted((i for i, g in enumerate(lists) if g.size), key=lambda i: lists[i].size)[:3]
        usable = sorted(usable, key=lambda i: lists[i].size)[:_VOTERS]
        if not usable:
            return []
        # each word votes for the quote's start (document, local word index) if it is in place
        docs = np.concatenate([ix.tok_doc[lists[i]] for i in usable]).astype(np.int64)
        local = np.concatenate([lists[i] - ix.doc_first[ix.tok_doc[lists[i]]] - i for i in usable])
        keys = np.sort(docs * (1 << 32) + (local + (1 << 31)))
        uniq, counts = np.unique(keys, return_counts=True)
        # tolerate a few dropped/inserted words: count votes within +-3 word positions
        lo = np.searchsorted(keys, uniq - 3, "left")
        hi = np.searchsorted(keys, uniq + 3, "right")
        support = hi - lo
        need = max(2, int(np.ceil(0.25 * len(usable)))) if len(usable) > 1 else 1
        order = np.argsort(-support, kind="stable")
        chosen: list[tuple[int, int]] = []
        for k in order[: 50 * _WINDOWS]:
            if support[k] < need or len(chosen) >= _WINDOWS:
                break
            d, loc = int(uniq[k] >> 32), int((uniq[k] & 0xFFFFFFFF) - (1 << 31))
            if any(d == cd and abs(loc - cl) <= n for cd, cl in chosen):
                continue
            chosen.append((d, loc))
        aligned = [self._align(lowq, n, d, loc) for d, loc in chosen]
        hits = [h for h in aligned if h is not None]
        hits.sort(key=lambda h: -h.score)
        # the same place found from two windows is one place
        unique: list[_Hit] = []
        for h in hits:
            if not any(u.doc == h.doc and u.start < h.end and h.start < u.end for u in unique):
                unique.append(h)
        return unique

    def _align(self, lowq: str, n: int, d: int, loc: int) -> _Hit | None:
        ix = self.index
        first, last = int(ix.doc_first[d]), int(ix.doc_first[d + 1]) - 1
        pad = max(3, n // 3)
        a = first + max(0, loc - pad)
        b = min(last, first + max(0, loc) + n + pad)
        if a > last or b < a:
            return None
        text = ix.texts[d]
        w0, w1 = int(ix.tok_start[a]), int(ix.tok_end[b])
        window = _lower(text[w0:w1])
        al = fuzz.partial_ratio_alignment(lowq, window)
        if al is None or al.score < self.threshold - 15:
            return None
        s0, e0 = w0 + al.dest_start, w0 + al.dest_end
        # refine the ends: the best full alignment may be longer or shorter than the quote
        # (a dropped or added word), and should start and end on word boundaries
        slack = min(60, max(24, len(lowq) // 8))
        starts = {s0} | set(_nearest(ix.tok_start[a:b + 1], s0, slack, 8))
        ends = {e0} | set(_nearest(ix.tok_end[a:b + 1], e0, slack, 8))
        # a word boundary is not where a sentence ends: the final period (or a closing
        # bracket or quote mark) follows the last word, an opening one precedes the first.
        # Without these the span of "... go unrecorded." stopped before its period.
        starts |= {_punct_before(text, x) for x in starts}
        ends |= {_punct_after(text, x) for x in ends}
        best = (-1.0, s0, e0)
        low_text = _lower(text[min(starts):max(ends)])
        base = min(starts)
        for s in starts:
            for e in ends:
                if e - s < max(1, len(lowq) // 2):
                    continue
                sc = fuzz.ratio(lowq, low_text[s - base:e - base])
                if sc > best[0] or (sc == best[0] and (e - s) < (best[2] - best[1])):
                    best = (sc, s, e)
        score, s, e = best
        if score < 0:
            return None
        return _Hit(d, s, e, float(score))


# ---- over the persisted index ------------------------------------------------------------------

_PHRASE_LIMIT = 64   # documents holding the quote's interior words that the exact search reads
_RANKED = 10         # documents ranked by BM25 on the quote's words that the fuzzy search reads


class IndexedResolver:
    """:class:`SpanResolver` over a persisted index (golden_store.corpus.index): the index
    names the candidate documents, their canonical text is fetched, and the same resolver
    runs on just those, so a quote costs a few index lookups and a few documents, not the
    corpus.

    Candidates: for the exact search, every document holding the quote's interior words as
    a phrase (they are whole words wherever the quote occurs; up to 64 documents, enough to
    call a quote ambiguous); for the fuzzy search, the 10 documents BM25 ranks first for the
    quote's words. A quote of one or two words (either may be cut at the quote's edge) is
    looked up through the term dictionary (``CorpusSearchIndex.partial_docs``).

    ``overlay`` (doc_id -> canonical text) overrides or adds documents the index does not
    have yet: re-resolution inside an import's transaction sees the new texts."""

    def __init__(self, index, raw_of: Callable[[str], str] | None = None, threshold: float = DEFAULT_THRESHOLD,
                 overlay: dict[str, str] | None = None) -> None:
        if not 0 < threshold <= 100:
            raise ValidationError(f"threshold must be in (0, 100], got {threshold}")
        self.index = index
        self.threshold = float(threshold)
        self._raw_of = raw_of or self._stored_raw
        self._overlay = dict(overlay or {})
        # the overlay's own in-memory index, built once: its documents are candidates only
        # where the quote lands in them. Their raw text is not in the index (new or changed
        # documents), so only the caller's raw_of can map a span back to raw offsets.
        self._overlay_resolver: SpanResolver | None = None
        if overlay:
            if raw_of is None:
                raise ValueError("an overlay needs raw_of: the index does not hold its documents' raw text")
            self._overlay_resolver = SpanResolver(CorpusIndex(self._overlay, raw_of), threshold)

    def _stored_raw(self, doc_id: str) -> str:
        raw = self.index.raw(doc_id)
        if raw is None:
            raise NotFoundError(f"Document {doc_id!r} is no longer in the corpus.")
        return raw

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._overlay or doc_id in self.index

    def _exact_ids(self, words: list[str]) -> list[str]:
        if len(words) >= 3:
            return self.index.phrase_docs(words[1:-1], _PHRASE_LIMIT)[1]
        return self.index.partial_docs(words, _PHRASE_LIMIT)

    def _overlay_ids(self, canonical_quote: str) -> list[str]:
        if self._overlay_resolver is None:
            return []
        r = self._overlay_resolver.resolve(canonical_quote)
        return [c.doc_id for c in ([r.best] if r.best else []) + list(r.candidates)]

    def candidate_ids(self, canonical_quote: str) -> list[str]:
        """Every document the quote may be in (exact and fuzzy candidates)."""
        words = self.index.words(canonical_quote)
        ids = self._exact_ids(words)
        if len(canonical_quote) >= _MIN_FUZZY_CHARS:
            ids += self.index.near_passage(words, _RANKED)
        return list(dict.fromkeys(ids + self._overlay_ids(canonical_quote)))

    def texts(self, doc_ids: Iterable[str], cache: DocCache | None = None) -> dict[str, str]:
        ids = list(doc_ids)
        out = {d: self._overlay[d] for d in ids if d in self._overlay}
        rest = [d for d in ids if d not in out]
        if cache is None:
            out.update(self.index.texts(rest))
            return out
        held = cache.texts
        fetched = self.index.texts([d for d in rest if d not in held])
        held.update(fetched)
        out.update((d, held[d]) for d in rest if d in held)
        return out

    @overload
    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: Literal[False] = False) -> Resolution: ...

    @overload
    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: bool) -> Resolution | None: ...

    def resolve(self, quote: str, doc_id: str | None = None, *, exact_only: bool = False) -> Resolution | None:
        """As :meth:`SpanResolver.resolve`: ``exact_only`` gives None instead of a fuzzy search."""
        return self._resolve(quote, doc_id, exact_only, None)

    def _resolve(self, quote: str, doc_id: str | None, exact_only: bool, cache: DocCache | None,
                 absent: bool = False) -> Resolution | None:
        """``absent``: the canonical quote is known to occur nowhere in the corpus (so the
        exact search on the phrase's documents would find nothing: it is skipped)."""
        cq = canonical_text(quote or "")
        if not cq:
            raise ValidationError("The quote is empty (nothing left after canonicalization); type or paste the passage.")
        if doc_id is not None and doc_id not in self:
            raise ValidationError(f"Unknown doc_id hint {doc_id!r}: no such document in the corpus.")
        if doc_id is not None:
            return self._on([doc_id], cache).resolve(quote, doc_id, exact_only=exact_only)
        # exact first, on the documents holding the interior words as a phrase (usually one)
        words = self.index.words(cq)
        exact_ids = list(dict.fromkeys(self._exact_ids(words) + self._overlay_ids(cq)))
        if exact_ids and not absent:
            found = self._on(exact_ids, cache).resolve(quote, exact_only=True)
            if found is not None:
                return found
        if exact_only:
            return None
        ids = exact_ids + (self.index.near_passage(words, _RANKED) if len(cq) >= _MIN_FUZZY_CHARS else [])
        return self._on(list(dict.fromkeys(ids)), cache).resolve(quote)

    def _on(self, doc_ids: list[str], cache: DocCache | None = None) -> SpanResolver:
        return SpanResolver(CorpusIndex(self.texts(doc_ids, cache), self._raw_of, cache=cache, per_quote=True),
                            self.threshold)

    def resolve_many(self, items: Iterable[tuple[str, str | None]],
                     progress: Callable[[int, int], None] | None = None, total: int = 0) -> list[Resolution]:
        return _resolve_many(self.resolve, items, progress, total)

    def resolve_batch(self, items: Sequence[tuple[str, str | None]], *, corpus: dict[str, str] | None = None,
                      progress: Callable[[int, int], None] | None = None) -> list[Resolution]:
        """Every ``(quote, doc_id hint)`` resolved as :meth:`resolve` would one by one (the
        same statuses, spans and candidates), with the per-document work done once for the
        batch: a document's words, offsets and offset map are made the first time a quote
        needs them and kept until the batch ends.

        ``corpus``: the canonical text of every document in the index (a folder read whole
        anyway). With it, the quotes found exactly are found for the whole batch in one pass
        over the text (an Aho-Corasick automaton of the canonical quotes); only the others
        go through the index one by one. A quote goes the per-quote way whenever the one
        pass could answer differently: fewer than three words (the index then looks the
        words up as parts of words), occurrences in more documents than the exact search
        reads, or a capital sigma (lower-casing it depends on the letters around it)."""
        cache = DocCache(corpus)
        found: dict[int, Resolution] = {}
        absent: set[int] = set()
        if corpus is not None and not self._overlay:
            found, absent = self._exact_batch(items, corpus, cache)
        out: list[Resolution] = []
        for i, (quote, doc_id) in enumerate(items):
            res = found.get(i)
            if res is None:
                res = self._resolve(quote, doc_id, False, cache, absent=i in absent)
                assert res is not None  # exact_only False: always an answer
            out.append(res)
            if progress and i % 100 == 0:
                progress(i, len(items))
        if progress:
            progress(len(items), len(items))
        return out

    def _exact_batch(self, items: Sequence[tuple[str, str | None]], corpus: dict[str, str],
                     cache: DocCache) -> tuple[dict[int, Resolution], set[int]]:
        """(the quotes answered from their places in the corpus, the quotes found nowhere)."""
        import ahocorasick

        by_quote: dict[str, list[int]] = {}
        for i, (quote, doc_id) in enumerate(items):
            cq = canonical_text(quote or "")
            if doc_id is None and cq:
                by_quote.setdefault(cq, []).append(i)
        if not by_quote:
            return {}, set()
        patterns = list(by_quote)
        automaton = ahocorasick.Automaton()
        for k, cq in enumerate(patterns):
            automaton.add_word(cq, k)
        automaton.make_automaton()
        places: list[list[tuple[str, int]]] = [[] for _ in patterns]
        for doc_id in sorted(corpus):  # the order the per-quote search lists places in
            for last, k in automaton.iter(corpus[doc_id]):
                places[k].append((doc_id, last + 1 - len(patterns[k])))
        out: dict[int, Resolution] = {}
        absent: set[int] = set()
        for k, cq in enumerate(patterns):
            hits = places[k]
            if not hits:
                absent.update(by_quote[cq])
                continue
            if "\u03a3" in cq or len({d for d, _ in hits}) > _PHRASE_LIMIT:
                continue
            words = self.index.words(cq)
            if len(words) < 3 or not self._reads_all(words[1:-1]):
                continue  # the per-quote search might not read every place: it answers
            cands = tuple(self._exact_candidate(d, s, len(cq), cache) for d, s in hits[:_MAX_CANDIDATES])
            for i in by_quote[cq]:
                quote = items[i][0]
                out[i] = (Resolution(quote, "exact", cands[0]) if len(hits) == 1
                          else Resolution(quote, "ambiguous", None, cands))
        return out, absent

    def _reads_all(self, interior: list[str]) -> bool:
        """Whether the per-quote exact search reads every document holding these words as a
        phrase (it reads at most :data:`_PHRASE_LIMIT` of them)."""
        if min(self.index.doc_freq(w) for w in interior) <= _PHRASE_LIMIT:
            return True
        return self.index.phrase_docs(interior, 1)[0] <= _PHRASE_LIMIT

    def _exact_candidate(self, doc_id: str, start: int, length: int, cache: DocCache) -> Candidate:
        m = cache.maps.get(doc_id)
        if m is None:
            m = cache.maps[doc_id] = _span_map_of(self._raw_of(doc_id), cache.texts[doc_id], doc_id)
        rs, re_ = m.to_raw(start, start + length)
        return Candidate(doc_id, rs, re_, start, start + length, 100.0)
