"""The canonical corpus: reading source files, validating them, importing them atomically.

A document keeps its raw text (what a person reads, and what ``start``/``end`` offsets
index) and its canonical text (what quotes are matched against). For HTML the raw text is
the visible text extracted from the markup, since offsets into tags mean nothing to anyone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from golden_store import textin
from golden_store.canonical import canonical_text
from golden_store.digests import corpus_digest, sha256_text  # noqa: F401  (re-exported)
from golden_store.document_staging import DocumentStaging, bulk_load_settings
from golden_store.drift import DriftReport, reresolve_tx
from golden_store.errors import ValidationError
from golden_store.jsonl import iter_objects
from golden_store.store import Store, utcnow

if TYPE_CHECKING:
    from golden_store.corpus_index import CorpusSearchIndex

SUPPORTED_SUFFIXES = (".txt", ".md", ".html", ".htm", ".jsonl")
_DOC_ID_RE = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SourceDocument:
    doc_id: str
    raw_text: str
    source_path: str
    source_format: str
    title: str | None = None


@dataclass(frozen=True)
class PreparedDocument:
    doc_id: str
    title: str | None
    source_path: str
    source_format: str
    raw_text: str
    canonical_text: str
    raw_sha256: str
    canonical_sha256: str


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    corpus_digest: str = ""
    drift: DriftReport = field(default_factory=DriftReport)

    def summary(self) -> str:
        text = (
            f"{len(self.added)} added, {len(self.replaced)} replaced, "
            f"{len(self.unchanged)} unchanged; corpus_digest {self.corpus_digest}"
        )
        if self.drift.checked:
            text += (
                f"; quotes on changed documents: {len(self.drift.moved)} moved, "
                f"{len(self.drift.confirmed)} unchanged, {len(self.drift.broken)} BROKEN"
            )
        return text


# ---- reading source files -------------------------------------------------------------------


class _TextExtractor(HTMLParser):
    """Visible text of an HTML page; block elements become line breaks."""

    _BLOCK = {
        "p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table",
        "section", "article", "header", "footer", "blockquote", "pre", "hr", "dt", "dd",
    }
    _SKIP = {"script", "style", "noscript", "template"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: str | None = None
        self._skip_depth = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self._skip_depth += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self._SKIP:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title or "") + data
            return
        if self._skip_depth == 0:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str | None]:
    """Visible text and <title> of an HTML document. Blank-line runs are reduced so the
    raw text stays readable; canonicalization collapses whitespace anyway."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    lines = [line.strip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n", (parser.title.strip() if parser.title else None)


def _first_heading(text: str) -> str | None:
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            return s.lstrip("#").strip() or None
        if s:
            return None
    return None


def _decode(path: Path, data: bytes, problems: list[str]) -> str | None:
    """The importers' one text rule (golden_store.textin): UTF-8, a BOM dropped, problems
    name the file, line and column."""
    return textin.decode_into(path, data, problems)


