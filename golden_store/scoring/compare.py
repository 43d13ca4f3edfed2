"""Paired comparison of two scored runs, overall and per stratum (and per cohort), with the
gate verdict (METHODOLOGY §13, §14.2) after a multiple-comparison correction over every
verdict it gives (§13.3). Pure: takes per-query frames, returns plain data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from golden_store.core.errors import ValidationError
from golden_store.scoring.cells import MIN_CELL_N, SMALL_CELL_N
from golden_store.scoring.measures import parse_measures
from golden_store.scoring.stats import CORRECTIONS, adjust_pvalues, paired_bootstrap, sign_flip_p
from golden_store.scoring.types import Comparison

CORRECTION_NAMES = {"bh": "Benjamini-Hochberg", "bonferroni": "Bonferroni", "none": "no correction"}
TOO_FEW = "too few"  # the verdict of a cell under MIN_CELL_N questions (golden_store.scoring.cells)


def verdict_text(cell: Mapping[str, Any]) -> str:
    """A cell's verdict as people read it: PASS / WARN / FAIL, or "too few (n = k)"."""
    return f"{TOO_FEW} (n = {cell['n']})" if cell["verdict"] == TOO_FEW else str(cell["verdict"])


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


def _cell(va, vb, *, n_boot: int, seed: int, alpha: float, min_n: int) -> dict:
    """One comparison cell: too few (no test, no p) below ``min_n`` questions; else the
    bootstrap interval with a sign-flip p under :data:`SMALL_CELL_N` questions and the
    bootstrap p from there on (``test`` says which)."""
    va, vb = np.asarray(va, dtype=float), np.asarray(vb, dtype=float)
    d = vb - va
    if d.size < min_n:
        return {"verdict": TOO_FEW, "delta": float(d.mean()) if d.size else 0.0, "ci95": None, "p": None,
                "n": int(d.size), "wins": int((d > 0).sum()), "losses": int((d < 0).sum()),
                "ties": int((d == 0).sum()), "test": None, "significant": False}
    r = paired_bootstrap(va, vb, n_boot, seed, level=1 - alpha).as_dict()
    if d.size < SMALL_CELL_N:
        r["p"], how = sign_flip_p(d, n_boot, seed)
        r["test"] = f"sign-flip ({how})"
    else:
        r["test"] = "paired bootstrap"
    return r


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, *, metrics: list[str] | None = None,
                 min_meaningful: float = 0.02, n_boot: int = 10_000, seed: int = 0,
                 correction: str = "bh", alpha: float = 0.05,
                 cohorts: Mapping[str, str] | pd.Series | None = None, cohort_by: str | None = None,
                 query_ids: Iterable[str] | None = None, min_n: int = MIN_CELL_N,
                 names: tuple[str, str] = ("the baseline", "the candidate")) -> Comparison:
    """``a``/``b``: long frames (query_id, stratum, metric, value) of the baseline and the
    candidate. Only queries scored in both runs are compared (paired); how many were left
    out is reported.

    A comparison that compares nothing is an error, never a pass: a metric asked for that
    either evaluation did not record, no metric in common, no question in common, or fewer
    than ``min_n`` paired questions overall raise :class:`ValidationError` (a CI gate with a
    typo must not pass). A stratum or cohort cell under ``min_n`` questions gets verdict
    "too few" and no p, and is not one of the corrected comparisons; so does a whole metric
    that was not named (``metrics`` empty: every metric both recorded) when another metric has
    enough questions - answer evaluations carry metrics a small human sample gives - while a
    metric named, or every metric too few, still raises. ``names`` name the two
    evaluations in those messages.

    Every verdict given (per metric: overall and each stratum; with ``cohorts``, a mapping
    query_id -> cohort label, also each cohort overall and each stratum within it) is one
    comparison; the p-values (paired bootstrap, two-sided) of all of them are adjusted
    together by ``correction`` (``bh``, ``bonferroni`` or ``none``) and a regression fails
    the gate only when it is significant after it. ``query_ids``: pair only these queries (the
    held-out slice, a tier); the caller says which and why."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
    if min_n < 1:
        raise ValidationError(f"The minimum questions per cell must be at least 1, not {min_n}.")
    if query_ids is not None:
        keep = set(query_ids)
        a, b = a[a["query_id"].isin(keep)], b[b["query_id"].isin(keep)]
    named = bool(metrics)  # a metric asked for by name must be comparable; one taken by default may be "too few"
    metrics = _metrics_to_compare(a, b, metrics, names)
    cohort_of = pd.Series(cohorts, dtype=object) if cohorts is not None else None
    out: Any = {"metrics": {}, "min_meaningful": min_meaningful, "n_boot": n_boot, "seed": seed, "min_n": min_n,
                "small_n": SMALL_CELL_N}
    tests: list[dict] = []  # every comparison given a p, in output order: the family the correction covers
    too_few = 0

    def test(va, vb) -> dict:
        nonlocal too_few
        r = _cell(va, vb, n_boot=n_boot, seed=seed, alpha=alpha, min_n=min_n)
        if r.get("verdict") == TOO_FEW:
            too_few += 1
        else:
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
        if len(common) < min_n and not named and len(metrics) > 1:
            # a metric taken by default that too few questions carry (a small human-graded sample
            # beside answer metrics every question has) gets no verdict, as a small stratum does,
            # instead of refusing the comparison of every other metric
            cell = _cell(pa.loc[common, "value"].to_numpy(), pb.loc[common, "value"].to_numpy(), n_boot=n_boot,
                         seed=seed, alpha=alpha, min_n=min_n)
            cell.update(only_in_a=int(len(pa.index.difference(common))),
                        only_in_b=int(len(pb.index.difference(common))), strata={})
            too_few += 1
            out["metrics"][m] = cell
            continue
        if len(common) == 0:
            raise ValidationError(f"{names[0]} and {names[1]} have no question in common for {m}: nothing to "
                                  f"compare (were they scored on the same version and tier?).")
        if len(common) < min_n:
            raise ValidationError(f"{names[0]} and {names[1]} share only {len(common)} question(s) for {m}, fewer "
                                  f"than the {min_n} a verdict needs: score more questions, or lower the minimum "
                                  f"(--min-n) knowing that so few cannot show a difference.")
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
    if out["metrics"] and all(e.get("verdict") == TOO_FEW for e in out["metrics"].values()):
        raise ValidationError(f"{names[0]} and {names[1]} share fewer than the {min_n} questions a verdict needs for "
                              f"every metric ({', '.join(m + ': ' + str(e['n']) for m, e in out['metrics'].items())}): "
                              f"score more questions, or lower the minimum (--min-n) knowing that so few cannot "
                              f"show a difference.")
    for r, p_adj in zip(tests, adjust_pvalues([r["p"] for r in tests], correction) if tests else []):
        r["p_adj"] = p_adj
        verdict, r["significant"] = _verdict(r, correction=correction, alpha=alpha, min_meaningful=min_meaningful)
        items = list(r.items())
        r.clear()
        r.update({"verdict": verdict, **dict(items)})  # the verdict first, as before
    out["correction"] = {"method": correction, "name": CORRECTION_NAMES[correction], "alpha": alpha,
                         "comparisons": len(tests), "too_few": too_few}
    if cohort_of is not None:
        out["cohort_by"] = cohort_by or "cohort"
    return out


def _metrics_to_compare(a: pd.DataFrame, b: pd.DataFrame, asked: list[str] | None,
                        names: tuple[str, str]) -> list[str]:
    """The metrics to compare: those asked for, each recorded by both evaluations, else every
    metric both recorded. Anything else is an error naming what each one did record."""
    in_a, in_b = set(a["metric"]), set(b["metric"])
    common = sorted(in_a & in_b)
    recorded = (f"{names[0]} recorded {', '.join(sorted(in_a)) or 'nothing'}; "
                f"{names[1]} recorded {', '.join(sorted(in_b)) or 'nothing'}")
    if asked:
        chosen: list[str] = []
        missing: list[str] = []
        for name in dict.fromkeys(asked):
            keys = [name] if name in common else _recorded_keys(name)
            if keys and all(k in common for k in keys):
                chosen += keys
            else:
                missing.append(name)
        if missing:
            raise ValidationError(f"Cannot compare {', '.join(missing)}: not recorded by both evaluations ({recorded}). "
                                  f"Name a recorded measure (-m), or record it for both.")
        return list(dict.fromkeys(chosen))
    if not common:
        raise ValidationError(f"The evaluations share no measure: nothing to compare ({recorded}).")
    return common


def _recorded_keys(name: str) -> list[str]:
    """The keys ``golden score --version ... --record`` stores a measure name under (binary
    measures at grade >= 2 unless the name says rel=, trec_eval names expanded), or [] when
    the name is not a measure at all."""
    try:
        return [str(m) for m in parse_measures([name], rel=2)]
    except ValidationError:
        return []


def _p(e: dict) -> str:
    if e["verdict"] == TOO_FEW:
        return "no test"
    how = f" ({e['test']})" if e.get("test") and e["test"] != "paired bootstrap" else ""
    return (f"p {e['p']:.4f} p_adj {e['p_adj']:.4f}{how}" if "p_adj" in e else f"p {e['p']:.3f}{how}")


def _tested_cells(c: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every cell of ``c`` given a p: each metric overall, its strata, its cohorts and theirs."""
    cells: list[Mapping[str, Any]] = []
    for e in c["metrics"].values():
        for group in (e, *e.get("cohorts", {}).values()):
            cells += [group, *group["strata"].values()]
    return [x for x in cells if x["verdict"] != TOO_FEW]


