"""Delivering webhook events from the outbox: at least once, signed, with retries.

A :class:`Dispatcher` claims due deliveries (``golden_store.live.webhooks.claim_due``: a lease
moves ``next_attempt_at`` forward before anything is sent, so a crash mid-send means a retry
after the lease, never a loss), POSTs each body with the Standard Webhooks headers (the
``webhook-id`` is the event id, the same on every retry, so a receiver de-duplicates), and
logs the attempt. 2xx is delivered; anything else (a status, a timeout, a refused
connection, a redirect: never followed) is retried on the Standard Webhooks / Svix schedule,
then marked failed. It runs as a thread of the serving process (:class:`Worker`, started by
``annotator.background``) or in the foreground (``golden webhooks deliver``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx

from golden_store.core import standard_webhooks
from golden_store.db.store import Store, utcnow
from golden_store.live import webhooks as rows

# Standard Webhooks / Svix: after the first attempt fails, retry after 5 s, 5 min, 30 min, 2 h,
# 5 h, 10 h and 10 h; then the delivery is failed (a person can "retry now" from the page).
SCHEDULE: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
TIMEOUT_S = 15.0
LEASE_S = 60.0  # longer than a send can take (the timeout), so a live dispatcher's claim never lapses
POLL_S = 1.0
MAX_ERROR = 300


@dataclass(frozen=True)
class Outcome:
    event_id: str
    endpoint_id: str
    delivered: bool
    status_code: int | None
    error: str | None


def parse_schedule(text: str) -> tuple[float, ...]:
    """``5,300,1800`` (seconds) as a schedule (``golden webhooks deliver --schedule``)."""
    try:
        out = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--schedule {text!r}: give seconds separated by commas, e.g. 5,300,1800.") from None
    if any(x < 0 for x in out):
        raise ValueError(f"--schedule {text!r}: delays are zero or more seconds.")
    return out


class Dispatcher:
    """Sends due deliveries. ``clock`` and ``schedule`` are injectable so tests need not wait
    for backoff; ``lease`` is how long a claimed delivery is left alone."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utcnow,
                 schedule: Sequence[float] = SCHEDULE, timeout: float = TIMEOUT_S, lease: float = LEASE_S,
                 batch: int = 20, workers: int = 4) -> None:
        self.store = store
        self.clock = clock
        self.schedule = tuple(schedule)
        self.timeout = timeout
        self.lease = timedelta(seconds=lease)
        self.batch = batch
        self.workers = workers
        self._client = httpx.Client(follow_redirects=False, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def run_once(self) -> list[Outcome]:
        """Claim what is due now and send it (concurrently, a few at a time); the outcomes."""
        now = self.clock()
        due = rows.next_due(self.store)  # a read first: an idle poll opens no write transaction
        if due is None or due > now:
            return []
        claimed = rows.claim_due(self.store, now=now, lease=self.lease, limit=self.batch)
        if not claimed:
            return []
        if len(claimed) == 1 or self.workers <= 1:
            return [self._deliver(c) for c in claimed]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(claimed))) as pool:
            return list(pool.map(self._deliver, claimed))

    def _deliver(self, c: dict) -> Outcome:
        body = c["payload"].encode("utf-8")
        headers = standard_webhooks.headers(c["secret"], c["event_id"], int(time.time()), body)
        status: int | None = None
        error: str | None = None
        t0 = time.perf_counter()
        try:
            resp = self._client.post(c["url"], content=body, headers=headers)
            status = resp.status_code
            if not 200 <= status < 300:
                error = f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else "")
        except httpx.TimeoutException:
            error = f"no answer within {self.timeout:g} s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {str(exc) or 'request failed'}"[:MAX_ERROR]
        duration_ms = (time.perf_counter() - t0) * 1000
        delivered = error is None
        done = c["attempts"] + 1  # attempts made, this one included
        now = self.clock()
        next_at = None
        if not delivered and done <= len(self.schedule):
            next_at = now + timedelta(seconds=self.schedule[done - 1])
        rows.record_attempt(self.store, event_id=c["event_id"], endpoint_id=c["endpoint_id"], status_code=status,
                            error=error, duration_ms=duration_ms, at=now, delivered=delivered,
                            next_attempt_at=next_at)
        return Outcome(c["event_id"], c["endpoint_id"], delivered, status, error)

    def run_until_idle(self, *, max_rounds: int = 1000) -> list[Outcome]:
        """Send until nothing is due now (tests; ``--once`` sends one batch)."""
        out: list[Outcome] = []
        for _ in range(max_rounds):
            got = self.run_once()
            if not got:
                break
            out.extend(got)
        return out


class Worker:
    """The dispatcher on a thread: polls every ``poll`` seconds, and at once when an event is
    emitted in this process. A failing send is logged in the store; nothing here raises into
    the serving process."""

    def __init__(self, store: Store, *, poll: float = POLL_S, **kwargs: object) -> None:
        self.dispatcher = Dispatcher(store, **kwargs)  # type: ignore[arg-type]
        self.poll = poll
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name="webhook-delivery", daemon=True)

    def start(self) -> "Worker":
        rows.add_listener(self._wake.set)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                while self.dispatcher.run_once() and not self._stop.is_set():
                    pass
            except Exception as exc:  # the store closed under us, a transient conflict: try again next poll
                self.errors.append(f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
                del self.errors[:-20]
            self._wake.wait(self.poll)
            self._wake.clear()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        rows.remove_listener(self._wake.set)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=TIMEOUT_S + 5)
        self.dispatcher.close()
