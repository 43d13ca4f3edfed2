"""Copy every row of one store into another, across engines (DuckDB <-> PostgreSQL).

Why: a team that outgrows one process moves its DuckDB store into PostgreSQL with every
event, event ids included (the global order of events is what "latest" means), and a copy
must be checkable. This is the first slice of ``golden copy SRC DST``: the destination must
be a new store at the same schema version; each base table is copied whole, the event
sequence is moved past the highest copied id, and the row count of every table is compared.
"""

from __future__ import annotations

from golden_store.errors import StoreSchemaError
from golden_store.store import Store

_BATCH = 5_000


def base_tables(store: Store) -> list[str]:
    """The store's tables (not views), by name."""
    return [r[0] for r in store.read(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE' AND table_schema = current_schema() ORDER BY table_name")]


def copy_store(src: Store, dst: Store) -> dict[str, int]:
    """Copy every table of ``src`` into the new store ``dst``; returns rows per table.
    Refuses a destination that already holds documents or queries, or another schema."""
    if src.schema_version() != dst.schema_version():
        raise StoreSchemaError(f"cannot copy: schema {src.schema_version()} into {dst.schema_version()}")
    if dst.read_one("SELECT (SELECT count(*) FROM documents) + (SELECT count(*) FROM query_revisions)")[0]:
        raise StoreSchemaError(f"cannot copy into {dst.location()}: it is not a new store")
    tables = [t for t in base_tables(src) if t != "schema_migrations"]
    last_event = src.generation()[1]
    counts: dict[str, int] = {}

    def run(cur) -> None:
        for table in tables:
            cur.execute(f'DELETE FROM "{table}"')  # a new store's seeds (strata, store_meta)
            with src.cursor() as rcur:
                res = rcur.execute(f'SELECT * FROM "{table}"')
                cols = [d[0] for d in res.description]
                sql = (f'INSERT INTO "{table}" (' + ", ".join(f'"{c}"' for c in cols) + ") VALUES ("
                       + ", ".join("?" for _ in cols) + ")")
                n = 0
                rows = res.fetchall()
                for i in range(0, len(rows), _BATCH):
                    cur.executemany(sql, [list(r) for r in rows[i:i + _BATCH]])
                n += len(rows)
            counts[table] = n
        if last_event:
            if dst.engine == "postgresql":
                cur.execute("SELECT setval('event_seq', ?)", [last_event])
            else:  # DuckDB has no setval: draw the ids the copied events hold
                cur.execute("SELECT max(nextval('event_seq')) FROM range(?)", [last_event])

    dst.write(run)
    for table, n in counts.items():
        got = dst.read_one(f'SELECT count(*) FROM "{table}"')[0]
        if got != n:
            raise StoreSchemaError(f"copy check failed: {table} has {got} rows in {dst.location()}, {n} in the source")
    return counts
