"""A full disk during `golden corpus import` or `golden freeze` (issue 37 item 7, probes F1/F2):
one sentence naming what ran out and what to do, exit status 1 as for the CLI's other errors,
the store unchanged, no temporary files left (the freeze's `.tmp-` folder, the search index's
uncommitted segments). The HTTP API's answer (507): tests/http_api/test_store_failures.py.

On a real small filesystem (``tests/small_disk.py``): a tmpfs of a few MB, or where mounting is
refused, the process's file-size limit (the kernel refuses the write with EFBIG instead of
ENOSPC). The CLI runs in a subprocess, as a person runs it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from annotator.integration import corpus_import
from annotator.process import context
from annotator.people.identity import cli_user
from golden_store.db.store import Store
from tests.conftest import table_snapshot
from tests.small_disk import small_disk

GOLDEN = [sys.executable, "-m", "annotator.cli"]
ROOT = Path(__file__).resolve().parents[2]


def _corpus(path: Path, n_docs: int, words_per_doc: int = 1000) -> Path:
    """A JSONL corpus of random words (incompressible enough that the store, its log and the
    index need about its size on disk)."""
    rng = random.Random(37)
    vocab = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(5000)]
    with path.open("w", encoding="utf-8") as f:
        for i in range(n_docs):
            f.write(json.dumps({"doc_id": f"big{i:05d}", "text": " ".join(rng.choices(vocab, k=words_per_doc))}) + "\n")
    return path


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    env.pop("GOLDEN_SERVER", None)
    return env


def _one_sentence(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("golden: "), stderr
    return lines[0].removeprefix("golden: ")


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


@pytest.mark.duckdb_only("the store file itself sits on the full disk")
def test_a_full_disk_during_a_corpus_import_says_so_in_one_sentence_and_changes_nothing(tmp_path,
                                                                                     _duckdb_templates):
    corpus = _corpus(tmp_path / "big.jsonl", 1500)  # ~11 MB
    (tmp_path / "tmp").mkdir()
    with small_disk(tmp_path / "disk", 10) as disk:
        db = disk.root / "golden.duckdb"
        shutil.copyfile(_duckdb_templates["migrated"], db)
        (tmp_path / "small").mkdir()
        (tmp_path / "small" / "a.md").write_text("# A\n\nThe first document of the store.\n")
        with Store.open(db) as s:  # a store with a corpus and its search index beside it
            corpus_import.import_paths(s, cli_user(), [tmp_path / "small"])
            before = table_snapshot(s)
        context.close_all()
        index_before = _files(disk.root / "golden.duckdb.index")

        r = disk.run([*GOLDEN, "corpus", "import", str(corpus)], cwd=tmp_path,
                     env=_env(GOLDEN_DB=str(db), TMPDIR=str(tmp_path / "tmp")))

        assert r.returncode == 2, r.stderr  # 2: could not run, as every command that cannot do its work (annotator/cli)
        sentence = _one_sentence(r.stderr)
        assert sentence.startswith(disk.no_room_head), sentence
        if disk.mechanism == "tmpfs":  # what ran out, named with its file, and what to do
            assert sentence == (
                f"No space left on the disk holding the store's write-ahead log ({db}.wal); nothing was written "
                "and the store is as it was: free space on that disk and retry, or move the store to a disk with "
                "room and point GOLDEN_DB (or --db) at it.")
        else:  # the first file past the limit: the store's log, or the staged documents in TMPDIR
            assert "nothing was" in sentence and ("golden.duckdb" in sentence or str(tmp_path / "tmp") in sentence)
        # the search index: the segments the refused import wrote are gone (the probe found ~8 MB per try)
        index_after = _files(disk.root / "golden.duckdb.index")
        assert sum(index_after.values()) <= sum(index_before.values()) + 64 * 1024, (index_before, index_after)
        assert not list((tmp_path / "tmp").iterdir())  # the staged documents were removed

        disk.make_room()
        with Store.open(db, create=False) as s:  # reopened after freeing space: every row as it was
            assert table_snapshot(s) == before
            assert s.read_one("SELECT count(*) FROM documents") == (1,)
        assert not (disk.root / "golden.duckdb.tmp").exists() or not list((disk.root / "golden.duckdb.tmp").iterdir())
        context.close_all()


@pytest.mark.parametrize("leave_kb", [0, 48])  # no room at all (the owner file), room for a file or two
def test_a_full_versions_disk_during_a_freeze_says_so_and_leaves_no_temp_folder(demo_store, golden_db, tmp_path,
                                                                                leave_kb):
    with small_disk(tmp_path / "disk", 8) as disk:
        versions = disk.root / "versions"
        versions.mkdir()
        before = table_snapshot(demo_store)
        demo_store.close()  # the CLI opens the store (DuckDB: one process at a time)
        disk.fill(leave_kb)

        env = _env(GOLDEN_DB=golden_db, GOLDEN_VERSIONS=str(versions))
        r = disk.run([*GOLDEN, "freeze", "full.v1"], cwd=tmp_path, env=env)

        assert r.returncode == 2, r.stderr
        sentence = _one_sentence(r.stderr)
        assert sentence.startswith(disk.no_room_head), sentence
        if disk.mechanism == "tmpfs":
            assert sentence == (
                f"No space left on the disk holding the versions folder ({versions}); no version 'full.v1' was "
                "written and its partial files were removed: free space on that disk and retry, or point "
                "GOLDEN_VERSIONS at a folder on a disk with room.")
        assert sorted(p.name for p in versions.iterdir()) == []  # no version, no .tmp- folder for a sweep

        disk.make_room()
        with Store.open(golden_db, create=False) as s:
            assert table_snapshot(s) == before
        r = disk.run([*GOLDEN, "freeze", "full.v1"], cwd=tmp_path, env=env)  # and with room, it freezes
        assert r.returncode == 0, r.stderr
        assert sorted(p.name for p in versions.iterdir()) == ["full.v1"]