def _p_sources(c: Mapping[str, Any]) -> str:
    """What p is, as it was computed: the paired bootstrap's p where a cell has at least
    ``small_n`` questions, the sign-flip test's below (issue 36: the line said "paired
    bootstrap p" of every cell while the small ones used the sign-flip test), with how many
    cells each test gave."""
    used: dict[str, int] = {}
    for cell in _tested_cells(c):
        test = cell.get("test") or "paired bootstrap"  # a comparison from before the sign-flip test
        used[test] = used.get(test, 0) + 1
    if not used:
        return "no p (no cell had enough questions for a test)"

    def said(test: str) -> str:
        if test == "paired bootstrap":
            return f"paired bootstrap p (two-sided, {c['n_boot']} resamples)"
        how = test.removeprefix("sign-flip").strip(" ()")
        detail = ("exact: every sign pattern" if how == "exact" else
                  f"{c['n_boot']} random sign patterns" if how == "sampled" else how)
        return f"sign-flip test's p (two-sided, {detail})"

    if len(used) == 1:
        return said(next(iter(used)))
    small = c.get("small_n", SMALL_CELL_N)
    return " and ".join(f"{said(t)} in {k} cell(s)" + (f" of {small}+ questions" if t == "paired bootstrap" else
                                                     f" under {small} questions")
                     for t, k in sorted(used.items(), key=lambda tk: tk[0] != "paired bootstrap"))


