"""Napkin cost of one judged eval run (METHODOLOGY §11.7): print it every run."""

from __future__ import annotations


def eval_run_cost(n_items: int, in_tok: float, out_tok: float, price_in: float, price_out: float, *,
                  batch: bool = True, cache_hit_frac: float = 0.0, cached_frac_of_input: float = 0.0) -> float:
    """USD for ``n_items`` calls of ``in_tok`` input and ``out_tok`` output tokens at the
    given per-million prices. The cached share of the input costs 0.1x when read from
    cache and 1.25x when written; the Batch API halves everything."""
    for name, v in (("cache_hit_frac", cache_hit_frac), ("cached_frac_of_input", cached_frac_of_input)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must be within [0, 1], got {v}")
    cached = cached_frac_of_input * (0.1 * cache_hit_frac + 1.25 * (1 - cache_hit_frac))
    eff_in = in_tok * ((1 - cached_frac_of_input) + cached)
    cost = n_items * (eff_in / 1e6 * price_in + out_tok / 1e6 * price_out)
    return cost * (0.5 if batch else 1.0)
