"""The direct label channel: a labeling surface's labels go to a small HTTP endpoint beside
the app instead of through a Streamlit rerun.

Why (issue 29): every batch of labels sent through Streamlit reruns the page's fragment before
its acknowledgements can go back, and that rerun (the script, the element tree, the websocket
messages) cost about as much server CPU as the label's write. With 12 annotators at a key a
second on two cores shared with other work, the server had less CPU than the labels needed:
acknowledgements queued for seconds. Through this channel a batch costs its write, the
queue's bookkeeping and a JSON answer.

How it fits:

* The page (``golden serve``, where the API runs in the same process and has advertised its
  port with :func:`advertise`) gives the surface a **pass** (:func:`issue`): who, which
  surface, which queue scope, which sign-in, for how long, signed with a key that lives only
  in this process's memory. Nothing is stored; a restarted server refuses old passes, and the
  surface falls back to Streamlit (which gives it a new pass on the next page run).
* The browser posts ``{"pass", "labels", "left"}`` to the endpoint
  (``http_api.routes.surface``); :meth:`Channel.batch` re-derives the person from the pass
  *on every batch* (a disabled account, an ended sign-in or a store that gained accounts
  since stops it within :data:`RECHECK_S`), writes the labels with the surface's own
  ``submit`` (the same rules and the same label ids as the Streamlit path: a label sent both
  ways is written once), and keeps the person's queue ahead with the same
  :class:`annotator.labeling.label_queue.QueueAhead` the Streamlit path uses.
* Anything the channel cannot do (no endpoint, a refused pass, a network error) the surface
  does through Streamlit as before: the channel is a fast path, never the only path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from annotator.labeling import judging
from annotator.people import identity, sessions
from annotator.people.identity import User
from annotator.labeling.label_queue import QueueAhead, with_uids
from annotator.labeling.labeling import MAX_BATCH, Ack, Label
from annotator.people.roles import Permission
from golden_store.core.errors import GoldenError, ValidationError
from golden_store.db.store import Store

PASS_LIFETIME_S = 12 * 3600  # a working day; the page hands out a fresh pass on every run
RECHECK_S = 5.0              # a pass's person is re-derived from the store at most this stale
MAX_QUEUES = 5000            # pages whose queues the channel keeps (least recently used dropped)
MODES = ("local", "accounts", "oidc")

_KEY = secrets.token_bytes(32)  # this process's: a pass is good only where it was issued
_advertised: dict[str, int | None] = {"port": None}


class ChannelRefused(GoldenError):
    """The batch was not taken (bad or stale pass, nobody signed in, unknown surface): the
    browser sends it through Streamlit instead. ``str(err)`` says why in one sentence."""


def advertise(port: int | None) -> None:
    """Say that this process serves the channel's endpoint on ``port`` (None: it does not)."""
    _advertised["port"] = port


def endpoint_port() -> int | None:
    """The port of this process's channel endpoint, or None when there is none (``golden
    serve --no-api``, ``streamlit run``, AppTest): pages then use the Streamlit path."""
    return _advertised["port"]


def endpoint_base() -> str | None:
    """Where browsers reach the endpoint, when not at the app's host on :func:`endpoint_port`:
    ``GOLDEN_SURFACE_URL`` (a URL, or a path such as ``/`` for the app's own origin, for a
    proxy that sends ``/surface/`` to the API's port). None: the app's host and the port."""
    import os

    base = os.environ.get("GOLDEN_SURFACE_URL", "").strip()
    return base or None


# ---- passes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claims:
    """What a pass says: ``user`` signed in by ``mode`` (with ``session``, the digest of the
    sign-in's token, when ``mode`` is accounts; never the token itself) labels on ``surface`` in queue ``scope``; ``page`` tells
    one page's queue from another's; ``exp`` is a Unix time."""

    user: str
    mode: str
    session: str
    surface: str
    scope: str
    page: str
    exp: float


def _sign(body: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(_KEY, body, hashlib.sha256).digest()).decode().rstrip("=")


