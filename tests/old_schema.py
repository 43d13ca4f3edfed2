"""Writing to a store built at an older schema version with today's code, where today's code
writes a column that version lacks."""

from __future__ import annotations

import pytest


def questions_without_tier(monkeypatch) -> None:
    """Import questions as the code before migration 20 wrote them (query_revisions had no
    ``tier``, nor migration 25's ``change_reason``): for tests that load the demo into a store at an older schema version."""
    from golden_store.live import queries

    def import_without_tier(cur, records, *, actor, update=False, **_newer_options):  # e.g. unhold_reason
        cur.executemany(queries._INSERT_REVISION.replace(", tier, change_reason)", ")").replace(", ?, ?)", ")"),
                        [queries._revision_row(r, actor)[:-2] for r in records])
        return {"added": len(records), "updated": 0, "unchanged": 0}

    monkeypatch.setattr("golden_store.live.queries.import_queries_tx", import_without_tier)


def schema_at(monkeypatch, version: int) -> None:
    """Until ``monkeypatch.undo()``, ``Store.open`` builds and migrates a store only up to
    ``version``: the store an older release left behind, for a migration test to migrate."""
    from golden_store.db import schema

    monkeypatch.setattr("golden_store.db.store.MIGRATIONS", schema.MIGRATIONS[:version])
    monkeypatch.setattr("golden_store.db.store.SCHEMA_VERSION", version)


@pytest.fixture(params=["duckdb", "postgresql"])
def old_url(request, tmp_path) -> str:
    """Where a migration test builds its older store: a DuckDB file, or a new PostgreSQL
    database (the migration must keep every row on both engines)."""
    if request.param == "duckdb":
        return str(tmp_path / "old.duckdb")
    return request.getfixturevalue("pg_url")
