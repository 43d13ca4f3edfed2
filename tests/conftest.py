"""Shared test setup: hypothesis profiles (HYPOTHESIS_PROFILE=deep for a long run)."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("default", max_examples=400, deadline=None)
settings.register_profile("deep", max_examples=20000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402

from annotator import context  # noqa: E402
from annotator.demo import load_demo  # noqa: E402
from annotator.identity import cli_user  # noqa: E402
from golden_store.store import Store  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Every test gets its own store path and versions dir; nothing leaks between tests."""
    monkeypatch.setenv("GOLDEN_DB", str(tmp_path / "golden.duckdb"))
    monkeypatch.delenv("GOLDEN_VERSIONS", raising=False)
    yield
    context.close_all()


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store.open(tmp_path / "golden.duckdb")
    yield s
    s.close()


@pytest.fixture
def demo_store(store) -> Store:
    load_demo(store, cli_user())
    return store


def table_snapshot(store: Store) -> dict[str, list]:
    """Every row of every table: for proving a failed operation changed nothing."""
    tables = [r[0] for r in store.read(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1")]
    return {t: sorted(map(repr, store.read(f'SELECT * FROM "{t}"'))) for t in tables}


@pytest.fixture
def llm_server(monkeypatch):
    """The local Messages API server, with the environment pointing the SDK at it."""
    from tests.llm_server import MessagesServer

    with MessagesServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-logged")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("GOLDEN_BATCH_POLL_S", "0.05")  # the local server ends a batch on the 2nd poll
        yield server


def plain(markdown: str) -> str:
    """The text a Markdown source shows: backslash escapes removed (pages escape ids and
    names from files and people before rendering them)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown)


# ---- PostgreSQL (tests/pg.py): a throwaway cluster per session, a database per test -------------
@pytest.fixture(scope="session")
def pg_cluster():
    """The session's PostgreSQL cluster; the test is skipped (saying how to run it) when
    PostgreSQL or psycopg is not installed."""
    from tests import pg

    why = pg.unavailable()
    if why:
        pytest.skip(pg.HOW.format(why=why))
    cluster = pg.start_cluster()
    try:
        pg.make_migrated_template(cluster)
        yield cluster
    finally:
        pg.stop_cluster(cluster)


@pytest.fixture
def pg_url(pg_cluster, tmp_path, monkeypatch) -> str:
    """A new, empty PostgreSQL database for this test (dropped afterwards). The working
    directory is the test's temp dir: a PostgreSQL store keeps its local files (corpus
    index, versions) there."""
    monkeypatch.chdir(tmp_path)
    url = pg_cluster.new_database()
    yield url
    context.close_all()
    pg_cluster.drop_database(url)


@pytest.fixture
def pg_store(pg_cluster, tmp_path, monkeypatch) -> Store:
    """A PostgreSQL store at the current schema (a copy of the migrated template), the
    working directory in the test's temp dir (see ``pg_url``)."""
    from tests.pg import MIGRATED_TEMPLATE

    monkeypatch.chdir(tmp_path)
    url = pg_cluster.new_database(MIGRATED_TEMPLATE)
    s = Store.open(url)
    yield s
    s.close()
    context.close_all()
    pg_cluster.drop_database(url)


@pytest.fixture(params=["duckdb", "postgresql"])
def any_store(request, tmp_path) -> Store:
    """The same test on both engines: a fresh DuckDB store, then a fresh PostgreSQL one."""
    if request.param == "duckdb":
        s = Store.open(tmp_path / "golden.duckdb")
        yield s
        s.close()
    else:
        yield request.getfixturevalue("pg_store")
