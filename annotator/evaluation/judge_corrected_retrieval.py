"""A system's retrieval figure on the relevance judge's labels, corrected by the pool's standing
human sample (prediction-powered inference, issue 40 item 7).

**What is estimated.** The unit is the item: one result in a system's top k whose latest judge
decision is a label (the judge's grade stands, or the item went to the standing sample). The
figure is the share of those items that are relevant (grade >= the cut, 2 by default, the rule
binary measures use on a version): the precision of the system's top k over the items the judge
labeled, counted item by item across questions (a micro average, not a mean of per-question
precisions). Items people graded outright (the band sent them to people, a round gave them) and
items nobody labeled are counted beside it but are not part of the estimate: the first carry
people's labels already, the second no label at all.

**Why that estimand.** PPI needs a mean over items, with people's labels on a random sample of
the same items. The standing sample is exactly that: pool grading draws it from the items the
judge labeled, at one share of every stratum (proportional allocation, seeded order inside a
stratum), so the sampled items in a system's top k are a random subset of its judge-labeled top
k. A mean of per-item labels is linear, so the correction (mean of person − judge on the
sample) carries over unchanged. The sample is not drawn per judge grade (unlike claim reviews),
so no stratification by grade is needed; when the pool-grading jobs behind a system's items drew
their samples at different shares, the items of each job are a stratum of their own (an item's
chance of being sampled depends on its job's share) and the strata are combined by their size.

**What is not offered, and why: nDCG@10 and other per-question rank metrics.** nDCG of one
question is a non-linear function of all of its top-k labels together; a per-question PPI
needs questions whose *whole* top k people graded, drawn at random among questions. The
standing sample draws items, not questions: with a 10% sample the chance that all ten of a
question's top ten are people-graded is 10^-10, and the questions where it happens would not be
a random draw. So nDCG@10 on judge labels is reported plain (``--labels human+judge``) and the
correctable figure is the item-level one here.

A sampled item waiting for people counts with the judge's label among the unsampled (it is a
random member of the same population either way). A person's grade of an item whose judge
label stands is not a draw of the sample and is not used as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from annotator.evaluation.judge_corrected import NO_SAMPLE, interval_dict, reported, shown
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store
from golden_store.live import judged_topk
from golden_store.scoring.cascade import DEFAULT_CUT
from golden_store.scoring.ppi import Estimate, Interval, Stratum, ppi_mean, stratified_ppi_mean

DEFAULT_K = 10
NOT_OFFERED = ("nDCG@10 is not corrected: it is a function of a question's whole top 10, and the standing sample "
               "draws single items (people grade ~10% of them), not whole rankings of randomly drawn questions, so "
               "no question's nDCG has an unbiased people's reading to correct it by. The item-level share is "
               "corrected instead.")


@dataclass(frozen=True)
class CorrectedRetrieval:
    """One system's relevant share of its judge-labeled top-k items: the judge's, and the
    judge's corrected by people's grades of the standing sample, each with its interval."""

    system: str
    k: int
    cut: int
    items: int                  # judge-labeled items in the top k (the estimate's N + n)
    sampled: int                # of which in the standing sample and graded by people
    sampled_waiting: int        # in the standing sample, not graded by people yet
    stratified_by_job: bool     # the jobs drew at different shares: one stratum per job
    top_k: dict[str, int]       # results, judge_labeled, people_only, unlabeled
    estimate: Estimate

    @property
    def has_sample(self) -> bool:
        return self.sampled > 0

    @property
    def corrected(self) -> Interval:
        """The corrected figure (the people's own mean when they labelled every item)."""
        return reported(self.estimate, self.sampled == self.items)

    def as_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"system": self.system, "k": self.k, "cut": self.cut, "metric": f"relevant share@{self.k} (judge-labeled items)",
                "items": self.items, "sampled": self.sampled, "sampled_waiting": self.sampled_waiting,
                "stratified_by_job": self.stratified_by_job, "top_k": self.top_k, "level": e.level,
                "judge_minus_people": e.bias, "judge_only": interval_dict(e.judge_only),
                "corrected": interval_dict(self.corrected) if self.has_sample else None,
                "people_only_sample": interval_dict(e.people_only),
                "note": None if self.has_sample else NO_SAMPLE}


