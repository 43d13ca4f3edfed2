"""The live store: one DuckDB file (one process), or a PostgreSQL database (a team).

Why this shape: DuckDB lets exactly one process open a file for writing. The app is that
process; inside it Streamlit runs every browser session in its own thread, so each
operation takes its own cursor (DuckDB cursors are independent connections to the same
database), reads run concurrently, and writes go one at a time through a lock, retried if
DuckDB still reports a transaction conflict. A second process gets one clear sentence.

All SQL of the studio lives in ``golden_store``; this module owns the connection, the
migrations and the transaction discipline. Keep the public surface (``read``, ``write``,
``df``) engine-neutral so a PostgreSQL backend can implement the same protocol.

``GOLDEN_DB=postgresql://…`` (or ``--db``) opens a PostgreSQL store instead
(``golden_store.db.postgres``): its cursors offer the same API and translate the SQL
(``golden_store.db.dialect``); writes are SERIALIZABLE transactions retried on serialization
failures, since there several processes write at once.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import duckdb

from golden_store.db.cursor import Cursor
from golden_store.db.dialect import EVENT_SEQ_LAST_VALUE, SEQUENCES_LAST_VALUES
from golden_store.core import disk
from golden_store.core.errors import GoldenError, StoreLockedError, StoreSchemaError
from golden_store.core.paths import DEFAULT_DB, default_db_path, is_postgres_url, versions_dir_for  # noqa: F401 - re-exported
from golden_store.db.schema import BUILTIN_STRATA, MIGRATIONS, SCHEMA_VERSION, WRITE_SEQ_VERSION

if TYPE_CHECKING:
    from golden_store.db.postgres import PgCursor

T = TypeVar("T")
_log = logging.getLogger("golden_store")

#: DuckDB's worker threads for this process's store (``SET threads``), when set to a positive
#: whole number: DuckDB's setting is the whole database's, not a connection's.
THREADS_ENV = "GOLDEN_DUCKDB_THREADS"


def _duckdb_config(threads: int | None = None) -> dict[str, Any]:
    """The DuckDB connection's config: ``threads`` from :data:`THREADS_ENV` when it names a
    positive number, else ``threads`` when given (:meth:`Store.set_threads`), else DuckDB's
    default (one per core)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return {"threads": int(raw)}
    return {"threads": threads} if threads else {}


_LOCK_PID = re.compile(r"held in (?P<prog>\S+) \(PID (?P<pid>\d+)\)")
# the file a DuckDB I/O error names: Could not write file "/x/golden.duckdb.wal": No space left on device
# (in an async write's JSON the quotes come escaped: \"...\")
_DUCKDB_FILE = re.compile(r'file \\?"(?P<path>[^"\\]+)\\?"')


def duckdb_failure(exc: BaseException, store_path: Path, *, reopened: bool = False) -> GoldenError | None:
    """A DuckDB error a person can act on, as one sentence: a write that found no room (the
    disk holding the store, its write-ahead log or its spill folder is full). None for any
    other error.

    DuckDB rolls the transaction back, so every table is as it was. What it keeps of the
    attempt (measured with DuckDB 1.x on a tmpfs, issue 37 F1): an empty ``.wal`` (removed by
    the next open), and, when the rows went into the file ahead of the commit (an insert of
    more than a row group, ~120,000 rows), the file at the size they grew it to: the rows are
    free blocks, reused by the next writes, and the file is cut back at the next checkpoint
    that writes something, which needs room for a few KB of log; neither CHECKPOINT nor
    FORCE CHECKPOINT with nothing to write shrinks it. The sentence says so in that case.

    A commit can also be durable (in the ``.wal``) and only the checkpoint that follows it
    find no room: DuckDB then raises "COMMIT succeeded and is durable, but the autocheckpoint
    failed" and invalidates the database (every later statement fails until it is opened
    again; ``reopened``: :meth:`Store._reopen_invalidated` did). The sentence then says the
    change was saved, and a statement refused by the invalidated database that it was not run."""
    code = disk.no_room_errno(exc)
    if code is None:
        return None
    text = str(exc)
    m = _DUCKDB_FILE.search(text)
    path = Path(m["path"]) if m else store_path
    elsewhere = "move the store to a disk with room and point GOLDEN_DB (or --db) at it"
    again = "the store was opened again" if reopened else "restart the studio to open the store again"
    if "has been invalidated" in text:  # a statement after the fatal error (whose text it quotes)
        return disk.no_room(code, what="the store", path=store_path, elsewhere=elsewhere,
                            outcome=f"DuckDB closed it after a write found no room, so this was not run; {again}")
    if "COMMIT succeeded" in text:
        return disk.no_room(code, what="the store", path=store_path, elsewhere=elsewhere, saved=True,
                            outcome="the change was saved all the same (in its write-ahead log, folded into the "
                                    f"file at a later write) and {again}")
    outcome = "nothing was written and the store is as it was"
    if path == store_path:
        what = "the store"
        outcome += (", though its file keeps the room the refused rows took until its next change (which needs a "
                    "little free space)")
    elif path.name == store_path.name + ".wal":
        what = "the store's write-ahead log"
    elif path.parent.name == store_path.name + ".tmp" or path.parent.name.endswith(".tmp"):
        what = "DuckDB's spill folder beside the store"
    else:
        what = "a file the store was writing"
    return disk.no_room(code, what=what, path=path, outcome=outcome,
                        elsewhere="move the store to a disk with room and point GOLDEN_DB (or --db) at it")


