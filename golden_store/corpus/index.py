"""The persisted corpus index: a tantivy index in a folder beside the store file
(``<store>.index/``; for a PostgreSQL store, in the data directory, see :func:`index_dir_for`),
so that no process reads the whole corpus to answer a quote or a search.

Why tantivy (DESIGN "Corpus index"): it is an on-disk inverted index with positions and
BM25 that opens in milliseconds (memory-mapped segments), indexes in Rust on every core and
is updated document by document. Measured on 50 MB of generated prose: indexing 3.9 s on 2
cores, 65 MB on disk with the canonical text stored (lz4), open < 1 ms, phrase query p95
0.4 ms, BM25 top 10 p95 1 ms. DuckDB postings tables (no positional index, one process) and
SQLite FTS5 (one writer, tokenizer in C only) were the alternatives.

What it holds: per document its id, canonical text and raw text (stored, lz4, so the
resolver fetches only candidate documents' text and maps offsets back without the store) and the canonical text's words (``\\w+``, lower-cased, with
positions). It is *derived*: the store's ``corpus_events`` say which documents changed, and
``golden-index.json`` says up to which event the index reflects them. :func:`open_for`
brings it up to date (or builds it) before anyone reads it, so an import that committed in
the store but crashed before the index was updated is repaired on the next open, and an
import that failed leaves both as they were (the index is only written after the store
commits; an uncommitted tantivy writer is discarded).
"""

from __future__ import annotations

import errno
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tantivy

from golden_store.core import disk
from golden_store.core.paths import writable_data_dir

FORMAT = 2  # 2: the raw text is stored too
META = "golden-index.json"
_ANALYZER = "golden_words"
_FETCH = 512            # documents read from the store per batch when (re)building
_HEAP = 256_000_000     # tantivy writer memory, split between its threads

_PAIRS = 16           # word pairs (phrases) a fuzzy candidate query uses at most
_VOTERS = 12          # words (the rarest) whose BM25 ranks fuzzy candidates
_COMMON_SHARE = 20    # ... each in at most 1/20 of the documents
_FEW = 6              # fewer rare words or pairs than this: the rarest ones whatever their counts
_RARE_MIN, _RARE_SHARE = 200, 100   # a pair needs a word in at most max(200, 1% of documents)

Progress = Callable[[int, int], None]


