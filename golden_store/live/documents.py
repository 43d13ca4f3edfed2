"""The documents table of the live store: importing prepared documents all-or-nothing
(streamed in batches inside one transaction), re-placing the quotes on a replaced document,
and the reads (stats, texts, the persisted search index). Reading and preparing source files
(no database) is ``golden_store.corpus.sources``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from golden_store.db.cursor import Cursor
from golden_store.core import textin
from golden_store.core.digests import corpus_digest
from golden_store.core import disk
from golden_store.core.errors import DiskFullError, ValidationError
from golden_store.core.progress import Phase, in_phase
from golden_store.core.progress import report as tell
from golden_store.corpus import sources
from golden_store.corpus.sources import PreparedDocument, Progress  # noqa: F401  (re-exported)
from golden_store.db.store import Store, utcnow
from golden_store.live.document_staging import SAVING, DocumentStaging, bulk_load_settings, save_file
from golden_store.live.drift import DriftReport, reresolve_tx

if TYPE_CHECKING:
    from golden_store.corpus.index import CorpusSearchIndex

# The steps of a corpus import after the files are read (``sources.READING``), each told to
# ``progress`` so that no step of a long import passes in silence (issue 38, item 4): the
# search index brought up to date first (built, when it is missing), the documents written
# to the store and committed, the store file saved (DuckDB: ``document_staging.SAVING``), then
# the index's new segments committed.
OPENING_INDEX = Phase("bringing the search index up to date", "documents")
WRITING = Phase("writing documents to the store", "documents")
# the documents written, the corpus digest taken (and quotes on replaced documents placed
# again) and the transaction committed: on DuckDB most of it the commit writing its log
COMMITTING = Phase("committing the import", "documents")
INDEXING = Phase("indexing documents for search", "documents")
# Every phase of :func:`import_paths`, in the order they run (the index is brought up to date
# only when it is behind the store; SAVING only on DuckDB).
PHASES = (OPENING_INDEX, sources.READING, WRITING, COMMITTING, SAVING, INDEXING)


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
    rolls the whole import back. A large import is read and canonicalized by worker processes
    (``sources.prepared_batches``), one per core, while this process writes."""
    problems: list[str] = []
    batches = sources.prepared_batches(paths, problems, progress)
    return _import(store, batches, problems, actor=actor, replace=replace, progress=progress)


CORPUS_IMPORT_LOCK = "golden_store.corpus_import"


def _import(store: Store, batches: Iterable[list[PreparedDocument]], problems: list[str], *,
            actor: str, replace: bool, progress: Progress | None = None) -> ImportReport:
    """One transaction in the store; the persisted index is fed batch by batch while it runs
    (tantivy indexes on its own threads meanwhile) and committed right after the store
    commits, or rolled back with it. A crash in between is repaired on the next open
    (corpus_index: the index's last corpus event is then behind the store's)."""
    from golden_store.corpus import index as corpus_index

    # One corpus import at a time (on PostgreSQL, across processes). An import takes its
    # corpus_events ids near its end and commits after; with two at once a later id could
    # commit first, and an app server bringing its search index up to that id would never
    # see the earlier import's documents (the index follows event ids). Serialized, the
    # committed ids are always a prefix of the ids handed out.
    committed = False
    try:
        with store.exclusive(CORPUS_IMPORT_LOCK):
            # current before the import: re-resolution searches it
            index = search_index(store, in_phase(progress, OPENING_INDEX))
            before = index.last_event
            with corpus_index.updating(index) as pending:
                def written(docs: list[PreparedDocument], replaced: set[str]) -> None:
                    for d in docs:
                        pending.put(d.doc_id, d.canonical_text, d.raw_text, d.doc_id in replaced)

                with bulk_load_settings(store):
                    report = store.write(lambda cur: import_documents_tx(cur, batches, actor=actor, replace=replace,
                                                                         problems=problems, index=index,
                                                                         on_write=written, progress=progress),
                                         retries=0)
                    committed = True
                    n_written = len(report.added) + len(report.replaced)
                    tell(progress, n_written, n_written, COMMITTING)
                    save_file(store, n_written, progress)
                with store.cursor() as cur:
                    last = last_corpus_event(cur)
                    ours = len(report.added) + len(report.replaced)
                    others = int(cur.execute("SELECT count(*) FROM corpus_events WHERE event_id > ?",
                                             [before]).fetchone()[0])
                # events this import did not feed (another writer's) make the next open apply them all
                tell(progress, 0, pending.n, INDEXING)
                pending.commit(last if others == ours else before)
                tell(progress, pending.n, pending.n, INDEXING)
    except Exception as exc:
        full = _out_of_room(exc, store, committed=committed)
        if full is None:
            raise
        raise full from exc
    return report