def _ci(e: dict) -> str:
    return "[no interval]" if e.get("ci95") is None else f"[{e['ci95'][0]:+.4f}, {e['ci95'][1]:+.4f}]"


def format_comparison(c: dict, a: str, b: str) -> str:
    corr = c.get("correction")
    rule = f"FAIL = whole {round((1 - corr['alpha']) * 100)}% CI below 0" if corr else "FAIL = whole 95% CI below 0"
    if corr and corr["method"] != "none":
        rule += f", adjusted p <= {corr['alpha']}"
    lines = [f"{b} vs {a} (delta = {b} - {a}; {rule} and |delta| >= {c['min_meaningful']})"]
    if corr:
        lines.append(f"correction: {corr['name']} over {corr['comparisons']} comparisons (every metric x "
                     f"overall and each stratum{' and each ' + c['cohort_by'] + ' cohort' if c.get('cohort_by') else ''}); "
                     f"p = {_p_sources(c)}, p_adj = p after the correction")
    if "min_n" in c:
        lines.append(f"cells: under {c['min_n']} questions 'too few' (no verdict, not corrected"
                     f"{'; ' + str(corr['too_few']) + ' such cell(s)' if corr and corr.get('too_few') else ''}); "
                     f"under {c['small_n']} questions p is the sign-flip test's (exact: every sign pattern)")
    for note in c.get("scope", []):
        lines.append(f"scope: {note}")

    def stratum_lines(strata: dict, indent: str) -> None:
        for s, se in strata.items():
            lines.append(f"{indent}{s:<12} {verdict_text(se):<4} {se['delta']:+.4f}  {_ci(se)}"
                         f"  W/L/T {se['wins']}/{se['losses']}/{se['ties']}  n {se['n']}  {_p(se)}")

    for m, e in c["metrics"].items():
        lines.append(f"{m}: {verdict_text(e)}  delta {e['delta']:+.4f}  CI {_ci(e)}  "
                     f"{_p(e)}  W/L/T {e['wins']}/{e['losses']}/{e['ties']}  n {e['n']}")
        stratum_lines(e["strata"], "  ")
        for co, ce in e.get("cohorts", {}).items():
            lines.append(f"  {c.get('cohort_by', 'cohort')} {co}: {verdict_text(ce)}  delta {ce['delta']:+.4f}  "
                         f"CI {_ci(ce)}  {_p(ce)}  "
                         f"W/L/T {ce['wins']}/{ce['losses']}/{ce['ties']}  n {ce['n']}")
            stratum_lines(ce["strata"], "    ")
        if e["only_in_a"] or e["only_in_b"]:
            lines.append(f"  (not paired: {e['only_in_a']} queries only in {a}, {e['only_in_b']} only in {b})")
    return "\n".join(lines)
