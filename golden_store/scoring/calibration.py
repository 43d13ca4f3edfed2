"""Judge calibration (METHODOLOGY §11.1, §11.2, §11.8): the judge report, reliability bins
and ECE, isotonic recalibration, the cascade band, the cascade report, and two bias
diagnostics. Pure functions over arrays.

Conventions: a calibration item is PASS or FAIL; ``y = 1`` means FAIL (the bad item, the
class a judge exists to catch) and a judge's ``p`` is its probability of FAIL. A judge may
also say "insufficient" (the escape hatch); for the cascade that counts as not-FAIL.

Graded calibration (§11.4): human and judge grades on an ordinal scale (0-3 relevance, or
nugget support none/partial/support as 0/1/2); :func:`graded_report` gives the per-grade
confusion matrix, unweighted and weighted κ, per-grade precision/recall and both
distributions, and :func:`at_cut` turns grades into PASS/FAIL at the lead's pass/fail cut
(pass = grade ≥ cut), where the binary figures and the band are computed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from golden_store.scoring.agreement import Weights, cohens_kappa, confusion, kappa_from_confusion, per_class
from golden_store.scoring.types import (Band, CascadeFigures, CascadeReport, GradedReport, JudgeReport, LengthBias,
                                        PositionBias, Reliability)

PASS, FAIL, INSUFFICIENT = "pass", "fail", "insufficient"
ESCALATE = "escalate"  # in the band: in pool grading, people label it (cascade.route)
KAPPA_GATE = 0.7  # §11.1 step 4

# The scales a calibration can be on, and their grades (ordered: weighted κ weighs by position).
SCALES: dict[str, tuple[int, ...]] = {"binary": (), "graded": (0, 1, 2, 3), "nugget": (0, 1, 2)}
NUGGET_GRADES = {"none": 0, "partial": 1, "support": 2}
DEFAULT_CUT = {"binary": 2, "graded": 2, "nugget": 2}  # nugget: support only is a pass


# ---- the judge report (§11.1) --------------------------------------------------------------------


def judge_report(human: Sequence[Any], judge: Sequence[Any], fail_label: Any = FAIL) -> JudgeReport:
    """Accuracy, Cohen's κ, per-class precision/recall (the judge against humans), the FAIL
    class's figures pulled out, and both label distributions. Never accuracy alone."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human labels but {len(judge)} judge labels.")
    if not human:
        raise ValueError("The calibration set is empty.")
    labels = sorted(set(human) | set(judge), key=str)
    per = per_class(list(human), list(judge), labels=labels)
    k = cohens_kappa(list(human), list(judge), labels=labels)
    fail = per.get(fail_label, {"precision": math.nan, "recall": math.nan})
    return {
        "n": len(human),
        "accuracy": float(np.mean([h == j for h, j in zip(human, judge)])),
        "kappa": float(k),
        "kappa_reason": k.reason,
        "passes_gate": (not math.isnan(k)) and k >= KAPPA_GATE,
        "per_class": per,
        "fail_recall": fail["recall"],
        "fail_precision": fail["precision"],
        "human_dist": dict(Counter(human)),
        "judge_dist": dict(Counter(judge)),
    }


# ---- graded calibration (§11.4) ------------------------------------------------------------------


def at_cut(grades: Sequence[Any], cut: int) -> list[Any]:
    """Grades → PASS (grade ≥ cut) / FAIL; anything that is not a grade (the judge's
    "insufficient", or no answer) is kept as it is."""
    out: list[Any] = []
    for g in grades:
        if isinstance(g, (int, np.integer)) and not isinstance(g, bool):
            out.append(PASS if g >= cut else FAIL)
        else:
            out.append(g)
    return out


