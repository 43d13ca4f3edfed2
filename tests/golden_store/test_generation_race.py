"""Pages cache whole-store figures under Store.generation(). A write takes a value of the
write sequence inside its transaction, which every process sees at once, while its rows
become visible only at commit. Another app process computing a page in between reads the
new generation with the old rows; unless the generation moves again after the commit, that
stale page is served until the next write."""

from __future__ import annotations

from golden_store.db import postgres
from golden_store.db.store import Store


def test_a_page_computed_just_before_a_commit_is_not_served_after_it(pg_url, monkeypatch):
    writer, other = Store.open(pg_url), Store.open(pg_url)
    try:
        seen: list[tuple] = []
        real_commit = postgres.PgCursor.commit

        def commit_after_another_process_looked(cur) -> None:
            # the other process renders a page right now: the generation it keys the page by,
            # and what it counts (the writer's row is not committed yet)
            seen.append((other.generation(), other.read_one("SELECT count(*) FROM strata")[0]))
            real_commit(cur)

        before = other.read_one("SELECT count(*) FROM strata")[0]
        monkeypatch.setattr(postgres.PgCursor, "commit", commit_after_another_process_looked)
        writer.write(lambda cur: cur.execute(
            "INSERT INTO strata VALUES ('race', 'added by the writer', TRUE, now(), 'test')"))
        monkeypatch.undo()

        (cached_under, counted), = seen
        assert counted == before  # the page was computed without the new row ...
        assert other.read_one("SELECT count(*) FROM strata")[0] == before + 1
        assert other.generation() != cached_under  # ... so its cache key must be old now
    finally:
        writer.close()
        other.close()
