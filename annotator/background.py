"""Work a serving process runs beside the app and the API (issue 28): webhook delivery.

``golden serve`` (app + API in one process, the DuckDB case) and ``golden api`` (the API
alone, PostgreSQL) call :func:`start` once at start-up and :func:`stop` at shutdown."""

from __future__ import annotations

from typing import Protocol

from golden_store.db.store import Store


class Worker(Protocol):
    def stop(self) -> None: ...


def start(store: Store) -> list[Worker]:
    """Start the background workers on ``store``; returns them, for :func:`stop`."""
    return []


def stop(workers: list[Worker]) -> None:
    for w in workers:
        w.stop()
