"""The one Anthropic client of the studio.

* Key and endpoint come from the environment (``ANTHROPIC_API_KEY``, optional
  ``ANTHROPIC_BASE_URL``); the key is never stored, logged or shown.
* Structured output through ``client.messages.parse(..., output_format=<pydantic model>)``.
  ``stop_reason`` is checked before the content is trusted: a refusal is its own outcome,
  a ``max_tokens`` stop is a truncation error naming the item, and an answer that does not
  validate is an error naming the item.
* The fixed instructions go first as a cached system block (``cache_control``), so bulk
  jobs pay for them once.
* Timeouts, refused connections, rate limits, overload (529) and 5xx are retried with
  backoff (``max_retries``), all within one overall ``deadline_s`` per call, so a draft never
  hangs for attempts x timeout; the error says which it was (timeout, connection refused,
  overloaded, ...) as ``LLMOutputError.kind``.
* Every call's usage (input, output, cache write, cache read tokens) and cost are returned
  and recorded by the caller, failed calls included (:func:`record_failure`: a truncated or
  malformed answer was paid for); the model id and the prompt sha are pinned in what it makes.
* Bulk jobs can go through the Message Batches API (:meth:`LLMClient.batch_structured`):
  half price, results matched to items by ``custom_id``.
* Held-out questions never reach a hosted model: :func:`refuse_held_out` is called before
  any request is built.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pydantic

from golden_store.live import llm_log
from golden_store.core.errors import GoldenError
from golden_store.db.store import Store

if TYPE_CHECKING:  # the SDK's request types; at run time anthropic is imported where a call is made
    from anthropic.types import TextBlockParam
    from anthropic.types.messages.batch_create_params import Request

T = TypeVar("T", bound=pydantic.BaseModel)

DEFAULT_MODEL = "claude-sonnet-4-5"

# USD per million tokens: input, output, cache write (5 min), cache read. Prefix match on
# the model id; a model not listed has an unknown cost (shown as such, never guessed).
PRICES: dict[str, tuple[float, float, float, float]] = {
    # METHODOLOGY §11.7 (model table cached 2026-06-24); cache write 1.25x, read 0.1x input
    "claude-opus-5": (5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-5": (2.0, 10.0, 2.50, 0.20),
    "claude-opus-4": (15.0, 75.0, 18.75, 1.50),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4": (1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": (0.8, 4.0, 1.0, 0.08),
}


class LLMUnavailable(GoldenError):
    """No API key: the LLM features explain how to enable them; everything else works."""


class LLMRefused(GoldenError):
    """The request itself is not allowed (held-out question)."""


class LLMOutputError(GoldenError):
    """A call that gave no usable answer, naming the item. ``kind`` says why: timeout,
    connection_refused, connection, overloaded, rate_limited, server_error, refused_request,
    truncated, invalid_output, batch_errored/expired/canceled, missing. ``usage`` is what it
    consumed (a truncated or malformed answer was paid for), so it can be recorded."""

    def __init__(self, message: str, *, kind: str = "error", usage: "Usage | None" = None,
                 model: str | None = None, prompt_sha: str | None = None, batch: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.usage = usage or Usage()
        self.model = model
        self.prompt_sha = prompt_sha
        self.batch = batch


def model_id() -> str:
    return os.environ.get("GOLDEN_LLM_MODEL") or DEFAULT_MODEL


def api_key_present() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY"))


def how_to_enable() -> str:
    return ("Claude features need an API key: set ANTHROPIC_API_KEY in the environment of the app "
            "(and ANTHROPIC_BASE_URL for a gateway), then restart. Everything else works without it.")


def prompt_sha(*parts: str) -> str:
    """sha256 of the prompt template parts (instructions + format), pinned in outputs."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def refuse_held_out(held_out: bool, item: str) -> None:
    if held_out:
        raise LLMRefused(
            f"{item} is held out: held-out questions are never sent to a hosted model (contamination, "
            f"methodology §3.8). Author it by hand."
        )


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def cost_usd(self, model: str) -> float | None:
        price = next((p for prefix, p in PRICES.items() if model.startswith(prefix)), None)
        if price is None:
            return None
        i, o, cw, cr = price
        return (self.input_tokens * i + self.output_tokens * o + self.cache_creation_input_tokens * cw
                + self.cache_read_input_tokens * cr) / 1e6


