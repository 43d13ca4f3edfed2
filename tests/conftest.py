"""Shared test setup: hypothesis profiles (HYPOTHESIS_PROFILE=deep for a long run)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import settings

settings.register_profile("default", max_examples=400, deadline=None)
settings.register_profile("deep", max_examples=20000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402

from annotator import context  # noqa: E402
from annotator.demo import load_demo  # noqa: E402
from annotator.identity import cli_user  # noqa: E402
from golden_store.db.store import Store  # noqa: E402


# ---- the engine switch: GOLDEN_TEST_ENGINE=postgresql runs the suite on PostgreSQL ------------
ENGINE = os.environ.get("GOLDEN_TEST_ENGINE", "duckdb")
if ENGINE not in ("duckdb", "postgresql"):
    raise pytest.UsageError(f"GOLDEN_TEST_ENGINE={ENGINE!r}: use 'duckdb' (the default) or 'postgresql'")
# fixtures that already put a test on PostgreSQL (run in the DuckDB pass, so not again)
_PG_FIXTURES = {"pg_cluster", "pg_url", "pg_store", "any_store"}


def pytest_report_header(config) -> str:
    return f"store engine: {ENGINE} (GOLDEN_TEST_ENGINE)"


def pytest_collection_modifyitems(config, items) -> None:
    """On the PostgreSQL pass: skip the tests that are DuckDB-only by nature (the marker says
    why) and leave out those that ask for PostgreSQL themselves (the DuckDB pass ran them)."""
    if ENGINE != "postgresql":
        return
    keep, done = [], []
    for item in items:
        marker = item.get_closest_marker("duckdb_only")
        if marker is not None:
            why = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"DuckDB-only: {why}"))
        (done if _PG_FIXTURES & set(item.fixturenames) else keep).append(item)
    if done:
        config.hook.pytest_deselected(items=done)
        items[:] = keep


@pytest.fixture(autouse=True)
def _isolated_env(request, tmp_path, monkeypatch):
    """Every test gets its own store and versions dir; nothing leaks between tests.

    DuckDB (the default): GOLDEN_DB names ``<tmp_path>/golden.duckdb`` (not yet created).
    PostgreSQL (``GOLDEN_TEST_ENGINE=postgresql``): GOLDEN_DB is the URL of a new database
    copied from the migrated template, and the working directory is ``tmp_path`` (a
    PostgreSQL store keeps its local files, corpus index and versions, there)."""
    monkeypatch.delenv("GOLDEN_VERSIONS", raising=False)
    if ENGINE == "postgresql":
        from tests.pg import MIGRATED_TEMPLATE

        cluster = request.getfixturevalue("pg_cluster")
        monkeypatch.chdir(tmp_path)
        url = cluster.new_database(MIGRATED_TEMPLATE)
        monkeypatch.setenv("GOLDEN_DB", url)
        yield
        context.close_all()
        cluster.drop_database(url)
    else:
        monkeypatch.setenv("GOLDEN_DB", str(tmp_path / "golden.duckdb"))
        yield
        context.close_all()


@contextmanager
def module_store(request: pytest.FixtureRequest, tmp: Path) -> Iterator[str]:
    """A store location for a fixture wider than one test (a module's app server), where
    ``_isolated_env`` has not run: ``<tmp>/golden.duckdb``, or on the PostgreSQL pass a new
    database from the migrated template (dropped afterwards)."""
    if ENGINE != "postgresql":
        yield str(tmp / "golden.duckdb")
        return
    from tests.pg import MIGRATED_TEMPLATE

    cluster = request.getfixturevalue("pg_cluster")
    url = cluster.new_database(MIGRATED_TEMPLATE)
    try:
        yield url
    finally:
        cluster.drop_database(url)


@pytest.fixture
def golden_db() -> str:
    """This test's store location as GOLDEN_DB / ``--db`` take it: a DuckDB path, or a
    PostgreSQL URL on the PostgreSQL pass. Tests that start the CLI or the app pass this."""
    return os.environ["GOLDEN_DB"]


@pytest.fixture
def store(golden_db) -> Store:
    s = Store.open(golden_db)
    yield s
    s.close()


@pytest.fixture
def demo_store(store) -> Store:
    load_demo(store, cli_user())
    return store


def table_snapshot(store: Store) -> dict[str, list]:
    """Every row of every table: for proving a failed operation changed nothing."""
    tables = [r[0] for r in store.read(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND table_schema = current_schema() ORDER BY 1")]
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