def graded_report(human: Sequence[int], judge: Sequence[int], grades: Sequence[int] = (0, 1, 2, 3)) -> GradedReport:
    """The judge's grades against people's on an ordinal scale: the confusion matrix (rows
    human, columns judge, in ``grades`` order), Cohen's κ unweighted, linear and quadratic
    weighted, per-grade precision/recall (the judge against humans), both distributions and
    exact / within-one agreement. Only items both graded count (no "insufficient")."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human grades but {len(judge)} judge grades.")
    if not human:
        raise ValueError("No item has both a human and a judge grade.")
    labels = list(grades)
    bad = sorted({g for g in [*human, *judge] if g not in labels}, key=str)
    if bad:
        raise ValueError(f"grades must be one of {labels}, not {bad}.")
    cm, _ = confusion(list(human), list(judge), labels)
    weightings: tuple[tuple[str, Weights], ...] = (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic"))
    kappas = {name: kappa_from_confusion(cm, w) for name, w in weightings}
    h, j = np.asarray(human), np.asarray(judge)
    return {
        "n": len(human),
        "grades": labels,
        "confusion": cm.astype(int).tolist(),
        "kappa": float(kappas["unweighted"]),
        "kappa_linear": float(kappas["linear"]),
        "kappa_quadratic": float(kappas["quadratic"]),
        "kappa_reason": kappas["unweighted"].reason,
        "exact_agreement": float(np.mean(h == j)),
        "within_one": float(np.mean(np.abs(h - j) <= 1)),
        "per_grade": per_class(list(human), list(judge), labels=labels),
        "human_dist": {g: int(np.sum(h == g)) for g in labels},
        "judge_dist": {g: int(np.sum(j == g)) for g in labels},
    }


# ---- reliability and recalibration (§11.8) ---------------------------------------------------------


def _edges(p: np.ndarray, bins: int, strategy: str) -> np.ndarray:
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, bins + 1)
    if strategy == "quantile":
        # the quantiles as scikit-learn computes them (linspace(0, 1) * 100, not
        # linspace(0, 100)): the float edges, so the bins, are the same to the last bit
        return np.percentile(p, np.linspace(0, 1, bins + 1) * 100)
    raise ValueError(f"strategy must be 'uniform' or 'quantile', not {strategy!r}.")


def reliability(p: Sequence[float], y: Sequence[int], bins: int = 10,
                strategy: Literal["uniform", "quantile"] = "uniform") -> Reliability:
    """Per bin: mean p, share of FAIL (y = 1) and count; empty bins are dropped; ECE is the
    count-weighted gap. Bins are right-closed, (a, b], the first one [0, b] - the binning
    of ``sklearn.calibration.calibration_curve``, so the two can be compared."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    if len(pa) != len(ya) or not len(pa):
        raise ValueError("p and y must be non-empty and of equal length.")
    if pa.min() < 0 or pa.max() > 1:
        raise ValueError("p must be probabilities in [0, 1].")
    edges = _edges(pa, bins, strategy)
    ids = np.searchsorted(edges[1:-1], pa)  # side='left': a p on an edge goes to the lower bin
    counts = np.bincount(ids, minlength=len(edges) - 1)
    sum_p = np.bincount(ids, weights=pa, minlength=len(edges) - 1)
    sum_y = np.bincount(ids, weights=ya, minlength=len(edges) - 1)
    keep = counts > 0
    mean_p, frac = sum_p[keep] / counts[keep], sum_y[keep] / counts[keep]
    ece = float(np.sum(counts[keep] / len(pa) * np.abs(mean_p - frac)))
    return {"ece": ece, "bins": [(float(a), float(b), int(c)) for a, b, c in zip(mean_p, frac, counts[keep])],
            "edges": [float(e) for e in edges]}


@dataclass(frozen=True)
class IsotonicMap:
    """A fitted monotone map p → calibrated p: linear between the fitted thresholds and
    clipped outside them (how scikit-learn's IsotonicRegression(out_of_bounds="clip")
    predicts). Plain lists, so it can be stored, versioned and exported."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __call__(self, p: Sequence[float]) -> np.ndarray:
        pa = np.clip(np.asarray(p, dtype=float), self.x[0], self.x[-1])
        return np.interp(pa, self.x, self.y)

    def as_dict(self) -> dict[str, list[float]]:
        return {"x": list(self.x), "y": list(self.y)}


def fit_isotonic(p: Sequence[float], y: Sequence[int]) -> IsotonicMap:
    """Fit the monotone map on the FIT split only (scikit-learn's pool-adjacent-violators;
    not re-implemented here)."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip").fit(np.asarray(p, dtype=float), np.asarray(y, dtype=float))
    return IsotonicMap(tuple(float(v) for v in iso.X_thresholds_), tuple(float(v) for v in iso.y_thresholds_))


# ---- which way p points ----------------------------------------------------------------------------


