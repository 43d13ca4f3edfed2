"""Reading source files into canonical documents: .txt, .md, .html and .jsonl, validated,
decoded and canonicalized, streamed in batches of bounded memory. No database here: the
live store's documents table (import all-or-nothing, re-placing quotes, reads) is
``golden_store.live.documents``.

A document keeps its raw text (what a person reads, and what ``start``/``end`` offsets
index) and its canonical text (what quotes are matched against). For HTML the raw text is
the visible text extracted from the markup, since offsets into tags mean nothing to anyone.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from queue import SimpleQueue
from typing import Any

from golden_store.core import textin
from golden_store.core.canonical import canonical_text
from golden_store.core.digests import sha256_text
from golden_store.core.errors import ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.core.progress import BYTES, Phase
from golden_store.core.progress import Progress as Progress  # re-exported: the corpus code's callback type

SUPPORTED_SUFFIXES = (".txt", ".md", ".html", ".htm", ".jsonl")
_DOC_ID_RE = re.compile(r"^[^\s\x00-\x1f\x7f]{1,200}$")

# Reading and canonicalizing are one streamed pass over the files, counted in bytes read.
READING = Phase("reading and canonicalizing files", BYTES)


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
    """The importers' one text rule (golden_store.core.textin): UTF-8, a BOM dropped, problems
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
    """One JSONL line as a document: ``doc_id`` (or BEIR's ``_id``, the field's most common
    corpus layout, which ``golden export --format beir`` writes too), ``text``, ``title``. An
    empty title is no title (BEIR writes "" for a document without one)."""
    key = "doc_id" if "doc_id" in obj or "_id" not in obj else "_id"
    doc_id, body, title = obj.get(key), obj.get("text"), obj.get("title")
    if not isinstance(doc_id, str) or not doc_id.strip():
        problems.append(f"{name} line {lineno}: field {key!r} is missing or not a non-empty string"
                        + (" (a BEIR corpus names it '_id')" if key == "doc_id" else ""))
        return None
    if not isinstance(body, str):
        problems.append(f"{name} line {lineno}: field 'text' is missing or not a string")
        return None
    if title is not None and not isinstance(title, str):
        problems.append(f"{name} line {lineno}: field 'title' must be a string")
        return None
    return SourceDocument(doc_id.strip(), body, f"{name}:{lineno}", "jsonl", title or None)


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


def prepare_alone(d: SourceDocument) -> PreparedDocument | str:
    """``d`` checked by the rules that need no other document (its id, its size, text left
    after canonicalization), canonicalized and hashed; or the problem, in the words of the
    import's refusal. A worker process of a large import runs this (:func:`prepare_piece`)."""
    if not _DOC_ID_RE.match(d.doc_id):
        return (f"{d.source_path}: doc id {textin.shown(d.doc_id)} must be 1-200 characters with no whitespace or "
                f"control characters (TREC qrels and run files are whitespace-separated); rename it")
    if len(d.raw_text) > MAX_DOCUMENT_CHARS:
        return (f"{d.source_path}: document {textin.shown(d.doc_id)} is {len(d.raw_text):,} characters of text; "
                f"a document is at most {MAX_DOCUMENT_CHARS:,} (about 2 MB): split it into several files "
                f"(e.g. one per chapter or section)")
    canon = canonical_text(d.raw_text)
    if not canon:
        return f"{d.source_path}: document {textin.shown(d.doc_id)} is empty (no text after canonicalization)"
    return PreparedDocument(d.doc_id, d.title, d.source_path, d.source_format, d.raw_text, canon,
                            sha256_text(d.raw_text), sha256_text(canon))


