"""Moving a store between engines (``golden copy``) and upgrading one (``golden migrate``).

Why: a team that outgrows one process moves its DuckDB store into PostgreSQL with every
event, event ids included (the global order of events is what "latest" means), and may move
it back; a copy must be checkable. :func:`copy_store` copies each base table whole, in one
transaction on each side (on PostgreSQL the source is read in one snapshot, so a copy taken
while the app runs is still consistent), moves the destination's event sequence to the
source's, and before committing compares, per table, the row count and a digest of the rows
read on both sides. Any difference rolls the destination back and says which table differs.

The digest is of the multiset of rows: each row is encoded canonically (the same value gives
the same bytes on both engines: timestamps in ISO form, whole floats as integers, lists as
JSON), hashed with SHA-256, and the hashes are added modulo 2**256. It does not depend on the
order the engine returns rows in, so no ``ORDER BY`` is needed (text collations differ
between a PostgreSQL server's locale and DuckDB's byte order), and it streams: memory stays
at one batch of rows whatever the table's size.

:func:`migrate_store` opens a store the way every command does (which applies pending
migrations) and reports the version it found and the one it left, refusing, before touching
anything, a store newer than this code.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from golden_store.core.errors import StoreSchemaError
from golden_store.db.dialect import EVENT_SEQ_LAST_VALUE
from golden_store.db.schema import SCHEMA_VERSION
from golden_store.db.store import Store

_BATCH = 5_000
_MOD = 1 << 256
# What a freshly created store already holds (the migrations' seeds): a copy replaces them.
SEEDED_TABLES = ("schema_migrations", "store_meta", "strata")


def base_tables(store_or_cur: Any) -> list[str]:
    """The store's tables (not views), by name."""
    sql = ("SELECT table_name FROM information_schema.tables "
           "WHERE table_type = 'BASE TABLE' AND table_schema = current_schema() ORDER BY table_name")
    if isinstance(store_or_cur, Store):
        return [r[0] for r in store_or_cur.read(sql)]
    return [r[0] for r in store_or_cur.execute(sql).fetchall()]


# ---- the digest -------------------------------------------------------------------------------

def _canon(v: Any) -> Any:
    """A value as JSON-able data that is equal for equal values on both engines."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() and abs(v) < 2 ** 53 else repr(v)
    if isinstance(v, Decimal):
        return _canon(float(v))
    if isinstance(v, datetime):
        return "ts:" + v.isoformat()
    if isinstance(v, date):
        return "d:" + v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "b:" + bytes(v).hex()
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in sorted(v.items())}
    return f"{type(v).__name__}:{v}"


def row_hash(row: tuple) -> int:
    blob = json.dumps([_canon(v) for v in row], ensure_ascii=False, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8", "surrogatepass")).digest(), "big")


@dataclass
class TableCheck:
    """Rows and digest of one table, read on each side of a copy."""

    table: str
    source_rows: int
    source_digest: str
    dest_rows: int = -1
    dest_digest: str = ""

    @property
    def ok(self) -> bool:
        return self.source_rows == self.dest_rows and self.source_digest == self.dest_digest


def _digest_of(acc: int) -> str:
    return f"{acc:064x}"


def _columns(cur: Any, table: str) -> list[str]:
    """The table's columns in a fixed order (by name: both engines list the same names)."""
    res = cur.execute(f'SELECT * FROM "{table}" LIMIT 0')
    return sorted(d[0] for d in res.description)


def table_digest(cur: Any, table: str, cols: list[str] | None = None) -> tuple[int, str]:
    """(rows, digest) of ``table`` as ``cur`` sees it (inside its transaction, if any)."""
    cols = cols or _columns(cur, table)
    res = cur.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}"')
    n, acc = 0, 0
    while rows := res.fetchmany(_BATCH):
        n, acc = n + len(rows), _fold(acc, rows)
    return n, _digest_of(acc)


def _fold(acc: int, rows: list[tuple]) -> int:
    """The order-free digest's running sum with ``rows`` added."""
    for r in rows:
        acc = (acc + row_hash(r)) % _MOD
    return acc


def store_digests(store: Store) -> dict[str, tuple[int, str]]:
    """(rows, digest) of every base table but the migration log, in one read."""
    with store.cursor() as cur:
        return {t: table_digest(cur, t) for t in base_tables(cur) if t != "schema_migrations"}


# ---- the copy ---------------------------------------------------------------------------------

def _content_tables(cur: Any) -> list[str]:
    """Tables of a store that hold anything beyond a new store's seeds."""
    out = []
    for t in base_tables(cur):
        if t in SEEDED_TABLES:
            continue
        if cur.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() is not None:
            out.append(t)
    return out


