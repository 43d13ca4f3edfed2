"""A PostgreSQL store's corpus search index lives under one configured data directory
(GOLDEN_DATA_DIR, default ``$XDG_DATA_HOME/golden-studio`` or ``~/.local/share/golden-studio``),
never in the directory a process starts in (issue 38, item 4); servers say where at start-up,
and an unwritable one is one sentence naming it and the setting. A DuckDB store keeps its index
beside its file, as before. Real processes on a real PostgreSQL server (and a real DuckDB file)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from golden_store.corpus import index as corpus_index
from golden_store.db.store import Store
from golden_store.live import documents

GOLDEN = Path(sys.executable).parent / "golden"


@pytest.fixture
def pg_db(pg_cluster) -> str:
    """A migrated PostgreSQL database of this test's own (dropped afterwards)."""
    from tests.pg import MIGRATED_TEMPLATE

    url = pg_cluster.new_database(MIGRATED_TEMPLATE)
    yield url
    from annotator.process import context

    context.close_all()
    pg_cluster.drop_database(url)


def _corpus(root: Path) -> Path:
    folder = root / "corpus"
    folder.mkdir(parents=True)
    (folder / "hangar.md").write_text("The zeppelin hangar opens at nine.", "utf-8")
    (folder / "badges.txt").write_text("Visitors collect badges at reception.", "utf-8")
    return folder


def _golden(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GOLDEN), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _index_folders(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.index") if p.is_dir())


def test_a_cli_import_run_from_a_repository_puts_the_index_in_the_data_directory_not_the_cwd(
        tmp_path, pg_db, monkeypatch):
    repo, data = tmp_path / "repo", tmp_path / "data"
    corpus = _corpus(repo)
    monkeypatch.setenv("GOLDEN_DATA_DIR", str(data))  # the CLI's processes and this one
    env = dict(os.environ, GOLDEN_DB=pg_db)
    r = _golden(repo, env, "corpus", "import", str(corpus))
    assert r.returncode == 0, r.stderr
    assert _index_folders(repo) == []  # nothing left beside the repository's files
    [index] = _index_folders(data)
    assert index.parent == data / corpus_index.INDEXES and index.name.endswith(".postgresql.index")
    assert (index / corpus_index.META).exists()
    # a process started elsewhere updates the same index (no second copy built in its cwd)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "parking.txt").write_text("Parking permits are renewed in January.", "utf-8")
    r = _golden(elsewhere, env, "corpus", "import", str(elsewhere / "parking.txt"))
    assert r.returncode == 0, r.stderr
    assert _index_folders(elsewhere) == [] and _index_folders(data) == [index]
    with Store.open(pg_db) as store:
        ix = documents.search_index(store)
        assert ix.path == index.resolve() and ix.n_docs == 3 and "parking" in ix


@pytest.mark.parametrize("setting", ["XDG_DATA_HOME", "HOME"])
def test_without_golden_data_dir_the_index_goes_to_the_per_user_xdg_data_folder(tmp_path, pg_db, monkeypatch, setting):
    monkeypatch.delenv("GOLDEN_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    if setting == "XDG_DATA_HOME":
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
        expected = tmp_path / "xdg" / "golden-studio" / corpus_index.INDEXES
    else:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        expected = tmp_path / "home" / ".local" / "share" / "golden-studio" / corpus_index.INDEXES
    with Store.open(pg_db) as store:
        ix = documents.search_index(store)
        assert ix.path.parent == expected.resolve()
    assert _index_folders(tmp_path) == [ix.path]


def test_an_unwritable_data_directory_is_one_sentence_and_the_store_is_left_as_it_was(tmp_path, pg_db):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data directory should be")  # unwritable even for root
    data = blocker / "golden"
    corpus = _corpus(tmp_path)
    env = dict(os.environ, GOLDEN_DB=pg_db, GOLDEN_DATA_DIR=str(data))
    r = _golden(tmp_path, env, "corpus", "import", str(corpus))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0, r.stderr  # one sentence, no traceback
    assert f"The data directory {data} cannot be written" in r.stderr
    assert "set GOLDEN_DATA_DIR to a folder this user can write" in r.stderr
    with Store.open(pg_db) as store:
        assert store.read_one("SELECT count(*) FROM documents")[0] == 0
    assert _index_folders(tmp_path) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_golden_api_says_where_the_data_directory_is_at_start_up(tmp_path, pg_db):
    data = tmp_path / "data"
    env = dict(os.environ, GOLDEN_DB=pg_db, GOLDEN_DATA_DIR=str(data))
    proc = subprocess.Popen([str(GOLDEN), "api", "--port", str(_free_port())], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert first.strip() == (f"golden: data directory {data} (the corpus search index; "
                             "set GOLDEN_DATA_DIR to move it)")


def test_golden_api_refuses_to_start_on_an_unwritable_data_directory(tmp_path, pg_db):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    env = dict(os.environ, GOLDEN_DB=pg_db, GOLDEN_DATA_DIR=str(blocker / "golden"))
    r = subprocess.run([str(GOLDEN), "api", "--port", str(_free_port())], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"golden: The data directory {blocker / 'golden'} cannot be written")
    assert "GOLDEN_DATA_DIR" in r.stderr and r.stderr.strip().count("\n") == 0


def test_a_duckdb_store_keeps_its_index_beside_its_file_whatever_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDEN_DATA_DIR", str(tmp_path / "data"))
    db = tmp_path / "stores" / "team.duckdb"
    with Store.open(db) as store:
        assert documents.search_index(store).path == (tmp_path / "stores" / "team.duckdb.index").resolve()
    assert not (tmp_path / "data").exists()
