"""Two corpus imports at once on one PostgreSQL store (two app processes, or the CLI and an
app): the second waits for the first, so both succeed and corpus event ids commit in the
order they were handed out. Without that, one of them failed with a serialization failure
(an import is not retried: it may have read gigabytes), and the import that started first
took its ids last (near its end), so an app server that brought its search index up to the
other import's higher ids would never index the first import's documents (the index
follows event ids)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from golden_store.live import documents
from golden_store.corpus.sources import load_sources
from golden_store.db.store import Store


def _docs(prefix: str, n: int, start: int = 0) -> list:
    return load_sources([(f"{prefix}-{i}.txt", f"Document {prefix} {i}: the text of it, long enough.".encode())
                         for i in range(start, start + n)])


def _ids(s: Store, prefix: str) -> list[int]:
    return [r[0] for r in s.read("SELECT event_id FROM corpus_events WHERE doc_id LIKE ? ORDER BY 1", [f"{prefix}-%"])]


def test_a_second_corpus_import_waits_for_the_first_and_takes_later_ids(pg_url, tmp_path):
    """The first import runs in this process and pauses between two batches, inside its
    transaction; the second is ``golden corpus import`` in another process (its own working
    directory, as another app server or an engineer's shell)."""
    first = Store.open(pg_url)
    blocked, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    folder = tmp_path / "b-docs"
    folder.mkdir()
    for i in range(2):
        (folder / f"b-{i}.txt").write_text(f"Document b {i}: the text of it, long enough.")
    elsewhere = tmp_path / "other-process"
    elsewhere.mkdir()

    def slow_batches():
        yield _docs("a", 2)
        blocked.set()  # inside the first import's transaction, between two batches
        if not go.wait(120):
            raise TimeoutError("the test never let the first import go on")
        yield _docs("a", 1, start=2)

    def first_import() -> None:
        try:
            documents._import(first, slow_batches(), [], actor="eng1", replace=False)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    t1 = threading.Thread(target=first_import)
    try:
        t1.start()
        assert blocked.wait(60)
        second = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", pg_url, "corpus", "import",
                                   str(folder)], cwd=elsewhere, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        # until the second import has finished, or waits for the first's lock
        deadline = time.monotonic() + 60
        while second.poll() is None and time.monotonic() < deadline:
            if first.read_one("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")[0]:
                break
            time.sleep(0.05)
        go.set()
        t1.join(60)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        assert not errors, errors
        a, b = _ids(first, "a"), _ids(first, "b")
        assert len(a) == 3 and len(b) == 2
        assert max(a) < min(b)  # the first import's ids all precede the second's
    finally:
        go.set()
        t1.join(60)
        first.close()
