"""Bulk writing of imported documents: staged in a file while the import streams, then
inserted with one statement per table inside the import's transaction.

Why not one ``INSERT`` per batch, as before: DuckDB holds what an open transaction has
inserted through many statements in memory until it commits, and by default analyses
every compression method for each string segment it writes, on one thread at ~13 MB/s.
Measured on this machine (``golden corpus import`` of 1 GiB of generated prose, 198,609
documents): 146 s and 6.0 GB peak before; 135 s and 1.0 GB with the documents staged and
inserted by one ``INSERT ... SELECT`` from the file, DuckDB under a memory limit, and the
row groups compressed with zstd only (a 1.03 GB database file, against 1.2 GB with
DuckDB's own choice; uncompressed: 120 s, 2.4 GB). ``BENCHMARKS.md``, "Corpus at scale".

The import stays all-or-nothing: the staged file is only read inside the transaction,
and is deleted whatever happens.

Saving the store file (issue 41, item 4): DuckDB folds a committed import into its file at
the next checkpoint, which came when the store was closed, after the bulk settings were
reset: a silent wait at the end of ``golden corpus import`` (a sixth of a 200 MB import)
that analysed every string segment's compression again and peaked at 2.3 GB. The import
now checkpoints itself under the bulk settings, as a phase of its own (:data:`SAVING`):
measured at 200 MB, 3.5 s of CPU instead of 7.2 and 650 MB instead of 2.3 GB, a 14% smaller
file, and closing the store takes milliseconds.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from golden_store.core.progress import Phase, Progress, step
from golden_store.db.cursor import Cursor

if TYPE_CHECKING:
    import pyarrow.parquet as pq

    from golden_store.corpus.sources import PreparedDocument
    from golden_store.db.store import Store

# What DuckDB may hold in memory while a bulk import's transaction runs (it spills the
# rest to its temporary directory beside the store); restored when the import ends.
BULK_MEMORY_LIMIT = "512MB"

_COLUMNS = ("doc_id", "title", "source_path", "source_format", "raw_text", "canonical_text",
            "raw_sha256", "canonical_sha256", "old_sha256")


class DocumentStaging:
    """The documents an import writes (new ones and replacements), in a temporary Parquet
    file; :meth:`insert` moves them into ``documents`` and logs one ``corpus_events`` row
    each, in the order they were staged."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="golden-import-")
        self.path = Path(self._dir.name) / "documents.parquet"
        self._writer: pq.ParquetWriter | None = None  # opened by the first add (its schema is the table's)
        self.rows = 0

    def add(self, docs: Sequence["PreparedDocument"], olds: Sequence[str | None]) -> None:
        """Stage ``docs``; ``olds[i]`` is the canonical sha256 of the document ``docs[i]``
        replaces (None for a new one)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not docs:
            return
        table = pa.table({
            "doc_id": [d.doc_id for d in docs], "title": pa.array([d.title for d in docs], pa.string()),
            "source_path": [d.source_path for d in docs], "source_format": [d.source_format for d in docs],
            "raw_text": [d.raw_text for d in docs], "canonical_text": [d.canonical_text for d in docs],
            "raw_sha256": [d.raw_sha256 for d in docs], "canonical_sha256": [d.canonical_sha256 for d in docs],
            "old_sha256": pa.array(list(olds), pa.string()),
        })
        if self._writer is None:
            # uncompressed: written once and read once, right away
            self._writer = pq.ParquetWriter(str(self.path), table.schema, compression="none")
        self._writer.write_table(table)
        self.rows += len(docs)

    def insert(self, cur: Cursor, *, actor: str, now: datetime) -> None:
        """Inside the import's transaction: drop the documents being replaced, insert the
        staged rows and their corpus events (one statement each)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self.rows:
            return
        src = str(self.path)
        cur.execute("DELETE FROM documents WHERE doc_id IN "
                    "(SELECT doc_id FROM read_parquet(?) WHERE old_sha256 IS NOT NULL)", [src])
        cur.execute(
            "INSERT INTO documents SELECT doc_id, title, source_path, source_format, raw_text, canonical_text, "
            "raw_sha256, canonical_sha256, ?, ? FROM read_parquet(?)", [now, actor, src])
        cur.execute(
            "INSERT INTO corpus_events (doc_id, action, old_canonical_sha256, new_canonical_sha256, source_path,"
            " actor, created_at) SELECT doc_id, CASE WHEN old_sha256 IS NULL THEN 'add' ELSE 'replace' END,"
            " old_sha256, canonical_sha256, source_path, ?, ? FROM read_parquet(?)", [actor, now, src])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._dir.cleanup()

    def __enter__(self) -> "DocumentStaging":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The last step of a DuckDB import: its documents folded into the store file (see above).
SAVING = Phase("saving the store file", "documents")


def save_file(store: "Store", n_docs: int, progress: Progress | None = None) -> None:
    """DuckDB, inside :func:`bulk_load_settings` after an import of ``n_docs`` documents
    committed: checkpoint now (told as :data:`SAVING`), rather than when the store is closed
    with the settings reset. PostgreSQL writes its own pages as it goes: nothing to do."""
    if store.engine != "duckdb" or n_docs <= 0:
        return
    with step(progress, n_docs, SAVING), store.cursor() as cur:
        cur.execute("CHECKPOINT")


@contextlib.contextmanager
def bulk_load_settings(store: "Store") -> Iterator[None]:
    """While a large import's transaction runs (and commits): DuckDB under
    :data:`BULK_MEMORY_LIMIT` and compressing the row groups it writes with zstd alone
    (see the module's docstring for the measurements). Both are instance-wide settings, so other work in the
    same process shares them for that time; both are reset afterwards."""
    with store.cursor() as cur:
        cur.execute(f"SET memory_limit = '{BULK_MEMORY_LIMIT}'")
        cur.execute("SET force_compression = 'zstd'")
    try:
        yield
    finally:
        with store.cursor() as cur:
            cur.execute("RESET force_compression")
            cur.execute("RESET memory_limit")
