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
* Held-out questions never reach a hosted model: :func:`refuse_held_out` is called before
  any request is built.
"""

from __future__ import annotations

import hashlib
import os
import threading
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


@dataclass(frozen=True)
class CallResult(Generic[T]):
    item: str
    outcome: str            # ok | refusal
    parsed: T | None
    usage: Usage
    model: str
    prompt_sha: str

    @property
    def cost_usd(self) -> float | None:
        return self.usage.cost_usd(self.model)


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
        system = [{"type": "text", "text": instructions, "cache_control": {"type": "ephemeral"}}]
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


def _usage(u: dict) -> Usage:
    return Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0),
                 int(u.get("cache_creation_input_tokens") or 0), int(u.get("cache_read_input_tokens") or 0))