BATCH_DISCOUNT = 0.5  # the Message Batches API bills half the standard price (§11.7)


@dataclass(frozen=True)
class CallResult(Generic[T]):
    item: str
    outcome: str            # ok | refusal
    parsed: T | None
    usage: Usage
    model: str
    prompt_sha: str
    batch: bool = False

    @property
    def answer(self) -> T:
        """``parsed`` of an ``ok`` call (an ok call always carries it); a refusal has none,
        and asking one for it is a bug, said as one."""
        if self.parsed is None:
            raise ValueError(f"{self.item}: the call ended in {self.outcome!r}; it has no parsed answer")
        return self.parsed

    @property
    def cost_usd(self) -> float | None:
        cost = self.usage.cost_usd(self.model)
        return None if cost is None else cost * (BATCH_DISCOUNT if self.batch else 1.0)


def record_failure(store: Store, *, purpose: str, item: str, error: LLMOutputError, actor: str) -> None:
    """Record a failed call in ``llm_calls`` (outcome ``error:<kind>``), with the tokens it
    used: a failure is still a call, and its cost must not vanish from the totals."""
    model = error.model or model_id()
    cost = error.usage.cost_usd(model)
    u = error.usage
    llm_log.record_call(store, purpose=purpose, item=item, model=model, prompt_sha=error.prompt_sha or "",
                        outcome=f"error:{error.kind}", input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                        cache_creation_input_tokens=u.cache_creation_input_tokens,
                        cache_read_input_tokens=u.cache_read_input_tokens,
                        cost_usd=None if cost is None else cost * (BATCH_DISCOUNT if error.batch else 1.0),
                        actor=actor)


def _endpoint() -> str:
    return os.environ.get("ANTHROPIC_BASE_URL") or "the default endpoint"


def _refused(exc: BaseException) -> bool:
    """Whether a connection error was a refused connection (nothing listens there)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _failure(exc: Exception, timeout: float) -> tuple[str, str, bool]:
    """(kind, words for a person, retry?) for an SDK exception of one attempt."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout", f"the API did not answer within {timeout:.0f} s (timeout at {_endpoint()})", True
    if isinstance(exc, anthropic.APIConnectionError):
        if _refused(exc):
            return "connection_refused", f"connection refused by {_endpoint()} (nothing listens there)", True
        return "connection", f"cannot connect to {_endpoint()} ({exc.__cause__ or exc})", True
    assert isinstance(exc, anthropic.APIStatusError)
    code = exc.status_code
    if code == 529:
        return "overloaded", "the API is overloaded (529)", True
    if code == 429:
        return "rate_limited", "the API rate-limited the request (429)", True
    if code >= 500 or code in (408, 409):
        return "server_error", f"the API answered {code}", True
    return "refused_request", f"the API answered {code}: {exc.message}", False


class _LastResponse(threading.local):
    body: dict | None = None


