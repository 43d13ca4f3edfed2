"""Which failures a reviewer reads (METHODOLOGY §12.5: ten failures sampled across strata).
Pure and seeded. Strata take turns, so a small sample meets every stratum; within a stratum,
failure types take turns, so one loud failure mode cannot fill the sample. Items reviewed
already are never drawn; items drawn before are drawn again only once every other unreviewed
failure has had its turn."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    item_id: str
    stratum: str
    failure_type: str = ""


def _interleave(groups: dict[str, list[Candidate]], rng: random.Random) -> list[Candidate]:
    """Round-robin over the groups (in a seeded order), each group already shuffled."""
    keys = sorted(groups)
    rng.shuffle(keys)
    queues = [list(groups[k]) for k in keys]
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _ordered(cands: Iterable[Candidate], rng: random.Random) -> list[Candidate]:
    by_stratum: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: defaultdict(list))
    for c in sorted(cands, key=lambda c: c.item_id):  # input order never changes the sample
        by_stratum[c.stratum][c.failure_type].append(c)
    per_stratum = {}
    for s in sorted(by_stratum):
        for g in by_stratum[s].values():
            rng.shuffle(g)
        per_stratum[s] = _interleave(dict(by_stratum[s]), rng)
    return _interleave(per_stratum, rng)


def sample_failures(candidates: Iterable[Candidate], n: int = 10, seed: int = 0, *,
                    reviewed: Iterable[str] = (), drawn_before: Iterable[str] = ()) -> list[str]:
    """Up to ``n`` item ids, balanced across strata and failure types. Fresh items (never
    drawn) come first; earlier-drawn, still unreviewed items fill up only when the fresh
    ones run out."""
    if n < 1:
        raise ValueError("Draw at least one transcript.")
    done, seen = set(reviewed), set(drawn_before)
    pool = [c for c in candidates if c.item_id not in done]
    rng = random.Random(seed)
    fresh = _ordered([c for c in pool if c.item_id not in seen], rng)
    again = _ordered([c for c in pool if c.item_id in seen], rng)
    return [c.item_id for c in (fresh + again)[:n]]
