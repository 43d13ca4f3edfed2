"""Faithfulness as people would have judged it: the judge's claim verdicts corrected by the
reviewers' verdicts on their sample (prediction-powered inference, stratified by the judge's
verdict because the review sample is drawn evenly across verdicts).

Why beside the plain figure: the judge decides every claim, people a sample. The judge's share
of supported claims carries its bias, and its interval narrows as claims pile up, certifying the
bias. The corrected estimate moves by the bias people measured, and its interval widens by how
noisy the judge is against them. Both are shown, so a reader sees how much the judge's
number can be trusted, not only the number.

The unit is the claim: the share of a system's claims that are supported by the answer's context,
over the claims of its current, non-stale checks. A claim several reviewers reviewed counts as
the mean of their verdicts (each 1 for supported, 0 otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.db.store import Store
from golden_store.live import faithfulness
from golden_store.scoring.ppi import Estimate, Interval, Stratum, stratified_ppi_mean

SUPPORTED = "supported"
# what a page or command says beside a judge figure no person has labelled any item of yet
NO_SAMPLE = "no people's sample yet: plain figure only"


@dataclass(frozen=True)
class CorrectedFaithfulness:
    """One system's claim-level faithfulness: the judge's, the people's on their sample, and
    the judge's corrected by the people's, each with its 95% interval."""

    system: str
    claims: int
    reviewed: int
    per_verdict: dict[str, dict[str, int]]  # judge verdict -> claims, reviewed
    estimate: Estimate

    def as_dict(self) -> dict:
        iv = interval_dict
        e = self.estimate
        return {"system": self.system, "claims": self.claims, "reviewed": self.reviewed,
                "per_judge_verdict": self.per_verdict, "level": e.level, "judge_minus_people": e.bias,
                "corrected": iv(e.ppi), "judge_only": iv(e.judge_only), "people_only_sample": iv(e.people_only)}


def interval_dict(i: Interval) -> dict[str, Any]:
    """An interval in the API's and ``--json``'s shape."""
    return {"mean": i.mean, "low": i.low, "high": i.high, "n": i.n, "reason": i.reason}


def reported(e: Estimate, people_labelled_all: bool) -> Interval:
    """The corrected figure to report: the prediction-powered one, or, when people labelled
    every item the judge did (nothing left for the judge's labels to add), the people's own
    mean and interval over all of them (the stratified estimator would give each fully
    labelled stratum no sampling error at all)."""
    if people_labelled_all and e.people_only.mean is not None:
        return e.people_only
    return e.ppi


def _people_verdicts(store: Store, system: str | None) -> dict[tuple[int, int], list[float]]:
    out: dict[tuple[int, int], list[float]] = {}
    for r in faithfulness.current_reviews(store, system=system):
        out.setdefault((int(r["check_id"]), int(r["claim_no"])), []).append(1.0 if r["review"] == SUPPORTED else 0.0)
    return out


def corrected_faithfulness(store: Store, user: User, system: str | None = None) -> dict[str, CorrectedFaithfulness]:
    """Per system with checked claims (see the module docstring). Numbers of a system: for
    those who see results."""
    require(user, Permission.VIEW_RESULTS)
    people = _people_verdicts(store, system)
    by_system: dict[str, dict[str, tuple[list[float], list[float], list[float]]]] = {}
    for c in faithfulness.reviewable_claims(store, system):
        strata = by_system.setdefault(c["system"], {})
        ys, yhat, rest = strata.setdefault(c["verdict"], ([], [], []))
        judge = 1.0 if c["verdict"] == SUPPORTED else 0.0
        seen = people.get((c["check_id"], c["claim_no"]))
        if seen:
            ys.append(sum(seen) / len(seen))
            yhat.append(judge)
        else:
            rest.append(judge)
    out: dict[str, CorrectedFaithfulness] = {}
    for name, strata in sorted(by_system.items()):
        est = stratified_ppi_mean({v: Stratum(*parts) for v, parts in strata.items()})
        per = {v: {"claims": len(parts[0]) + len(parts[2]), "reviewed": len(parts[0])} for v, parts in strata.items()}
        out[name] = CorrectedFaithfulness(name, sum(p["claims"] for p in per.values()),
                                          sum(p["reviewed"] for p in per.values()), per, est)
    return out


def shown(mean: float | None, low: float | None, high: float | None, *, digits: int = 3) -> str:
    """``mean [low, high]`` (the mean alone without an interval; empty without a mean)."""
    if mean is None:
        return ""
    f = f".{digits}f"
    return f"{mean:{f}} [{low:{f}}, {high:{f}}]" if low is not None and high is not None else f"{mean:{f}}"


_shown = shown


def corrected_table(results: dict[str, CorrectedFaithfulness]) -> pd.DataFrame:
    """One row per system for a page: claims, reviewed, the judge's share and the corrected
    one with their intervals (or why the corrected one is undefined), and the judge's lean."""
    rows = []
    for name, c in results.items():
        e = c.estimate
        rows.append({"system": name, "claims": c.claims, "reviewed": c.reviewed,
                     "judge alone": _shown(e.judge_only.mean, e.judge_only.low, e.judge_only.high),
                     "corrected by reviews": _shown(e.ppi.mean, e.ppi.low, e.ppi.high) or (
                         NO_SAMPLE if c.reviewed == 0 else f"undefined: {e.ppi.reason}"),
                     "judge − people (reviewed)": None if e.bias is None else round(e.bias, 4)})
    return pd.DataFrame(rows)