def utcnow() -> datetime:
    """Naive UTC timestamp (DuckDB TIMESTAMP has no zone; every timestamp we store is UTC)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    """Handle on one studio store file. Create with :meth:`open`."""

    def __init__(self, path: Path, con: Any, *, url: str | None = None) -> None:
        self.path = path
        self._con = con
        # "duckdb" or "postgresql"; url: the PostgreSQL URL (None for a DuckDB file)
        self.engine: str = getattr(con, "engine", "duckdb")
        self.url = url
        if self.engine == "postgresql":
            from golden_store.db import postgres

            self._errors: tuple[type[BaseException], ...] = postgres.ERRORS
            self._conflicts: tuple[type[BaseException], ...] = postgres.CONFLICT_ERRORS
        else:
            self._errors, self._conflicts = (duckdb.Error,), (duckdb.TransactionException,)
        self._write_lock = threading.RLock()
        self._reopen_lock = threading.Lock()
        self._closed = False
        self._commits = 0  # committed write transactions of this handle
        # every write takes a value from write_seq once the store has it (after migrating)
        self._counts_writes = False
        self._threads: int | None = None  # set_threads: kept across a reopen

    # ---- lifecycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, create: bool = True) -> "Store":
        """Open (and migrate) the store at ``path``.

        Raises :class:`StoreLockedError` with a one-sentence explanation when another
        process holds the file. ``path`` may be a ``postgresql://`` URL: see :meth:`_open_postgres`.
        """
        if is_postgres_url(path if path is not None else default_db_path()):
            from golden_store.db import postgres  # the driver only for a PostgreSQL store

            return cls._open_postgres(postgres.normalize_url(path if path is not None else default_db_path()))
        p = Path(path) if path is not None else default_db_path()
        if not create and not p.exists():
            raise StoreSchemaError(
                f"No store at {p}. Create one with `golden init` (or `golden --db PATH init`)."
            )
        if p.parent and not p.parent.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
        try:
            con = duckdb.connect(str(p), config=_duckdb_config())
        except duckdb.IOException as exc:
            msg = str(exc)
            full = duckdb_failure(exc, p)
            if full is not None:
                raise full from None
            if "lock" in msg.lower():
                m = _LOCK_PID.search(msg)
                who = f" (PID {m['pid']}, {Path(m['prog']).name})" if m else ""
                raise StoreLockedError(
                    f"The store {p} is in use by another process{who}: DuckDB lets one process "
                    f"open it at a time, so stop that process (for example the running app) or do "
                    f"this from the app, or point --db/GOLDEN_DB at another file."
                ) from None
            raise StoreSchemaError(f"Cannot open {p} as a DuckDB store: {msg}") from None
        store = cls(p, con)
        try:
            store._migrate()
            store._counts_writes = store.schema_version() >= WRITE_SEQ_VERSION
        except Exception:
            con.close()
            raise
        return store

    @classmethod
    def _open_postgres(cls, url: str) -> "Store":
        """Open (and migrate) the PostgreSQL database at ``url``.

        ``path`` stands in for the store file where the studio keeps files beside it (frozen
        versions, unless ``GOLDEN_VERSIONS`` says otherwise, and the corpus index): a name in
        the working directory unique to the server and database."""
        from urllib.parse import urlsplit

        from golden_store.db import postgres

        try:
            db = postgres.open_database(url)
        except postgres.ERRORS as exc:
            failure = postgres.failure(exc, url)
            if failure is not None:  # the server is down or not taking connections (probe P2)
                raise failure from None
            raise StoreSchemaError(
                f"Cannot open the PostgreSQL store {postgres.display_url(url)}: {str(exc).strip()}") from None
        parts = urlsplit(url)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{parts.hostname or 'local'}_{parts.port or 5432}_{parts.path.lstrip('/')}")
        store = cls(Path.cwd() / f"{name}.postgresql", db, url=url)
        try:
            store._migrate()
            store._counts_writes = store.schema_version() >= WRITE_SEQ_VERSION
        except Exception:
            db.close()
            raise
        return store

    def _failure(self, exc: BaseException) -> GoldenError | None:
        """``exc`` (a driver error) as the studio's one sentence when a person can act on it:
        the database server unreachable (:class:`StoreUnavailableError`), no room to write
        (:class:`DiskFullError`); None for anything else (a bug, a constraint: raised as it is)."""
        if self.engine == "postgresql":
            from golden_store.db import postgres

            return postgres.failure(exc, self.url or "")
        reopened = isinstance(exc, duckdb.FatalException) and self._reopen_invalidated()
        return duckdb_failure(exc, self.path, reopened=reopened)

    def _reopen_invalidated(self) -> bool:
        """Open the DuckDB file again when a fatal error invalidated the database (a commit
        made durable whose checkpoint found no room): until then every statement of this
        process fails. The ``.wal`` is replayed, so nothing committed is lost, and an app or API
        process carries on without a restart. True when the store answers again."""
        with self._reopen_lock:
            try:
                probe = self._con.cursor()
                try:
                    probe.execute("SELECT 1")
                    return True  # another thread has reopened it, or it was not invalidated
                finally:
                    probe.close()
            except duckdb.Error:
                pass
            try:  # first: connecting while this process holds the invalidated database gets it back
                self._con.close()
            except duckdb.Error:
                pass
            try:
                self._con = duckdb.connect(str(self.path), config=_duckdb_config(self._threads))
            except duckdb.Error:
                return False
            return True

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Driver errors raised in the block, translated by :meth:`_failure` (issue 37, probes
        F1/F2/P2): the CLI prints the sentence, the app shows it, the HTTP API answers 503/507
        with it (http_api/problems.py maps these classes and imports no driver)."""
        try:
            yield
        except self._errors as exc:
            err = self._failure(exc)
            if err is None:
                raise
            raise err from exc

    def set_threads(self, n: int) -> None:
        """Run this DuckDB store's statements on ``n`` threads from now on (``SET threads``,
        the whole database's setting in this process; nothing on PostgreSQL, nor when
        :data:`THREADS_ENV` names the number). A server taking many small statements at once
        sets 1 (issue 41): each statement then stops waking DuckDB's worker threads, ~0.5 ms of
        CPU a statement, while its requests already keep the cores busy side by side."""
        if self.engine != "duckdb" or n < 1 or _duckdb_config():
            return
        with self.cursor() as cur:
            cur.execute(f"SET threads = {int(n)}")
        self._threads = int(n)

    def location(self) -> str:
        """Where the store is, for people: the file, or the URL without its password."""
        if self.url is None:
            return str(self.path)
        from golden_store.db.postgres import display_url

        return display_url(self.url)

    def close(self) -> None:
        if not self._closed:
            self._con.close()
            self._closed = True

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- migrations ----------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self.cursor() as cur:
            exists = cur.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
            ).fetchone()[0]
            if not exists:
                return 0
            return int(cur.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])

    def _migrate(self) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.path} has schema version {current}, newer than this studio "
                f"understands ({SCHEMA_VERSION}). Upgrade the studio (pip install -U golden-studio)."
            )
        if current == SCHEMA_VERSION:
            return
        if current == 0:
            cur = self._con.cursor()
            try:
                n = cur.execute(
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                ).fetchone()[0]
            finally:
                cur.close()
            if n:
                what = "PostgreSQL database" if self.url else "DuckDB file"
                raise StoreSchemaError(
                    f"{self.location()} is a {what} but not a golden-set store (it has tables "
                    f"but no schema_migrations). Point --db/GOLDEN_DB at a new "
                    f"{'database' if self.url else 'file'}."
                )

        def apply(cur: Cursor) -> None:
            start = current
            if self.engine == "postgresql":
                # two processes opening a new store at once: one migrates, the other waited
                # for the session lock below and finds the work done (this transaction's
                # snapshot is taken after that lock was granted)
                if int(cur.execute("SELECT count(*) FROM information_schema.tables "
                                   "WHERE table_name = 'schema_migrations' AND table_schema = current_schema()"
                                   ).fetchone()[0]):
                    done = int(cur.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0])
                    if done >= SCHEMA_VERSION:
                        return
                    start = done
                for stmt in self._con.prelude():
                    cast("PgCursor", cur).execute_native(stmt)
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, description VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
            )
            for mig in MIGRATIONS:
                if mig.version <= start:
                    continue
                for stmt in mig.statements:
                    cur.execute(stmt)
                cur.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    [mig.version, mig.description, utcnow()],
                )
                if mig.version == 1:
                    now = utcnow()
                    cur.executemany(
                        "INSERT INTO strata VALUES (?, ?, TRUE, ?, 'system')",
                        [[name, desc, now] for name, desc in BUILTIN_STRATA.items()],
                    )
                    cur.execute("INSERT INTO store_meta VALUES ('created_at', ?)", [now.isoformat()])

        if self.engine == "postgresql":
            with self._con.session_lock("golden_store.migrate"):
                self.write(apply)
        else:
            self.write(apply)

    # ---- operations ------------------------------------------------------------------------------
    @contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A fresh cursor for one read operation. A driver error in the block that a person can
        act on comes out as the studio's sentence (:meth:`_translated`)."""
        with self._translated():
            cur = self._con.cursor()
            try:
                yield cur
            finally:
                cur.close()

    def read(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple]:
        """Run one parameterized read and return all rows."""
        with self.cursor() as cur:
            return cur.execute(sql, params or []).fetchall()

    def read_one(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> tuple | None:
        """Run one parameterized read and return its first row (None: no row)."""
        with self.cursor() as cur:
            return cur.execute(sql, params or []).fetchone()

    def read_row(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> tuple:
        """:meth:`read_one` of a read that always has a row (an aggregate with no GROUP BY:
        ``count(*)``, ``max(...)``). No row there is a wrong query, said with its SQL, not a
        ``TypeError`` from indexing None further on."""
        row = self.read_one(sql, params)
        if row is None:
            raise RuntimeError(f"this read returned no row, and it always returns one: {sql}")
        return row

    def read_dicts(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[dict]:
        with self.cursor() as cur:
            res = cur.execute(sql, params or [])
            cols = [d[0] for d in res.description]
            return [dict(zip(cols, row)) for row in res.fetchall()]

    def df(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None):
        """Run one parameterized read and return a pandas DataFrame."""
        with self.cursor() as cur:
            return cur.execute(sql, params or []).df()

    def lock(self, cur: Any, key: str) -> None:
        """Inside a :meth:`write`: hold a lock named ``key`` until the transaction ends, so
        two writers of the same thing (two freezes of one version name) run one after the
        other. DuckDB needs none (one process, writes serialized by :meth:`write`); on
        PostgreSQL it is a transaction-scoped advisory lock."""
        if self.engine == "postgresql":
            cur.advisory_lock(key)

    def _commit(self, cur: Any) -> bool:
        """Commit; False when DuckDB made the commit durable but the checkpoint it ran after it
        found no room ("COMMIT succeeded and is durable, but the autocheckpoint failed"): the
        change is saved (in the ``.wal``), so the write succeeded, and the database DuckDB then
        invalidated is opened again (:meth:`_reopen_invalidated`). Saying it failed would make a
        caller retry, or a page say "not saved", over a saved change."""
        try:
            cur.commit()
            return True
        except duckdb.FatalException as exc:
            if "COMMIT succeeded" not in str(exc):
                raise
            _log.warning("%s: a commit was saved in the write-ahead log, but folding it into the file failed (%s); "
                         "the store is opened again", self.path, exc)
            self._reopen_invalidated()
            return False

    def _bump_after_commit(self, cur: Any) -> None:
        """Move the generation once more, after the commit. The value taken inside the
        transaction is visible to every process at once (sequences are not transactional),
        while the rows become visible only at commit: a page computed in between, from a
        snapshot without those rows, would be cached under the new value and stay stale
        until the next write. A value taken after the commit makes that cache entry old.
        (The value inside stays: it covers a process that dies between commit and here.)"""
        try:
            cur.execute("SELECT nextval('write_seq')")
        except self._errors:  # the write is committed; a missed bump costs one stale page at most
            pass

    @contextmanager
    def exclusive(self, key: str) -> Iterator[None]:
        """Around :meth:`write` calls: one holder of ``key`` at a time across every process,
        each transaction begun inside seeing what the previous holder committed (on
        PostgreSQL a session advisory lock taken before the transaction starts; a lock taken
        inside a SERIALIZABLE transaction would wait with a snapshot from before the wait).
        DuckDB needs none: one process, writes serialized by :meth:`write`."""
        if self.engine == "postgresql":
            with self._translated(), self._con.session_lock(key):
                yield
        else:
            yield

    def generation(self) -> tuple[int, int]:
        """A key that changes whenever the store's content may have changed, whoever wrote
        it: (the write sequence's last value, the event sequence's last value).

        Why both: every label, edit and verdict takes an event id from ``event_seq``; every
        transaction committed through :meth:`write` also takes a value from ``write_seq``
        (migration 14), which covers the writes that take no event id (pool items, rounds,
        run replacement, calibrations) - in any process, which matters on PostgreSQL where
        several app processes share one store. Pages cache whole-store aggregates under this
        key, so a rerun with nothing new written reads the cache instead of scanning millions
        of events. (A rolled-back write may move ``write_seq`` too: a needless recompute, never
        a stale page.)"""
        if not self._counts_writes:  # a store kept at an older schema (tests of migrations)
            row = self.read_one(EVENT_SEQ_LAST_VALUE[self.engine])
            return self._commits, int(row[0]) if row and row[0] is not None else 0
        row = self.read_one(SEQUENCES_LAST_VALUES[self.engine])
        return tuple(int(v) if v is not None else 0 for v in (row or (0, 0)))  # type: ignore[return-value]

    def write(self, fn: Callable[[Cursor], T], *, retries: int | None = None,
              bookkeeping: bool = False) -> T:
        """Run ``fn(cursor)`` inside one transaction, serialized with every other write.

        All-or-nothing: if ``fn`` raises, the transaction is rolled back and the store is
        exactly as it was. Transaction conflicts are retried with backoff (jittered, so
        processes that collided do not collide again in step); on PostgreSQL, where other
        processes write too, a serialization failure or deadlock is such a conflict and
        ``fn`` runs again from the start, so it must not have effects outside the store.

        A driver error a person can act on (no room to write, the database server gone) comes
        out as one sentence (:meth:`_translated`) and is not retried.

        ``bookkeeping=True``: the write touches only what no cached page figure reads (a
        sign-in session, a rubric banner seen), so it leaves :meth:`generation` where it was;
        otherwise every sign-in would throw away every cached aggregate (issue 19).
        """
        if retries is None:
            retries = 5 if self.engine == "duckdb" else 12
        delay = 0.02
        with self._write_lock, self._translated():  # a full disk, a server gone: one sentence, not retried
            for attempt in range(retries + 1):
                cur = self._con.cursor()
                try:
                    cur.begin()
                    try:
                        result = fn(cur)
                        moves = self._counts_writes and not bookkeeping
                        if moves:
                            cur.execute("SELECT nextval('write_seq')")  # the generation moves (see generation())
                        if self._commit(cur) and moves:
                            self._bump_after_commit(cur)
                        if not bookkeeping:
                            self._commits += 1
                        return result
                    except BaseException:
                        try:
                            cur.rollback()
                        except self._errors:
                            pass
                        raise
                except self._conflicts as exc:
                    if attempt == retries or self._failure(exc) is not None:  # DuckDB says a full disk as a conflict
                        raise
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.5)
                finally:
                    cur.close()
        raise AssertionError("unreachable")  # pragma: no cover


def is_empty(store: Store) -> bool:
    """No documents and no queries (ever): the only kind of store the demo may load into."""
    n_docs, n_q = store.read_row(
        "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM query_revisions)"
    )
    return n_docs == 0 and n_q == 0