class LLMClient:
    """Thin wrapper over ``anthropic.Anthropic``; one per process is enough."""

    def __init__(self, *, model: str | None = None, max_retries: int = 4, timeout: float = 120.0,
                 deadline_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``timeout`` bounds one attempt, ``deadline_s`` one call with all its retries
        (``GOLDEN_LLM_DEADLINE_S``, default 180 s): without it 120 s x 5 attempts could hold a
        draft for ten minutes."""
        import anthropic

        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMUnavailable(how_to_enable())
        self.model = model or model_id()
        self._last = _LastResponse()
        # The hook keeps the raw body of the last response of this thread, so that when a
        # refusal's text is not valid structured output we can still read its stop_reason.
        # the SDK's own HTTP client class (its HTTP library is an SDK detail, not ours)
        http = anthropic.DefaultHttpxClient(timeout=timeout, event_hooks={"response": [self._remember]})
        self._client = anthropic.Anthropic(
            api_key=key, base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=max_retries, http_client=http,
        )
        self._once = self._client.with_options(max_retries=0)  # structured(): our loop, one deadline
        self.max_retries, self.timeout = max_retries, timeout
        self.deadline_s = deadline_s if deadline_s is not None else float(
            os.environ.get("GOLDEN_LLM_DEADLINE_S") or 180.0)
        self._sleep, self._clock = sleep, clock

    def _with_retries(self, item: str, sha: str, call: Callable[[float], Any]) -> Any:
        """``call(timeout)`` retried on timeouts, connection errors, 429, 529 and 5xx with
        exponential backoff (a server's retry-after is honoured), each attempt's timeout cut
        to what is left of the call's deadline. Raises LLMOutputError saying which failure
        it was and whether the retries or the deadline ran out."""
        import anthropic

        start = self._clock()
        attempts = 0
        while True:
            left = self.deadline_s - (self._clock() - start)
            timeout = max(0.001, min(self.timeout, left))
            attempts += 1
            wait = min(8.0, 0.5 * 2 ** (attempts - 1)) * (1 - 0.25 * random.random())
            try:
                return call(timeout)
            except (anthropic.APIConnectionError, anthropic.APIStatusError) as exc:
                kind, words, retry = _failure(exc, timeout)
                if isinstance(exc, anthropic.APIStatusError):
                    try:
                        wait = float(exc.response.headers.get("retry-after") or wait)
                    except ValueError:
                        pass
            left = self.deadline_s - (self._clock() - start)
            why = ("not retried" if not retry
                   else f"gave up after {attempts} attempt(s)" if attempts > self.max_retries
                   else f"gave up at the {self.deadline_s:.0f} s deadline for one call ({attempts} attempt(s))"
                   if wait >= left else None)
            if why:
                raise LLMOutputError(f"{item}: {words}; {why}.", kind=kind, model=self.model, prompt_sha=sha)
            self._sleep(wait)

    def _remember(self, response) -> None:
        self._last.body = None
        if response.request.url.path.endswith("/v1/messages") and response.status_code == 200:
            response.read()
            try:
                self._last.body = response.json()
            except ValueError:
                self._last.body = None

    def structured(self, *, item: str, instructions: str, content: str, output: type[T],
                   max_tokens: int = 4096) -> CallResult[T]:
        """One structured call: cached ``instructions`` as the system prefix, ``content`` as
        the user turn, the reply validated as ``output``."""
        sha = prompt_sha(instructions, repr(sorted(output.model_json_schema().items())))
        system = _system(instructions)
        fail = lambda msg, kind, usage: LLMOutputError(msg, kind=kind, usage=usage,  # noqa: E731
                                                       model=self.model, prompt_sha=sha)
        cut = (f"{item}: the answer was cut at max_tokens={max_tokens}; retry with a shorter input or a "
               f"higher limit.")
        try:
            msg = self._with_retries(item, sha, lambda timeout: self._once.messages.parse(
                model=self.model, max_tokens=max_tokens, system=system,
                messages=[{"role": "user", "content": content}], output_format=output, timeout=timeout,
            ))
        except pydantic.ValidationError as exc:
            body = self._last.body or {}
            usage = _usage(body.get("usage") or {})
            if body.get("stop_reason") == "refusal":
                return CallResult(item, "refusal", None, usage, self.model, sha)
            if body.get("stop_reason") == "max_tokens":
                raise fail(cut, "truncated", usage) from None
            raise fail(f"{item}: the model's answer does not match the expected format "
                       f"({exc.error_count()} validation error(s)).", "invalid_output", usage) from None
        usage = _usage(msg.usage.model_dump() if msg.usage else {})
        if msg.stop_reason == "refusal":
            return CallResult(item, "refusal", None, usage, self.model, sha)
        if msg.stop_reason == "max_tokens":
            raise fail(cut, "truncated", usage)
        parsed = next((b.parsed_output for b in msg.content if getattr(b, "parsed_output", None) is not None), None)
        if parsed is None:
            raise fail(f"{item}: the model returned no structured answer.", "invalid_output", usage)
        return CallResult(item, "ok", parsed, usage, self.model, sha)


    def batch_structured(self, *, items: list[tuple[str, str]], instructions: str, output: type[T],
                         max_tokens: int = 4096, poll_s: float | None = None, max_wait_s: float = 24 * 3600,
                         progress: Callable[[int, int], None] | None = None,
                         sleep: Callable[[float], None] = time.sleep) -> dict[str, CallResult[T] | LLMOutputError]:
        """Many structured calls through the Message Batches API (half price, results within
        24 h): ``items`` are (item name, user content). Creates the batch, polls until it
        ends, then matches every result to its item by ``custom_id`` (results come in any
        order). Each item maps to its CallResult, or to the LLMOutputError that names it."""
        import anthropic
        from anthropic.lib._parse._transform import cached_json_schema, transform_schema

        if poll_s is None:  # how often to ask whether the batch has ended (GOLDEN_BATCH_POLL_S, default 10 s)
            poll_s = float(os.environ.get("GOLDEN_BATCH_POLL_S") or 10.0)
        sha = prompt_sha(instructions, repr(sorted(output.model_json_schema().items())))
        schema = transform_schema(cached_json_schema(pydantic.TypeAdapter(output)))
        ids = {f"item-{i}": name for i, (name, _) in enumerate(items)}  # custom_id: [A-Za-z0-9_-]{1,64}
        requests: list[Request] = [{"custom_id": f"item-{i}", "params": {
            "model": self.model, "max_tokens": max_tokens, "system": _system(instructions),
            "messages": [{"role": "user", "content": content}],
            "output_config": {"format": {"type": "json_schema", "schema": schema}}}}
            for i, (_, content) in enumerate(items)]
        try:
            batch = self._client.messages.batches.create(requests=requests)
            waited = 0.0
            while batch.processing_status != "ended":
                if progress:
                    c = batch.request_counts
                    progress(c.succeeded + c.errored + c.canceled + c.expired, len(items))
                if waited >= max_wait_s:
                    raise LLMOutputError(f"batch {batch.id}: not finished after {max_wait_s:.0f} s; fetch it later.")
                sleep(poll_s)
                waited += poll_s
                batch = self._client.messages.batches.retrieve(batch.id)
            out: dict[str, CallResult[T] | LLMOutputError] = {}
            for r in self._client.messages.batches.results(batch.id):
                name = ids.get(r.custom_id)
                if name is None:
                    continue  # not ours: never attach a result to the wrong item
                if r.result.type != "succeeded":
                    out[name] = LLMOutputError(f"{name}: the batch request {r.result.type}.",
                                               kind=f"batch_{r.result.type}", model=self.model, prompt_sha=sha,
                                               batch=True)
                    continue
                out[name] = self._interpret(name, r.result.message, output, sha, max_tokens, batch=True)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            kind, words, _ = _failure(exc, self.timeout)
            raise LLMOutputError(f"batch of {len(items)}: {words}, after the SDK's retries.", kind=kind,
                                 model=self.model, prompt_sha=sha, batch=True) from None
        for name in ids.values():
            out.setdefault(name, LLMOutputError(f"{name}: no result came back from the batch.", kind="missing",
                                                model=self.model, prompt_sha=sha, batch=True))
        if progress:
            progress(len(items), len(items))
        return out

    def _interpret(self, item: str, msg, output: type[T], sha: str, max_tokens: int, *, batch: bool) -> CallResult[T] | LLMOutputError:
        """A batch result message → CallResult (ok / refusal) or the error naming the item."""
        usage = _usage(msg.usage.model_dump() if msg.usage else {})
        if msg.stop_reason == "refusal":
            return CallResult(item, "refusal", None, usage, self.model, sha, batch)
        if msg.stop_reason == "max_tokens":
            return LLMOutputError(f"{item}: the answer was cut at max_tokens={max_tokens}.", kind="truncated",
                                  usage=usage, model=self.model, prompt_sha=sha, batch=batch)
        text = "".join(getattr(b, "text", "") for b in msg.content)
        try:
            parsed = output.model_validate_json(text)
        except pydantic.ValidationError as exc:
            return LLMOutputError(f"{item}: the model's answer does not match the expected format "
                                  f"({exc.error_count()} validation error(s)).", kind="invalid_output",
                                  usage=usage, model=self.model, prompt_sha=sha, batch=batch)
        return CallResult(item, "ok", parsed, usage, self.model, sha, batch)


def _system(instructions: str) -> list[TextBlockParam]:
    """The fixed instructions as one cached system block (paid once per cache window)."""
    return [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]


def _usage(u: dict) -> Usage:
    return Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0),
                 int(u.get("cache_creation_input_tokens") or 0), int(u.get("cache_read_input_tokens") or 0))
