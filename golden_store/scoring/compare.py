"""Paired comparison of two scored runs, overall and per stratum, with the gate verdict
(METHODOLOGY §13, §14.2). Pure: takes per-query frames, returns plain data."""

from __future__ import annotations

from typing import Any

import pandas as pd

from golden_store.scoring.stats import gate
from golden_store.scoring.types import Comparison


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, *, metrics: list[str] | None = None,
                 min_meaningful: float = 0.02, n_boot: int = 10_000, seed: int = 0) -> Comparison:
    """``a``/``b``: long frames (query_id, stratum, metric, value) of the baseline and the
    candidate. Only queries scored in both runs are compared (paired); how many were left
    out is reported."""
    common_metrics = sorted(set(a["metric"]) & set(b["metric"]))
    metrics = [m for m in (metrics or common_metrics) if m in common_metrics]
    out: Any = {"metrics": {}, "min_meaningful": min_meaningful, "n_boot": n_boot, "seed": seed}
    for m in metrics:
        pa = a[a["metric"] == m].set_index("query_id")
        pb = b[b["metric"] == m].set_index("query_id")
        common = pa.index.intersection(pb.index).sort_values()
        strata = pa.loc[common, "stratum"].fillna("?")
        verdict, r = gate(pa.loc[common, "value"].to_numpy(), pb.loc[common, "value"].to_numpy(),
                          min_meaningful=min_meaningful, n_boot=n_boot, seed=seed)
        entry = {"verdict": verdict, **r.as_dict(), "only_in_a": int(len(pa.index.difference(common))),
                 "only_in_b": int(len(pb.index.difference(common))), "strata": {}}
        for s in sorted(strata.unique()):
            q = strata.index[strata == s]
            sv, sr = gate(pa.loc[q, "value"].to_numpy(), pb.loc[q, "value"].to_numpy(),
                          min_meaningful=min_meaningful, n_boot=n_boot, seed=seed)
            entry["strata"][s] = {"verdict": sv, **sr.as_dict()}
        out["metrics"][m] = entry
    return out


def format_comparison(c: dict, a: str, b: str) -> str:
    lines = [f"{b} vs {a} (delta = {b} - {a}; FAIL = whole 95% CI below 0 and |delta| >= {c['min_meaningful']})"]
    for m, e in c["metrics"].items():
        lines.append(f"{m}: {e['verdict']}  delta {e['delta']:+.4f}  CI [{e['ci95'][0]:+.4f}, {e['ci95'][1]:+.4f}]  "
                     f"p {e['p']:.3f}  W/L/T {e['wins']}/{e['losses']}/{e['ties']}  n {e['n']}")
        for s, se in e["strata"].items():
            lines.append(f"  {s:<12} {se['verdict']:<4} {se['delta']:+.4f}  [{se['ci95'][0]:+.4f}, {se['ci95'][1]:+.4f}]"
                         f"  W/L/T {se['wins']}/{se['losses']}/{se['ties']}  n {se['n']}")
        if e["only_in_a"] or e["only_in_b"]:
            lines.append(f"  (not paired: {e['only_in_a']} queries only in {a}, {e['only_in_b']} only in {b})")
    return "\n".join(lines)
