"""Paired comparison of two scored runs, overall and per stratum (and per cohort), with the
gate verdict (METHODOLOGY §13, §14.2) after a multiple-comparison correction over every
verdict it gives (§13.3). Pure: takes per-query frames, returns plain data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from golden_store.scoring.stats import CORRECTIONS, adjust_pvalues, paired_bootstrap
from golden_store.scoring.types import Comparison

CORRECTION_NAMES = {"bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "no correction"}


def _verdict(r: dict, *, correction: str, alpha: float, min_meaningful: float) -> tuple[str, bool]:
    """The gate (§14.2) on one comparison whose ``p_adj`` is known: FAIL when the whole interval
    is below zero, the drop is at least ``min_meaningful`` and (under a correction) the adjusted
    p is at most ``alpha``; WARN when credible but small; PASS otherwise. Also: is the delta
    significant (either direction) after the correction."""
    excludes_zero = r["ci95"][1] < 0 or r["ci95"][0] > 0
    significant = excludes_zero and (correction == "none" or r["p_adj"] <= alpha)
    if significant and r["ci95"][1] < 0:
        return ("FAIL" if abs(r["delta"]) >= min_meaningful else "WARN"), True
    return "PASS", significant


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, *, metrics: list[str] | None = None,
                 min_meaningful: float = 0.02, n_boot: int = 10_000, seed: int = 0,
                 correction: str = "bh", alpha: float = 0.05,
                 cohorts: Mapping[str, str] | pd.Series | None = None, cohort_by: str | None = None,
                 query_ids: Iterable[str] | None = None) -> Comparison:
    """``a``/``b``: long frames (query_id, stratum, metric, value) of the baseline and the
    candidate. Only queries scored in both runs are compared (paired); how many were left
    out is reported.

    Every verdict given (per metric: overall and each stratum; with ``cohorts``, a mapping
    query_id -> cohort label, also each cohort overall and each stratum within it) is one
    comparison; the p-values (paired bootstrap, two-sided) of all of them are adjusted
    together by ``correction`` (``bh``, ``bonferroni`` or ``none``) and a regression fails
    the gate only when it is significant after it. ``query_ids``: pair only these queries (the
    held-out slice, a tier); the caller says which and why."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
    if query_ids is not None:
        keep = set(query_ids)
        a, b = a[a["query_id"].isin(keep)], b[b["query_id"].isin(keep)]
    common_metrics = sorted(set(a["metric"]) & set(b["metric"]))
    metrics = [m for m in (metrics or common_metrics) if m in common_metrics]
    cohort_of = pd.Series(cohorts, dtype=object) if cohorts is not None else None
    out: Any = {"metrics": {}, "min_meaningful": min_meaningful, "n_boot": n_boot, "seed": seed}
    tests: list[dict] = []  # every comparison, in output order: the family the correction covers

    def test(va, vb) -> dict:
        r = paired_bootstrap(va, vb, n_boot, seed, level=1 - alpha).as_dict()
        tests.append(r)
        return r

    def per_stratum(pa, pb, qids, strata) -> dict:
        res = {}
        for s in sorted(strata.loc[qids].unique()):
            q = qids[strata.loc[qids].to_numpy() == s]
            res[s] = test(pa.loc[q, "value"].to_numpy(), pb.loc[q, "value"].to_numpy())
        return res

    for m in metrics:
        pa = a[a["metric"] == m].set_index("query_id")
        pb = b[b["metric"] == m].set_index("query_id")
        common = pa.index.intersection(pb.index).sort_values()
        strata = pa.loc[common, "stratum"].fillna("?")
        entry = test(pa.loc[common, "value"].to_numpy(), pb.loc[common, "value"].to_numpy())
        entry.update(only_in_a=int(len(pa.index.difference(common))), only_in_b=int(len(pb.index.difference(common))))
        entry["strata"] = per_stratum(pa, pb, common, strata)
        if cohort_of is not None:
            labels = pd.Series([cohort_of.get(q, "?") for q in common], index=common).fillna("?").astype(str)
            entry["cohorts"] = {}
            for c in sorted(labels.unique()):
                q = common[labels.to_numpy() == c]
                ce = entry["cohorts"][c] = test(pa.loc[q, "value"].to_numpy(), pb.loc[q, "value"].to_numpy())
                ce["strata"] = per_stratum(pa, pb, q, strata)
        out["metrics"][m] = entry
    for r, p_adj in zip(tests, adjust_pvalues([r["p"] for r in tests], correction) if tests else []):
        r["p_adj"] = p_adj
        verdict, r["significant"] = _verdict(r, correction=correction, alpha=alpha, min_meaningful=min_meaningful)
        items = list(r.items())
        r.clear()
        r.update({"verdict": verdict, **dict(items)})  # the verdict first, as before
    out["correction"] = {"method": correction, "name": CORRECTION_NAMES[correction], "alpha": alpha,
                         "comparisons": len(tests)}
    if cohort_of is not None:
        out["cohort_by"] = cohort_by or "cohort"
    return out


def _p(e: dict) -> str:
    return f"p {e['p']:.4f} p_adj {e['p_adj']:.4f}" if "p_adj" in e else f"p {e['p']:.3f}"


def format_comparison(c: dict, a: str, b: str) -> str:
    corr = c.get("correction")
    rule = f"FAIL = whole {round((1 - corr['alpha']) * 100)}% CI below 0" if corr else "FAIL = whole 95% CI below 0"
    if corr and corr["method"] != "none":
        rule += f", adjusted p <= {corr['alpha']}"
    lines = [f"{b} vs {a} (delta = {b} - {a}; {rule} and |delta| >= {c['min_meaningful']})"]
    if corr:
        lines.append(f"correction: {corr['name']} over {corr['comparisons']} comparisons (every metric x "
                     f"overall and each stratum{' and each ' + c['cohort_by'] + ' cohort' if c.get('cohort_by') else ''}); "
                     f"p = paired bootstrap p (two-sided, {c['n_boot']} resamples), p_adj = p after the correction")
    for note in c.get("scope", []):
        lines.append(f"scope: {note}")

    def stratum_lines(strata: dict, indent: str) -> None:
        for s, se in strata.items():
            lines.append(f"{indent}{s:<12} {se['verdict']:<4} {se['delta']:+.4f}  [{se['ci95'][0]:+.4f}, {se['ci95'][1]:+.4f}]"
                         f"  W/L/T {se['wins']}/{se['losses']}/{se['ties']}  n {se['n']}  {_p(se)}")

    for m, e in c["metrics"].items():
        lines.append(f"{m}: {e['verdict']}  delta {e['delta']:+.4f}  CI [{e['ci95'][0]:+.4f}, {e['ci95'][1]:+.4f}]  "
                     f"{_p(e)}  W/L/T {e['wins']}/{e['losses']}/{e['ties']}  n {e['n']}")
        stratum_lines(e["strata"], "  ")
        for co, ce in e.get("cohorts", {}).items():
            lines.append(f"  {c.get('cohort_by', 'cohort')} {co}: {ce['verdict']}  delta {ce['delta']:+.4f}  "
                         f"CI [{ce['ci95'][0]:+.4f}, {ce['ci95'][1]:+.4f}]  {_p(ce)}  "
                         f"W/L/T {ce['wins']}/{ce['losses']}/{ce['ties']}  n {ce['n']}")
            stratum_lines(ce["strata"], "    ")
        if e["only_in_a"] or e["only_in_b"]:
            lines.append(f"  (not paired: {e['only_in_a']} queries only in {a}, {e['only_in_b']} only in {b})")
    return "\n".join(lines)