def _out_of_room(exc: BaseException, store: Store, *, committed: bool) -> DiskFullError | None:
    """An import's write that found no room outside the store, as one sentence (probe F1): the
    search index beside the store, or the temporary folder the documents are staged in (what
    else raises a bare "No space left on device" here). The store's own disk was said by
    ``Store`` (None here), as is any other error."""
    from golden_store.corpus import index as corpus_index

    if isinstance(exc, DiskFullError):
        return None
    code = disk.no_room_errno(exc)
    if code is None:
        return None
    where = corpus_index.index_dir_for(store.path, store.url)
    named = getattr(exc, "filename", None)
    if named and Path(named).is_relative_to(where):
        if store.url is None:
            what, path = "the corpus search index beside the store", where
            elsewhere = "move the store and its .index folder to a disk with room and point GOLDEN_DB (or --db) at it"
        else:
            what, path = "the corpus search index in the data directory", where
            elsewhere = "point GOLDEN_DATA_DIR at a folder on a disk with room"
    else:
        what, path = "the temporary folder an import is staged in", Path(tempfile.gettempdir())
        elsewhere = "point TMPDIR at a folder on a disk with room"
    outcome = ("the documents were imported but the search index is behind (it catches up the next time the "
               "store is opened with room)" if committed else "nothing was imported and the store is as it was")
    return disk.no_room(code, what=what, path=path, outcome=outcome, elsewhere=elsewhere)


def import_documents_tx(
    cur: Cursor, docs: Sequence[PreparedDocument] | Iterable[list[PreparedDocument]], *,
    actor: str, replace: bool = False, problems: list[str] | None = None, index: "CorpusSearchIndex | None" = None,
    on_write: Callable[[list[PreparedDocument], set[str]], None] | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """:func:`import_documents` inside a caller's transaction. ``docs`` is a sequence of
    documents or an iterable of batches of them; ``problems`` collects what the reader finds
    while the batches stream (any one refuses the import at the end); ``on_write(docs,
    replaced ids)`` is told each batch of documents written; ``progress`` is told when the
    staged documents start being written (:data:`WRITING`, 0 of them: one statement writes
    them all) and when they are (all of them); then :data:`COMMITTING` begins, and the caller
    says when its commit is done."""
    problems = problems if problems is not None else []
    batches: Iterable[list[PreparedDocument]]
    if isinstance(docs, Sequence) and (not docs or isinstance(docs[0], PreparedDocument)):
        batches = [list(cast(Sequence[PreparedDocument], docs))]  # one batch: the documents themselves
    else:  # already batches (a streamed import); the check above is what the type cannot see
        batches = cast(Iterable[list[PreparedDocument]], docs)
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
            tell(progress, 0, staging.rows, WRITING)
            staging.insert(cur, actor=actor, now=now)
            tell(progress, staging.rows, staging.rows, WRITING)
            tell(progress, 0, staging.rows, COMMITTING)
    if problems:
        raise sources.refused(problems)
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


def _stage_batch(cur: Cursor, docs: list[PreparedDocument], report: ImportReport,
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


def _digest(cur: Cursor) -> str:
    return corpus_digest(cur.execute("SELECT doc_id, canonical_sha256 FROM documents").fetchall())


def store_corpus_digest(store: Store) -> str | None:
    """Digest of the store's current corpus, or None when it has no documents."""
    rows = store.read("SELECT doc_id, canonical_sha256 FROM documents")
    return corpus_digest(rows) if rows else None


def corpus_stats(store: Store) -> dict:
    n, chars = store.read_row("SELECT count(*), coalesce(sum(length(canonical_text)), 0) FROM documents")
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
    """The store's persisted word index (golden_store.corpus.index), brought up to date with
    the corpus first: opened in milliseconds when it is current, updated with the documents
    changed since, or built (streaming) when it is missing."""
    from golden_store.corpus import index as corpus_index

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

    return corpus_index.ensure(corpus_index.index_dir_for(store.path, store.url), last, changed_since, everything,
                               progress=progress)
