"""Cost you can see (METHODOLOGY §11.7: "print it every run"): the estimate of an LLM job
before it runs (tokens, $ synchronous and batch, with and without the cached prefix), whether
its cached prefix is long enough to be cached at all (§11.5), and afterwards what it really
used (tokens, cache writes and reads, hit rate, $).

Token counts before a run are estimates from characters (no tokenizer runs offline); they
are shown with "≈" and the real counts come back from the API after the run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from annotator.judge import llm
from golden_store.scoring.cost import eval_run_cost

CHARS_PER_TOKEN = 3.5  # English prose is ~4 characters a token; 3.5 errs on the side of more tokens

# The minimum prefix a model caches (§11.5): a shorter cached block is silently not cached.
# Prefix match on the model id, as for prices.
MIN_CACHEABLE: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4": 1024,
    "claude-haiku-4": 4096,
    "claude-3-5-haiku": 2048,
}


def approx_tokens(chars: int | float) -> int:
    return int(math.ceil(chars / CHARS_PER_TOKEN))


def min_cacheable(model: str) -> int | None:
    return next((n for prefix, n in MIN_CACHEABLE.items() if model.startswith(prefix)), None)


def _price(model: str) -> tuple[float, float, float, float] | None:
    return next((p for prefix, p in llm.PRICES.items() if model.startswith(prefix)), None)


@dataclass(frozen=True)
class Estimate:
    """An LLM job's expected size and price. ``usd`` maps (batch, cached) to dollars; None
    when the model's price is unknown. ``caches`` says whether the prefix can be cached,
    ``cache_note`` why not when it cannot."""

    purpose: str
    model: str
    n_items: int
    prefix_tokens: int
    item_tokens: int
    out_tokens: int
    caches: bool
    cache_note: str
    usd: dict[tuple[bool, bool], float | None]

    @property
    def input_tokens(self) -> int:
        return self.n_items * (self.prefix_tokens + self.item_tokens)

    def lines(self) -> list[str]:
        """The estimate as a person reads it (CLI and pages print the same lines)."""
        out = [f"{self.purpose}: {self.n_items} call(s) to {self.model}, ≈{self.input_tokens:,} input tokens "
               f"(≈{self.prefix_tokens:,} cached prefix + ≈{self.item_tokens:,} per item) and ≈"
               f"{self.n_items * self.out_tokens:,} output tokens."]
        if self.usd[(False, False)] is None:
            out.append(f"Cost: unknown (no price for {self.model} in the studio's table); tokens are above.")
        else:
            c = self.caches
            out.append(f"Cost ≈ ${self.usd[(False, c)]:.2f} synchronous, ≈ ${self.usd[(True, c)]:.2f} with the "
                       f"Batch API (half price){' with the cached prefix' if c else ''}; without caching "
                       f"≈ ${self.usd[(False, False)]:.2f} / ${self.usd[(True, False)]:.2f}.")
        out.append(self.cache_note)
        return out


def estimate(purpose: str, *, model: str, n_items: int, prefix_chars: int, item_chars: float,
             out_tokens: int) -> Estimate:
    """Estimate a job of ``n_items`` calls sharing one cached prefix of ``prefix_chars``
    characters, each with ``item_chars`` characters of its own (mean) and about
    ``out_tokens`` of output."""
    prefix, item = approx_tokens(prefix_chars), approx_tokens(item_chars)
    floor = min_cacheable(model)
    if floor is None:
        caches, note = False, f"Caching: unknown minimum cacheable prefix for {model}; estimated without caching."
    elif prefix < floor:
        caches, note = False, (f"Caching will not apply: the cached prefix is ≈{prefix:,} tokens and {model} caches "
                               f"prefixes of {floor:,}+ tokens (methodology §11.5); every call pays the full input.")
    else:
        caches, note = True, (f"Caching applies: the ≈{prefix:,}-token prefix is over {model}'s minimum of "
                              f"{floor:,}; it is written once, then read at 0.1x.")
    price = _price(model)
    usd: dict[tuple[bool, bool], float | None] = {}
    total_in = prefix + item
    frac = prefix / total_in if total_in else 0.0
    hit = (n_items - 1) / n_items if n_items > 1 else 0.0  # the first call writes, the rest read
    for batch in (False, True):
        for cached in (False, True):
            usd[(batch, cached)] = None if price is None else eval_run_cost(
                n_items, total_in, out_tokens, price[0], price[1], batch=batch,
                cache_hit_frac=hit if cached else 0.0, cached_frac_of_input=frac if cached else 0.0)
    return Estimate(purpose, model, n_items, prefix, item, out_tokens, caches, note, usd)


@dataclass
class JobUsage:
    """What a job really used, summed over its calls (failed calls included: they were paid)."""

    model: str = ""
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    usd: float = 0.0
    usd_known: bool = True
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, result: "llm.CallResult | llm.LLMOutputError") -> None:
        if isinstance(result, llm.LLMOutputError):
            usage, model, outcome = result.usage, result.model or self.model, f"error:{result.kind}"
            cost = usage.cost_usd(model)
            cost = None if cost is None else cost * (llm.BATCH_DISCOUNT if result.batch else 1.0)
        else:
            usage, model, outcome, cost = result.usage, result.model, result.outcome, result.cost_usd
        self.model = self.model or model
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_write_tokens += usage.cache_creation_input_tokens
        self.cache_read_tokens += usage.cache_read_input_tokens
        if cost is None:
            self.usd_known = False
        else:
            self.usd += cost
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    @property
    def cache_hit_rate(self) -> float:
        """Share of the cacheable prefix tokens read from cache (NaN when nothing was cached)."""
        seen = self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / seen if seen else math.nan

    def lines(self) -> list[str]:
        hit = self.cache_hit_rate
        return [
            f"Used: {self.calls} call(s), {self.input_tokens:,} input + {self.cache_write_tokens:,} cache-write + "
            f"{self.cache_read_tokens:,} cache-read tokens, {self.output_tokens:,} output tokens.",
            ("Cache: nothing was written to or read from the cache (the prefix was not cached)." if math.isnan(hit)
             else f"Cache hit rate {hit:.0%} of the cached prefix's tokens."),
            f"Cost: ${self.usd:.4f}" + ("" if self.usd_known else " (plus calls to a model with no known price)") + ".",
        ]

    def as_dict(self) -> dict:
        return {"model": self.model, "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cache_write_tokens": self.cache_write_tokens,
                "cache_read_tokens": self.cache_read_tokens, "usd": round(self.usd, 6), "usd_known": self.usd_known,
                "cache_hit_rate": None if math.isnan(self.cache_hit_rate) else round(self.cache_hit_rate, 4),
                "outcomes": dict(self.outcomes)}


# ---- helpers for the jobs that show an estimate, ask, then run (issue 27 item 4) -------------


def estimate_items(purpose: str, *, model: str, prefix: str, items: list[str], out_tokens: int) -> Estimate:
    """:func:`estimate` from the real inputs: ``prefix`` the cached instructions, ``items`` the
    user turn of each call (their mean length is the per-item size)."""
    mean = sum(len(x) for x in items) / len(items) if items else 0.0
    return estimate(purpose, model=model, n_items=len(items), prefix_chars=len(prefix), item_chars=mean,
                    out_tokens=out_tokens)


def expected_usd(est: Estimate, *, batch: bool) -> float | None:
    """What the job is expected to cost as it will run: batch or not, cached when the prefix
    can be cached (None: unknown price)."""
    return est.usd[(batch, est.caches)]


def money(usd: float | None) -> str:
    if usd is None:
        return "unknown"
    return f"${usd:.2f}" if usd >= 0.01 else f"${usd:.4f}"


def plan_lines(est: Estimate, *, batch: bool) -> list[str]:
    """The estimate's lines and the one that says how this job will run."""
    how = "through the Message Batches API" if batch else "synchronously"
    return [*est.lines(), f"This job runs {how}: ≈ {money(expected_usd(est, batch=batch))}."]


