"""Delivering webhook events from the outbox: at least once, signed, with retries.

A :class:`Dispatcher` claims due deliveries (``golden_store.live.webhooks.claim_due``: a lease
moves ``next_attempt_at`` forward before anything is sent, so a crash mid-send means a retry
after the lease, never a loss), POSTs each body with the Standard Webhooks headers (the
``webhook-id`` is the event id, the same on every retry, so a receiver de-duplicates), and
logs the attempt. 2xx is delivered; anything else (a status, a timeout, a refused
connection, a redirect: never followed) is retried on the Standard Webhooks / Svix schedule,
then marked failed. It runs as a thread of the serving process (:class:`Worker`, started by
``annotator.integration.background``) or in the foreground (``golden webhooks deliver``).

Each send has a whole-request deadline (``timeout``: connect, request, status line and
headers; the answer's body is not read), not httpx's per-read timeout, which a receiver that
trickles its answer never trips (issue 37, probe W4): at the deadline the socket is shut
down, and a send not yet connected never starts. The sends of one claim run in parallel, so a
slow endpoint holds another's delivery for one deadline at most, and the lease is more than
twice the deadline and checked before each send starts: a claim never lapses while its send
can still be on the wire, so a second dispatcher never sends the same delivery at once.

Each send resolves the receiver's name once, checks every address it gives, and connects to
a checked address (:class:`_CheckedBackend`; ``annotator.events.webhook_urls``, issue 37, probe W5):
a loopback, private or link-local address is refused unless ``GOLDEN_WEBHOOK_ALLOW_PRIVATE=1``,
and the delivery is failed at once with that reason (no retries: they would be refused too).
Errors are logged with the URL's secrets masked (probe W7)."""

from __future__ import annotations

import socket
import threading
import time
import typing
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpcore
import httpx

from annotator.events import webhook_urls
from golden_store.core import standard_webhooks
from golden_store.db.store import Store, utcnow
from golden_store.live import webhooks as rows

# Standard Webhooks / Svix: after the first attempt fails, retry after 5 s, 5 min, 30 min, 2 h,
# 5 h, 10 h and 10 h; then the delivery is failed (a person can "retry now" from the page).
SCHEDULE: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
TIMEOUT_S = 15.0  # the whole-request deadline of one send
LEASE_S = 60.0  # over twice the deadline: a claim outlives every send started under it, with margin
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


class _DeadlinePassed(Exception):
    """Raised from the request's trace hook once the send's deadline has passed."""


class _Deadline:
    """One send's whole-request deadline, enforced from outside the request: httpcore's trace
    hook hands over the socket once connected, a timer shuts it down at the deadline (a
    blocked read returns at once), and every later step of the request raises, so nothing
    is sent after the deadline (not even by a send whose name lookup or connect was slow)."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def trace(self, name: str, info: dict) -> None:
        with self._lock:
            stream = info.get("return_value") if name == "connection.connect_tcp.complete" else None
            if stream is not None:
                self._sock = stream.get_extra_info("socket")
            if self.expired:
                if stream is not None:
                    stream.close()
                raise _DeadlinePassed()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed already: the send ended as the deadline came
                pass


class _CheckedBackend(httpcore.SyncBackend):
    """httpcore's network backend, resolving the receiver's name itself: one lookup, every
    address checked (``webhook_urls.refuse_blocked``: raises ``AddressRefused``), then a
    connection to a checked address (tried in the resolver's order). The name is never
    looked up again for the connect, so what was checked is what is connected to (no DNS
    rebinding between the two). TLS still verifies the certificate against the URL's name
    (httpcore passes the origin's host as ``server_hostname``, not the address)."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None) -> httpcore.NetworkStream:
        try:
            addresses = webhook_urls.resolve(host, port)
        except (OSError, UnicodeError, ValueError) as exc:  # the name does not resolve: retried, as a refused connect
            raise httpcore.ConnectError(f"{host}: {exc}") from exc
        webhook_urls.refuse_blocked(host, addresses)
        failed: httpcore.ConnectError | None = None
        for ip in addresses:
            try:
                return super().connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failed = exc
        raise failed or httpcore.ConnectError(f"{host}: no address")


def _client(timeout: float) -> httpx.Client:
    """The dispatcher's client: a new connection per send (no keep-alive: the deadline needs
    the socket of each send), made by :class:`_CheckedBackend`; redirects not followed; no
    proxy or ``.netrc`` from the environment (``trust_env=False``: through a proxy the address
    checked would be the proxy's). The transport's pool is replaced by one with the checked
    backend (httpx's ``HTTPTransport`` takes no backend; ``handle_request`` uses ``_pool``)."""
    transport = httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))
    transport._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), max_keepalive_connections=0,
                                              network_backend=_CheckedBackend())
    return httpx.Client(transport=transport, follow_redirects=False, timeout=timeout, trust_env=False)