def expand_paths(paths: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Files to import, in a stable order: folders are walked recursively for the supported
    suffixes. Returns (files, problems)."""
    files: list[Path] = []
    problems: list[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(
                f for f in p.rglob("*")
                if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES and not f.name.startswith(".")
            )
            if not found:
                problems.append(f"{p}: folder has no {', '.join(SUPPORTED_SUFFIXES)} files")
            files.extend(found)
        elif p.is_file():
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                problems.append(
                    f"{p}: unsupported file type '{p.suffix}'; use one of {', '.join(SUPPORTED_SUFFIXES)}"
                )
            else:
                files.append(p)
        else:
            problems.append(f"{p}: no such file or folder")
    return files, problems


def _jsonl_document(name: str, lineno: int, obj: dict, problems: list[str]) -> SourceDocument | None:
    doc_id, body, title = obj.get("doc_id"), obj.get("text"), obj.get("title")
    if not isinstance(doc_id, str) or not doc_id.strip():
        problems.append(f"{name} line {lineno}: field 'doc_id' is missing or not a non-empty string")
        return None
    if not isinstance(body, str):
        problems.append(f"{name} line {lineno}: field 'text' is missing or not a string")
        return None
    if title is not None and not isinstance(title, str):
        problems.append(f"{name} line {lineno}: field 'title' must be a string")
        return None
    return SourceDocument(doc_id.strip(), body, f"{name}:{lineno}", "jsonl", title)


def read_source(name: str, data: bytes, problems: list[str]) -> list[SourceDocument]:
    """Parse one source (file name + bytes) into documents, appending problems found."""
    path = Path(name)
    suffix = path.suffix.lower()
    text = _decode(path, data, problems)
    if text is None:
        return []
    if suffix == ".jsonl":
        docs = [d for lineno, obj in iter_objects(name, text, problems)
                if (d := _jsonl_document(name, lineno, obj, problems)) is not None]
        if not docs and not any(p.startswith(f"{name} line") for p in problems):
            problems.append(f"{name}: no documents in the file")
        return docs
    if suffix in (".html", ".htm"):
        body, title = html_to_text(text)
        return [SourceDocument(path.stem, body, name, "html", title)]
    fmt = "md" if suffix == ".md" else "txt"
    return [SourceDocument(path.stem, text, name, fmt, _first_heading(text) if fmt == "md" else None)]


# A document is at most this many characters of text (README "Limits"): one huge document
# makes every Evidence search and quote resolution slow; split it.
MAX_DOCUMENT_CHARS = 2_000_000


class _Preparer:
    """Canonicalizes and hashes documents one by one, remembering every id seen so a
    duplicate is reported with both of its sources."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.seen: dict[str, str] = {}

    def __call__(self, d: SourceDocument) -> PreparedDocument | None:
        problems = self.problems
        if d.doc_id in self.seen:
            problems.append(
                f"duplicate doc id {textin.shown(d.doc_id)}: {self.seen[d.doc_id]} and {d.source_path}; "
                f"rename one of them (doc id = file name without extension, or the 'doc_id' field)"
            )
            return None
        self.seen[d.doc_id] = d.source_path
        if not _DOC_ID_RE.match(d.doc_id):
            problems.append(
                f"{d.source_path}: doc id {textin.shown(d.doc_id)} must be 1-200 characters with no whitespace or "
                f"control characters (TREC qrels and run files are whitespace-separated); rename it"
            )
            return None
        if len(d.raw_text) > MAX_DOCUMENT_CHARS:
            problems.append(
                f"{d.source_path}: document {textin.shown(d.doc_id)} is {len(d.raw_text):,} characters of text; "
                f"a document is at most {MAX_DOCUMENT_CHARS:,} (about 2 MB): split it into several files "
                f"(e.g. one per chapter or section)"
            )
            return None
        canon = canonical_text(d.raw_text)
        if not canon:
            problems.append(f"{d.source_path}: document {textin.shown(d.doc_id)} is empty (no text after canonicalization)")
            return None
        return PreparedDocument(d.doc_id, d.title, d.source_path, d.source_format, d.raw_text, canon,
                                sha256_text(d.raw_text), sha256_text(canon))


def prepare(docs: Sequence[SourceDocument], problems: list[str], progress: Progress | None = None) -> list[PreparedDocument]:
    """Canonicalize and hash; flag empty documents and duplicate ids."""
    one = _Preparer(problems)
    out: list[PreparedDocument] = []
    for i, d in enumerate(docs):
        if progress:
            progress(i, len(docs))
        p = one(d)
        if p is not None:
            out.append(p)
    if progress:
        progress(len(docs), len(docs))
    return out


def _refused(problems: list[str]) -> ValidationError:
    return ValidationError(f"Corpus import refused: {len(problems)} problem(s); nothing was imported.", problems)


def load_sources(
    sources: Sequence[tuple[str, bytes]], progress: Progress | None = None
) -> list[PreparedDocument]:
    """Parse and validate named byte sources; raise one ValidationError listing every problem."""
    problems: list[str] = []
    docs: list[SourceDocument] = []
    for name, data in sources:
        docs.extend(read_source(name, data, problems))
    prepared = prepare(docs, problems, progress)
    if problems:
        raise _refused(problems)
    return prepared


def load_paths(paths: Sequence[str | Path], progress: Progress | None = None) -> list[PreparedDocument]:
    """Every document of the paths in memory (small corpora, tests); large ones stream
    through :func:`import_paths`."""
    problems: list[str] = []
    docs = [d for batch in _batches(_iter_paths(paths, problems, progress), _Preparer(problems)) for d in batch]
    if problems:
        raise _refused(problems)
    return docs


# ---- streaming: files of any size in bounded memory -----------------------------------------

_BATCH_CHARS = 8_000_000    # raw characters per batch written to the store
_BATCH_DOCS = 5_000
_CHUNK_BYTES = 4 << 20      # a JSONL file is read this much at a time (whole lines)


def _iter_jsonl(path: Path, problems: list[str], advance: Callable[[int], None]) -> Iterator[SourceDocument]:
    """Documents of a JSON Lines file read chunk by chunk (whole lines), so a file of any
    size takes bounded memory; problems name the file and the line."""
    name = str(path)
    first_line, rest, first = 1, b"", True
    found = False
    with path.open("rb") as fh:
        while True:
            block = fh.read(_CHUNK_BYTES)
            data = rest + block
            if block:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # no line end yet: keep reading (one line longer than a chunk)
                    rest = data
                    continue
                data, rest = data[:cut], data[cut:]
            elif not data:
                break
            else:
                rest = b""
            advance(len(data))
            text = textin.decode_part(name, data, first_line, first, problems)
            n_lines = data.count(b"\n")
            if text is not None:
                for lineno, obj in iter_objects(name, text, problems, first_line=first_line):
                    doc = _jsonl_document(name, lineno, obj, problems)
                    if doc is not None:
                        found = True
                        yield doc
            first_line += n_lines
            first = False
            if not block:
                break
    if not found and not any(p.startswith(f"{name} line") or p.startswith(f"{name}:") for p in problems):
        problems.append(f"{name}: no documents in the file")


def _iter_paths(paths: Sequence[str | Path], problems: list[str],
                progress: Progress | None = None) -> Iterator[SourceDocument]:
    files, found = expand_paths(paths)
    problems.extend(found)
    sizes = []
    for f in files:
        try:
            sizes.append(f.stat().st_size)
        except OSError:
            sizes.append(0)
    total, done = sum(sizes), 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    for f, size in zip(files, sizes):
        if f.suffix.lower() == ".jsonl":
            yield from _iter_jsonl(f, problems, advance)
            continue
        try:
            data = f.read_bytes()
        except OSError as exc:
            problems.append(f"{f}: cannot be read ({exc.strerror or exc.__class__.__name__})")
            continue
        advance(size)
        yield from read_source(str(f), data, problems)


def _batches(docs: Iterable[SourceDocument], prepare_one: _Preparer) -> Iterator[list[PreparedDocument]]:
    batch: list[PreparedDocument] = []
    chars = 0
    for d in docs:
        p = prepare_one(d)
        if p is None:
            continue
        batch.append(p)
        chars += len(p.raw_text)
        if chars >= _BATCH_CHARS or len(batch) >= _BATCH_DOCS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


# ---- writing to the store -----------------------------------------------------------------


def import_documents(
    store: Store, docs: Sequence[PreparedDocument], *, actor: str, replace: bool = False
) -> ImportReport:
    """Insert documents in one transaction. A doc id already in the store with the same
    canonical text is left alone; with different text it is an error unless ``replace``
    (a corpus change must be deliberate). Quotes placed on a replaced document are
    re-resolved in the same transaction; the report lists those that moved or broke.
    The persisted search index follows the store right after it commits."""
    return _import(store, [list(docs)], [], actor=actor, replace=replace)


def import_paths(store: Store, paths: Sequence[str | Path], *, actor: str, replace: bool = False,
                 progress: Progress | None = None) -> ImportReport:
    """:func:`import_documents` of files and folders of any size, streamed: files are read
    (a JSONL file chunk by chunk), canonicalized and written in batches inside one
    transaction, so memory stays bounded; every problem is collected and any one of them
    rolls the whole import back."""
    problems: list[str] = []
    batches = _batches(_iter_paths(paths, problems, progress), _Preparer(problems))
    return _import(store, batches, problems, actor=actor, replace=replace)


CORPUS_IMPORT_LOCK = "golden_store.corpus_import"


def _import(store: Store, batches: Iterable[list[PreparedDocument]], problems: list[str], *,
            actor: str, replace: bool) -> ImportReport:
    """One transaction in the store; the persisted index is fed batch by batch while it runs
    (tantivy indexes on its own threads meanwhile) and committed right after the store
    commits, or rolled back with it. A crash in between is repaired on the next open
    (corpus_index: the index's last corpus event is then behind the store's)."""
    from golden_store import corpus_index

    # One corpus import at a time (on PostgreSQL, across processes). An import takes its
    # corpus_events ids near its end and commits after; with two at once a later id could
    # commit first, and an app server bringing its search index up to that id would never
    # see the earlier import's documents (the index follows event ids). Serialized, the
    # committed ids are always a prefix of the ids handed out.
    with store.exclusive(CORPUS_IMPORT_LOCK):
        index = search_index(store)  # current before the import: re-resolution searches it
        before = index.last_event
        with corpus_index.updating(index) as pending:
            def written(docs: list[PreparedDocument], replaced: set[str]) -> None:
                for d in docs:
                    pending.put(d.doc_id, d.canonical_text, d.raw_text, d.doc_id in replaced)

            with bulk_load_settings(store):
                report = store.write(lambda cur: import_documents_tx(cur, batches, actor=actor, replace=replace,
                                                                     problems=problems, index=index,
                                                                     on_write=written),
                                     retries=0)
            with store.cursor() as cur:
                last = last_corpus_event(cur)
                ours = len(report.added) + len(report.replaced)
                others = int(cur.execute("SELECT count(*) FROM corpus_events WHERE event_id > ?",
                                         [before]).fetchone()[0])
            # events this import did not feed (another writer's) make the next open apply them all
            pending.commit(last if others == ours else before)
    return report


def import_documents_tx(
    cur: duckdb.DuckDBPyConnection, docs: Sequence[PreparedDocument] | Iterable[list[PreparedDocument]], *,
    actor: str, replace: bool = False, problems: list[str] | None = None, index: "CorpusSearchIndex | None" = None,
    on_write: Callable[[list[PreparedDocument], set[str]], None] | None = None,
) -> ImportReport:
    """:func:`import_documents` inside a caller's transaction. ``docs`` is a sequence of
    documents or an iterable of batches of them; ``problems`` collects what the reader finds
    while the batches stream (any one refuses the import at the end); ``on_write(docs,
    replaced ids)`` is told each batch of documents written."""
    problems = problems if problems is not None else []
    batches = [list(docs)] if isinstance(docs, Sequence) and (not docs or isinstance(docs[0], PreparedDocument)) \
        else docs
    report = ImportReport()
    now = utcnow()
    conflicts: list[str] = []
    n_docs = 0
    with DocumentStaging() as staging:
        for batch in batches:
            n_docs += len(batch)
            if problems or not batch:
                continue  # the import is refused anyway: keep reading only to report every problem
            written = _stage_batch(cur, batch, report, conflicts, staging, replace=replace)
            if on_write is not None and written[0]:
                on_write(*written)
        if not problems and not (conflicts and not replace):
            staging.insert(cur, actor=actor, now=now)
    if problems:
        raise _refused(problems)
    if not n_docs:
        raise ValidationError("Corpus import refused: no documents given.")
    if conflicts and not replace:
        raise ValidationError(
            f"Corpus import refused: {len(conflicts)} document(s) already exist with different "
            f"text; nothing was imported. Re-run with --replace (CLI) or tick 'replace' to change them.",
            conflicts,
        )
    report.corpus_digest = _digest(cur)
    if report.replaced:
        report.drift = reresolve_tx(cur, index=index, changed=report.replaced + report.added)
    return report


def _stage_batch(cur: duckdb.DuckDBPyConnection, docs: list[PreparedDocument], report: ImportReport,
                 conflicts: list[str], staging: DocumentStaging, *, replace: bool,
                 ) -> tuple[list[PreparedDocument], set[str]]:
    """One batch: existing ids looked up at once; new documents and replacements staged
    (inserted at the end of the import with one statement, see ``document_staging``)."""
    existing = dict(cur.execute(
        "SELECT doc_id, canonical_sha256 FROM documents WHERE doc_id IN (SELECT unnest(?))",
        [[d.doc_id for d in docs]]).fetchall())
    new: list[PreparedDocument] = []
    olds: list[str | None] = []
    for d in docs:
        old = existing.get(d.doc_id)
        if old == d.canonical_sha256:
            report.unchanged.append(d.doc_id)
            continue
        if old is not None and not replace:
            conflicts.append(f"{d.source_path}: doc id {textin.shown(d.doc_id)} differs from the stored document")
            continue
        (report.replaced if old is not None else report.added).append(d.doc_id)
        new.append(d)
        olds.append(old)
    if conflicts and not replace or not new:
        return [], set()
    staging.add(new, olds)
    return new, {d.doc_id for d, old in zip(new, olds) if old is not None}


def _digest(cur: duckdb.DuckDBPyConnection) -> str:
    return corpus_digest(cur.execute("SELECT doc_id, canonical_sha256 FROM documents").fetchall())


def store_corpus_digest(store: Store) -> str | None:
    """Digest of the store's current corpus, or None when it has no documents."""
    rows = store.read("SELECT doc_id, canonical_sha256 FROM documents")
    return corpus_digest(rows) if rows else None


def corpus_stats(store: Store) -> dict:
    n, chars = store.read_one("SELECT count(*), coalesce(sum(length(canonical_text)), 0) FROM documents")
    return {"documents": int(n), "canonical_chars": int(chars), "corpus_digest": store_corpus_digest(store)}


def list_documents(store: Store):
    return store.df(
        "SELECT doc_id, title, source_format, length(raw_text) AS raw_chars, "
        "length(canonical_text) AS canonical_chars, canonical_sha256, imported_at, imported_by "
        "FROM documents ORDER BY doc_id"
    )


def canonical_texts(store: Store) -> dict[str, str]:
    return dict(store.read("SELECT doc_id, canonical_text FROM documents"))


def raw_text(store: Store, doc_id: str) -> str | None:
    row = store.read_one("SELECT raw_text FROM documents WHERE doc_id = ?", [doc_id])
    return row[0] if row else None


def raw_texts(store: Store, doc_ids: Sequence[str]) -> dict[str, str]:
    """:func:`raw_text` of several documents in one read (absent ids are left out)."""
    ids = sorted(set(doc_ids))
    if not ids:
        return {}
    return dict(store.read("SELECT doc_id, raw_text FROM documents WHERE doc_id IN (SELECT unnest(?))", [ids]))


def get_document(store: Store, doc_id: str) -> dict | None:
    rows = store.read_dicts("SELECT * FROM documents WHERE doc_id = ?", [doc_id])
    return rows[0] if rows else None


# ---- the persisted search index ------------------------------------------------------------


def last_corpus_event(cur) -> int:
    return int(cur.execute("SELECT coalesce(max(event_id), 0) FROM corpus_events").fetchone()[0])


def search_index(store: Store, progress: Progress | None = None) -> "CorpusSearchIndex":
    """The store's persisted word index (golden_store.corpus_index), brought up to date with
    the corpus first: opened in milliseconds when it is current, updated with the documents
    changed since, or built (streaming) when it is missing."""
    from golden_store import corpus_index

    with store.cursor() as cur:
        last = last_corpus_event(cur)

    def changed_since(event: int):
        with store.cursor() as cur:
            ids = [r[0] for r in cur.execute(
                "SELECT DISTINCT doc_id FROM corpus_events WHERE event_id > ?", [event]).fetchall()]
            res = cur.execute("SELECT doc_id, canonical_text, raw_text FROM documents WHERE doc_id IN "
                              "(SELECT doc_id FROM corpus_events WHERE event_id > ?)", [event])
            present = set()
            while batch := res.fetchmany(512):
                for d, text, raw in batch:
                    present.add(d)
                    yield d, text, raw
            for d in ids:
                if d not in present:
                    yield d, None, None

    def everything():
        with store.cursor() as cur:
            total = int(cur.execute("SELECT count(*) FROM documents").fetchone()[0])

        def rows():
            with store.cursor() as cur:
                res = cur.execute("SELECT doc_id, canonical_text, raw_text FROM documents")
                while batch := res.fetchmany(512):
                    yield from batch
        return total, rows()

    return corpus_index.ensure(corpus_index.index_dir(store.path), last, changed_since, everything,
                               progress=progress)