def confirm_label(est: Estimate, *, batch: bool) -> str:
    """The words of the button (or prompt) that confirms the spend."""
    usd = expected_usd(est, batch=batch)
    return f"Confirm: spend ≈ {money(usd)}" if usd is not None else "Confirm: spend (price unknown)"


def usage_of(results: "list[llm.CallResult | llm.LLMOutputError]", model: str = "") -> JobUsage:
    """A JobUsage summed over the calls a job made."""
    job = JobUsage(model=model)
    for r in results:
        job.add(r)
    return job


@dataclass(frozen=True)
class JobPlan:
    """What a job is about to do, shown before it runs and confirmed: the estimate, whether it
    goes through the Batch API, the items it will send and those it skips (with why)."""

    estimate: Estimate
    batch: bool
    items: list[str]
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = (plan_lines(self.estimate, batch=self.batch) if self.items
               else [f"{self.estimate.purpose}: nothing will be sent, so nothing is spent."])
        if self.estimate.caches and self.estimate.n_items == 1:
            out.append("One call: it writes the prefix to the cache (1.25x); only calls within the next 5 minutes "
                       "read it.")
        if self.skipped:
            ids = [item for item, _ in self.skipped]
            out.append(f"{len(ids)} item(s) will be skipped and never sent: {', '.join(ids[:10])}"
                       f"{', ...' if len(ids) > 10 else ''} (held out, no evidence, or waiting for a round; the "
                       "job says why for each).")
        return out

    @property
    def usd(self) -> float | None:
        return expected_usd(self.estimate, batch=self.batch)

    @property
    def confirm_label(self) -> str:
        return confirm_label(self.estimate, batch=self.batch)