class Preparer:
    """Canonicalizes and hashes documents one by one, remembering every id seen so a
    duplicate is reported with both of its sources.

    Shared with :func:`golden_store.live.documents.import_paths`, which streams files of any
    size through it into the store, so an import checks each document by the same rules as
    :func:`load_paths` and :func:`prepare`. A document prepared elsewhere (a worker process,
    :func:`prepare_alone`) is taken in by :meth:`take`, which adds the one check that needs
    the other documents: its id seen before."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.seen: dict[str, str] = {}

    def take(self, doc_id: str, source_path: str, outcome: PreparedDocument | str) -> PreparedDocument | None:
        """The document ``outcome`` of :func:`prepare_alone` (or its problem), unless its id
        was seen before; problems are appended, in the order the documents come."""
        if doc_id in self.seen:
            self.problems.append(
                f"duplicate doc id {textin.shown(doc_id)}: {self.seen[doc_id]} and {source_path}; "
                f"rename one of them (doc id = file name without extension, or the 'doc_id' field)"
            )
            return None
        self.seen[doc_id] = source_path
        if isinstance(outcome, str):
            self.problems.append(outcome)
            return None
        return outcome

    def __call__(self, d: SourceDocument) -> PreparedDocument | None:
        if d.doc_id in self.seen:  # refused whatever its text: not canonicalized
            return self.take(d.doc_id, d.source_path, "")
        return self.take(d.doc_id, d.source_path, prepare_alone(d))


def prepare(docs: Sequence[SourceDocument], problems: list[str], progress: Progress | None = None) -> list[PreparedDocument]:
    """Canonicalize and hash; flag empty documents and duplicate ids."""
    one = Preparer(problems)
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


def refused(problems: list[str]) -> ValidationError:
    """The one refusal of a corpus import, listing every problem found. Shared with
    :mod:`golden_store.live.documents`, whose streamed import refuses in the same words."""
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
        raise refused(problems)
    return prepared


def load_paths(paths: Sequence[str | Path], progress: Progress | None = None) -> list[PreparedDocument]:
    """Every document of the paths in memory (small corpora, tests); large ones stream
    through :func:`import_paths`."""
    problems: list[str] = []
    docs = [d for batch in prepared_batches(paths, problems, progress) for d in batch]
    if problems:
        raise refused(problems)
    return docs


# ---- streaming: files of any size in bounded memory -----------------------------------------

_BATCH_CHARS = 8_000_000    # raw characters per batch written to the store
_BATCH_DOCS = 5_000
_CHUNK_BYTES = 4 << 20      # a JSONL file is read this much at a time (whole lines)



def line_chunks(path: Path) -> Iterator[tuple[bytes, int, bool]]:
    """A file read in blocks of whole lines (bounded memory for a file of any size): each block's
    bytes, the number of its first line, and whether it is the file's first block (where a byte
    order mark may stand). A line longer than a block is kept whole."""
    first_line, rest, first = 1, b"", True
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
                return
            else:
                rest = b""
            yield data, first_line, first
            first_line += data.count(b"\n")
            first = False
            if not block:
                return

def _iter_jsonl(path: Path, problems: list[str], advance: Callable[[int], None]) -> Iterator[SourceDocument]:
    """Documents of a JSON Lines file read chunk by chunk (whole lines), so a file of any
    size takes bounded memory; problems name the file and the line."""
    name = str(path)
    found = False
    for data, first_line, first in line_chunks(path):
        advance(len(data))
        text = textin.decode_part(name, data, first_line, first, problems)
        if text is not None:
            for lineno, obj in iter_objects(name, text, problems, first_line=first_line):
                doc = _jsonl_document(name, lineno, obj, problems)
                if doc is not None:
                    found = True
                    yield doc
    if not found and not any(p.startswith(f"{name} line") or p.startswith(f"{name}:") for p in problems):
        problems.append(f"{name}: no documents in the file")


def iter_paths(paths: Sequence[str | Path], problems: list[str],
               progress: Progress | None = None) -> Iterator[SourceDocument]:
    """The documents of ``paths`` (files and folders) one at a time, a JSONL file read chunk by
    chunk, each problem appended to ``problems``; ``progress`` is told the bytes read. Shared
    with :func:`golden_store.live.documents.import_paths`, which streams them into the store in
    bounded memory, so both read files by one rule (:mod:`golden_store.core.textin`)."""
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
            progress(done, total, READING)

    for f, size in zip(files, sizes):
        if f.suffix.lower() == ".jsonl":
            yield from _iter_jsonl(f, problems, advance)
            continue
        try:
            data = textin.read_file(f)
        except ValidationError as exc:
            problems.append(str(exc))
            continue
        advance(size)
        yield from read_source(str(f), data, problems)


def batches(docs: Iterable[SourceDocument], prepare_one: Preparer) -> Iterator[list[PreparedDocument]]:
    """``docs`` prepared by ``prepare_one`` (those it refuses left out), in lists of about
    ``_BATCH_CHARS`` characters or ``_BATCH_DOCS`` documents. Shared with
    :func:`golden_store.live.documents.import_paths`: each list is one batch written to the store."""
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


# ---- preparing in worker processes: reading and canonicalizing on every core ----------------
#
# Canonicalizing and hashing are most of an import's own work (a profile of 200 MB: 36 s of
# 49 before the store and the index), and each document is independent of the others. So the
# files are cut into pieces (a JSONL chunk of whole lines, or a few small files, about
# ``_CHUNK_BYTES`` each) that worker processes parse, check, canonicalize and hash, while this
# process writes what comes back to the staging file and the search index. The pieces are
# taken back in the order they were cut, so documents, problems and duplicates come out
# exactly as the one-process path gives them (which is the same code: :func:`prepare_piece`).
# At most ``_WINDOW_PER_WORKER`` pieces per worker are in flight: memory stays bounded
# whatever the corpus size.

PARALLEL_MIN_BYTES = 16 << 20   # smaller imports are prepared in this process (a worker's start costs ~0.2 s)
_MAX_WORKERS = 4
_WINDOW_PER_WORKER = 2
_PIECE_FILES = 256              # small files per piece, at most

# A piece: ("jsonl", file name, bytes of whole lines, first line number, first chunk of the file)
# or ("files", [(file name, bytes), ...]). Its result: ("p", problem) and ("d", doc id, source
# path, PreparedDocument or problem) items, in the order the reader met them.
Piece = tuple[Any, ...]
Item = tuple[Any, ...]


class _Sink(list[str]):
    """A problems list that also records each problem in ``items``, in order with the documents
    (the readers only ever append to it)."""

    def __init__(self, items: list[Item]) -> None:
        super().__init__()
        self._items = items

    def append(self, msg: str, /) -> None:
        super().append(msg)
        self._items.append(("p", msg))


@dataclass
class _Entry:
    """One step of the ordered stream :func:`_cut` makes: ``kind`` "work" (``piece`` to prepare,
    ``nbytes`` of the files), "problem" (``text``: a file that cannot be read) or "end"
    (``text``: a JSONL file read to its end)."""

    kind: str
    piece: Piece = ()
    text: str = ""
    nbytes: int = 0
    worker: int = -1


def prepare_piece(piece: Piece) -> list[Item]:
    """One piece read, checked, canonicalized and hashed (in a worker process, or here)."""
    items: list[Item] = []
    problems = _Sink(items)
    docs: Iterable[SourceDocument]
    if piece[0] == "jsonl":
        _, name, data, first_line, first = piece
        text = textin.decode_part(name, data, first_line, first, problems)
        docs = () if text is None else (
            d for lineno, obj in iter_objects(name, text, problems, first_line=first_line)
            if (d := _jsonl_document(name, lineno, obj, problems)) is not None)
    else:
        docs = (d for name, data in piece[1] for d in read_source(name, data, problems))
    for d in docs:
        items.append(("d", d.doc_id, d.source_path, prepare_alone(d)))
    return items


def _cut(files: list[Path], sizes: list[int]) -> Iterator[_Entry]:
    """The import's files as an ordered stream of pieces to prepare, with a "problem" for a
    file that cannot be read and an "end" after a JSONL file's last piece."""
    group: list[tuple[str, bytes]] = []
    group_bytes = 0
    for f, size in zip(files, sizes):
        if f.suffix.lower() == ".jsonl":
            if group:
                yield _Entry("work", ("files", group), nbytes=group_bytes)
                group, group_bytes = [], 0
            name = str(f)
            for data, first_line, first in line_chunks(f):
                yield _Entry("work", ("jsonl", name, data, first_line, first), nbytes=len(data))
            yield _Entry("end", text=name)
            continue
        try:
            data = textin.read_file(f)
        except ValidationError as exc:
            if group:
                yield _Entry("work", ("files", group), nbytes=group_bytes)
                group, group_bytes = [], 0
            yield _Entry("problem", text=str(exc))
            continue
        group.append((str(f), data))
        group_bytes += size
        if group_bytes >= _CHUNK_BYTES or len(group) >= _PIECE_FILES:
            yield _Entry("work", ("files", group), nbytes=group_bytes)
            group, group_bytes = [], 0
    if group:
        yield _Entry("work", ("files", group), nbytes=group_bytes)


