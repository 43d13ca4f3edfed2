"""The canonical corpus: reading source files, validating them, importing them atomically.

A document keeps its raw text (what a person reads, and what ``start``/``end`` offsets
index) and its canonical text (what quotes are matched against). For HTML the raw text is
the visible text extracted from the markup, since offsets into tags mean nothing to anyone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import duckdb

from golden_store import textin
from golden_store.canonical import canonical_text
from golden_store.drift import DriftReport, reresolve_tx
from golden_store.errors import ValidationError
from golden_store.jsonl import iter_objects
from golden_store.store import Store, utcnow

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


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_digest(doc_hashes: Iterable[tuple[str, str]]) -> str:
    """Digest of the canonical corpus: sha256 over ``doc_id\\tcanonical_sha256`` lines,
    sorted by doc_id. Equal digests mean every document's canonical text is equal; it does
    not depend on raw formatting that canonicalization removes."""
    h = hashlib.sha256()
    for doc_id, sha in sorted(doc_hashes):
        h.update(f"{doc_id}\t{sha}\n".encode("utf-8"))
    return "sha256:" + h.hexdigest()


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


def read_source(name: str, data: bytes, problems: list[str]) -> list[SourceDocument]:
    """Parse one source (file name + bytes) into documents, appending problems found."""
    path = Path(name)
    suffix = path.suffix.lower()
    text = _decode(path, data, problems)
    if text is None:
        return []
    if suffix == ".jsonl":
        docs: list[SourceDocument] = []
        for lineno, obj in iter_objects(name, text, problems):
            doc_id, body, title = obj.get("doc_id"), obj.get("text"), obj.get("title")
            if not isinstance(doc_id, str) or not doc_id.strip():
                problems.append(f"{name} line {lineno}: field 'doc_id' is missing or not a non-empty string")
                continue
            if not isinstance(body, str):
                problems.append(f"{name} line {lineno}: field 'text' is missing or not a string")
                continue
            if title is not None and not isinstance(title, str):
                problems.append(f"{name} line {lineno}: field 'title' must be a string")
                continue
            docs.append(SourceDocument(doc_id.strip(), body, f"{name}:{lineno}", "jsonl", title))
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


def prepare(docs: Sequence[SourceDocument], problems: list[str], progress: Progress | None = None) -> list[PreparedDocument]:
    """Canonicalize and hash; flag empty documents and duplicate ids."""
    seen: dict[str, str] = {}
    out: list[PreparedDocument] = []
    for i, d in enumerate(docs):
        if progress:
            progress(i, len(docs))
        if d.doc_id in seen:
            problems.append(
                f"duplicate doc id {textin.shown(d.doc_id)}: {seen[d.doc_id]} and {d.source_path}; "
                f"rename one of them (doc id = file name without extension, or the 'doc_id' field)"
            )
            continue
        seen[d.doc_id] = d.source_path
        if not _DOC_ID_RE.match(d.doc_id):
            problems.append(
                f"{d.source_path}: doc id {textin.shown(d.doc_id)} must be 1-200 characters with no whitespace or "
                f"control characters (TREC qrels and run files are whitespace-separated); rename it"
            )
            continue
        if len(d.raw_text) > MAX_DOCUMENT_CHARS:
            problems.append(
                f"{d.source_path}: document {textin.shown(d.doc_id)} is {len(d.raw_text):,} characters of text; "
                f"a document is at most {MAX_DOCUMENT_CHARS:,} (about 2 MB): split it into several files "
                f"(e.g. one per chapter or section)"
            )
            continue
        canon = canonical_text(d.raw_text)
        if not canon:
            problems.append(f"{d.source_path}: document {textin.shown(d.doc_id)} is empty (no text after canonicalization)")
            continue
        out.append(
            PreparedDocument(
                d.doc_id, d.title, d.source_path, d.source_format, d.raw_text, canon,
                sha256_text(d.raw_text), sha256_text(canon),
            )
        )
    if progress:
        progress(len(docs), len(docs))
    return out


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
        raise ValidationError(
            f"Corpus import refused: {len(problems)} problem(s); nothing was imported.", problems
        )
    return prepared


def load_paths(paths: Sequence[str | Path], progress: Progress | None = None) -> list[PreparedDocument]:
    files, problems = expand_paths(paths)
    if problems:
        raise ValidationError(f"Corpus import refused: {len(problems)} problem(s); nothing was imported.", problems)
    sources = []
    for f in files:
        try:
            sources.append((str(f), f.read_bytes()))
        except OSError as exc:
            problems.append(f"{f}: cannot be read ({exc.strerror or exc.__class__.__name__})")
    if problems:
        raise ValidationError(f"Corpus import refused: {len(problems)} problem(s); nothing was imported.", problems)
    return load_sources(sources, progress)


# ---- writing to the store -----------------------------------------------------------------


def import_documents(
    store: Store, docs: Sequence[PreparedDocument], *, actor: str, replace: bool = False
) -> ImportReport:
    """Insert documents in one transaction. A doc id already in the store with the same
    canonical text is left alone; with different text it is an error unless ``replace``
    (a corpus change must be deliberate). Quotes placed on a replaced document are
    re-resolved in the same transaction; the report lists those that moved or broke."""
    return store.write(lambda cur: import_documents_tx(cur, docs, actor=actor, replace=replace))


def import_documents_tx(
    cur: duckdb.DuckDBPyConnection, docs: Sequence[PreparedDocument], *, actor: str, replace: bool = False
) -> ImportReport:
    """:func:`import_documents` inside a caller's transaction."""
    if not docs:
        raise ValidationError("Corpus import refused: no documents given.")
    report = ImportReport()
    now = utcnow()
    existing = dict(
        cur.execute(
            "SELECT doc_id, canonical_sha256 FROM documents WHERE doc_id IN (SELECT unnest(?))",
            [[d.doc_id for d in docs]],
        ).fetchall()
    )
    conflicts = [
        d for d in docs if d.doc_id in existing and existing[d.doc_id] != d.canonical_sha256
    ]
    if conflicts and not replace:
        raise ValidationError(
            f"Corpus import refused: {len(conflicts)} document(s) already exist with different "
            f"text; nothing was imported. Re-run with --replace (CLI) or tick 'replace' to change them.",
            [f"{d.source_path}: doc id {textin.shown(d.doc_id)} differs from the stored document" for d in conflicts],
        )
    rows, events = [], []
    for d in docs:
        old = existing.get(d.doc_id)
        if old == d.canonical_sha256:
            report.unchanged.append(d.doc_id)
            continue
        if old is not None:
            cur.execute("DELETE FROM documents WHERE doc_id = ?", [d.doc_id])
            report.replaced.append(d.doc_id)
            action = "replace"
        else:
            report.added.append(d.doc_id)
            action = "add"
        rows.append(
            [d.doc_id, d.title, d.source_path, d.source_format, d.raw_text, d.canonical_text,
             d.raw_sha256, d.canonical_sha256, now, actor]
        )
        events.append([d.doc_id, action, old, d.canonical_sha256, d.source_path, actor, now])
    if rows:
        cur.executemany("INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        cur.executemany(
            "INSERT INTO corpus_events (doc_id, action, old_canonical_sha256, new_canonical_sha256,"
            " source_path, actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            events,
        )
    report.corpus_digest = _digest(cur)
    if report.replaced:
        report.drift = reresolve_tx(cur)
    return report


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


def get_document(store: Store, doc_id: str) -> dict | None:
    rows = store.read_dicts("SELECT * FROM documents WHERE doc_id = ?", [doc_id])
    return rows[0] if rows else None
