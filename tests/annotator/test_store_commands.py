"""`golden migrate` and `golden copy`, run as a user runs them (the installed command, real
DuckDB files, a real PostgreSQL server from tests/pg.py; the PostgreSQL tests are skipped,
saying how to run them, where PostgreSQL is not installed).

What must hold: a DuckDB store copied into PostgreSQL and back arrives with every row of
every table (equal counts and digests on all three) and freezes to the same data_digest; a
non-empty destination is refused with nothing written; a copy whose destination does not
store what was sent (here a trigger that alters rows) fails loudly and rolls back; migrate
says from which version to which, and refuses a store newer than the code, changing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store import freezing
from golden_store.db import schema
from golden_store.db.schema import SCHEMA_VERSION
from golden_store.db.store import Store, utcnow
from golden_store.db.store_copy import store_digests

GOLDEN = Path(sys.executable).parent / "golden"


def golden(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, GOLDEN_DB=str(tmp_path / "default.duckdb"), GOLDEN_VERSIONS=str(tmp_path / "versions"))
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def _freeze_digest(store: Store, where: Path) -> str:
    return freezing.freeze(store, "rt", actor="t", versions_dir=where).manifest["data_digest"]


def test_duckdb_to_postgres_and_back_keeps_every_row(tmp_path, pg_url):
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    r = golden(tmp_path, "--db", str(a), "demo", "--full")
    assert r.returncode == 0, r.stderr
    r = golden(tmp_path, "copy", str(a), pg_url)
    assert r.returncode == 0, r.stderr
    assert "Checked: row count and digest of every table equal on both sides." in r.stdout
    assert "grade_events" in r.stdout and "Frozen versions are files, not rows" in r.stdout
    r = golden(tmp_path, "copy", pg_url, str(b), "--json")
    assert r.returncode == 0, r.stderr
    back = json.loads(r.stdout)
    with Store.open(a) as sa, Store.open(pg_url) as sp, Store.open(b) as sb:
        da, dp, db = store_digests(sa), store_digests(sp), store_digests(sb)
        assert da == dp == db  # every table: same rows, same digest, on all three stores
        assert {t: v["rows"] for t, v in back["tables"].items()} == {t: n for t, (n, _) in da.items()}
        for t in ("grade_events", "documents", "query_revisions", "label_receipts", "grade_state"):
            assert t in da
        assert da["grade_events"][0] > 0 and da["documents"][0] > 0
        assert sa.generation()[1] == sp.generation()[1] == sb.generation()[1] == back["event_seq"] > 0
        digests = {_freeze_digest(s, tmp_path / f"v-{name}") for name, s in (("a", sa), ("p", sp), ("b", sb))}
        assert len(digests) == 1
        # a new event after the round trip takes an id past every copied one, on both engines
        for s in (sp, sb):
            before = s.generation()[1]
            new_id = s.write(lambda cur: cur.execute(
                "INSERT INTO grade_events (query_id, doc_id, start, \"end\", op, grade, actor, created_at) "
                "VALUES ('q', 'd', 0, 1, 'grade', 1, 't', ?) RETURNING event_id", [utcnow()]).fetchone()[0])
            assert new_id == before + 1

def test_copy_refuses_a_destination_that_is_not_empty(tmp_path, pg_url):
    a = tmp_path / "a.duckdb"
    assert golden(tmp_path, "--db", str(a), "demo", "--small").returncode == 0
    assert golden(tmp_path, "copy", str(a), pg_url).returncode == 0
    with Store.open(pg_url) as s:
        before = store_digests(s)
    r = golden(tmp_path, "copy", str(a), pg_url)
    assert r.returncode == 2
    assert "it is not empty" in r.stderr and "nothing was written" in r.stderr and "Traceback" not in r.stderr
    with Store.open(pg_url) as s:
        assert store_digests(s) == before
    # the same into a DuckDB file that holds a store with data
    c = tmp_path / "c.duckdb"
    assert golden(tmp_path, "--db", str(c), "demo", "--small").returncode == 0
    r = golden(tmp_path, "copy", pg_url, str(c))
    assert r.returncode == 2 and "is not empty" in r.stderr
    # a source that does not exist is not silently created
    r = golden(tmp_path, "copy", str(tmp_path / "missing.duckdb"), str(tmp_path / "d.duckdb"))
    assert r.returncode == 2 and "No store at" in r.stderr and not (tmp_path / "missing.duckdb").exists()


def test_a_copy_the_destination_stores_differently_fails_and_writes_nothing(tmp_path, pg_url):
    """A trigger on the PostgreSQL destination alters one column of one table as it is
    inserted: the per-table digest check catches it, names the table, and the destination is
    rolled back to the new store it was."""
    import psycopg

    a = tmp_path / "a.duckdb"
    assert golden(tmp_path, "--db", str(a), "demo", "--small").returncode == 0
    Store.open(pg_url).close()  # migrate the new database, then add the trigger
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION alter_q() RETURNS trigger LANGUAGE plpgsql AS $$ "
                     "BEGIN NEW.text := NEW.text || ' (altered)'; RETURN NEW; END $$")
        conn.execute("CREATE TRIGGER alter_q BEFORE INSERT ON query_revisions FOR EACH ROW EXECUTE FUNCTION alter_q()")
    r = golden(tmp_path, "copy", str(a), pg_url)
    assert r.returncode == 2, r.stdout
    assert "copy check failed" in r.stderr and "query_revisions" in r.stderr and "nothing was written" in r.stderr
    with Store.open(pg_url) as s:
        assert s.read_one("SELECT count(*) FROM query_revisions")[0] == 0
        assert s.read_one("SELECT count(*) FROM documents")[0] == 0
        assert s.read_one("SELECT count(*) FROM strata")[0] > 0  # the new store's seeds are back
        assert s.generation()[1] == 0


def _older_store(path_or_url, monkeypatch, version: int = 11) -> None:
    """A store migrated to ``version`` only, with the demo corpus and questions in it."""
    monkeypatch.setattr("golden_store.db.store.MIGRATIONS", schema.MIGRATIONS[:version])
    monkeypatch.setattr("golden_store.db.store.SCHEMA_VERSION", version)
    if version < 20:
        from tests.old_schema import questions_without_tier

        questions_without_tier(monkeypatch)
    with Store.open(path_or_url) as s:
        assert s.schema_version() == version
        load_demo(s, cli_user())
    monkeypatch.undo()


def test_migrate_an_older_duckdb_store(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    _older_store(path, monkeypatch)
    r = golden(tmp_path, "migrate", "--db", str(path))
    assert r.returncode == 0, r.stderr
    assert f"from schema version 11 to {SCHEMA_VERSION}" in r.stdout
    assert f"{SCHEMA_VERSION - 11} migration(s) applied: 12: " in r.stdout
    with Store.open(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.read_one("SELECT count(*) FROM queries")[0] == 40
    r = golden(tmp_path, "migrate", "--db", str(path), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["applied"] == []
    assert json.loads(r.stdout)["from_version"] == json.loads(r.stdout)["to_version"] == SCHEMA_VERSION
    assert "nothing to do" in golden(tmp_path, "migrate", "--db", str(path)).stdout


def test_migrate_refuses_a_newer_store_and_changes_nothing(tmp_path):
    path = tmp_path / "new.duckdb"
    with Store.open(path) as s:
        s.write(lambda cur: cur.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', now())",
                                        [SCHEMA_VERSION + 5]))
    before = path.read_bytes()
    r = golden(tmp_path, "migrate", "--db", str(path))
    assert r.returncode == 2
    assert f"schema version {SCHEMA_VERSION + 5}, newer than this code's {SCHEMA_VERSION}" in r.stderr
    assert "nothing was changed" in r.stderr and "Traceback" not in r.stderr
    assert path.read_bytes() == before
    r = golden(tmp_path, "migrate", "--db", str(tmp_path / "nope.duckdb"))
    assert r.returncode == 2 and "No store at" in r.stderr and not (tmp_path / "nope.duckdb").exists()


def test_migrate_an_older_postgres_store(tmp_path, pg_url, monkeypatch):
    _older_store(pg_url, monkeypatch)
    r = golden(tmp_path, "migrate", "--db", pg_url)
    assert r.returncode == 0, r.stderr
    assert f"from schema version 11 to {SCHEMA_VERSION}" in r.stdout and "(postgresql)" in r.stdout
    with Store.open(pg_url) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.read_one("SELECT count(*) FROM queries")[0] == 40
    # GOLDEN_DB naming the URL works as --db does
    env_run = subprocess.run([str(GOLDEN), "migrate"], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                             env=dict(os.environ, GOLDEN_DB=pg_url))
    assert env_run.returncode == 0 and "nothing to do" in env_run.stdout, env_run.stderr
