"""The cascade at work (METHODOLOGY §11.1 step 6, §11.8): a calibrated judge labels the items
it is confident about, people label the band in between, and a standing human sample watches
the judge. Pure functions: the routing rule for one judged item, the stratified standing
sample, the judge-vs-people figures on that sample, and the cost of a cascade against
all-human and all-judge labeling.

Conventions as in :mod:`golden_store.scoring.calibration`: ``p`` is the judge's probability
of FAIL (after the calibration's isotonic map, when it has one); an item passes when its
grade reaches ``cut`` (the pass/fail cut on the 0-3 scale the lead chose; 2 by default).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golden_store.scoring.calibration import FAIL, KAPPA_GATE, PASS, band_zone, judge_report

LABELED, ESCALATED, REFUSED, ERROR = "labeled", "escalated", "refused", "error"
JUDGE, HUMAN, SAMPLE = "judge", "human", "sample"  # who labels the item in the end
DEFAULT_SAMPLE_SHARE = 0.10  # §11.1 step 6: 5-10% of judged items get human review forever
DEFAULT_CUT = 2


@dataclass(frozen=True)
class Decision:
    """What the cascade does with one judged item: ``outcome`` labeled (the judge's grade
    stands) or escalated (people label it), and why, in words a lead reads."""

    outcome: str
    reason: str


def route(p_used: float | None, grade: int | None, *, low: float, high: float, cut: int = DEFAULT_CUT,
          quote_ok: bool = True) -> Decision:
    """The band applied to one item the judge answered (§11.8): p ≤ low is the judge's PASS,
    p ≥ high its FAIL, anything between goes to people. The judge's label stands only when
    its grade is on the same side of ``cut`` as its p, and (for a pass) when its supporting
    quote is verbatim in the passage (§11.5's backstop); every doubt goes to a person."""
    if p_used is None or (isinstance(p_used, float) and math.isnan(p_used)):
        return Decision(ESCALATED, "the judge gave no probability")
    if grade is None:
        return Decision(ESCALATED, "the judge could not tell (insufficient)")
    zone = band_zone(p_used, low, high)  # the rule the calibration's checks count by
    if zone == PASS:
        if grade < cut:
            return Decision(ESCALATED, f"grade {grade} is a fail but p(FAIL) {p_used:.2f} is in the pass zone")
        if not quote_ok:
            return Decision(ESCALATED, "the supporting quote is not verbatim in the passage")
        return Decision(LABELED, f"p(FAIL) {p_used:.2f} ≤ {low:.2f}: the judge's pass")
    if zone == FAIL:
        if grade >= cut:
            return Decision(ESCALATED, f"grade {grade} is a pass but p(FAIL) {p_used:.2f} is in the fail zone")
        return Decision(LABELED, f"p(FAIL) {p_used:.2f} ≥ {high:.2f}: the judge's fail")
    return Decision(ESCALATED, f"p(FAIL) {p_used:.2f} is in the band ({low:.2f}, {high:.2f})")


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x1f{key}".encode()).hexdigest()


def draw_sample(labeled: Iterable[tuple[str, str]], *, share: float = DEFAULT_SAMPLE_SHARE, seed: int = 0,
                before: Mapping[str, tuple[int, int]] | None = None) -> set[str]:
    """The judge-labeled items that go to people as the standing sample, drawn per stratum.

    ``labeled``: (item key, stratum) of the items the judge just labeled; ``before``:
    stratum -> (items labeled earlier, of which sampled). The sample's size is round(share x
    every labeled item), allocated over the strata in proportion to their size: each stratum
    holds at least the floor of its exact share, and the items left over go, one each, to
    the strata with the largest remainders (ties in a seeded order) that have new items here,
    never past the ceiling of their share. Within a stratum the new items are taken in a
    seeded order of their keys. In one call the draw is exact; fed chunk by chunk (a job
    passes what earlier chunks drew through ``before``) every stratum stays between the
    floor and the ceiling of its share, and the total within one item per stratum of exact."""
    if not 0 <= share <= 1:
        raise ValueError(f"The human sample's share is between 0 and 1, not {share}.")
    by_stratum: dict[str, list[str]] = {}
    for key, stratum in labeled:
        by_stratum.setdefault(stratum or "unassigned", []).append(key)
    before = dict(before or {})
    sizes = {s: before.get(s, (0, 0))[0] + len(by_stratum.get(s, [])) for s in set(before) | set(by_stratum)}
    have = {s: before.get(s, (0, 0))[1] for s in sizes}
    exact = {s: share * n for s, n in sizes.items()}
    target = {s: max(math.floor(exact[s]), have[s]) for s in sizes}
    extra = math.floor(share * sum(sizes.values()) + 0.5) - sum(target.values())
    open_ = [s for s in by_stratum if target[s] < min(math.ceil(exact[s]), sizes[s])]
    for s in sorted(open_, key=lambda s: (-(exact[s] - math.floor(exact[s])), _rank(seed, s)))[:max(0, extra)]:
        target[s] += 1
    out: set[str] = set()
    for stratum, keys in by_stratum.items():
        k = target[stratum] - have[stratum]
        if k > 0:
            out.update(sorted(keys, key=lambda key: _rank(seed, key))[:k])
    return out


def binary(grades: Sequence[int], cut: int = DEFAULT_CUT) -> list[str]:
    return [PASS if g >= cut else FAIL for g in grades]


def sample_figures(judge: Sequence[int], human: Sequence[int], cut: int = DEFAULT_CUT,
                   gate: float = KAPPA_GATE) -> dict[str, Any]:
    """Judge against people on the items both labeled (the standing sample): Cohen's κ and
    FAIL-class recall at the pass/fail cut (§11.1 step 2), exact grade agreement, and whether
    κ still clears the gate. NaN when there is nothing to compare."""
    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge grades but {len(human)} human grades.")
    if not judge:
        return {"n": 0, "kappa": math.nan, "fail_recall": math.nan, "fail_precision": math.nan,
                "grade_agreement": math.nan, "clears_gate": False}
    r = judge_report(binary(human, cut), binary(judge, cut))
    return {"n": len(judge), "kappa": r["kappa"], "fail_recall": r["fail_recall"],
            "fail_precision": r["fail_precision"],
            "grade_agreement": sum(int(a == b) for a, b in zip(judge, human)) / len(judge),
            "clears_gate": bool(not math.isnan(r["kappa"]) and r["kappa"] >= gate)}


def drift_flags(windows: Sequence[Mapping[str, Any]], *, calibration_kappa: float | None,
                gate: float = KAPPA_GATE, min_n: int = 20) -> list[str]:
    """Why a lead must re-validate the judge (§11.6), from the sample's figures over time
    (oldest first; each window has n, kappa, fail_recall, model, rubric_sha): κ under the
    gate on a window of at least ``min_n`` items, κ more than 0.1 under the calibration's,
    FAIL recall under 0.8, and any change of model or rubric between windows."""
    flags: list[str] = []
    for i, w in enumerate(windows):
        name = w.get("window", f"window {i + 1}")
        k = w.get("kappa")
        if w.get("n", 0) >= min_n and k is not None and not math.isnan(k):
            if k < gate:
                flags.append(f"{name}: κ {k:.2f} on {w['n']} sampled items is under the gate {gate:.2f}")
            elif calibration_kappa is not None and k < calibration_kappa - 0.1:
                flags.append(f"{name}: κ {k:.2f} is {calibration_kappa - k:.2f} under the calibration's "
                             f"{calibration_kappa:.2f}")
            fr = w.get("fail_recall")
            if fr is not None and not math.isnan(fr) and fr < 0.8:
                flags.append(f"{name}: FAIL recall {fr:.2f} is under 0.8")
        if i and (w.get("model"), w.get("rubric_sha")) != (windows[i - 1].get("model"), windows[i - 1].get("rubric_sha")):
            flags.append(f"{name}: the judge changed (model or rubric); re-validate it on the calibration set")
    return flags


# ---- cost (§11.7, §11.8) -----------------------------------------------------------------------


def two_tier_cost(n_items: int, in_tok: float, first_tier_price_in: float, escalation_rate: float,
                  escalated_run_cost: float) -> dict[str, float]:
    """§11.8's arithmetic: a first tier that reads every item (input-priced only) plus the
    escalated share of a second tier's full-run cost."""
    first = n_items * in_tok / 1e6 * first_tier_price_in
    second = escalation_rate * escalated_run_cost
    return {"first_tier": first, "second_tier": second, "total": first + second}


def cascade_vs_alternatives(n_items: int, *, judge_cost_per_item: float, human_cost_per_item: float,
                            escalation_rate: float, sample_share: float = DEFAULT_SAMPLE_SHARE
                            ) -> dict[str, dict[str, float]]:
    """The studio's cascade (the judge reads every item; people label the band plus the
    standing sample of what the judge labeled) against all-human and all-judge labeling:
    $ and the items people label. All-judge has no human check at all (§11.1 step 6 says it
    cannot gate anything); it is listed as the floor of the cost, not as an option."""
    judged = n_items * (1 - escalation_rate)
    human_items = n_items * escalation_rate + judged * sample_share
    cascade = n_items * judge_cost_per_item + human_items * human_cost_per_item
    return {
        "all_human": {"usd": n_items * human_cost_per_item, "human_items": float(n_items)},
        "all_judge": {"usd": n_items * judge_cost_per_item, "human_items": 0.0},
        "cascade": {"usd": cascade, "human_items": human_items,
                    "human_items_saved": n_items - human_items},
    }