class _Workers:
    """Worker processes (``golden_store.corpus.prepare_worker``) preparing pieces; a feeder
    thread per worker writes its pieces, so this process never blocks on a worker's input
    while that worker waits for its output to be read."""

    def __init__(self, n: int) -> None:
        import os
        import sys
        import threading

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the folder golden_store is imported from
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.procs = [subprocess.Popen([sys.executable, "-m", "golden_store.corpus.prepare_worker"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(n)]
        self.queues: list[SimpleQueue[Piece | None]] = [SimpleQueue() for _ in self.procs]
        self.threads = [threading.Thread(target=self._feed, args=(p, q), daemon=True, name="corpus-import-feed")
                        for p, q in zip(self.procs, self.queues)]
        for t in self.threads:
            t.start()

    @staticmethod
    def _feed(proc: "subprocess.Popen[bytes]", q: "SimpleQueue[Piece | None]") -> None:
        from golden_store.corpus.prepare_worker import write_frame

        try:
            assert proc.stdin is not None  # started with stdin=PIPE
            while (piece := q.get()) is not None:
                write_frame(proc.stdin, piece)
            proc.stdin.close()
        except OSError:  # the worker is gone: receive() says so
            pass

    def send(self, i: int, piece: Piece) -> None:
        self.queues[i].put(piece)

    def receive(self, i: int) -> list[Item]:
        from golden_store.corpus.prepare_worker import read_frame

        proc = self.procs[i]
        assert proc.stdout is not None  # started with stdout=PIPE
        try:
            status, payload = read_frame(proc.stdout)
        except EOFError:
            raise RuntimeError(f"a corpus import worker process stopped (exit code {proc.wait()}); "
                               "nothing was imported") from None
        if status != "ok":
            raise RuntimeError(f"a corpus import worker process failed; nothing was imported:\n{payload}")
        return payload

    def close(self, *, finished: bool) -> None:
        """Stop the workers: told to end when every result was read, else killed."""
        for q in self.queues:
            q.put(None)
        for p in self.procs:
            if not finished:
                p.kill()
            try:
                p.wait(timeout=30)
            except Exception:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()
        for t in self.threads:
            t.join(timeout=5)


def worker_count(total_bytes: int) -> int:
    """Worker processes for an import of ``total_bytes``: none below :data:`PARALLEL_MIN_BYTES`
    or on one core, else one per core (at most :data:`_MAX_WORKERS`)."""
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    if cores < 2 or total_bytes < PARALLEL_MIN_BYTES:
        return 0
    return min(_MAX_WORKERS, cores)


def prepared_batches(paths: Sequence[str | Path], problems: list[str], progress: Progress | None = None,
                     workers: int | None = None) -> Iterator[list[PreparedDocument]]:
    """The documents of ``paths`` (files and folders) checked, canonicalized and hashed, in
    lists of about ``_BATCH_CHARS`` characters or ``_BATCH_DOCS`` documents (each one batch
    written to the store), in the order of the files; those refused are left out and their
    problems appended to ``problems``; ``progress`` is told the bytes prepared
    (:data:`READING`). ``workers`` processes do the preparing (None: :func:`worker_count`; 0:
    this process), with the same outcome either way. Shared with
    :func:`golden_store.live.documents.import_paths`."""
    files, found = expand_paths(paths)
    problems.extend(found)
    sizes = []
    for f in files:
        try:
            sizes.append(f.stat().st_size)
        except OSError:
            sizes.append(0)
    total, done = sum(sizes), 0
    n = worker_count(total) if workers is None else workers
    pool = _Workers(n) if n else None
    preparer = Preparer(problems)
    found_docs: set[str] = set()
    batch: list[PreparedDocument] = []
    chars = 0
    finished = False
    in_flight: list[_Entry] = []  # oldest first
    sent = 0
    try:
        stream = _cut(files, sizes)
        window = max(1, n) * _WINDOW_PER_WORKER
        while True:
            entry = next(stream, None)
            if entry is not None:
                if entry.kind == "work" and pool is not None:
                    entry.worker = sent % n
                    pool.send(entry.worker, entry.piece)
                    sent += 1
                in_flight.append(entry)
                if pool is not None and len(in_flight) < window:
                    continue
            if not in_flight:
                break
            entry = in_flight.pop(0)
            items: list[Item] = []
            if entry.kind == "problem":
                problems.append(entry.text)
            elif entry.kind == "end":
                name = entry.text
                if name not in found_docs and not any(
                        p.startswith(f"{name} line") or p.startswith(f"{name}:") for p in problems):
                    problems.append(f"{name}: no documents in the file")
            else:
                items = prepare_piece(entry.piece) if pool is None else pool.receive(entry.worker)
            for item in items:
                if item[0] == "p":
                    problems.append(item[1])
                    continue
                _, doc_id, source_path, outcome = item
                if entry.piece[0] == "jsonl":
                    found_docs.add(entry.piece[1])
                p = preparer.take(doc_id, source_path, outcome)
                if p is None:
                    continue
                batch.append(p)
                chars += len(p.raw_text)
                if chars >= _BATCH_CHARS or len(batch) >= _BATCH_DOCS:
                    yield batch
                    batch, chars = [], 0
            if entry.nbytes:
                done += entry.nbytes
                if progress:
                    progress(done, total, READING)
        if batch:
            yield batch
        finished = True
    finally:
        if pool is not None:
            pool.close(finished=finished)
