"""Work a serving process runs beside the app and the API (issue 28): webhook delivery, and
the token audit's last batch at shutdown.

``golden serve`` (app + API in one process, the DuckDB case) and ``golden api`` (the API
alone, PostgreSQL) call :func:`start` once at start-up and :func:`stop` at shutdown. Several
processes on one PostgreSQL store may each run a delivery worker: a delivery is claimed with
``FOR UPDATE SKIP LOCKED`` and a lease, so no two send the same row at the same time."""

from __future__ import annotations

from typing import Protocol

from golden_store.db.store import Store


class Worker(Protocol):
    def stop(self) -> None: ...


def start(store: Store) -> list[Worker]:
    """Start the background workers on ``store``; returns them, for :func:`stop`."""
    from annotator.events.webhook_delivery import Worker as DeliveryWorker

    return [DeliveryWorker(store).start()]


def stop(workers: list[Worker]) -> None:
    """Stop the workers, then write the API's buffered token audit while the store is still
    open (the exit hook runs after `golden`'s own cleanup has closed it)."""
    from annotator.people import api_tokens

    for w in workers:
        w.stop()
    api_tokens.flush_audit()