def _insert(cur: Any, engine: str, table: str, cols: list[str], sql: str, rows: list[tuple]) -> None:
    """Insert one batch. Into DuckDB as one Arrow table (its executemany runs row by row, about
    a thousand rows a second); into PostgreSQL with psycopg's executemany (pipelined)."""
    if engine == "duckdb":
        import pyarrow as pa

        try:
            batch = pa.table({f"c{i}": pa.array([r[i] for r in rows]) for i in range(len(cols))})
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # a column Arrow cannot type: row by row
            batch = None
        if batch is not None:
            cur.register("_golden_copy_batch", batch)
            try:
                cur.execute(f'INSERT INTO "{table}" (' + ", ".join(f'"{c}"' for c in cols) + ") SELECT "
                            + ", ".join(f"c{i}" for i in range(len(cols))) + " FROM _golden_copy_batch")
            finally:
                cur.unregister("_golden_copy_batch")
            return
    cur.executemany(sql, [list(r) for r in rows])


def copy_store(src: Store, dst: Store) -> dict[str, int]:
    """Copy every table of ``src`` into the new store ``dst``; returns rows per table."""
    return {c.table: c.dest_rows for c in copy_checked(src, dst)}


def copy_checked(src: Store, dst: Store) -> list[TableCheck]:
    """Copy every table of ``src`` into the new store ``dst`` and check it: per table, rows
    and digest read from the source (in the copy's snapshot) and from the destination
    (inside the copy's transaction, before commit). Refuses a destination that holds
    anything but a new store's seeds, another schema version, or the source itself; any
    mismatch raises :class:`StoreSchemaError` and leaves the destination as it was."""
    if src.location() == dst.location():
        raise StoreSchemaError(f"cannot copy {src.location()} onto itself: name another destination.")
    if src.schema_version() != dst.schema_version():
        raise StoreSchemaError(
            f"cannot copy: the source {src.location()} is at schema version {src.schema_version()}, the "
            f"destination {dst.location()} at {dst.schema_version()}; run `golden migrate` on the older one first.")
    with dst.cursor() as cur:
        busy = _content_tables(cur)
    if busy:
        shown = ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
        raise StoreSchemaError(
            f"cannot copy into {dst.location()}: it is not empty ({shown} hold rows). Copy into a new "
            f"{'database (createdb NAME)' if dst.engine == 'postgresql' else 'file'}; nothing was written.")

    def run(dcur: Any) -> list[TableCheck]:
        def read(scur: Any) -> list[TableCheck]:
            checks: list[TableCheck] = []
            tables = [t for t in base_tables(scur) if t != "schema_migrations"]
            missing = sorted(set(tables) - set(base_tables(dcur)))
            if missing:
                raise StoreSchemaError(f"cannot copy: {dst.location()} has no table {missing[0]} (same schema "
                                       "version, different tables: was one store built by modified code?)")
            for table in tables:
                dcur.execute(f'DELETE FROM "{table}"')  # a new store's seeds (strata, store_meta); or a retry's rows
                cols = _columns(scur, table)
                res = scur.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM "{table}"')
                sql = (f'INSERT INTO "{table}" (' + ", ".join(f'"{c}"' for c in cols) + ") VALUES ("
                       + ", ".join("?" for _ in cols) + ")")
                n, acc = 0, 0
                while rows := res.fetchmany(_BATCH):
                    n, acc = n + len(rows), _fold(acc, rows)
                    _insert(dcur, dst.engine, table, cols, sql, rows)
                checks.append(TableCheck(table, n, _digest_of(acc)))
            row = scur.execute(EVENT_SEQ_LAST_VALUE[src.engine]).fetchone()
            last_event = int(row[0]) if row and row[0] is not None else 0
            checks.append(TableCheck("(event sequence)", last_event, str(last_event)))
            return checks

        checks = src.write(read)  # one transaction: on PostgreSQL, one snapshot of every table
        for c in checks:
            if c.table != "(event sequence)":
                c.dest_rows, c.dest_digest = table_digest(dcur, c.table)
        bad = [c for c in checks if not c.ok and c.table != "(event sequence)"]
        if not bad:
            # last, once the rows are checked: PostgreSQL's setval is not undone by a rollback
            seq = checks[-1]
            if seq.source_rows:
                if dst.engine == "postgresql":
                    dcur.execute("SELECT setval('event_seq', ?)", [seq.source_rows])
                else:  # DuckDB has no setval: draw the ids the copied events hold
                    dcur.execute("SELECT max(nextval('event_seq')) FROM range(?)", [seq.source_rows])
            row = dcur.execute(EVENT_SEQ_LAST_VALUE[dst.engine]).fetchone()
            seq.dest_rows = int(row[0]) if row and row[0] is not None else 0
            seq.dest_digest = str(seq.dest_rows)
            bad = [c for c in checks if not c.ok]
        if bad:
            b = bad[0]
            raise StoreSchemaError(
                f"copy check failed, nothing was written to {dst.location()}: {b.table} has {b.dest_rows} rows "
                f"(digest {b.dest_digest[:16]}) there and {b.source_rows} (digest {b.source_digest[:16]}) in "
                f"{src.location()}" + (f"; {len(bad) - 1} more tables differ" if len(bad) > 1 else "")
                + ". Report this with both engines' versions.")
        return checks

    checks = dst.write(run)
    # after commit, read back once more through a fresh cursor: the committed rows are the checked ones
    with dst.cursor() as cur:
        for c in checks:
            if c.table != "(event sequence)":
                got = cur.execute(f'SELECT count(*) FROM "{c.table}"').fetchone()[0]
                if got != c.source_rows:
                    raise StoreSchemaError(f"copy check failed after commit: {c.table} has {got} rows in "
                                           f"{dst.location()}, {c.source_rows} in {src.location()}.")
    return checks