def auc(p: Sequence[float], y: Sequence[int]) -> float:
    """ROC AUC of ``p`` as a score for FAIL (y = 1): the chance that a random FAIL item has a
    higher p than a random PASS item, ties counted half (the Mann-Whitney U over n₁·n₀, what
    ``sklearn.metrics.roc_auc_score`` gives). NaN when either class is missing. Pure numpy, so
    the page can tell which way a judge's column points before fitting anything to it."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=int)
    if len(pa) != len(ya):
        raise ValueError(f"{len(pa)} probabilities but {len(ya)} labels.")
    pos, neg = pa[ya == 1], np.sort(pa[ya == 0])
    if not len(pos) or not len(neg):
        return math.nan
    below = np.searchsorted(neg, pos, side="left")        # PASS items strictly under each FAIL item's p
    tied = np.searchsorted(neg, pos, side="right") - below  # PASS items at the same p
    return float((below.sum() + 0.5 * tied.sum()) / (len(pos) * len(neg)))


def _auc_text(value: float) -> str:
    """AUC to two places, or three when two would round a value under 0.5 up to 0.50."""
    two = f"{value:.2f}"
    return two if float(two) < 0.5 or value >= 0.5 else f"{value:.3f}"


def inverted_message(auc_value: float, column: str = "judge_p") -> str | None:
    """The refusal when ``column`` points the wrong way (AUC against FAIL under 0.5: it
    falls as items get worse, so it is most likely P(pass)); None when it points to FAIL
    or cannot be told (one class only)."""
    if math.isnan(auc_value) or auc_value >= 0.5:
        return None
    return (f"{column} decreases with FAIL (AUC {_auc_text(auc_value)} < 0.5): is it P(pass)? "
            f"Tick 'flip' to use 1 − {column}.")


# ---- checks a fitted calibration must pass ---------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One check of a fitted calibration, judged on the report split. ``severity`` says how a
    failure is shown: ``error`` (red: the calibration is wrong) or ``warning`` (yellow: it
    may be usable but the figures do not show it)."""

    name: str
    ok: bool
    severity: Literal["error", "warning"]
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "severity": self.severity, "message": self.message}


SAME_CUT = 1e-6  # band thresholds closer than this are one cut (pick_band nudges them by 1e-9)


