"""Generation-side metrics (METHODOLOGY §9.2, §10.5, §10.6, §10.9): pure functions."""

from __future__ import annotations

import math

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from golden_store.core.canonical import canonical_text
from golden_store.scoring.types import AbstentionScores, CitationScores, MovementShares, NuggetScores

# ---- reranker movement (§9.2) ---------------------------------------------------------------

MOVEMENTS = ("rescued", "broke", "kept", "missed_both")


def rerank_movement(pre: Sequence[str], post: Sequence[str], relevant: Iterable[str], final_k: int) -> str:
    """What reranking did to one query: rescued (a relevant result entered the top
    ``final_k``), broke (it left), kept, or missed_both (upstream problem)."""
    rel = set(relevant)
    pre_hit = bool(set(pre[:final_k]) & rel)
    post_hit = bool(set(post[:final_k]) & rel)
    if post_hit and not pre_hit:
        return "rescued"
    if pre_hit and not post_hit:
        return "broke"
    return "kept" if pre_hit else "missed_both"


def movement_breakdown(outcomes: Iterable[str]) -> MovementShares:
    """Share of queries per movement (the 4-way aggregate), plus the count ``n``."""
    c = Counter(outcomes)
    n = sum(c.values())
    out: Any = {m: (c[m] / n if n else 0.0) for m in MOVEMENTS}
    out["n"] = n
    return out


# ---- abstention (§10.5) -----------------------------------------------------------------------


def abstention_scores(rows: Iterable[tuple]) -> AbstentionScores:
    """rows: (answerable, outcome) where outcome is True/"abstained" (declined), False/
    "answered", or "refusal" / "refused" (the model's safety refusal: its own category,
    counted but not scored as an abstention). Returns precision, recall (1 - fabrication rate
    on unanswerables), over-refusal rate, and the counts.

    The rates are §10.5's formulas as written, ``x / max(d, 1)``: an empty denominator gives
    0.0. :func:`golden_store.scoring.abstention.abstention_report` is the studio's report: an
    undefined rate is None with a reason, each rate has a bootstrap interval."""
    tp = fp = fn = tn = refusals = 0
    for answerable, outcome in rows:
        if outcome in ("refusal", "refused"):
            refusals += 1
            continue
        abstained = outcome is True or outcome == "abstained"
        if not answerable and abstained:
            tp += 1
        elif answerable and abstained:
            fp += 1
        elif not answerable:
            fn += 1
        else:
            tn += 1
    return {
        "abstention_precision": tp / max(tp + fp, 1),
        "abstention_recall": tp / max(tp + fn, 1),
        "over_refusal_rate": fp / max(fp + tn, 1),
        "declined_unanswerable": tp, "declined_answerable": fp, "fabricated": fn, "answered": tn,
        "refusals": refusals,
    }


# ---- citations (§10.6) ------------------------------------------------------------------------


@dataclass(frozen=True)
class Citation:
    doc_id: str
    start: int
    end: int
    quote: str | None = None        # the cited text, when the system gives it
    supports: bool | None = None    # does it support the claim (a judge's or person's verdict)


@dataclass(frozen=True)
class Claim:
    requires_citation: bool
    citations: tuple[Citation, ...] = field(default=())


def citation_valid(c: Citation, documents: Mapping[str, str]) -> bool:
    """A citation is valid when it resolves to a real span of a real document and, if it
    quotes, the quote is the text at that span (up to canonicalization). Mechanical."""
    raw = documents.get(c.doc_id)
    if raw is None or not (0 <= c.start < c.end <= len(raw)):
        return False
    return c.quote is None or canonical_text(raw[c.start:c.end]) == canonical_text(c.quote)


def citation_scores(claims: Sequence[Claim], documents: Mapping[str, str]) -> CitationScores:
    """precision = cited spans that support their claim / cited spans; recall = claims
    needing a citation that have a valid supporting one / claims needing one; validity =
    citations resolving to a real span / citations. An invalid citation never counts as
    support."""
    cites = [(cl, c) for cl in claims for c in cl.citations]
    valid = [citation_valid(c, documents) for _, c in cites]
    supporting = [v and bool(c.supports) for v, (_, c) in zip(valid, cites)]
    need = [cl for cl in claims if cl.requires_citation]
    covered = sum(1 for cl in need if any(citation_valid(c, documents) and c.supports for c in cl.citations))
    n = len(cites)
    return {
        "citation_precision": sum(supporting) / n if n else 0.0,
        "citation_recall": covered / len(need) if need else 1.0,
        "citation_validity": sum(valid) / n if n else 1.0,
        "citations": n, "invalid_citations": n - sum(valid),
    }


# ---- nuggets (§10.9) ---------------------------------------------------------------------------

Support = Literal["support", "partial", "none"]


@dataclass(frozen=True)
class Nugget:
    id: str
    text: str
    vital: bool


# What V is for a question without a vital nugget (and A for one without any nugget).
# METHODOLOGY §10.9's own code: undefined (NaN) - there is nothing vital to recall, so the
# question is left out of a system's V mean and counted apart. castorini's nuggetizer scores
# it 0, which pulls every system's mean down by the share of such questions; kept by name for
# comparison with published TREC RAG figures.
NO_VITAL_CONVENTIONS = ("methodology", "nuggetizer")
NO_VITAL_DEFINITIONS = {
    "methodology": "a question with no vital nugget has V undefined (METHODOLOGY §10.9): left out of the V "
                   "means and counted",
    "nuggetizer": "a question with no vital nugget scores V = 0 (castorini's nuggetizer convention)",
}


def nugget_scores(nuggets: Sequence[Nugget], assigned: Mapping[str, Support],
                  no_vital: str = "methodology") -> NuggetScores:
    """TREC-RAG scores for one answer: V_strict / V over vital nuggets, A_strict / A over
    all; "partial" earns 0.5 in the non-strict ones; an unassigned nugget is "none". With no
    vital nugget V is NaN (``no_vital="methodology"``, §10.9) or 0 (``"nuggetizer"``)."""
    if no_vital not in NO_VITAL_CONVENTIONS:
        raise ValueError(f"no_vital must be one of {', '.join(NO_VITAL_CONVENTIONS)}, got {no_vital!r}")
    for label in assigned.values():
        if label not in ("support", "partial", "none"):
            raise ValueError(f"nugget assignment must be support, partial or none, got {label!r}")
    empty = math.nan if no_vital == "methodology" else 0.0

    def score(ns: Sequence[Nugget], strict: bool) -> float:
        if not ns:
            return empty
        credit = {"support": 1.0, "partial": 0.0 if strict else 0.5, "none": 0.0}
        return sum(credit[assigned.get(n.id, "none")] for n in ns) / len(ns)

    vital = [n for n in nuggets if n.vital]
    return {"v_strict": score(vital, True), "v": score(vital, False),
            "a_strict": score(nuggets, True), "a": score(nuggets, False)}