def _analyzer() -> tantivy.TextAnalyzer:
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(r"\w+"))
            .filter(tantivy.Filter.lowercase()).build())


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("doc_id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("body", stored=True, tokenizer_name=_ANALYZER, index_option="position")
    sb.add_bytes_field("raw", stored=True, indexed=False)  # UTF-8: offsets map back to it
    return sb.build()


def _words(words: Iterable[str]) -> list[str | tuple[int, str]]:
    """``words`` as the list ``Query.phrase_query`` takes (each a word, or (position, word))."""
    return list(words)


def _document(doc_id: str, canonical: str, raw: str) -> tantivy.Document:
    return tantivy.Document(doc_id=doc_id, body=canonical, raw=raw.encode("utf-8"))


def index_dir(store_path: str | os.PathLike[str]) -> Path:
    """The index folder beside a DuckDB store file: ``<store>.index``."""
    p = Path(store_path)
    return p.with_name(p.name + ".index")


INDEXES = "corpus-index"  # the data directory's folder of PostgreSQL stores' indexes


def index_dir_for(store_path: Path, url: str | None) -> Path:
    """Where the index of the store at ``store_path`` lives (a ``Store``'s ``path`` and ``url``;
    ``url`` None for a DuckDB file). A DuckDB store: beside its file (:func:`index_dir`),
    moving with it. A PostgreSQL store has no file of its own on this machine: under the
    data directory (``GOLDEN_DATA_DIR``, default ``~/.local/share/golden-studio``), one folder
    per server and database (``corpus-index/HOST_PORT_DB.postgresql.index``), never the
    directory the process happened to start in. An unwritable data directory is a
    ``DataDirError`` naming it and the setting."""
    if url is None:
        return index_dir(store_path)
    return writable_data_dir() / INDEXES / (Path(store_path).name + ".index")


# How a document met a search (best first): the query's words as typed, adjacent and in
# order; its words (stopwords left out) in order within a few words of each other; or only
# some of its words anywhere.
PHRASE, NEAR, WORDS = "phrase", "near", "words"
_NEAR_SLOP = 4        # other words allowed between a "near" match's words, in all


@dataclass(frozen=True)
class Ranked:
    doc_id: str
    score: float
    match: str = WORDS  # PHRASE / NEAR / WORDS


class CorpusSearchIndex:
    """Read side of the persisted index (thread-safe: tantivy searchers are)."""

    def __init__(self, path: Path, index: tantivy.Index, last_event: int) -> None:
        self.path = path
        self._index = index
        self._schema = index.schema
        self._words = _analyzer()
        self.last_event = last_event

    # ---- words ------------------------------------------------------------------------------
    def words(self, text: str) -> list[str]:
        """The index's words of ``text`` (what a query must use to meet the documents')."""
        return self._words.analyze(text)

    # ---- documents --------------------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return self._index.searcher().num_docs

    def __contains__(self, doc_id: str) -> bool:
        q = tantivy.Query.term_query(self._schema, "doc_id", doc_id)
        return bool(self._index.searcher().search(q, limit=1).hits)

    def texts(self, doc_ids: Iterable[str]) -> dict[str, str]:
        """Canonical texts of the given documents (those in the index)."""
        ids = list(dict.fromkeys(doc_ids))
        if not ids:
            return {}
        s = self._index.searcher()
        q = tantivy.Query.term_set_query(self._schema, "doc_id", ids)
        out = {}
        for _, addr in s.search(q, limit=len(ids)).hits:
            d = s.doc(addr)
            out[d["doc_id"][0]] = d["body"][0]
        return out

    def raw(self, doc_id: str) -> str | None:
        """The raw text of one document (what offsets index), or None."""
        s = self._index.searcher()
        hits = s.search(tantivy.Query.term_query(self._schema, "doc_id", doc_id), limit=1).hits
        return bytes(s.doc(hits[0][1])["raw"][0]).decode("utf-8") if hits else None

    # ---- queries ----------------------------------------------------------------------------
    def _term(self, w: str) -> tantivy.Query:
        return tantivy.Query.term_query(self._schema, "body", w)

    def _ids(self, s: tantivy.Searcher, hits) -> list[Ranked]:
        return [Ranked(s.doc(addr)["doc_id"][0], float(score)) for score, addr in hits]

    def phrase_docs(self, words: Sequence[str], limit: int) -> tuple[int, list[str]]:
        """Documents holding ``words`` as consecutive words: (how many, up to ``limit`` ids)."""
        if not words:
            return 0, []
        q = self._term(words[0]) if len(words) == 1 else tantivy.Query.phrase_query(self._schema, "body", _words(words))
        s = self._index.searcher()
        res = s.search(q, limit=limit, count=True)
        # tantivy's stub omits SearchResult.count, which the library has (None without count=True)
        total = res.count  # type: ignore[attr-defined]
        return int(total or 0), [r.doc_id for r in self._ids(s, res.hits)]

    def partial_docs(self, words: Sequence[str], limit: int) -> list[str]:
        """Documents holding a quote of one or two words whose ends may be cut (``ertificat``,
        ``lo wor``; in Chinese or Japanese a whole sentence is one word): the first word as
        the end of a word, the last as the start of the next one. Walks the term dictionary
        (a regex over the terms), so it costs more than a phrase lookup; quotes this short
        are rare and asked to be confirmed anyway."""
        if not words or len(words) > 2:
            return []
        esc = [re.escape(w) for w in words]
        if len(esc) == 1:
            q = tantivy.Query.regex_query(self._schema, "body", f".*{esc[0]}.*")
        else:
            q = tantivy.Query.regex_phrase_query(self._schema, "body", [f".*{esc[0]}", f"{esc[1]}.*"])
        s = self._index.searcher()
        return [r.doc_id for r in self._ids(s, s.search(q, limit=limit).hits)]

    def ranked(self, words: Sequence[str], limit: int, only_doc: str | None = None,
               phrase: Sequence[str] = ()) -> list[Ranked]:
        """Documents ranked by BM25 (k1 1.2, b 0.75) for any of ``words``; with ``phrase``
        (the query's words as typed, stopwords included) in tiers first: documents holding
        the phrase exactly (:data:`PHRASE`), then those holding ``words`` in order within
        :data:`_NEAR_SLOP` words (:data:`NEAR`), then the rest (:data:`WORDS`); BM25 orders
        each tier.

        Why tiers and not a boost: BM25's length normalisation shrinks every score of a long
        document (a 566k-character handbook scores ~1/100 of a short page for the same
        phrase), so no fixed boost lifts it, and with only ``limit`` documents returned it
        was never shown. A person typing a phrase wants the documents that hold it first."""
        terms = list(dict.fromkeys(words))
        if not terms:
            return []
        s = self._index.searcher()
        tiers: list[tuple[str, tantivy.Query]] = []
        typed = _words(phrase)
        if len(typed) >= 2:
            tiers.append((PHRASE, tantivy.Query.phrase_query(self._schema, "body", typed)))
        if len(terms) >= 2:
            tiers.append((NEAR, tantivy.Query.phrase_query(self._schema, "body", _words(terms), _NEAR_SLOP)))
        tiers.append((WORDS, tantivy.Query.boolean_query([(tantivy.Occur.Should, self._term(w)) for w in terms])))
        out: dict[str, Ranked] = {}
        for match, q in tiers:
            if only_doc is not None:
                q = tantivy.Query.boolean_query([
                    (tantivy.Occur.Must, q),
                    (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "doc_id", only_doc))])
            # a tier asks for ``limit`` more than it may repeat: the earlier tiers' documents
            for r in self._ids(s, s.search(q, limit=limit + len(out)).hits):
                if r.doc_id not in out and len(out) < limit:
                    out[r.doc_id] = Ranked(r.doc_id, r.score, match)
            if len(out) >= limit:
                break
        return list(out.values())

    def near_passage(self, words: Sequence[str], limit: int) -> list[str]:
        """Documents most likely to hold a passage close to ``words`` (a quote with typos,
        dropped or changed words): BM25 on the words plus, boosted, pairs of adjacent words
        as phrases, so the document sharing most of the quote's word pairs comes first even
        when the rare words are the misspelt ones. Only the rarest words (``_VOTERS``, none
        in more than 1/``_COMMON_SHARE`` of the documents) and the pairs with a rare word (at
        most ``_PAIRS``) take part: common words cost long posting lists and tell little."""
        terms = list(dict.fromkeys(words))
        if not terms:
            return []
        s = self._index.searcher()
        df = {w: s.doc_freq("body", w) for w in terms}
        # the rarest words rank: a word in many documents costs a long posting list and
        # adds little to BM25 (as the in-memory resolver lets only its rarest words vote)
        known = sorted((w for w in terms if df[w]), key=df.__getitem__)
        common = s.num_docs // _COMMON_SHARE
        voters = [w for w in known if df[w] <= common][:_VOTERS]
        if len(voters) < _FEW:  # a short quote whose rare words are misspelt: take what there is
            voters = known[:_FEW]
        parts = [(tantivy.Occur.Should, self._term(w)) for w in voters]
        if not parts:
            return []
        rare = max(_RARE_MIN, s.num_docs // _RARE_SHARE)
        known_pairs = sorted({p for p in zip(words, words[1:]) if df[p[0]] and df[p[1]]},
                             key=lambda p: min(df[p[0]], df[p[1]]))
        pairs = [p for p in known_pairs if min(df[p[0]], df[p[1]]) <= rare][:_PAIRS]
        if len(pairs) < _FEW:
            pairs = known_pairs[:_FEW]
        parts += [(tantivy.Occur.Should, tantivy.Query.boost_query(
            tantivy.Query.phrase_query(self._schema, "body", list(p)), 2.0)) for p in pairs]
        return [r.doc_id for r in self._ids(s, s.search(tantivy.Query.boolean_query(parts), limit=limit).hits)]

    def doc_freq(self, word: str) -> int:
        return int(self._index.searcher().doc_freq("body", word))


# ---- opening and keeping it up to date ------------------------------------------------------

_locks: dict[Path, threading.Lock] = {}
_open: dict[Path, CorpusSearchIndex] = {}
_guard = threading.Lock()


def _lock(path: Path) -> threading.Lock:
    with _guard:
        return _locks.setdefault(path, threading.Lock())


def _read_meta(path: Path) -> dict | None:
    try:
        meta = json.loads((path / META).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def _write_meta(path: Path, last_event: int, n_docs: int) -> None:
    tmp = path / (META + ".tmp")
    tmp.write_text(json.dumps({"format": FORMAT, "last_corpus_event": last_event, "documents": n_docs}), "utf-8")
    os.replace(tmp, path / META)


def _tantivy(path: Path, create: bool) -> tantivy.Index:
    if create:
        path.mkdir(parents=True, exist_ok=True)
        for f in path.iterdir():  # a stale or foreign index: start clean
            if f.is_file():
                f.unlink()
        index = tantivy.Index(_schema(), path=str(path), reuse=False)
    else:
        index = tantivy.Index.open(str(path))
    index.register_tokenizer(_ANALYZER, _analyzer())
    return index


def _writer(index: tantivy.Index) -> tantivy.IndexWriter:
    return index.writer(heap_size=_HEAP, num_threads=max(1, min(4, os.cpu_count() or 1)))


def _why(exc: BaseException, path: Path) -> BaseException:
    """tantivy's writer threads die without saying why ("An index writer was killed ... io::Error
    most likely"): on a disk left with almost no room that is the cause, said as the
    ``OSError(ENOSPC)`` it was, naming the index folder (``golden_store.core.disk``); else ``exc``."""
    if isinstance(exc, ValueError) and disk.nearly_full(path):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    return exc


def _discard(writer: tantivy.IndexWriter) -> None:
    """Roll ``writer`` back and delete the segment files it wrote: tantivy leaves them on disk
    until its next commit asks for a clean-up (probe F1: each import a full disk refused left
    ~8 MB of segments until the next good one)."""
    try:
        writer.rollback()
        writer.garbage_collect_files()
    except (ValueError, OSError):  # a writer killed by a full disk: the next commit collects its files
        pass


def build(path: Path, docs: Iterable[tuple[str, str, str]], last_event: int, *,
          total: int = 0, progress: Progress | None = None) -> CorpusSearchIndex:
    """A new index of ``(doc_id, canonical_text, raw_text)`` in ``path`` (replacing what is there)."""
    index = _tantivy(path, create=True)
    writer = _writer(index)
    n = 0
    try:
        for doc_id, text, raw in docs:
            writer.add_document(_document(doc_id, text, raw))
            n += 1
            if progress and n % 2000 == 0:
                progress(n, total)
        writer.commit()
        writer.wait_merging_threads()
    except BaseException as exc:  # no meta written: the next open builds it again
        why = _why(exc, path)
        _discard(writer)
        if why is not exc:
            raise why from exc
        raise
    index.reload()
    _write_meta(path, last_event, n)
    if progress:
        progress(n, total or n)
    return CorpusSearchIndex(path, index, last_event)


def open_built(path: Path) -> CorpusSearchIndex | None:
    """The index :func:`build` left at ``path``, opened as it is; None when there is none
    (or it is of another format, or unreadable)."""
    meta = _read_meta(path)
    if meta is None:
        return None
    try:
        return CorpusSearchIndex(path, _tantivy(path, create=False), int(meta["last_corpus_event"]))
    except (ValueError, OSError, KeyError):
        return None


def apply(ix: CorpusSearchIndex, changed: Iterable[tuple[str, str | None, str | None]], last_event: int) -> None:
    """Bring ``ix`` to ``last_event``: each (doc_id, canonical, raw) replaces that document
    (canonical None: removes it)."""
    index = ix._index
    writer = _writer(index)
    n = 0
    try:
        for doc_id, text, raw in changed:
            writer.delete_documents_by_term("doc_id", doc_id)
            if text is not None:
                assert raw is not None, f"document {doc_id!r}: canonical text without raw text (raw_text is NOT NULL)"
                writer.add_document(_document(doc_id, text, raw))
            n += 1
        writer.commit()
        writer.wait_merging_threads()
    except BaseException as exc:
        why = _why(exc, ix.path)
        _discard(writer)
        if why is not exc:
            raise why from exc
        raise
    index.reload()
    _write_meta(ix.path, last_event, ix.n_docs)
    ix.last_event = last_event


def ensure(path: Path, last_event: int, changed_since: Callable[[int], Iterable[tuple[str, str | None, str | None]]],
           everything: Callable[[], tuple[int, Iterable[tuple[str, str, str]]]], *,
           progress: Progress | None = None) -> CorpusSearchIndex:
    """The index at ``path`` reflecting corpus event ``last_event``: opened as it is, updated
    with the documents changed since its own last event, or built from ``everything()``
    when it is missing, of another format, or unreadable. Serialized per path; while an
    import holds the index (:func:`updating`), readers get it as it was before the import."""
    path = path.resolve()
    lock = _lock(path)
    if not lock.acquire(blocking=False):
        ix = _open.get(path)
        if ix is not None:
            return ix
        lock.acquire()
    try:
        ix = _open.get(path)
        if ix is None:
            meta = _read_meta(path)
            if meta is not None:
                try:
                    ix = CorpusSearchIndex(path, _tantivy(path, create=False), int(meta["last_corpus_event"]))
                except (ValueError, OSError, KeyError):
                    ix = None
        if ix is None:
            total, docs = everything()
            ix = build(path, docs, last_event, total=total, progress=progress)
        elif ix.last_event != last_event:
            if ix.last_event > last_event:  # the store went back (restored from a copy): rebuild
                total, docs = everything()
                ix = build(path, docs, last_event, total=total, progress=progress)
            else:
                apply(ix, changed_since(ix.last_event), last_event)
        _open[path] = ix
        return ix
    finally:
        lock.release()


class PendingUpdate:
    """Index writes made while the store's transaction runs (so tantivy's threads index in
    parallel with reading and canonicalizing), committed only after the store commits."""

    def __init__(self, ix: CorpusSearchIndex) -> None:
        self.ix = ix
        self._writer: tantivy.IndexWriter | None = None
        self.n = 0

    def put(self, doc_id: str, canonical: str, raw: str, replacing: bool) -> None:
        try:
            if self._writer is None:
                self._writer = _writer(self.ix._index)
            if replacing:
                self._writer.delete_documents_by_term("doc_id", doc_id)
            self._writer.add_document(_document(doc_id, canonical, raw))
        except ValueError as exc:
            why = _why(exc, self.ix.path)
            if why is exc:
                raise
            raise why from exc
        self.n += 1

    def commit(self, last_event: int) -> None:
        try:
            if self._writer is not None:
                self._writer.commit()
                self._writer.wait_merging_threads()
                self.ix._index.reload()
            _write_meta(self.ix.path, last_event, self.ix.n_docs)
        except ValueError as exc:
            why = _why(exc, self.ix.path)
            if why is exc:
                raise
            raise why from exc
        self.ix.last_event = last_event

    def rollback(self) -> None:
        if self._writer is not None:
            _discard(self._writer)
            self._writer = None


@contextmanager
def updating(ix: CorpusSearchIndex) -> Iterator[PendingUpdate]:
    """Hold the index for one import: writes go through the yielded :class:`PendingUpdate`."""
    lock = _lock(ix.path)
    with lock:
        pending = PendingUpdate(ix)
        try:
            yield pending
        except BaseException:
            pending.rollback()
            raise


def forget(path: Path) -> None:
    """Drop the process's open handle (tests; a store file replaced on disk)."""
    with _guard:
        _open.pop(path.resolve(), None)