def fit_checks(*, isotonic_y: Sequence[float] | None, band: Band | Mapping[str, float] | None,
               band_report: Mapping[str, Any] | None, max_missed_bad: float, max_false_fail: float,
               cascade: Mapping[str, Any] | None = None, p_fit: Sequence[float] | None = None,
               p_report: Sequence[float] | None = None) -> list[Check]:
    """Every check a calibration's fit must pass before a page may call it a success, each
    with the measured value against what it should be (METHODOLOGY §11.8):

    - the isotonic map is not a constant (a constant ranks nothing; its ECE of ~0 is the
      constant equalling the FAIL share, not calibration);
    - the band's two thresholds do not coincide (auto-PASS at p ≤ t and auto-FAIL at p ≥ t
      leaves no band to escalate). When they are a hair apart, the items between them still
      go to people in pool grading (an isotonic plateau sits there): the message counts them
      on each split (``p_fit``, ``p_report``: the p used, after the isotonic map) with
      :func:`band_zone`, the rule pool grading routes by, so it never disagrees with routing;
    - the band does not escalate every report-split item (the first tier would decide nothing);
    - on the REPORT split (rule 2), the share of bad items auto-passed and of good items
      auto-failed are within the targets the band was fitted for;
    - rule 1 (the cascade beats the decision model and is within noise of the LLM judge)
      holds on the report split, and not only trivially through one of the failures above.
    """
    out: list[Check] = []
    degenerate = False
    if isotonic_y is not None and len(isotonic_y):
        flat = float(np.ptp(np.asarray(isotonic_y, dtype=float))) == 0.0
        degenerate |= flat
        out.append(Check("isotonic_not_constant", not flat, "error",
                         f"The isotonic map is the constant {float(isotonic_y[0]):.3f}: it maps every p to the same "
                         "value, so it ranks nothing, and its ECE near 0 is meaningless. Check which way judge_p "
                         "points, or untick isotonic recalibration." if flat else
                         "The isotonic map is not a constant."))
    if band is not None:
        low, high = float(band["low"]), float(band["high"])
        one_cut = high - low < SAME_CUT
        degenerate |= one_cut
        out.append(Check("band_two_thresholds", not one_cut, "warning",
                         _one_cut_message(low, high, band, band_report, p_fit, p_report, isotonic_y is not None)
                         if one_cut else
                         f"The band has two thresholds ({low:.3f} < {high:.3f})."))
    if band_report is not None:
        esc = float(band_report.get("escalation_rate", math.nan))
        everything = not math.isnan(esc) and esc >= 1.0
        degenerate |= everything
        out.append(Check("escalates_less_than_all", not everything, "error",
                         f"The band escalates every item on the report split (escalation rate {esc:.3f}): the "
                         "first tier decides nothing and the cascade is the LLM judge at full cost." if everything
                         else f"Escalation rate {esc:.3f} on the report split."))
        for name, key, target, what in (
                ("missed_bad_within_target", "missed_bad_share", max_missed_bad, "bad items auto-passed"),
                ("false_fail_within_target", "false_fail_share", max_false_fail, "good items auto-failed")):
            v = band_report.get(key)
            if v is None or math.isnan(float(v)):
                out.append(Check(name, False, "warning",
                                 f"Share of {what}: the report split has no such items, so the target "
                                 f"{target:.2f} cannot be checked."))
                continue
            ok = float(v) <= target + 1e-12
            out.append(Check(name, ok, "error",
                             f"Share of {what} on the report split: {float(v):.3f} "
                             + (f"within the target {target:.2f}." if ok else
                                f"against the target {target:.2f}: the band misses it ({float(v) / target:.1f}× the "
                                "target)." if target > 0 else f"against the target {target:.2f}: the band misses it.")))
    if cascade is not None:
        holds = bool(cascade["rule1_ok"]) and not degenerate
        lo, hi = cascade["kappa_diff_vs_llm_ci"]
        why = (f"the cascade {'beats' if cascade['beats_decision_model'] else 'does NOT beat'} the decision model "
               f"(κ {cascade['cascade']['kappa']:.3f} vs {cascade['decision_model']['kappa']:.3f}) and is "
               f"{'within noise of' if cascade['within_noise_of_llm'] else 'clearly worse than'} the LLM judge "
               f"(κ difference 95% CI {lo:.3f} to {hi:.3f}) on the report split")
        kappas = [float(cascade[t]["kappa"]) for t in ("cascade", "decision_model", "llm_judge")]
        if any(math.isnan(k) for k in kappas) or math.isnan(hi):
            out.append(Check("rule1", False, "warning",
                             f"Rule 1 cannot be judged on the report split: κ is undefined there ({cascade['n']} "
                             "item(s), or one class only). Use a larger calibration set."))
            return out
        if cascade["rule1_ok"] and degenerate:
            msg = f"Rule 1 holds only trivially: {why}, but the fit is degenerate (see above)."
        else:
            msg = f"Rule 1 {'holds' if holds else 'fails'}: {why}."
        out.append(Check("rule1", holds, "error" if not cascade["rule1_ok"] else "warning", msg))
    return out


