"""The PostgreSQL backend of the live store (``GOLDEN_DB=postgresql://…``), through psycopg 3.

Why this shape: :class:`golden_store.db.store.Store` and every module in ``golden_store`` talk
to a *cursor* with DuckDB's API (``execute(sql, params).fetchall()/fetchone()/df()``,
``executemany``, ``register`` of a DataFrame, ``begin/commit/rollback``) and write SQL in
DuckDB's dialect. :class:`PgCursor` offers that subset over one PostgreSQL connection and
sends every statement through :func:`golden_store.db.dialect.to_postgres`, so the callers do
not change and the SQL differences stay in one module.

Several processes share one PostgreSQL store, so unlike DuckDB nothing here serializes
writers across processes: ``Store.write`` runs each write as a SERIALIZABLE transaction and
retries it when PostgreSQL reports a serialization failure or deadlock (SQLSTATE 40001 /
40P01), which gives the same all-or-nothing, as-if-one-at-a-time semantics DuckDB's single
writer had. Reads run in autocommit (each statement sees the latest committed state).

Connections are kept in a small pool per store (opening one costs milliseconds, and the app
takes a cursor per operation). A cursor that made temporary tables drops them when it is
returned, as a DuckDB cursor (its own connection) would.
"""

from __future__ import annotations

import errno
import os
import re
import select
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Loader

from golden_store.core import disk
from golden_store.core.errors import GoldenError, StoreUnavailableError, ValidationError
from golden_store.core.paths import is_postgres_url  # noqa: F401 - re-exported (callers that hold a URL)
from golden_store.db.dialect import POSTGRES_PRELUDE, is_noop_on_postgres, to_postgres

# What Store.write retries: another transaction's commit made this one impossible to order.
CONFLICT_ERRORS: tuple[type[BaseException], ...] = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
ERRORS: tuple[type[BaseException], ...] = (psycopg.Error,)

_READ_PARQUET = re.compile(r"read_parquet\(\?\)", re.IGNORECASE)
# DuckDB's `COPY (SELECT …) TO 'file' (FORMAT parquet …)`: freezing and result exports
_COPY_TO_FILE = re.compile(r"^\s*COPY\s*\((?P<query>.*)\)\s*TO\s*'(?P<path>(?:[^']|'')*)'\s*(?P<options>\(.*\))?\s*$",
                           re.IGNORECASE | re.DOTALL)
_TEMP = re.compile(r"\bCREATE\s+TEMP(ORARY)?\s+TABLE\b", re.IGNORECASE)


def normalize_url(value: object) -> str:
    """The URL as given, repairing the ``scheme:/rest`` a ``Path()`` round trip leaves."""
    s = str(value)
    scheme, _, rest = s.partition(":")
    return f"{scheme}://{rest.lstrip('/')}" if not rest.startswith("//") else s


