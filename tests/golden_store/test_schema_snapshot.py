"""The schema snapshot in the repo (golden_store/db/schema_snapshot.sql) is the schema a freshly
migrated store has, and it is a faithful one: run as a script on an empty database it builds
the same tables, views and sequences."""

from __future__ import annotations

import duckdb

from golden_store.db import schema_snapshot
from golden_store.db.schema import MIGRATIONS, SCHEMA_VERSION
from golden_store.db.store import Store


def test_the_snapshot_in_the_repo_matches_a_freshly_migrated_store():
    expected = schema_snapshot.SNAPSHOT_PATH.read_text("utf-8") if schema_snapshot.SNAPSHOT_PATH.exists() else ""
    actual = schema_snapshot.fresh_snapshot()
    assert actual == expected, (
        f"{schema_snapshot.SNAPSHOT_PATH} differs from the schema of a freshly migrated store "
        f"(schema version {SCHEMA_VERSION}). If the migration is intended, regenerate the snapshot with "
        f"`{schema_snapshot.REGENERATE}` and commit it.\n" + schema_snapshot.diff(expected, actual)
    )


def _catalog(cur: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    """What DuckDB itself says the schema is, normalised by DuckDB (not by the snapshot code)."""
    return {
        "tables": cur.execute("SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = 'main' "
                              "ORDER BY 1").fetchall(),
        "columns": cur.execute("SELECT table_name, column_name, column_index, data_type, is_nullable, "
                               "column_default FROM duckdb_columns() WHERE schema_name = 'main' "
                               "ORDER BY 1, 3").fetchall(),
        "constraints": cur.execute("SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
                                   "WHERE schema_name = 'main' ORDER BY ALL").fetchall(),
        "views": cur.execute("SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'main' "
                             "AND NOT internal ORDER BY 1").fetchall(),
        "sequences": cur.execute("SELECT sequence_name, sql FROM duckdb_sequences() WHERE schema_name = 'main' "
                                 "ORDER BY 1").fetchall(),
    }


def test_the_snapshot_runs_as_a_script_and_builds_the_same_schema(tmp_path):
    store = Store.open(tmp_path / "migrated.duckdb")
    try:
        with store.cursor() as cur:
            migrated = _catalog(cur)
    finally:
        store.close()
    con = duckdb.connect(str(tmp_path / "from_snapshot.duckdb"))
    try:
        con.execute(schema_snapshot.fresh_snapshot())
        rebuilt = _catalog(con)
    finally:
        con.close()
    # the view text comes from the migrations' own statements: DuckDB must read it back as the
    # definition the migrated store holds, or the snapshot would show a view as it is not
    for key in migrated:
        assert rebuilt[key] == migrated[key], key


def test_every_migration_and_table_is_named_in_the_snapshot():
    text = schema_snapshot.fresh_snapshot()
    for mig in MIGRATIONS:
        assert f"--   V{mig.version}: {mig.description}" in text
    assert "-- rounds: V4, altered in V8" in text
    assert "-- current_evidence: V9, first defined in V1" in text
    # the redefined view appears once, as its latest definition
    assert text.count("CREATE VIEW current_evidence AS") == 1 and "CREATE OR REPLACE" not in text