class Dispatcher:
    """Sends due deliveries. ``clock`` and ``schedule`` are injectable so tests need not wait
    for backoff; ``timeout`` is one send's whole-request deadline; ``lease`` is how long a
    claimed delivery is left alone (over twice the deadline); ``workers`` caps the sends of
    one claim in flight at once (default: all of them)."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] = utcnow,
                 schedule: Sequence[float] = SCHEDULE, timeout: float = TIMEOUT_S, lease: float = LEASE_S,
                 batch: int = 20, workers: int | None = None) -> None:
        if not timeout > 0:
            raise ValueError(f"The send deadline ({timeout:g} s) must be more than 0 s.")
        if not lease > 2 * timeout:
            raise ValueError(f"The lease ({lease:g} s) must be more than twice the send deadline ({timeout:g} s): "
                             "a claim that ran out mid-send would let another dispatcher send the same delivery.")
        self.store = store
        self.clock = clock
        self.schedule = tuple(schedule)
        self.timeout = timeout
        self.lease = timedelta(seconds=lease)
        self.batch = batch
        self.workers = workers
        self._client = _client(timeout)

    def close(self) -> None:
        self._client.close()

    def run_once(self) -> list[Outcome]:
        """Claim what is due now and send it (concurrently, a few at a time); the outcomes."""
        now = self.clock()
        due = rows.next_due(self.store)  # a read first: an idle poll opens no write transaction
        if due is None or due > now:
            return []
        claimed_at = time.monotonic()  # before the claim: the lease is counted from no later than here
        claimed = rows.claim_due(self.store, now=now, lease=self.lease, limit=self.batch)
        if not claimed:
            return []
        until = now + self.lease
        pool = ThreadPoolExecutor(max_workers=min(self.workers or len(claimed), len(claimed)),
                                  thread_name_prefix="webhook-send")
        futures = [pool.submit(self._deliver, c, claimed_at, now, until) for c in claimed]
        # every send ends by its deadline; a send still running at the lease's end (a name
        # lookup that hangs) is left to end by itself: it can no longer send, and records itself
        done, _ = wait(futures, timeout=self.lease.total_seconds())
        pool.shutdown(wait=False)
        return [out for f in futures if f in done and (out := f.result()) is not None]

    def _deliver(self, c: dict, claimed_at: float, claimed_now: datetime, until: datetime) -> Outcome | None:
        if time.monotonic() - claimed_at + 2 * self.timeout > self.lease.total_seconds():
            # too late in the claim to send within it (sends queued behind others): give it back
            rows.release_claim(self.store, event_id=c["event_id"], endpoint_id=c["endpoint_id"], until=until,
                               due=claimed_now)
            return None
        body = c["payload"].encode("utf-8")
        headers = standard_webhooks.headers(c["secret"], c["event_id"], int(time.time()), body)
        status: int | None = None
        error: str | None = None
        refused = False
        t0 = time.perf_counter()
        with _Deadline(self.timeout) as deadline:
            try:
                # the status line and headers decide; the answer's body is not read
                with self._client.stream("POST", c["url"], content=body, headers=headers,
                                         extensions={"trace": deadline.trace}) as resp:
                    status = resp.status_code
                if not 200 <= status < 300:
                    error = f"HTTP {status}" + (" (redirects are not followed)" if 300 <= status < 400 else "")
            except webhook_urls.AddressRefused as exc:  # nothing was sent, not even a connect
                error, refused = f"refused: {exc}"[:MAX_ERROR], True
            except (httpx.TimeoutException, _DeadlinePassed):
                error = f"no answer within {self.timeout:g} s"
            except httpx.HTTPError as exc:
                text = webhook_urls.scrub(str(exc), c["url"]) or "request failed"
                error = f"{type(exc).__name__}: {text}"[:MAX_ERROR]
            if deadline.expired and status is None and not refused:
                error = f"no answer within {self.timeout:g} s"  # the read the deadline cut short
        duration_ms = (time.perf_counter() - t0) * 1000
        delivered = error is None
        done = c["attempts"] + 1  # attempts made, this one included
        now = self.clock()
        next_at = None
        if not delivered and not refused and done <= len(self.schedule):
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