def issue(user: User, *, mode: str, session: str | None, surface: str, scope: str, page: str,
          now: float | None = None) -> str:
    """A pass for ``user`` on ``surface`` (signed, not secret from its own browser);
    ``session``: the sign-in's token, of which the pass keeps only the digest."""
    if mode not in MODES:
        raise ValueError(f"unknown sign-in mode {mode!r}")
    claims = Claims(user.username, mode, sessions.digest(session) if session else "", surface, scope, page,
                    (time.time() if now is None else now) + PASS_LIFETIME_S)
    body = json.dumps(asdict(claims), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + _sign(body)


def open_pass(text: object, *, now: float | None = None) -> Claims:
    """The claims of a pass this process issued and that has not expired; else ChannelRefused."""
    if not isinstance(text, str) or "." not in text or len(text) > 4000:
        raise ChannelRefused("No label pass: the page gives one.")
    encoded, sig = text.rsplit(".", 1)
    try:
        body = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except ValueError:
        raise ChannelRefused("The label pass is damaged.") from None
    if not hmac.compare_digest(_sign(body), sig):
        raise ChannelRefused("The label pass was not issued by this server (restarted?): reload the page.")
    try:
        claims = Claims(**json.loads(body))
    except (ValueError, TypeError):
        raise ChannelRefused("The label pass is damaged.") from None
    if claims.exp < (time.time() if now is None else now):
        raise ChannelRefused("The label pass has expired: reload the page.")
    return claims


# ---- surfaces --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SurfaceSpec:
    """What the channel needs of a surface: its writer, its next cards, its progress."""

    submit: Callable[[Store, User, list], list[Ack]]
    fetch: Callable[[Store, User, int, str], list[dict[str, Any]]]
    count: Callable[[Store, User], tuple[int, int]]
    ahead: int
    grouped: bool = False  # its labels may go through the group commit (:class:`LabelGroups`)


SURFACES: dict[str, SurfaceSpec] = {
    judging.SURFACE: SurfaceSpec(
        submit=judging.submit,
        fetch=lambda store, user, n, scope: [it.card() for it in judging.next_items(store, user, n, scope)],
        count=judging.progress, ahead=judging.QUEUE_AHEAD, grouped=True),
}


# ---- group commit: the labels that arrive together, in one transaction -------------------------


class _Job:
    """One batch's labels waiting for a group: ``statuses[i]`` becomes "saved" or "duplicate"
    for a label the group wrote, and stays None from the first label it did not take."""

    __slots__ = ("user", "labels", "statuses", "done")

    def __init__(self, user: User, labels: list[Label]) -> None:
        self.user = user
        self.labels = labels
        self.statuses: list[str | None] = [None] * len(labels)
        self.done = False


def _judge_key(item: dict[str, Any]) -> tuple[str, str, int, int] | None:
    """The item of a Judge label when it is well formed (what ``judging._key_of`` accepts)."""
    q, d, start, end = item.get("query_id"), item.get("doc_id"), item.get("start"), item.get("end")
    if isinstance(q, str) and isinstance(d, str) and type(start) is int and type(end) is int:
        return q, d, start, end
    return None


def _judge_group_tx(cur: Any, jobs: list[_Job]) -> None:
    """The Judge surface's labels of several batches in one transaction, set-wise: one read of
    their receipts, every item's content, scope, document digest and round, and the rubric
    version (``judging.group_facts_tx``), then their events (``grade_state.append_many_tx``) and receipts. A label is
    taken only when every rule of ``judging._write`` lets it through as written there (a grade,
    skip or unsure of the signed-in person, a new label id or their own repeat, the content they
    saw, an item they may grade now, no round to tell about); at the first one that is not,
    that label and the rest of its batch are left to the ordinary path (one transaction each,
    after this one commits), which refuses or writes it with its own words and webhooks."""
    from golden_store.live import grade_state, label_receipts
    from golden_store.live import judging as judging_store

    from annotator.labeling.labeling import digest
    from golden_store.db.store import utcnow

    for job in jobs:
        job.statuses = [None] * len(job.labels)
    keyed = [(job, lb, _judge_key(lb.item)) for job in jobs for lb in job.labels]
    # one read: each item's facts, the person of every label id written before, the rubric version
    facts, receipts, version = judging_store.group_facts_tx(
        cur, [(job.user.username, *key) for job, _, key in keyed if key], [lb.label_id for _, lb, _ in keyed])
    fact_of = iter(facts)
    events: list[dict[str, Any]] = []
    taken: list[tuple[_Job, int, Label]] = []
    stopped: set[int] = set()
    position = {id(job): 0 for job in jobs}
    for job, label, key in keyed:
        i = position[id(job)]
        position[id(job)] = i + 1
        fact = next(fact_of) if key else None
        if id(job) in stopped:
            continue
        actor = job.user.username
        seen = receipts.get(label.label_id)
        if seen is not None and seen == actor:
            job.statuses[i] = "duplicate"
            continue
        grade = label.value if label.action == "grade" else None
        ok = (seen is None and key is not None and fact is not None and label.action in judging_store.OPS
              and (label.action != "grade" or (type(grade) is int and grade in judging.GRADES))
              and fact["content"] is not None and digest(*fact["content"]) == label.digest
              and fact["problem"] is None and fact["round_id"] is None)
        if not ok or key is None or fact is None:
            stopped.add(id(job))
            continue
        receipts[label.label_id] = actor  # a repeat later in the group is a duplicate
        events.append({"query_id": key[0], "doc_id": key[1], "start": key[2], "end": key[3],
                       "doc_sha256": fact["doc_sha256"], "op": label.action, "grade": grade, "actor": actor,
                       "created_at": utcnow(), "rubric_version": version, "round_id": None,
                       "note": label.note or None})
        taken.append((job, i, label))
        job.statuses[i] = "saved"
    ids = grade_state.append_many_tx(cur, events)
    label_receipts.add_many(cur, [(label.label_id, job.user.username, judging.SURFACE, label.item, label.action,
                                   event_id) for (job, _, label), event_id in zip(taken, ids)])


#: DuckDB's threads in a process whose channel takes Judge labels (``golden serve``'s): a
#: label's dozen small statements each woke DuckDB's worker threads, ~2 of a label's ~11 ms
#: of CPU with 50 annotators (issue 41); many requests at once keep the cores busy anyway.
#: ``GOLDEN_DUCKDB_THREADS`` set for the process wins.
SERVE_THREADS = 1


class LabelGroups:
    """Group commit for one store's Judge labels (issue 41). A batch's labels wait for the
    transaction under way to end, then go with every batch that arrived meanwhile into one
    transaction (:func:`_judge_group_tx`): one commit, one move of the generation, and the
    reads and writes of all of them in a dozen statements instead of some fifteen per label.
    :meth:`submit` returns after that commit, so an acknowledgement still means the label is
    durable. No one waits for a group to fill: the first arrival writes at once."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cv = threading.Condition()
        self._queue: list[_Job] = []
        self._leading = False
        self.groups = 0   # group transactions committed (benchmarks and tests read these)
        self.written = 0  # labels they took
        # this process serves labels: DuckDB's statements on one thread (Store.set_threads)
        store.set_threads(SERVE_THREADS)

    def submit(self, user: User, labels: list[Label]) -> list[str | None]:
        job = _Job(user, labels)
        with self._cv:
            self._queue.append(job)
            while self._leading and not job.done:
                self._cv.wait()
            lead = not job.done
            if lead:
                self._leading = True
                jobs, self._queue = self._queue, []
        if lead:
            try:
                self._run(jobs)
            finally:
                with self._cv:
                    for j in jobs:
                        j.done = True
                    self._leading = False
                    self._cv.notify_all()
        return job.statuses

    def _run(self, jobs: list[_Job]) -> None:
        try:
            self.store.write(lambda cur: _judge_group_tx(cur, jobs))
        except Exception:  # nothing of the group was written: every label takes the ordinary path
            for j in jobs:
                j.statuses = [None] * len(j.labels)
            return
        self.groups += 1
        self.written += sum(s == "saved" for j in jobs for s in j.statuses)


# ---- the channel -----------------------------------------------------------------------------


class Channel:
    """The process's channel state: each page's queue ahead, and who each pass stands for
    (re-derived at most :data:`RECHECK_S` seconds stale). Thread-safe: the API answers
    batches on a thread pool."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._queues: OrderedDict[str, QueueAhead] = OrderedDict()
        self._people: dict[tuple[str, str, str], tuple[User | None, float]] = {}
        self._clock = clock
        self._groups: dict[int, LabelGroups] = {}

    def groups(self, store: Store) -> LabelGroups:
        """The group commit of ``store``'s Judge labels (one per store this channel writes to)."""
        with self._lock:
            g = self._groups.get(id(store))
            if g is None or g.store is not store:
                g = self._groups[id(store)] = LabelGroups(store)
            return g

    def _submit(self, store: Store, spec: SurfaceSpec, user: User, labels: list) -> list[Ack]:
        """The batch's acknowledgements: on DuckDB the Judge surface's labels go through the
        group commit (:class:`LabelGroups`) as far as it takes them, the rest of the batch (a
        refusal, an undo, a label of a round) through the surface's own ``submit``, in order."""
        if not spec.grouped or store.engine != "duckdb" or not user.can(Permission.LABEL):
            return spec.submit(store, user, labels)
        parsed: list[Label] = []
        for raw in labels:
            try:
                label = Label.parse(raw)
            except ValidationError:
                break
            if label.by and label.by != user.username:
                break
            parsed.append(label)
        statuses = self.groups(store).submit(user, parsed) if parsed else []
        acks: list[Ack] = []
        for label, status in zip(parsed, statuses):
            if status is None:
                break
            acks.append(Ack(label.label_id, status))
        return acks + (spec.submit(store, user, labels[len(acks):]) if len(acks) < len(labels) else [])

    def _person(self, store: Store, claims: Claims, *, local_client: bool) -> User | None:
        if claims.mode == "local":
            # single-user mode grants admin only on this machine, and only while there are no accounts
            still_local = identity.auth_mode(store, oidc_configured=False) == "local"
            return identity.LOCAL_USER if local_client and still_local and claims.user == identity.LOCAL_USER.username \
                else None
        key = (claims.mode, claims.user, claims.session)
        now = self._clock()
        with self._lock:
            known = self._people.get(key)
        if known is not None and now - known[1] < RECHECK_S:
            return known[0]
        if claims.mode == "accounts":
            user = sessions.user_for_digest(store, claims.session)
        else:  # oidc: the identity provider's sign-in is the browser's; the account must still be enabled
            user = identity.get_user(store, claims.user)
        if user is not None and user.username != claims.user:
            user = None
        with self._lock:
            if len(self._people) > MAX_QUEUES:
                self._people.clear()
            self._people[key] = (user, now)
        return user

    def _queue(self, claims: Claims, ahead: int) -> QueueAhead:
        key = f"{claims.user}\x1f{claims.surface}\x1f{claims.page}"
        scope = f"{claims.user}\x1f{claims.scope}"
        with self._lock:
            queue = self._queues.get(key)
            if queue is None or queue.scope != scope:
                queue = QueueAhead(ahead=ahead, scope=scope)
                self._queues[key] = queue
            self._queues.move_to_end(key)
            while len(self._queues) > MAX_QUEUES:
                self._queues.popitem(last=False)
            return queue

    def batch(self, store: Store, body: object, *, local_client: bool) -> dict[str, Any]:
        """Take one browser batch ``{"pass", "labels", "left"}``: write the labels, and
        answer their acknowledgements, the next cards when the queue ran low (else None),
        and progress. Raises ChannelRefused when the pass does not stand."""
        if not isinstance(body, dict):
            raise ChannelRefused("A batch is a JSON object.")
        claims = open_pass(body.get("pass"))
        spec = SURFACES.get(claims.surface)
        if spec is None:
            raise ChannelRefused(f"The surface {claims.surface!r} takes its labels through the page.")
        user = self._person(store, claims, local_client=local_client)
        if user is None:
            raise ChannelRefused("Nobody is signed in for this pass any more: the page takes over.")
        labels = body.get("labels") or []
        if not isinstance(labels, list):
            raise ChannelRefused("A batch's labels are a list.")
        labels = labels[:MAX_BATCH]
        acks = self._submit(store, spec, user, labels) if labels else []
        queue = self._queue(claims, spec.ahead)
        now = self._clock()
        with self._lock:
            queue.note_acks(labels, acks)
            left = body.get("left")
            queue.browser_left = left if type(left) is int and left >= 0 else None
            refill, recount = queue.refill_due(now), queue.recount_due(now)
        items = None
        if refill:
            cards = spec.fetch(store, user, spec.ahead, claims.scope)
            with self._lock:
                queue.refill(cards, exhausted=len(cards) < spec.ahead)
            items = with_uids(cards)
        if recount:
            done, total = spec.count(store, user)
            with self._lock:
                queue.recounted(done, total, now=now)
        return {"acks": [a.to_json() for a in acks], "items": items, "progress": queue.progress(),
                "exhausted": queue.exhausted, "low": queue.low}


CHANNEL = Channel()
