"""The §5.4 chunking report card for a chunker's *passage run*, at a fixed token budget
(METHODOLOGY §5.1, §5.2): pure functions over plain data (no database).

For each query with evidence spans (the excerpts), the run's passages are taken in rank
order until the next one would overflow the budget (k floats: a chunker with larger chunks
gets fewer passages), and the taken tokens are scored against the excerpt tokens:

* recall     = |E ∩ R| / |E|       (E: the query's excerpt tokens, each counted once)
* precision  = |E ∩ R| / |R|       (R: the taken tokens *with repeats*: overlap pays)
* IoU        = |E ∩ R| / |E ∪ R|   (Chroma's formulation, R as a set in the union)
* Precision_Ω = the precision had every passage of the run that holds an excerpt token been
  taken: the chunking's token-efficiency ceiling. A run shows only the chunks it retrieved
  (for any query, at any rank), so Ω is computed over those; ``omega_coverage`` says what
  share of the excerpt tokens those chunks hold (1.0: every excerpt token is in some chunk
  of the run, and Ω is the chunking's own ceiling).

Tokens are positional (document, index) identities from :class:`~golden_store.scoring.tokens.DocTokens`
(a word/punctuation splitter, not a model tokenizer); a passage's size is the number of
tokens it overlaps. Each figure is a mean over queries with its per-query standard deviation
(population SD, ``np.std``, as Chroma's code); a query with excerpts and no passage in the run
scores 0 and counts (``missing``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, TypedDict

import numpy as np

from golden_store.scoring.tokens import DocTokens, precision_omega, take_at_budget, token_metrics

TOKENIZER = r"positional word/punctuation tokens (\w+ or one symbol; golden_store.scoring.tokens.DocTokens)"
Figure = Literal["recall", "precision", "precision_omega", "iou", "k", "tokens"]
FIGURES: tuple[Figure, ...] = ("recall", "precision", "precision_omega", "iou", "k", "tokens")


class MeanSD(TypedDict):
    mean: float
    sd: float


class QueryCard(TypedDict):
    """One query of :func:`budget_card`."""

    query_id: str
    recall: float
    precision: float
    precision_omega: float
    iou: float
    k: int               # passages taken within the budget
    tokens: int          # tokens those passages hold (with repeats)
    excerpt_tokens: int
    omega_coverage: float


class BudgetCard(TypedDict):
    """:func:`budget_card`: the §5.4 figures of one passage run at a fixed token budget."""

    budget_tokens: int
    n_queries: int
    missing: list[str]               # queries with excerpts and no passage in the run (scored 0)
    first_over_budget: list[str]     # queries whose first passage alone overflows the budget (k = 0)
    chunks: int                      # distinct passages the run shows
    mean_chunk_tokens: float
    omega_coverage: float            # mean share of excerpt tokens inside the run's chunks
    figures: dict[str, MeanSD]       # recall, precision, precision_omega, iou, k, tokens
    per_query: list[QueryCard]


def _mean_sd(values: Sequence[float]) -> MeanSD:
    if not len(values):
        return {"mean": float("nan"), "sd": float("nan")}
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std())}


def budget_card(documents: Mapping[str, str], excerpts: Iterable[tuple[str, str, int, int]],
                run: Mapping[str, Sequence[tuple[str, int, int]]], budget_tokens: int) -> BudgetCard:
    """The report card of one passage run. ``documents``: {doc_id: text} (the offsets'
    text); ``excerpts``: (query_id, doc_id, start, end) evidence spans; ``run``: {query_id:
    [(doc_id, start, end), ...] in rank order}. Queries of the run without excerpts are not
    scored (the caller counts them)."""
    if budget_tokens < 1:
        raise ValueError(f"the token budget must be a positive number of tokens, got {budget_tokens}")
    excerpts = list(excerpts)
    needed = {d for _, d, _, _ in excerpts} | {p[0] for passages in run.values() for p in passages}
    tok = DocTokens({d: documents[d] for d in needed if d in documents})  # only the documents in play
    ex: dict[str, set[int]] = {}
    ex_docs: dict[str, set[str]] = {}
    for qid, doc, s, e in excerpts:
        ex.setdefault(qid, set()).update(tok.tokens(doc, int(s), int(e)))
        ex_docs.setdefault(qid, set()).add(doc)
    ex = {q: t for q, t in ex.items() if t}
    chunk_tokens: dict[tuple[str, int, int], list[int]] = {}
    for passages in run.values():
        for key in passages:
            if key not in chunk_tokens:
                chunk_tokens[key] = list(tok.tokens(key[0], int(key[1]), int(key[2])))
    covered = set().union(*chunk_tokens.values()) if chunk_tokens else set()
    by_doc: dict[str, list[list[int]]] = {}
    for key, toks in chunk_tokens.items():
        by_doc.setdefault(key[0], []).append(toks)
    rows: list[QueryCard] = []
    missing, over = [], []
    for qid in sorted(ex):
        e_toks = ex[qid]
        ranked = list(run.get(qid, ()))
        if not ranked:
            missing.append(qid)
        taken, used = take_at_budget(ranked, budget_tokens, lambda c: len(chunk_tokens[c]))
        if ranked and not taken:
            over.append(qid)
        m = token_metrics(e_toks, [t for c in taken for t in chunk_tokens[c]])
        holding = [c for d in sorted(ex_docs[qid]) for c in by_doc.get(d, ())]  # Ω looks at these only
        rows.append({"query_id": qid, "recall": m["recall"], "precision": m["precision"],
                     "precision_omega": precision_omega(e_toks, holding), "iou": m["iou"],
                     "k": len(taken), "tokens": used, "excerpt_tokens": len(e_toks),
                     "omega_coverage": len(e_toks & covered) / len(e_toks)})
    sizes = [len(t) for t in chunk_tokens.values()]
    return {
        "budget_tokens": int(budget_tokens),
        "n_queries": len(rows),
        "missing": missing,
        "first_over_budget": over,
        "chunks": len(chunk_tokens),
        "mean_chunk_tokens": float(np.mean(sizes)) if sizes else 0.0,
        "omega_coverage": float(np.mean([r["omega_coverage"] for r in rows])) if rows else float("nan"),
        "figures": {f: _mean_sd([r[f] for r in rows]) for f in FIGURES},
        "per_query": rows,
    }
