"""Repeated trials of one evaluation (METHODOLOGY §10.8, "Nondeterminism is now structural -
measure it"): pass@1 averaged over trials, pass^k (all k trials pass) and per-item variance
across trials. Pure: takes the recorded rows as a frame, returns plain data; reading them
from the store is :func:`golden_store.live.results.trial_rows`.

Definitions (per metric; an *item* is a query, a *trial* one recorded repeat of the
evaluation, ``eval_results.trial``):

* A trial **passes** an item when the item's value is ``>= threshold`` (default 1.0: a
  binary success metric such as ``Success@1`` passes at 1; for a graded metric such as
  nDCG@10 choose the threshold that means "good enough").
* ``k`` is the number of trials in which the metric was recorded. Only items with a value
  in every one of those k trials count (``items``); the others are counted and named
  (``items_incomplete``), never filled in.
* **pass@1** = mean over items and trials of the pass indicator (= mean over the k trials
  of each trial's pass rate).
* **pass^k** = share of items that pass in all k trials; ``1 - pass^k`` is the share that
  failed at least once - the chance that a user who asks each question once, k times,
  sees a failure. This is the §10.8 figure that predicts experience.
* **pass^j** for j = 1..k: the unbiased estimator of "j independent tries all pass" from
  each item's c passes in k trials, C(c, j) / C(k, j), averaged over items (τ-bench's
  pass^k; j = 1 gives pass@1, j = k gives pass^k above).
* **pass@1^k** ("if independent"): what pass^k would be if every item passed each trial
  with the same rate pass@1. Observed pass^k above it means failures crowd on a few items
  (hard or badly specified ones); near it means failures are spread evenly.
* **per-item variance**: sample variance (n - 1 in the denominator) of an item's values
  over its k trials (of the value, not of the pass indicator), undefined with one trial;
  ``variance_mean`` is its mean over items, ``items_varying`` the items whose value is not
  the same in every trial, and ``highest_variance`` lists the top items (variance
  descending, then query id): read their transcripts before trusting their share of the
  mean (§10.8).
"""

from __future__ import annotations

from math import comb
from typing import TypedDict

import numpy as np
import pandas as pd

DEFAULT_PASS_THRESHOLD = 1.0
DEFAULT_TOP = 10

TRIALS_DEFINITION = {
    "pass": "a trial passes an item when its value >= the threshold",
    "pass_at_1": "mean over items and trials of the pass indicator (mean of the per-trial pass rates)",
    "pass_hat_k": "share of items that pass in all k trials (METHODOLOGY §10.8); 1 - pass^k = share failing at "
                  "least once",
    "pass_hat_j": "unbiased estimate of 'j tries all pass': mean over items of C(passes, j) / C(k, j)",
    "pass_hat_k_if_independent": "pass@1 ** k: pass^k if every item passed each trial with rate pass@1",
    "variance": "per item, sample variance (ddof=1) of the value over its k trials; mean over items",
    "items": "queries with a value in every trial of the metric; others are counted as incomplete and left out",
}


class ItemVariance(TypedDict):
    """One item of :data:`MetricTrials` ``highest_variance``."""

    query_id: str
    stratum: str | None
    mean: float            # the item's mean value over the k trials
    variance: float        # sample variance (ddof=1) of its values
    passes: int            # trials that passed (value >= threshold)
    values: list[float]    # its values, in trial order


class MetricTrials(TypedDict):
    """One metric of :func:`trials_report`."""

    k: int                              # trials in which the metric was recorded
    trials: list[int]                   # their numbers
    items: int                          # items with a value in all k trials (the ones counted)
    items_incomplete: int               # items missing some trial: left out
    incomplete: list[str]               # their ids (first 50)
    pass_at_1: float | None
    pass_at_1_per_trial: dict[int, float]
    pass_hat_k: float | None            # share of items passing all k trials
    at_least_one_failure: float | None  # 1 - pass_hat_k
    pass_hat_k_if_independent: float | None
    pass_hat_j: dict[int, float]        # j = 1..k
    mean_value: float | None
    variance_mean: float | None         # None with one trial
    items_varying: int
    highest_variance: list[ItemVariance]


class TrialsReport(TypedDict):
    """:func:`trials_report`: §10.8's repeat figures of one evaluation, per metric."""

    threshold: float
    metrics: dict[str, MetricTrials]
    definitions: dict[str, str]


def pass_hat(passes: int, k: int, j: int) -> float:
    """Unbiased estimate, from ``passes`` passes in ``k`` trials, of the chance that ``j``
    independent tries all pass: C(passes, j) / C(k, j) (0 when passes < j)."""
    if not 1 <= j <= k or not 0 <= passes <= k:
        raise ValueError(f"need 1 <= j <= k and 0 <= passes <= k (passes={passes}, k={k}, j={j})")
    return comb(passes, j) / comb(k, j)


