"""Writing to a store built at an older schema version with today's code, where today's code
writes a column that version lacks."""

from __future__ import annotations


def questions_without_tier(monkeypatch) -> None:
    """Import questions as the code before migration 20 wrote them (query_revisions had no
    ``tier``, nor migration 25's ``change_reason``): for tests that load the demo into a store at an older schema version."""
    from golden_store.live import queries

    def import_without_tier(cur, records, *, actor, update=False, **_newer_options):  # e.g. unhold_reason
        cur.executemany(queries._INSERT_REVISION.replace(", tier, change_reason)", ")").replace(", ?, ?)", ")"),
                        [queries._revision_row(r, actor)[:-2] for r in records])
        return {"added": len(records), "updated": 0, "unchanged": 0}

    monkeypatch.setattr("golden_store.live.queries.import_queries_tx", import_without_tier)
