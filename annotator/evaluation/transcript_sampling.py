"""Which transcripts a reviewer reads (METHODOLOGY §12.5: ten failures sampled across strata;
§11.1 step 6 and Case 3: a standing human sample of the judge's passes too).
Pure and seeded. Strata take turns, so a small sample meets every stratum; within a stratum,
failure types take turns, so one loud failure mode cannot fill the sample. Items reviewed
already are never drawn; items drawn before are drawn again only once every other unreviewed
item of their kind has had its turn. A draw may hold a share of judged passes
(:func:`sample_draw`), drawn with the same balance and placed among the failures at seeded
positions, so where a pass sits says nothing about it."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


# The share of a draw taken from the judge's passes (issue 27: reviewers read passes too, blind
# to the judge, and 'no_failure' confirms one). 0 draws failures only (the draw before issue 27).
DEFAULT_PASS_SHARE = 0.2


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


def _turns(candidates: Iterable[Candidate], rng: random.Random, done: set[str], seen: set[str]) -> list[str]:
    """Every unreviewed candidate in the order it is drawn: fresh (never drawn) ones first,
    balanced; then the earlier-drawn, still unreviewed ones, balanced."""
    pool = [c for c in candidates if c.item_id not in done]
    fresh = _ordered([c for c in pool if c.item_id not in seen], rng)
    again = _ordered([c for c in pool if c.item_id in seen], rng)
    return [c.item_id for c in fresh + again]


def sample_failures(candidates: Iterable[Candidate], n: int = 10, seed: int = 0, *,
                    reviewed: Iterable[str] = (), drawn_before: Iterable[str] = ()) -> list[str]:
    """Up to ``n`` item ids, balanced across strata and failure types. Fresh items (never
    drawn) come first; earlier-drawn, still unreviewed items fill up only when the fresh
    ones run out."""
    if n < 1:
        raise ValueError("Draw at least one transcript.")
    return _turns(candidates, random.Random(seed), set(reviewed), set(drawn_before))[:n]


def pass_quota(n: int, pass_share: float) -> int:
    """How many of ``n`` drawn items are judged passes at ``pass_share`` (rounded half up:
    10 at 0.2 is 2, 10 at 0.25 is 3, 1 at 0.2 is 0)."""
    if isinstance(pass_share, bool) or not (isinstance(pass_share, (int, float)) and 0.0 <= pass_share <= 1.0):
        raise ValueError(f"The share of passes is a number from 0 to 1, not {pass_share!r}.")
    return math.floor(n * pass_share + 0.5)


def sample_draw(failures: Iterable[Candidate], passes: Iterable[Candidate] = (), n: int = 10, seed: int = 0, *,
                pass_share: float = 0.0, reviewed: Iterable[str] = (),
                drawn_before: Iterable[str] = ()) -> list[str]:
    """Up to ``n`` item ids: :func:`pass_quota` of them judged passes, the rest failures,
    each kind drawn as :func:`sample_failures` draws (strata take turns, seeded, never a
    reviewed item, fresh before earlier-drawn). When one kind runs short the other fills the
    draw. The passes sit at seeded positions among the failures. ``pass_share`` 0 is the
    failures-only draw, item for item."""
    if n < 1:
        raise ValueError("Draw at least one transcript.")
    quota = pass_quota(n, pass_share)
    done, seen = set(reviewed), set(drawn_before)
    fail_order = _turns(failures, random.Random(seed), done, seen)
    if quota == 0:
        return fail_order[:n]
    rng = random.Random(f"passes:{seed}")  # its own stream: the failures drawn are those of the same seed
    pass_order = _turns(passes, rng, done, seen)
    k = min(len(pass_order), max(quota, n - len(fail_order)))
    chosen_fails, chosen_passes = fail_order[:n - k], pass_order[:k]
    total = len(chosen_fails) + len(chosen_passes)
    at = set(rng.sample(range(total), len(chosen_passes)))
    fi, pi = iter(chosen_fails), iter(chosen_passes)
    return [next(pi) if i in at else next(fi) for i in range(total)]
