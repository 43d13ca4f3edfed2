"""Recording LLM calls: usage and cost per call, summed for the pages (SQL side)."""

from __future__ import annotations

from golden_store.db.store import Store, utcnow


def record_call(store: Store, *, purpose: str, item: str, model: str, prompt_sha: str, outcome: str,
                input_tokens: int, output_tokens: int, cache_creation_input_tokens: int,
                cache_read_input_tokens: int, cost_usd: float | None, actor: str) -> None:
    store.write(lambda cur: cur.execute(
        "INSERT INTO llm_calls (purpose, item, model, prompt_sha, outcome, input_tokens, output_tokens,"
        " cache_creation_input_tokens, cache_read_input_tokens, cost_usd, actor, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [purpose, item, model, prompt_sha, outcome, input_tokens, output_tokens, cache_creation_input_tokens,
         cache_read_input_tokens, cost_usd, actor, utcnow()]))


def usage_summary(store: Store, purpose: str | None = None) -> dict:
    row = store.read_row(
        "SELECT count(*), count(*) FILTER (outcome = 'refusal'), coalesce(sum(input_tokens), 0),"
        " coalesce(sum(output_tokens), 0), coalesce(sum(cache_creation_input_tokens), 0),"
        " coalesce(sum(cache_read_input_tokens), 0), sum(cost_usd), count(*) FILTER (cost_usd IS NULL),"
        " count(*) FILTER (starts_with(outcome, 'error'))"
        " FROM llm_calls WHERE ? IS NULL OR purpose = ?", [purpose, purpose])
    keys = ("calls", "refusals", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens",
            "cost_usd", "calls_without_price", "errors")
    return dict(zip(keys, row))
