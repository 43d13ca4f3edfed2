"""The live store: migrations, the one-process lock, serialized transactional writes.

Tests taking ``any_store`` run on DuckDB and on PostgreSQL (skipped without it: tests/pg.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import duckdb
import psycopg
import pytest

from golden_store.core.errors import StoreSchemaError
from golden_store.db.schema import BUILTIN_STRATA, SCHEMA_VERSION
from golden_store.db.store import Store


def test_new_store_is_migrated_and_seeded(any_store):
    store = any_store
    assert store.schema_version() == SCHEMA_VERSION
    names = {r[0] for r in store.read("SELECT name FROM strata")}
    assert names == set(BUILTIN_STRATA) == {
        "lexical", "paraphrase", "multi_hop", "long_tail", "tabular", "negative", "temporal"}
    tables = {r[0] for r in store.read("SELECT table_name FROM information_schema.tables")}
    for t in ("documents", "query_revisions", "evidence_events", "grade_events", "nugget_events",
              "nugget_support_events", "transcript_review_events", "transcript_resolution_events",
              "evidence_settlement_events", "evidence_no_answer_events", "user_role_events",
              "rubric_versions", "users", "queries", "current_evidence",
              "current_grades", "final_grades", "current_nuggets", "current_nugget_support",
              "current_transcript_reviews"):
        assert t in tables
    assert "verdict_events" not in tables  # split into the typed tables by migration 12


@pytest.mark.duckdb_only("reopens a DuckDB file")
def test_reopening_does_not_migrate_twice(tmp_path):
    p = tmp_path / "s.duckdb"
    Store.open(p).close()
    with Store.open(p) as s:
        assert s.read_one("SELECT count(*) FROM schema_migrations")[0] == len(
            s.read("SELECT DISTINCT version FROM schema_migrations"))
        assert s.read_one("SELECT count(*) FROM strata")[0] == len(BUILTIN_STRATA)


@pytest.mark.duckdb_only("a DuckDB file from a newer version")
def test_newer_schema_is_refused_with_advice(tmp_path):
    p = tmp_path / "s.duckdb"
    Store.open(p).close()
    con = duckdb.connect(str(p))
    con.execute("INSERT INTO schema_migrations VALUES (999, 'future', now())")
    con.close()
    with pytest.raises(StoreSchemaError, match="newer than this studio"):
        Store.open(p)


@pytest.mark.duckdb_only("a DuckDB file of another program")
def test_foreign_duckdb_file_is_refused(tmp_path):
    p = tmp_path / "other.duckdb"
    con = duckdb.connect(str(p))
    con.execute("CREATE TABLE mine (x INT)")
    con.close()
    with pytest.raises(StoreSchemaError, match="not a golden-set store"):
        Store.open(p)


@pytest.mark.duckdb_only("DuckDB's file lock: on PostgreSQL many processes share the store")
def test_second_process_gets_one_clear_sentence(store):
    code = textwrap.dedent(f"""
        from golden_store.db.store import Store
        from golden_store.core.errors import StoreLockedError
        try:
            Store.open({str(store.path)!r})
        except StoreLockedError as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    msg = out.stdout.strip()
    assert "is in use by another process" in msg
    assert "Traceback" not in out.stdout + out.stderr
    assert msg.count("\n") == 0  # one sentence, one line


@pytest.mark.duckdb_only("what opening a DuckDB file imports")
def test_a_duckdb_command_loads_neither_the_postgresql_driver_nor_the_sql_translator(tmp_path):
    """Opening and reading a DuckDB store imports neither psycopg nor sqlglot: they were a
    fifth of `golden pool status`'s start at team scale (issue 19)."""
    Store.open(tmp_path / "s.duckdb", create=True).close()
    code = textwrap.dedent(f"""
        import sys
        from golden_store.db.store import Store
        with Store.open({str(tmp_path / "s.duckdb")!r}) as s:
            s.read("SELECT count(*) FROM queries")
        print(sorted(m for m in ("psycopg", "sqlglot", "golden_store.db.postgres") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_write_rolls_back_on_error(any_store):
    store = any_store
    def boom(cur):
        cur.execute("INSERT INTO store_meta VALUES ('k', 'v')")
        raise RuntimeError("fail after a write")

    with pytest.raises(RuntimeError):
        store.write(boom)
    assert store.read("SELECT * FROM store_meta WHERE key = 'k'") == []


def test_concurrent_writers_are_serialized(any_store):
    store = any_store
    """Many threads appending through one connection: no lost or failed writes."""
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for j in range(20):
                store.write(lambda cur: cur.execute(
                    "INSERT INTO evidence_no_answer_events (query_id, op, actor, created_at) "
                    "VALUES (?, 'no_answer', ?, now())", [f"{i}-{j}", f"w{i}"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.read_one("SELECT count(*), count(DISTINCT event_id) FROM evidence_no_answer_events") == (120, 120)


def test_write_retries_transaction_conflicts(any_store):
    store = any_store
    attempts = []

    def flaky(cur):
        attempts.append(1)
        if len(attempts) < 3:
            raise (duckdb.TransactionException("Conflict on update") if store.engine == "duckdb"
                   else psycopg.errors.SerializationFailure("could not serialize access"))
        cur.execute("INSERT INTO store_meta VALUES ('retried', 'yes')")
        return "done"

    assert store.write(flaky) == "done"
    assert len(attempts) == 3
    assert store.read("SELECT value FROM store_meta WHERE key = 'retried'") == [("yes",)]



def test_event_tables_refuse_incoherent_events(any_store):
    store = any_store
    def insert(op, grade):
        store.write(lambda cur: cur.execute(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", op, grade, actor, created_at)"
            " VALUES ('q', 'd', 0, 5, ?, ?, 'a', now())", [op, grade]))

    insert("grade", 2)
    insert("retract", None)
    for op, grade in [("grade", None), ("grade", 4), ("retract", 1), ("rewrite", 1)]:
        with pytest.raises((duckdb.ConstraintException, psycopg.errors.IntegrityError)):
            insert(op, grade)
    assert store.read_one("SELECT count(*) FROM grade_events")[0] == 2