def display_url(url: str) -> str:
    """The URL without its password: for messages and the app's footer."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def server_address(url: str) -> str:
    """``HOST:PORT`` of the server ``url`` names (libpq's defaults: PGHOST/PGPORT, else
    localhost:5432): what a message may say of a store without its URL, which can hold a password."""
    parts = urlsplit(normalize_url(url))
    query = parse_qs(parts.query)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or (query.get("host") or [""])[0] or os.environ.get("PGHOST") or "localhost"
    port_text = str(port or (query.get("port") or [""])[0] or os.environ.get("PGPORT") or 5432)
    return f"[{host}]:{port_text}" if ":" in host else f"{host}:{port_text}"


# SQLSTATEs of a server that went away or takes no connections now: admin_shutdown (pg_ctl stop),
# crash_shutdown, cannot_connect_now (starting up, shutting down, in recovery); class 08 is the
# connection exceptions
_GONE = frozenset({"57P01", "57P02", "57P03"})
# a refused connection carries no SQLSTATE, only libpq's text; these FATALs are the server saying "not now"
_NOT_NOW = ("the database system is shutting down", "the database system is starting up",
            "the database system is in recovery mode", "the database system is not yet accepting connections",
            "the database system is not accepting connections")


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server cannot be reached or is not taking connections (stopped,
    restarting, the network), as opposed to one that answered and refused (no such database
    or role, a wrong password), a conflict (40001, an OperationalError too) or a bad statement."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    if state is not None:
        return state in _GONE or state.startswith("08")
    text = str(exc)
    if "FATAL:" in text:  # the server answered: only "not now" is unavailability
        return any(s in text for s in _NOT_NOW)
    return True  # connection refused, no route, timeout, the server closed the connection


def failure(exc: BaseException, url: str) -> GoldenError | None:
    """A psycopg error a person can act on, as the studio's one sentence (``Store._failure``):
    the server unreachable (:class:`StoreUnavailableError`, naming HOST:PORT only), or out of
    disk (SQLSTATE 53100); None for anything else."""
    if unreachable(exc):
        return StoreUnavailableError(
            f"The database at {server_address(url)} is unreachable (PostgreSQL is stopped, restarting or not "
            "taking connections); retry once it is running again (the studio reconnects by itself).")
    if isinstance(exc, pg_errors.DiskFull):
        return disk.no_room(errno.ENOSPC, what=f"the database of the PostgreSQL server at {server_address(url)}",
                            path=None, outcome="nothing was written and the store is as it was",
                            elsewhere="ask its administrator for room")
    return None


class _NumberLoader(Loader):
    """``numeric`` (what PostgreSQL's ``sum``/``avg`` of integers return) as int or float,
    as DuckDB returns them, instead of ``Decimal`` that does not mix with floats."""

    def load(self, data: Any) -> int | float:
        s = bytes(data).decode()
        if s in ("NaN", "Infinity", "-Infinity"):
            return float(s)
        return float(s) if ("." in s or "e" in s or "E" in s) else int(s)


class PgDatabase:
    """Connections to one PostgreSQL database: ``cursor()`` and ``close()`` as a DuckDB
    connection has them."""

    engine = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        self._idle: list[psycopg.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        self._release(self._connect())  # fail now, with psycopg's message, if it is unreachable

    def _connect(self) -> psycopg.Connection:
        conn = psycopg.connect(self.url, autocommit=True)
        conn.adapters.register_loader("numeric", _NumberLoader)
        return conn

    def _acquire(self) -> psycopg.Connection:
        with self._lock:
            if self._closed:
                raise psycopg.InterfaceError("the store is closed")
            while self._idle:
                conn = self._idle.pop()
                if not _stale(conn):
                    return conn
                conn.close()
        return self._connect()

    def _release(self, conn: psycopg.Connection, *, had_temp: bool = False) -> None:
        if conn.closed:
            return
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
            if had_temp:
                conn.execute("DISCARD TEMP")
        except psycopg.Error:
            conn.close()
            return
        with self._lock:
            if self._closed or len(self._idle) >= 8:
                conn.close()
            else:
                self._idle.append(conn)

    def cursor(self) -> "PgCursor":
        return PgCursor(self, self._acquire())

    @contextmanager
    def session_lock(self, key: str) -> Iterator[None]:
        """Hold an advisory lock named ``key`` on a connection of its own while the block runs.
        Unlike a lock taken inside a SERIALIZABLE transaction, whose snapshot the first
        statement fixes before the wait, transactions begun inside the block see everything
        the previous holder committed."""
        conn = self._acquire()
        try:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [key])
        finally:
            self._release(conn)

    def prelude(self) -> tuple[str, ...]:
        return POSTGRES_PRELUDE

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _stale(conn: psycopg.Connection) -> bool:
    """An idle connection not worth handing out: closed, broken, or one the server has spoken
    on since it was put back. An idle autocommit connection (no LISTEN here) receives nothing
    unless the server is ending it (``pg_ctl stop``: a FATAL, then the socket closes), so a
    readable socket means a dead connection; without this check each pooled connection failed
    one request after a server restart (probe P2). Costs a poll, no round trip."""
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _refuse_nul(params: Sequence[Any] | dict[str, Any] | None) -> None:
    """PostgreSQL's text cannot hold U+0000 (psycopg raises a DataError, which would reach a person
    as an internal error); say so in one sentence instead, before anything is sent."""
    if not isinstance(params, (list, tuple, dict)):
        return  # none, or an iterable read once: psycopg's own error stands
    values = list(params.values() if isinstance(params, dict) else params)
    values += [x for v in values if isinstance(v, (list, tuple)) for x in v]  # an array parameter's items
    if any(isinstance(v, str) and "\x00" in v for v in values):
        raise ValidationError("A text value holds a NUL character (U+0000), which the store cannot keep; remove it "
                              "and send it again.")


class PgCursor:
    """One operation's connection, with the DuckDB cursor API the studio's code uses."""

    def __init__(self, db: PgDatabase, conn: psycopg.Connection) -> None:
        self._db = db
        self._conn: psycopg.Connection | None = conn  # None once closed (the connection is back in the pool)
        self._cur = conn.cursor()
        self._had_temp = False
        self._registered: set[str] = set()

    # ---- statements ---------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> "PgCursor":
        if is_noop_on_postgres(sql):
            return self
        m = _COPY_TO_FILE.match(sql)
        if m:
            return self._copy_to_file(m["query"], m["path"].replace("''", "'"), m["options"] or "", params)
        if _TEMP.search(sql):
            self._had_temp = True
        sql, params = self._read_parquet(sql, params)
        _refuse_nul(params)
        # always pass parameters (maybe none), so psycopg reads the translator's '%%' as '%'
        self._cur.execute(to_postgres(sql), params if params is not None else [])
        return self

    def execute_native(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> "PgCursor":
        """A statement already in PostgreSQL's dialect (the prelude), sent untranslated."""
        self._cur.execute(sql, params)
        return self

    def executemany(self, sql: str, seq: Iterable[Sequence[Any] | dict[str, Any]]) -> "PgCursor":
        self._cur.executemany(to_postgres(sql), list(seq))
        return self

    def fetchall(self) -> list[tuple]:
        return self._cur.fetchall() if self._cur.description else []

    def fetchmany(self, size: int = 1) -> list[tuple]:
        return self._cur.fetchmany(size) if self._cur.description else []

    def fetchone(self) -> tuple | None:
        return self._cur.fetchone() if self._cur.description else None

    @property
    def description(self) -> list[tuple] | None:
        desc = self._cur.description
        return None if desc is None else [(c.name, c.type_code, None, None, None, None, None) for c in desc]

    def df(self):
        """The result as a pandas DataFrame (column names as selected)."""
        import pandas as pd

        cols = [c.name for c in self._cur.description or []]
        return pd.DataFrame.from_records(self.fetchall(), columns=cols)

    def _copy_to_file(self, query: str, path: str, options: str, params: Any) -> "PgCursor":
        """Run the SELECT on PostgreSQL, then let an in-process DuckDB write the file from
        its rows (as Arrow, with the types DuckDB would have given them). Why DuckDB: a
        frozen version's files are hashed byte for byte (``data_digest``), and the same
        writer on the same rows makes the same bytes whichever engine held the store."""
        import duckdb

        self.execute(query, params)
        table = self.arrow()
        con = duckdb.connect()
        try:
            con.register("_rows", table)
            target = path.replace("'", "''")
            con.execute(f"COPY (SELECT * FROM _rows) TO '{target}' {options}")
        finally:
            con.close()
        return self

    def to_arrow_reader(self, rows_per_batch: int = 50_000) -> Any:
        """The result as an Arrow RecordBatchReader, typed as DuckDB types the same columns
        (INTEGER -> int32, TIMESTAMP -> timestamp[us], …), read in batches."""
        import pyarrow as pa

        desc = self._cur.description or []
        schema = pa.schema([pa.field(c.name, _arrow_type(c.type_code)) for c in desc])

        def batches() -> Iterator[Any]:
            while True:
                rows = self._cur.fetchmany(rows_per_batch)
                if not rows:
                    return
                cols = list(zip(*rows))
                yield pa.RecordBatch.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(cols, schema)],
                                                 schema=schema)

        return pa.RecordBatchReader.from_batches(schema, batches())

    def arrow(self) -> Any:
        """The whole result as an Arrow table (see :meth:`to_arrow_reader`)."""
        return self.to_arrow_reader().read_all()

    def copy_arrow(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """``sql``'s result as an Arrow table typed as :meth:`arrow` types it, sent by the server
        with ``COPY (…) TO STDOUT`` as CSV and parsed by pyarrow. Why: for hundreds of
        thousands of rows (agreement's labels) fetching rows into Python tuples and building
        Arrow from them costs seconds; the CSV path costs a tenth of that."""
        import io

        import pyarrow as pa
        import pyarrow.csv as pacsv

        query = to_postgres(sql)
        bind = list(params) if params is not None else []
        self._cur.execute(f"SELECT * FROM ({query}) AS _q LIMIT 0", bind)
        schema = pa.schema([pa.field(c.name, _arrow_type(c.type_code)) for c in self._cur.description or []])
        if any(pa.types.is_list(t) for t in schema.types):  # arrays do not come back through CSV
            return self.execute(sql, params).arrow()
        buf = io.BytesIO()
        with self._cur.copy(f"COPY ({query}) TO STDOUT (FORMAT csv)", bind) as copy:
            for chunk in copy:
                buf.write(chunk)
        if not buf.tell():
            return schema.empty_table()
        buf.seek(0)
        return pacsv.read_csv(buf, read_options=pacsv.ReadOptions(column_names=schema.names),
                              parse_options=pacsv.ParseOptions(newlines_in_values=True),
                              convert_options=pacsv.ConvertOptions(
                                  column_types=schema, strings_can_be_null=True, quoted_strings_can_be_null=False,
                                  true_values=["t"], false_values=["f"]))

    # ---- DuckDB's replacement scans, as temporary tables ------------------------------------------
    def register(self, name: str, frame: Any) -> "PgCursor":
        """A pandas DataFrame or Arrow table as a temporary table ``name`` (DuckDB reads the
        frame in place; PostgreSQL needs the rows, sent with COPY)."""
        import pyarrow as pa

        table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
        self._load_temp(name, table)
        self._registered.add(name)
        return self

    def unregister(self, name: str) -> "PgCursor":
        self._cur.execute(f'DROP TABLE IF EXISTS "{name}"')
        self._registered.discard(name)
        return self

    def _load_temp(self, name: str, table: Any) -> None:
        cols = ", ".join(f'"{f.name}" {_pg_type(f.type)}' for f in table.schema)
        self._had_temp = True
        self._cur.execute(f'DROP TABLE IF EXISTS "{name}"')
        self._cur.execute(f'CREATE TEMP TABLE "{name}" ({cols})')
        names = ", ".join(f'"{n}"' for n in table.column_names)
        with self._cur.copy(f'COPY "{name}" ({names}) FROM STDIN') as copy:
            for batch in table.to_batches(max_chunksize=10_000):
                for row in zip(*(c.to_pylist() for c in batch.columns)):
                    copy.write_row(row)

    def _read_parquet(self, sql: str, params: Any) -> tuple[str, Any]:
        """``read_parquet(?)`` (document staging) -> a temporary table loaded from that file,
        so the same bulk-insert statements run on PostgreSQL."""
        if not isinstance(params, (list, tuple)) or not _READ_PARQUET.search(sql):
            return sql, params
        import pyarrow.parquet as pq

        params = list(params)
        out, pos, drop = [], 0, []
        for m in _READ_PARQUET.finditer(sql):
            index = sql.count("?", 0, m.start())
            path = params[index]
            name = f"_parquet_{abs(hash(str(path))) % 10**12}"
            if name not in self._registered:
                self._load_temp(name, pq.read_table(str(path)))
                self._registered.add(name)
            out.append(sql[pos:m.start()] + name)
            pos = m.end()
            drop.append(index)
        out.append(sql[pos:])
        return "".join(out), [p for i, p in enumerate(params) if i not in drop]

    # ---- transactions ------------------------------------------------------------------------------
    def begin(self) -> None:
        self._cur.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")

    def commit(self) -> None:
        self._cur.execute("COMMIT")

    def rollback(self) -> None:
        self._cur.execute("ROLLBACK")

    def advisory_lock(self, key: str) -> None:
        """Hold a transaction-scoped lock named ``key`` until this transaction ends: two
        freezes of one version name (or two migrations) cannot interleave."""
        self._cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])

    def close(self) -> None:
        if self._conn is None:
            return
        try:
            self._cur.close()
        finally:
            conn, self._conn = self._conn, None
            self._db._release(conn, had_temp=self._had_temp or bool(self._registered))


def _arrow_type(oid: int) -> Any:
    """The Arrow type DuckDB gives the PostgreSQL type ``oid`` (INTEGER -> int32, …)."""
    import pyarrow as pa

    return {
        16: pa.bool_(), 20: pa.int64(), 21: pa.int16(), 23: pa.int32(), 25: pa.string(), 1043: pa.string(),
        700: pa.float32(), 701: pa.float64(), 1700: pa.float64(), 1082: pa.date32(), 1114: pa.timestamp("us"),
        1009: pa.list_(pa.string()), 1015: pa.list_(pa.string()),
    }.get(oid, pa.string())


def _pg_type(t: Any) -> str:
    import pyarrow as pa

    if pa.types.is_null(t):
        # an all-null column: a number, because PostgreSQL assigns a number to a text column
        # (an I/O conversion) but not text to a number column
        return "DOUBLE PRECISION"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_floating(t):
        return "DOUBLE PRECISION"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _pg_type(t.value_type) + "[]"
    return "TEXT"


def open_database(url: str) -> PgDatabase:
    return PgDatabase(normalize_url(url))