# ---- migrate ------------------------------------------------------------------------------------

def peek_version(location: str | os.PathLike[str]) -> int | None:
    """The schema version of the store at ``location`` without migrating it (0: no store
    yet there; None: cannot be read without opening it, e.g. a DuckDB file in use)."""
    from golden_store.db import postgres

    if postgres.is_postgres_url(location):
        import psycopg

        try:
            with psycopg.connect(postgres.normalize_url(location), autocommit=True) as conn:
                if not _aggregate(conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = "
                                               "'schema_migrations' AND table_schema = current_schema()").fetchone()):
                    return 0
                return int(_aggregate(conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()))
        except psycopg.Error:
            return None  # Store.open says why, in its words
    import duckdb

    p = Path(location)
    if not p.exists():
        return 0
    try:
        con = duckdb.connect(str(p), read_only=True)
    except duckdb.Error:
        return None
    try:
        if not _aggregate(con.execute("SELECT count(*) FROM information_schema.tables "
                                      "WHERE table_name = 'schema_migrations'").fetchone()):
            return 0
        return int(_aggregate(con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()))
    finally:
        con.close()


def _aggregate(row: tuple[Any, ...] | None) -> Any:
    """The value of an aggregate read (``count(*)``, ``coalesce(max(...), 0)``): such a read
    always has one row, so None here is a bug, said as one."""
    if row is None:
        raise RuntimeError("an aggregate read returned no row")
    return row[0]


@dataclass
class MigrateReport:
    location: str
    engine: str
    before: int | None
    after: int
    applied: list[tuple[int, str]]

    def summary(self) -> str:
        if not self.applied:
            return f"{self.location} ({self.engine}) is at schema version {self.after}, this code's: nothing to do."
        steps = "; ".join(f"{v}: {d}" for v, d in self.applied)
        frm = f"{self.before}" if self.before is not None else "?"
        return (f"Migrated {self.location} ({self.engine}) from schema version {frm} to {self.after}, "
                f"{len(self.applied)} migration(s) applied: {steps}")


def migrate_store(location: str | os.PathLike[str]) -> MigrateReport:
    """Upgrade the store at ``location`` to this code's schema and say what was done.
    Refuses a location with no store, and a store newer than this code, changing nothing."""
    from golden_store.db import postgres

    before = peek_version(location)
    is_pg = postgres.is_postgres_url(location)
    shown = postgres.display_url(postgres.normalize_url(location)) if is_pg else str(location)
    if before is not None and before > SCHEMA_VERSION:
        raise StoreSchemaError(
            f"{shown} is at schema version {before}, newer than this code's {SCHEMA_VERSION}: nothing was changed. "
            "A store is never migrated down: run the newer studio on it (pip install -U golden-studio), or "
            "`golden copy` it from that studio into a new store.")
    if not is_pg and before == 0 and not Path(location).exists():
        raise StoreSchemaError(f"No store at {shown}: nothing to migrate. Create one with `golden init`.")
    with Store.open(location, create=False) as store:
        after = store.schema_version()
        floor = before if before is not None else after
        applied = [(int(v), str(d)) for v, d in store.read(
            "SELECT version, description FROM schema_migrations WHERE version > ? ORDER BY version", [floor])]
        return MigrateReport(store.location(), store.engine, before, after, applied)