def _one_cut_message(low: float, high: float, band: Mapping[str, Any], band_report: Mapping[str, Any] | None,
                     p_fit: Sequence[float] | None, p_report: Sequence[float] | None, plateau: bool) -> str:
    """What a one-cut band really does on each split: how many items fall between the two
    thresholds (:func:`band_zone`: pool grading sends them to people) and how many keep the
    judge's label (auto-PASS / auto-FAIL)."""
    apart = "" if high == low else f" ({low:.10f} and {high:.10f}, {high - low:.1g} apart)"
    head = f"The band is one cut, not a band: auto-PASS at p ≤ {low:.3f} and auto-FAIL at p ≥ {high:.3f}{apart}."
    splits: list[str] = []
    between: list[float] = []
    n_between = 0
    for name, p in (("fit", p_fit), ("report", p_report)):
        if p is None:
            continue
        pa = np.asarray(p, dtype=float)
        d = band_decisions(pa, low, high)
        k, n = int(np.sum(d == ESCALATE)), len(d)
        n_between += k
        between += pa[d == ESCALATE].tolist()
        share = f"{k / n:.1%}" if n else "n/a"
        splits.append(f"{name} split {k} of {n} ({share}) to people, {n - k} keep the judge's label "
                      f"({int(np.sum(d == PASS))} auto-PASS, {int(np.sum(d == FAIL))} auto-FAIL)")
    if not splits:  # no p given: the escalation rates the band and its report carry (same rule)
        rates = [(name, r) for name, r in (("fit", band.get("escalation_rate")),
                                           ("report", (band_report or {}).get("escalation_rate")))
                 if r is not None and not math.isnan(float(r))]
        if not rates or all(float(r) == 0 for _, r in rates):
            return (head + " Nothing lies between them: the judge's label stands for every item, none goes to "
                    "people; the fit split gives no room for a band at these targets.")
        return (head + " Between them, " + " and ".join(f"{float(r):.1%} of the {name} split" for name, r in rates)
                + " go to people in pool grading; the judge's label stands for the rest.")
    if not n_between:
        return (head + " Nothing lies between them: " + "; ".join(splits)
                + ". The fit split gives no room for a band at these targets.")
    if any(math.isnan(x) for x in between):
        at = "some without a p"
    elif max(between) == min(between):
        at = f"all at p = {between[0]:.3f}" + (", a plateau of the isotonic map" if plateau else "")
    else:
        at = f"p from {min(between):.3f} to {max(between):.3f}"
    return head + f" Items between them ({at}) go to people in pool grading: " + "; ".join(splits) + "."


# ---- splits and the cascade band -----------------------------------------------------------------


def split(labels: Sequence[Any], fit_share: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic split stratified by label: (fit indexes, report indexes). A band is
    fitted on one and reported on the other (§11.8 rule 2)."""
    if not 0 < fit_share < 1:
        raise ValueError("fit_share is between 0 and 1.")
    rng = np.random.default_rng(seed)
    lab = np.asarray([str(v) for v in labels])
    fit: list[int] = []
    for value in sorted(set(lab)):
        idx = np.flatnonzero(lab == value)
        rng.shuffle(idx)
        fit += idx[: int(round(fit_share * len(idx)))].tolist()
    fit_arr = np.array(sorted(fit), dtype=int)
    report = np.setdiff1d(np.arange(len(lab)), fit_arr)
    return fit_arr, report


def pick_band(p: Sequence[float], y: Sequence[int], max_missed_bad: float = 0.02,
              max_false_fail: float = 0.02) -> Band:
    """The (low, high) band of the three-way cascade (§11.8): p ≤ low auto-PASS (at most
    ``max_missed_bad`` of the FAIL items land there), p ≥ high auto-FAIL (at most
    ``max_false_fail`` of the PASS items), in between escalate to the LLM judge. When the
    two budgets cross (clean separation) the band collapses to one cut."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=int)
    bad = np.sort(pa[ya == 1])
    good = np.sort(pa[ya == 0])[::-1]
    k_bad = int(max_missed_bad * len(bad))
    k_good = int(max_false_fail * len(good))
    low = float(bad[k_bad]) - 1e-9 if len(bad) else 1.0
    high = float(good[k_good]) + 1e-9 if len(good) else 0.0
    if low >= high:
        low = high = (low + high) / 2
    escalated = float(np.mean(band_decisions(pa, low, high) == ESCALATE)) if len(pa) else math.nan
    return {"low": low, "high": high, "escalation_rate": escalated}


def band_zone(p: float, low: float, high: float) -> str:
    """Where one p(FAIL) falls in a band: PASS (p ≤ low), FAIL (p ≥ high), else ESCALATE (in
    between, or no number). The one rule every reader of a band applies: pool grading's
    routing (``cascade.route``), :func:`band_decisions`, :func:`pick_band`'s escalation rate
    and the fit's checks, so what a check says goes to people is what pool grading sends."""
    if p <= low:
        return PASS
    if p >= high:
        return FAIL
    return ESCALATE


def band_decisions(p: Sequence[float] | np.ndarray, low: float, high: float) -> np.ndarray:
    """'pass' / 'fail' / 'escalate' per item for a band (:func:`band_zone` of each p)."""
    return np.array([band_zone(float(x), low, high) for x in np.asarray(p, dtype=float).ravel()], dtype="<U8")


def _as_binary(labels: Sequence[Any]) -> list[str]:
    """FAIL stays FAIL; PASS and the escape hatch are not-FAIL (for the binary gate figures)."""
    return [FAIL if v == FAIL else PASS for v in labels]


def cascade_report(p: Sequence[float], human: Sequence[str], llm: Sequence[str], low: float, high: float,
                   threshold: float = 0.5, n_boot: int = 1000, seed: int = 0) -> CascadeReport:
    """§11.8 rule 1 on the report split: κ and FAIL recall of (a) the decision model alone
    (FAIL when p ≥ threshold), (b) the LLM judge alone and (c) the cascade (band, LLM in
    between), with the escalation rate. The cascade must beat (a) and stay within noise of
    (b): 'within noise' = the 95% bootstrap interval of κ(cascade) − κ(LLM) reaches 0."""
    pa = np.asarray(p, dtype=float)
    h = _as_binary(human)
    dec = np.where(pa >= threshold, FAIL, PASS).tolist()
    lj = _as_binary(llm)
    band = band_decisions(pa, low, high)
    cas = [lj[i] if b == "escalate" else str(b) for i, b in enumerate(band)]

    def fig(pred: list[str]) -> CascadeFigures:
        r = judge_report(h, pred)
        return CascadeFigures(kappa=r["kappa"], fail_recall=r["fail_recall"], accuracy=r["accuracy"])

    figures = {"decision_model": fig(dec), "llm_judge": fig(lj), "cascade": fig(cas)}
    rng = np.random.default_rng(seed)
    hb = np.array([v == FAIL for v in h])
    cb = np.array([v == FAIL for v in cas])
    lb = np.array([v == FAIL for v in lj])
    diffs = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(pa), len(pa))
        kc = cohens_kappa(hb[idx], cb[idx], labels=[False, True])
        kl = cohens_kappa(hb[idx], lb[idx], labels=[False, True])
        if not (math.isnan(kc) or math.isnan(kl)):
            diffs.append(kc - kl)
    lo, hi = (float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))) if diffs else (math.nan, math.nan)
    beats = figures["cascade"]["kappa"] > figures["decision_model"]["kappa"]
    within = not math.isnan(hi) and hi >= 0
    return CascadeReport(n=len(pa), escalation_rate=float(np.mean(band == "escalate")) if len(pa) else math.nan,
                         decision_model=figures["decision_model"], llm_judge=figures["llm_judge"],
                         cascade=figures["cascade"], kappa_diff_vs_llm_ci=(lo, hi), beats_decision_model=bool(beats),
                         within_noise_of_llm=bool(within), rule1_ok=bool(beats and within))


