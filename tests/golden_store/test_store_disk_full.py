"""A DuckDB store whose disk fills while it commits (issue 37, probe F1): the write that found
no room is said in one sentence and, when DuckDB made it durable before its checkpoint failed,
counted as done; either way the store keeps serving the process that holds it (DuckDB
invalidates its database after such a failure until it is opened again, which the store does).

On a real small filesystem (``tests/small_disk.py``): the checkpoint DuckDB runs after a
commit (its threshold lowered to 1 KB) needs new blocks in the file, which the disk refuses,
while the write-ahead log still fits."""

from __future__ import annotations

import random
import shutil
import string

import pytest

from golden_store.core.errors import DiskFullError
from golden_store.db.store import Store
from tests.small_disk import small_disk

pytestmark = pytest.mark.duckdb_only("DuckDB's write-ahead log and checkpoint on a full disk")


def _rows(n: int = 2000) -> list[str]:
    rng = random.Random(37)
    return ["".join(rng.choices(string.ascii_letters, k=200)) for _ in range(n)]


@pytest.mark.parametrize("table", ["plain", "keyed"])
def test_a_checkpoint_that_finds_no_room_is_said_or_counted_and_the_store_keeps_serving(tmp_path, _duckdb_templates,
                                                                                      table):
    with small_disk(tmp_path / "disk", 8) as disk:
        db = disk.root / "golden.duckdb"
        shutil.copyfile(_duckdb_templates["migrated"], db)
        s = Store.open(db)
        try:
            s.write(lambda cur: cur.execute(
                f"CREATE TABLE {table} (k INTEGER{' PRIMARY KEY' if table == 'keyed' else ''}, s VARCHAR)"))
            with s.cursor() as cur:
                cur.execute("CHECKPOINT")
                cur.execute("SET checkpoint_threshold = '1KB'")  # every commit checkpoints
            # room for the log of ~400 KB of rows, none for the blocks the checkpoint adds to the file
            disk.fill(600 if disk.mechanism == "tmpfs" else db.stat().st_size // 1024 + 64)
            rows = [(i, text) for i, text in enumerate(_rows())]
            with disk.in_this_process():
                try:
                    result = s.write(lambda cur: cur.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows) and "done")
                except DiskFullError as exc:
                    result = exc
                kept = s.read_one(f"SELECT count(*) FROM {table}")[0]  # the store answers: opened again
                s.write(lambda cur: cur.execute(f"INSERT INTO {table} VALUES (-1, 'small')"))  # and takes a write
            if isinstance(result, DiskFullError):  # not durable: said, and nothing of it kept
                assert kept == 0
                assert str(result).startswith(f"{disk.no_room_head} the store ({db}); nothing was written and the "
                                              "store is as it was"), result
                assert not result.saved
            else:  # DuckDB: "COMMIT succeeded and is durable, but the autocheckpoint failed": it is saved
                assert result == "done" and kept == len(rows)
        finally:
            s.close()
        disk.make_room()
        with Store.open(db, create=False) as s:  # everything said to be saved is there, nothing else
            assert s.read_one(f"SELECT count(*) FROM {table}")[0] == kept + 1
