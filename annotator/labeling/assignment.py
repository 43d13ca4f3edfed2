"""Who labels what (METHODOLOGY §3.7): a stratified calibration sample everyone labels, and
the work split once κ clears the bar, with a permanent overlap share labelled twice so drift
stays visible. Pure and seeded: the same inputs give the same plan.

Items are any hashable keys; ``strata`` maps each item to its stratum.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def _by_stratum(items: Sequence[K], strata: Mapping[K, str], rng: random.Random) -> dict[str, list[K]]:
    groups: dict[str, list[K]] = defaultdict(list)
    for it in sorted(items, key=repr):  # input order never changes the plan
        groups[strata.get(it) or ""].append(it)
    for g in groups.values():
        rng.shuffle(g)
    return dict(sorted(groups.items()))


def pick_calibration(items: Sequence[K], strata: Mapping[K, str], n: int, seed: int = 0) -> list[K]:
    """``n`` items spread over the strata in proportion to their size (largest remainder),
    each stratum with at least one item while n allows: a calibration round should meet
    every kind of question, not just the commonest."""
    if n <= 0:
        raise ValueError("A calibration round needs at least one item.")
    rng = random.Random(seed)
    groups = _by_stratum(items, strata, rng)
    total = sum(len(g) for g in groups.values())
    if n >= total:
        return [it for g in groups.values() for it in g]
    quota = {s: min(1, len(g)) if n >= len(groups) else 0 for s, g in groups.items()}
    left = n - sum(quota.values())
    share = {s: left * len(g) / total for s, g in groups.items()}
    for s in groups:
        quota[s] += min(int(share[s]), len(groups[s]) - quota[s])
    # hand out what rounding left over by largest remainder, never beyond a stratum's size
    order = sorted(groups, key=lambda s: (-(share[s] - int(share[s])), s))
    while sum(quota.values()) < n:
        for s in order:
            if sum(quota.values()) < n and quota[s] < len(groups[s]):
                quota[s] += 1
    picked = [it for s, g in groups.items() for it in g[:quota[s]]]
    rng.shuffle(picked)
    return picked


def plan_split(items: Sequence[K], strata: Mapping[K, str], annotators: Sequence[str], overlap: float = 0.1,
               seed: int = 0) -> dict[str, list[K]]:
    """Split ``items`` among ``annotators``: in every stratum, ceil(overlap × size) items go
    to two annotators (pairs rotate so every pair meets), the rest to one; loads are
    balanced to within one item. Returns annotator → items."""
    people = sorted(set(annotators))
    if len(people) < 1:
        raise ValueError("Split the work among at least one annotator.")
    if not 0 <= overlap <= 1:
        raise ValueError(f"The overlap share is between 0 and 1, not {overlap}.")
    if overlap > 0 and len(people) < 2:
        raise ValueError("An overlap share needs at least two annotators.")
    rng = random.Random(seed)
    plan: dict[str, list[K]] = {p: [] for p in people}
    pairs = [(a, b) for i, a in enumerate(people) for b in people[i + 1:]]
    rng.shuffle(pairs)
    pair_i = 0
    singles: list[K] = []
    for _, group in _by_stratum(items, strata, rng).items():
        n_double = math.ceil(overlap * len(group)) if overlap > 0 else 0
        for it in group[:n_double]:
            a, b = pairs[pair_i % len(pairs)]
            pair_i += 1
            plan[a].append(it)
            plan[b].append(it)
        singles.extend(group[n_double:])
    for it in singles:  # always to the least loaded (ties by name): balanced to within one
        who = min(people, key=lambda p: (len(plan[p]), p))
        plan[who].append(it)
    return plan