def check_options(k: int, cut: int) -> None:
    if not 1 <= k <= 1000:
        raise ValidationError(f"k (-k / ?k=) is a rank from 1 to 1000, not {k}.")
    if cut not in (1, 2, 3):
        raise ValidationError(f"The relevance cut (--cut / ?cut=) is a grade of 1, 2 or 3 (relevant = grade >= cut), "
                              f"not {cut}.")


def corrected_retrieval(store: Store, user: User, *, system: str | None = None, k: int = DEFAULT_K,
                        cut: int = DEFAULT_CUT) -> dict[str, CorrectedRetrieval]:
    """Per active system with judge-labeled items in its top ``k`` (see the module docstring).
    Numbers of a system: for those who see results."""
    require(user, Permission.VIEW_RESULTS)
    check_options(k, cut)
    counts = judged_topk.topk_counts(store, k, system)
    by_system: dict[str, list[dict[str, Any]]] = {}
    for r in judged_topk.judge_labeled(store, k, system):
        by_system.setdefault(str(r["system"]), []).append(r)
    out: dict[str, CorrectedRetrieval] = {}
    for name, rows in sorted(by_system.items()):
        strata: dict[str, tuple[list[float], list[float], list[float]]] = {}
        shares = {float(r["sample_share"]) for r in rows}
        per_job = len(shares) > 1
        for r in rows:
            ys, yhat, rest = strata.setdefault(str(r["job_id"]) if per_job else "all", ([], [], []))
            judge = 1.0 if int(r["judge_grade"]) >= cut else 0.0
            if r["route"] == "sample" and r["human_grade"] is not None:
                ys.append(1.0 if int(r["human_grade"]) >= cut else 0.0)
                yhat.append(judge)
            else:
                rest.append(judge)
        # the judge labelled the sampled items too: its share of all of them, corrected by the
        # people-minus-judge difference on the sample (no difference leaves the judge's share)
        if per_job:
            est = stratified_ppi_mean({s: Stratum(*parts) for s, parts in strata.items()}, judge_over="all")
        else:
            est = ppi_mean(*strata["all"], judge_over="all")
        sampled = sum(len(p[0]) for p in strata.values())
        waiting = sum(1 for r in rows if r["route"] == "sample" and r["human_grade"] is None)
        out[name] = CorrectedRetrieval(name, k, cut, len(rows), sampled, waiting, per_job,
                                       counts.get(name, {}), est)
    return out


def corrected_table(results: dict[str, CorrectedRetrieval]) -> pd.DataFrame:
    """One row per system for a page: items, sampled, the judge's share and the corrected one
    with their intervals (or why the corrected one is missing), and the judge's lean."""
    rows = []
    for name, c in results.items():
        e = c.estimate
        rows.append({"system": name, f"judge-labeled in top {c.k}": c.items, "sampled (graded by people)": c.sampled,
                     "judge alone": shown(e.judge_only.mean, e.judge_only.low, e.judge_only.high),
                     "corrected by people's sample": (
                         NO_SAMPLE if not c.has_sample else shown(c.corrected.mean, c.corrected.low, c.corrected.high)
                         or f"undefined: {c.corrected.reason}"),
                     "judge − people (sampled)": None if e.bias is None else round(e.bias, 4),
                     f"people only in top {c.k}": c.top_k.get("people_only", 0),
                     f"unlabeled in top {c.k}": c.top_k.get("unlabeled", 0)})
    return pd.DataFrame(rows)


def line(c: CorrectedRetrieval) -> str:
    """One system's reading for a terminal."""
    e = c.estimate

    def iv(i: Any) -> str:
        return shown(i.mean, i.low, i.high, digits=4) or "undefined"

    head = (f"{c.system}: relevant share of its {c.items} judge-labeled top-{c.k} item(s) (grade >= {c.cut}): judge "
            f"alone {iv(e.judge_only)}")
    if not c.has_sample:
        return f"{head}; {NO_SAMPLE}"
    ppi = iv(c.corrected) if c.corrected.mean is not None else f"undefined ({c.corrected.reason})"
    how = ("people graded every one: their own mean" if c.sampled == c.items else
           "prediction-powered, per pool-grading job (their sample shares differ)" if c.stratified_by_job
           else "prediction-powered")
    return (f"{head}; corrected by people's grades of {c.sampled} sampled item(s) ({how}): {ppi}; "
            f"judge minus people on the sample {e.bias:+.4f}")
