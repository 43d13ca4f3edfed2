"""``Cursor``: what the studio's code may call on the cursor a store hands out.

``Store.write(fn)`` calls ``fn(cur)`` and every ``*_tx(cur, ...)`` takes one. On DuckDB it is a
``Cursor`` (a cursor of the store's connection); on PostgreSQL a
``golden_store.db.postgres.PgCursor``, which offers the same calls. Annotate with this
Protocol, not with either class, so the annotation is true on both engines (review 2026-12-04,
Q4/Q5). The PostgreSQL-only calls (``execute_native``, ``copy_arrow``, ``begin``/``commit``,
``advisory_lock``) are not here: code that makes them checks ``store.engine`` first and says
``cast(PgCursor, cur)``.

Only the methods the code uses are listed; add one here when a call site needs it. Nothing is
checked at run time (no ``runtime_checkable``): this is an annotation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol


class Cursor(Protocol):
    """A cursor of either engine: ``execute`` returns the cursor itself, to fetch from."""

    def execute(self, query: str, parameters: Any = None, /) -> Cursor: ...

    def executemany(self, query: str, parameters: Iterable[Any], /) -> Cursor: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = 1, /) -> list[Any]: ...

    @property
    def description(self) -> Any: ...

    def df(self) -> Any: ...

    def register(self, view_name: str, python_object: object, /) -> Any: ...

    def unregister(self, view_name: str, /) -> Any: ...

    def close(self) -> None: ...



if TYPE_CHECKING:  # mypy checks here that both engines' cursors are a Cursor (never runs)
    import duckdb

    from golden_store.db.postgres import PgCursor

    def _duckdb_cursor_is_a_cursor(cur: duckdb.DuckDBPyConnection) -> Cursor:
        return cur

    def _pg_cursor_is_a_cursor(cur: PgCursor) -> Cursor:
        return cur


__all__ = ["Cursor"]