def _metric(rows: pd.DataFrame, threshold: float, top: int) -> MetricTrials:
    trials = sorted(int(t) for t in rows["trial"].unique())
    k = len(trials)
    wide = rows.pivot_table(index="query_id", columns="trial", values="value", aggfunc="first")
    wide = wide.reindex(columns=trials)
    complete = wide.dropna()
    incomplete = sorted(set(wide.index) - set(complete.index))
    if complete.empty:
        return MetricTrials(k=k, trials=trials, items=0, items_incomplete=len(incomplete),
                            incomplete=incomplete[:50], pass_at_1=None, pass_at_1_per_trial={}, pass_hat_k=None,
                            at_least_one_failure=None, pass_hat_k_if_independent=None, pass_hat_j={},
                            mean_value=None, variance_mean=None, items_varying=0, highest_variance=[])
    values = complete.to_numpy(dtype=float)
    passed = values >= threshold
    passes = passed.sum(axis=1)
    pass_at_1 = float(passed.mean())
    pass_hat_k = float((passes == k).mean())
    strata = rows.drop_duplicates("query_id").set_index("query_id")["stratum"] if "stratum" in rows else None
    varying = int((values.max(axis=1) != values.min(axis=1)).sum())
    if k > 1:
        var = values.var(axis=1, ddof=1)
        # rounded for the order: the same values in another trial order differ in the last bits
        order = sorted(range(len(complete)), key=lambda i: (-round(float(var[i]), 12), complete.index[i]))
        highest = [ItemVariance(query_id=str(complete.index[i]),
                                stratum=(None if strata is None or pd.isna(strata.get(complete.index[i]))
                                         else str(strata.get(complete.index[i]))),
                                mean=float(values[i].mean()), variance=float(var[i]), passes=int(passes[i]),
                                values=[float(v) for v in values[i]])
                   for i in order[:top] if var[i] > 0]
        variance_mean: float | None = float(var.mean())
    else:
        highest, variance_mean = [], None
    return MetricTrials(
        k=k, trials=trials, items=int(len(complete)), items_incomplete=len(incomplete), incomplete=incomplete[:50],
        pass_at_1=pass_at_1, pass_at_1_per_trial={t: float(passed[:, n].mean()) for n, t in enumerate(trials)},
        pass_hat_k=pass_hat_k, at_least_one_failure=1.0 - pass_hat_k, pass_hat_k_if_independent=pass_at_1 ** k,
        pass_hat_j={j: float(np.mean([pass_hat(int(c), k, j) for c in passes])) for j in range(1, k + 1)},
        mean_value=float(values.mean()), variance_mean=variance_mean, items_varying=varying,
        highest_variance=highest)


def trials_report(rows: pd.DataFrame, *, threshold: float = DEFAULT_PASS_THRESHOLD, metrics: list[str] | None = None,
                  top: int = DEFAULT_TOP) -> TrialsReport:
    """``rows``: long frame (query_id, trial, metric, value[, stratum]) of one evaluation's
    recorded trials. Per metric: pass@1, pass^k, pass^j, per-item variance and the ``top``
    highest-variance items (module docstring for each definition)."""
    missing = {"query_id", "trial", "metric", "value"} - set(rows.columns)
    if missing:
        raise ValueError(f"trial rows need columns query_id, trial, metric, value (missing {sorted(missing)})")
    names = sorted(rows["metric"].unique())
    if metrics:
        unknown = [m for m in metrics if m not in names]
        if unknown:
            raise ValueError(f"no recorded metric {', '.join(unknown)}; recorded: {', '.join(names)}")
        names = list(metrics)
    return {"threshold": float(threshold),
            "metrics": {m: _metric(rows[rows["metric"] == m], threshold, top) for m in names},
            "definitions": dict(TRIALS_DEFINITION)}


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def format_trials(report: TrialsReport, evaluation_id: str) -> str:
    """The report as text for the screen."""
    lines = [f"evaluation {evaluation_id}: a trial passes an item when value >= {report['threshold']:g}"]
    for m, e in report["metrics"].items():
        k = e["k"]
        lines.append(f"{m}: {k} trial(s) {e['trials']}, {e['items']} item(s)"
                     + (f", {e['items_incomplete']} left out (missing a trial)" if e["items_incomplete"] else ""))
        if e["pass_at_1"] is None:
            continue
        per = sorted(e["pass_at_1_per_trial"].values())
        lines.append(f"  pass@1 {_f(e['pass_at_1'])}  (per trial {per[0]:.4f} .. {per[-1]:.4f})")
        lines.append(f"  pass^{k} {_f(e['pass_hat_k'])}  (all {k} trials pass); at least one failure in {k}: "
                     f"{_f(e['at_least_one_failure'])}")
        lines.append(f"  pass@1^{k} {_f(e['pass_hat_k_if_independent'])}  (pass^{k} if failures were independent "
                     f"and even)")
        if k == 1:
            lines.append("  one trial: record repeats with golden score ... --record ID --trial K")
            continue
        lines.append(f"  per-item variance: mean {_f(e['variance_mean'])}; {e['items_varying']} item(s) vary across "
                     f"trials")
        for it in e["highest_variance"]:
            lines.append(f"    {it['query_id']:<14} {str(it['stratum'] or '-'):<12} mean {it['mean']:.4f}  "
                         f"var {it['variance']:.4f}  passes {it['passes']}/{k}")
    return "\n".join(lines)