# ---- bias diagnostics (§11.2) ----------------------------------------------------------------------


def length_bias(scores: Sequence[float], lengths: Sequence[float]) -> LengthBias:
    """Least-squares slope of the judge's score on answer length (per 100 characters), its
    correlation and n. A clear positive slope is verbosity bias."""
    s, ln = np.asarray(scores, dtype=float), np.asarray(lengths, dtype=float)
    if len(s) < 3 or np.ptp(ln) == 0:
        return {"slope_per_100_chars": math.nan, "r": math.nan, "n": len(s)}
    slope, _ = np.polyfit(ln / 100.0, s, 1)
    r = float(np.corrcoef(ln, s)[0, 1]) if np.ptp(s) > 0 else math.nan
    return {"slope_per_100_chars": float(slope), "r": r, "n": len(s)}


def position_bias(ab: Sequence[str], ba: Sequence[str]) -> PositionBias:
    """Pairwise judging run in both orders. ``ab`` is the winner ('A', 'B' or 'tie') with A
    shown first, ``ba`` the winner (in the same A/B names) with B shown first. The rate at
    which the two orders disagree is the judge's noise floor; the first-slot share says
    which way the bias leans."""
    if len(ab) != len(ba) or not ab:
        raise ValueError("ab and ba must be non-empty and of equal length.")
    disagree = float(np.mean([x != y for x, y in zip(ab, ba)]))
    first_slot = [x == "A" for x in ab] + [y == "B" for y in ba]
    decided = [x != "tie" for x in ab] + [y != "tie" for y in ba]
    share = sum(f for f, d in zip(first_slot, decided) if d) / max(1, sum(decided))
    return {"disagreement_rate": disagree, "first_slot_win_share": float(share), "n": len(ab)}
