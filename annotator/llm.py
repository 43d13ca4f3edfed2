"""The one Anthropic client of the studio.

* Key and endpoint come from the environment (``ANTHROPIC_API_KEY``, optional
  ``ANTHROPIC_BASE_URL``); the key is never stored, logged or shown.
* Structured output through ``client.messages.parse(..., output_format=<pydantic model>)``.
  ``stop_reason`` is checked before the content is trusted: a refusal is its own outcome,
  a ``max_tokens`` stop is a truncation error naming the item, and an answer that does not
  validate is an error naming the item.
* The fixed instructions go first as a cached system block (``cache_control``), so bulk
  jobs pay for them once.
* Rate limits and 5xx are retried with backoff (the SDK's retry loop, ``max_retries``).
* Every call's usage (input, output, cache write, cache read tokens) and cost are returned
  and recorded by the caller; the model id and the prompt sha are pinned in what it makes.
* Bulk jobs can go through the Message Batches API (:meth:`LLMClient.batch_structured`):
  half price, results matched to items by ``custom_id``.
* Held-out questions never reach a hosted model: :func:`refuse_held_out` is called before
  any request is built.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import pydantic

from golden_store.errors import GoldenError

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
    """Truncated or invalid model output, naming the item."""


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
            f"METHODOLOGY §3.8). Author it by hand."
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
    def cost_usd(self) -> float | None:
        cost = self.usage.cost_usd(self.model)
        return None if cost is None else cost * (BATCH_DISCOUNT if self.batch else 1.0)


class _LastResponse(threading.local):
    body: dict | None = None


class LLMClient:
    """Thin wrapper over ``anthropic.Anthropic``; one per process is enough."""

    def __init__(self, *, model: str | None = None, max_retries: int = 4, timeout: float = 120.0) -> None:
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
        import anthropic

        sha = prompt_sha(instructions, repr(sorted(output.model_json_schema().items())))
        system = _system(instructions)
        try:
            msg = self._client.messages.parse(
                model=self.model, max_tokens=max_tokens, system=system,
                messages=[{"role": "user", "content": content}], output_format=output,
            )
        except pydantic.ValidationError as exc:
            body = self._last.body or {}
            usage = _usage(body.get("usage") or {})
            if body.get("stop_reason") == "refusal":
                return CallResult(item, "refusal", None, usage, self.model, sha)
            if body.get("stop_reason") == "max_tokens":
                raise LLMOutputError(f"{item}: the answer was cut at max_tokens={max_tokens}; retry with a shorter "
                                     f"input or a higher limit.") from None
            raise LLMOutputError(f"{item}: the model's answer does not match the expected format "
                                 f"({exc.error_count()} validation error(s)).") from None
        except anthropic.APIStatusError as exc:
            raise LLMOutputError(f"{item}: the API answered {exc.status_code} after retries.") from None
        except anthropic.APIConnectionError:
            raise LLMOutputError(f"{item}: cannot reach the API ({os.environ.get('ANTHROPIC_BASE_URL') or 'default endpoint'}).") from None
        usage = _usage(msg.usage.model_dump() if msg.usage else {})
        if msg.stop_reason == "refusal":
            return CallResult(item, "refusal", None, usage, self.model, sha)
        if msg.stop_reason == "max_tokens":
            raise LLMOutputError(f"{item}: the answer was cut at max_tokens={max_tokens}; retry with a shorter "
                                 f"input or a higher limit.")
        parsed = next((b.parsed_output for b in msg.content if getattr(b, "parsed_output", None) is not None), None)
        if parsed is None:
            raise LLMOutputError(f"{item}: the model returned no structured answer.")
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
        requests = [{"custom_id": f"item-{i}", "params": {
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
                    out[name] = LLMOutputError(f"{name}: the batch request {r.result.type}.")
                    continue
                out[name] = self._interpret(name, r.result.message, output, sha, max_tokens, batch=True)
        except anthropic.APIStatusError as exc:
            raise LLMOutputError(f"batch of {len(items)}: the API answered {exc.status_code} after retries.") from None
        except anthropic.APIConnectionError:
            raise LLMOutputError("batch: cannot reach the API "
                                 f"({os.environ.get('ANTHROPIC_BASE_URL') or 'default endpoint'}).") from None
        for name in ids.values():
            out.setdefault(name, LLMOutputError(f"{name}: no result came back from the batch."))
        if progress:
            progress(len(items), len(items))
        return out

    def _interpret(self, item: str, msg, output: type[T], sha: str, max_tokens: int, *, batch: bool) -> CallResult[T] | LLMOutputError:
        """A batch result message → CallResult (ok / refusal) or the error naming the item."""
        usage = _usage(msg.usage.model_dump() if msg.usage else {})
        if msg.stop_reason == "refusal":
            return CallResult(item, "refusal", None, usage, self.model, sha, batch)
        if msg.stop_reason == "max_tokens":
            return LLMOutputError(f"{item}: the answer was cut at max_tokens={max_tokens}.")
        text = "".join(getattr(b, "text", "") for b in msg.content)
        try:
            parsed = output.model_validate_json(text)
        except pydantic.ValidationError as exc:
            return LLMOutputError(f"{item}: the model's answer does not match the expected format "
                                  f"({exc.error_count()} validation error(s)).")
        return CallResult(item, "ok", parsed, usage, self.model, sha, batch)


def _system(instructions: str) -> list[dict]:
    """The fixed instructions as one cached system block (paid once per cache window)."""
    return [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]


def _usage(u: dict) -> Usage:
    return Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0),
                 int(u.get("cache_creation_input_tokens") or 0), int(u.get("cache_read_input_tokens") or 0))
