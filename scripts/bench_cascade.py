#!/usr/bin/env python3
"""Cascade benchmark (issue 27, METHODOLOGY §11.1 step 6, §11.7, §11.8): what a calibrated
judge with a band saves on a pool of ``--items`` items, against all-human and all-judge
labeling, for synthetic judges of known accuracy.

What it does, in order:

1. generates a pool (seeded): ``--items`` items over the 7 builtin strata, each with a human
   grade 0-3 (35/25/22/18%: 60% are FAIL at the cut 2; the ``negative`` stratum leans to 0).
   The human grades are the reference: all-human labeling has κ = 1 and FAIL recall 1 by
   construction (real people disagree with each other too; this measures the judge's part).
2. for each judge setting (``--kappas``, the judge's binary κ against people on the pool):
   a synthetic judge. Per item it sees the human grade through logistic noise,
   ``t = grade + s * sigma * Logistic(0, 1)`` (``s`` a per-stratum difficulty, ``sigma`` the
   knob, found by bisection so the judge's κ is the target); its grade is ``t`` rounded into
   0-3 and its p(FAIL) is ``sigmoid(4 * (cut - 0.5 - t))`` (overconfident, so the isotonic map
   has work to do). Then the judge's known flaws: 3% of grades moved across the cut while p
   stays (grade and p disagree: ``--inconsistent``), 2% "cannot tell" (no grade), 0.5% refusals (no grade, no p), and
   1% of pass grades with a supporting quote that is not verbatim (the backstop).
3. calibrates it as the studio does: a calibration set of ``--cal-items`` (200) more items from
   the same generator, with their human pass/fail and the judge's label and p, through
   ``annotator.judge.calibration.analyze`` with the page's defaults (fit share 0.5, isotonic map,
   ``pick_band`` budgets 0.02 / 0.02), i.e. the map and the band fitted on 100 items.
4. routes every pool item as pool grading does: the isotonic map, ``cascade.route`` (band,
   cut 2, quote backstop), and the standing sample (``cascade.draw_sample``, ``--share`` 10%
   per stratum) over the job's chunks of ``--chunk`` items, each chunk seeing the earlier ones
   through ``before``. The routing (map + route + sample) is timed, median of ``--repeats``.
5. final labels: all-human = people's grades; all-judge = the judge's grade at the cut
   ("cannot tell" and refusals count as not-FAIL, the calibration module's convention);
   cascade = the judge's grade where it stands, people's on the escalated items and the
   sample. κ and FAIL-class recall against people at the cut (``calibration.judge_report``).
6. cost: the judge's $ from ``annotator.judge.llm_cost.estimate`` for pool grading with the default
   relevance rubric (``annotator.judge.relevance_judge.DEFAULT_RUBRIC``) as the cached prefix, a
   question of ``--question-chars`` and a passage of ``--passage-chars`` per item,
   ``--out-tokens`` of output, ``--model`` (claude-sonnet-4-5), Batch API and cache; people's
   $ = ``--human-seconds`` per item at ``--human-rate`` $/h (45 s at $60/h = $0.75 an item,
   an assumption: set your own). The calibration set (200 human labels and 200 judge calls)
   is a one-off cost, listed apart. ``cascade.cascade_vs_alternatives`` gives the expected
   human items from the escalation rate, checked against what the routing did.
7. ``--cal-draws`` more calibration sets per judge (other seeds, same pool): the spread of the
   band's escalation rate, κ and human items, because a band fitted on 100 items moves.
8. prints §11.8's reference arithmetic (``cascade.two_tier_cost``), then the markdown table and
   the details; ``--json`` adds one JSON line at the end (the smoke test reads it).

The comparison is the all-human baseline of the same run (the cascade's human items and $
against it); no timing ratio is meaningful here, the routing time is a throughput figure.

Usage::

    python scripts/bench_cascade.py [--items 5000] [--kappas 0.9,0.8,0.6] [--cal-items 200]
                                    [--share 0.1] [--chunk 500] [--repeats 15] [--cal-draws 20]
                                    [--human-seconds 45] [--human-rate 60] [--inconsistent 0.03]
                                    [--seed N]
                                    [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from benchlib import git_head, log, set_quiet  # noqa: E402  (scripts/ is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
CUT = 2
GRADE_P = (0.35, 0.25, 0.22, 0.18)  # 60% grade 0-1: FAIL at the cut
NEGATIVE_GRADE_P = (0.70, 0.20, 0.07, 0.03)  # the corpus does not hold the answer: mostly 0
STRATUM_SHARE = {"lexical": 0.22, "paraphrase": 0.20, "multi_hop": 0.15, "long_tail": 0.12, "tabular": 0.11,
                 "negative": 0.10, "temporal": 0.10}
DIFFICULTY = {"lexical": 0.8, "paraphrase": 1.1, "multi_hop": 1.3, "long_tail": 1.0, "tabular": 1.2,
              "negative": 0.9, "temporal": 1.1}  # the judge's noise, times sigma, per stratum
OVERCONFIDENCE = 4.0
INCONSISTENT, INSUFFICIENT_SHARE, REFUSED, QUOTE_BAD = 0.03, 0.02, 0.005, 0.01
MODEL = "claude-sonnet-4-5"
JUDGE_RUBRIC_SHA = "bench"


# ---- the pool and the synthetic judge ------------------------------------------------------------


def make_items(n: int, rng: np.random.Generator, prefix: str) -> dict[str, Any]:
    strata = np.array(list(STRATUM_SHARE))
    stratum = rng.choice(strata, size=n, p=list(STRATUM_SHARE.values()))
    grade = rng.choice(4, size=n, p=GRADE_P)
    neg = stratum == "negative"
    grade[neg] = rng.choice(4, size=int(neg.sum()), p=NEGATIVE_GRADE_P)
    return {"key": np.array([f"{prefix}{i:06d}" for i in range(n)], dtype=object), "stratum": stratum,
            "grade": grade}


def judge_draws(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The judge's random parts, drawn once per pool so every sigma sees the same noise."""
    u = rng.random(n)
    return {"logistic": np.log(u) - np.log1p(-u), "inconsistent": rng.random(n), "flaw": rng.random(n),
            "quote": rng.random(n)}


def judge(items: dict[str, Any], draws: dict[str, np.ndarray], sigma: float) -> dict[str, np.ndarray]:
    """The judge's answer per item: grade (-1 = none), p(FAIL) raw (NaN = refused), quote_ok."""
    s = np.array([DIFFICULTY[x] for x in items["stratum"]])
    t = items["grade"] + s * sigma * draws["logistic"]
    grade = np.clip(np.floor(t + 0.5), 0, 3).astype(int)
    p = 1.0 / (1.0 + np.exp(-OVERCONFIDENCE * (CUT - 0.5 - t)))
    flip = draws["inconsistent"] < INCONSISTENT  # the grade crosses the cut, p does not follow
    grade = np.where(flip, np.where(grade >= CUT, CUT - 1, CUT), grade)
    refused = draws["flaw"] < REFUSED
    cannot_tell = (draws["flaw"] >= REFUSED) & (draws["flaw"] < REFUSED + INSUFFICIENT_SHARE)
    grade = np.where(refused | cannot_tell, -1, grade)
    p = np.where(refused, np.nan, p)
    quote_ok = ~((grade >= CUT) & (draws["quote"] < QUOTE_BAD))
    return {"grade": grade, "p": p, "quote_ok": quote_ok, "flipped": flip & ~refused & ~cannot_tell}


def fail_of(grades: np.ndarray) -> np.ndarray:
    """FAIL at the cut; no grade (-1) is not-FAIL (the calibration module's convention)."""
    return (grades >= 0) & (grades < CUT)


def binary_kappa(human_fail: np.ndarray, other_fail: np.ndarray) -> float:
    from golden_store.scoring.agreement import cohens_kappa

    return float(cohens_kappa(human_fail.tolist(), other_fail.tolist(), labels=[False, True]))


def find_sigma(target: float, items: dict[str, Any], draws: dict[str, np.ndarray]) -> float:
    """The noise that gives the judge binary κ = target on these items (bisection; κ falls
    as sigma grows)."""
    human_fail = items["grade"] < CUT
    lo, hi = 0.0, 5.0
    for _ in range(40):
        mid = (lo + hi) / 2
        k = binary_kappa(human_fail, fail_of(judge(items, draws, mid)["grade"]))
        lo, hi = (mid, hi) if k > target else (lo, mid)
    return (lo + hi) / 2


# ---- calibration, as the studio does it -------------------------------------------------------------


def calibrate(cal: dict[str, Any], answers: dict[str, np.ndarray], seed: int):
    """``annotator.judge.calibration.analyze`` on the calibration set (the page's defaults)."""
    import pandas as pd

    from annotator.judge import calibration as studio_cal
    from golden_store.scoring.calibration import FAIL, INSUFFICIENT, PASS

    keep = ~np.isnan(answers["p"])  # the band needs a p for every item: refusals are left out
    g = answers["grade"][keep]
    df = pd.DataFrame({
        "item_id": cal["key"][keep],
        "human_label": np.where(cal["grade"][keep] >= CUT, PASS, FAIL),
        "judge_label": np.where(g < 0, INSUFFICIENT, np.where(g >= CUT, PASS, FAIL)),
        "judge_p": answers["p"][keep],
    })
    return studio_cal.analyze(df, seed=seed, fit_share=0.5, recalibrate=True, max_missed_bad=0.02,
                              max_false_fail=0.02)


# ---- routing, as pool grading does it --------------------------------------------------------------


def route_pool(keys: list[str], strata: list[str], grades: list[int], p_raw: np.ndarray, quote_ok: list[bool],
               iso, band: dict[str, float], share: float, chunk: int, seed: int,
               parts: dict[str, float] | None = None) -> tuple[list[str], set[str]]:
    """Every item through the map and ``cascade.route``, and the standing sample drawn chunk by
    chunk with ``before``. Returns (outcome per item, the sampled keys); ``parts`` (if given)
    accumulates the seconds of the map, the route calls and the sample draws."""
    from golden_store.scoring.cascade import LABELED, draw_sample, route

    clock = time.perf_counter
    t0 = clock()
    p_used = iso(np.nan_to_num(p_raw, nan=0.5)) if iso is not None else p_raw
    p_list = [None if math.isnan(r) else float(u) for r, u in zip(p_raw.tolist(), p_used.tolist())]
    low, high = band["low"], band["high"]
    outcomes: list[str] = []
    sampled: set[str] = set()
    before: dict[str, tuple[int, int]] = {}
    t_map, t_route, t_sample = clock() - t0, 0.0, 0.0
    for a in range(0, len(keys), chunk):
        t1 = clock()
        labeled: list[tuple[str, str]] = []
        for i in range(a, min(a + chunk, len(keys))):
            g = grades[i]
            d = route(p_list[i], None if g < 0 else g, low=low, high=high, cut=CUT, quote_ok=quote_ok[i])
            outcomes.append(d.outcome)
            if d.outcome == LABELED:
                labeled.append((keys[i], strata[i]))
        t2 = clock()
        got = draw_sample(labeled, share=share, seed=seed, before=before)
        t_route, t_sample = t_route + t2 - t1, t_sample + clock() - t2
        sampled |= got
        n_lab = Counter(s for _, s in labeled)
        n_smp = Counter(s for k, s in labeled if k in got)
        for s, n in n_lab.items():
            n0, k0 = before.get(s, (0, 0))
            before[s] = (n0 + n, k0 + n_smp[s])
    if parts is not None:
        for k, v in (("map", t_map), ("route", t_route), ("sample", t_sample)):
            parts[k] = parts.get(k, 0.0) + v
    return outcomes, sampled


def figures(human_fail: np.ndarray, final_fail: np.ndarray) -> dict[str, float]:
    from golden_store.scoring.calibration import FAIL, PASS, judge_report

    r = judge_report(np.where(human_fail, FAIL, PASS).tolist(), np.where(final_fail, FAIL, PASS).tolist())
    return {"kappa": r["kappa"], "fail_recall": r["fail_recall"], "accuracy": r["accuracy"]}


def one_setting(target: float, pool: dict[str, Any], pool_draws: dict[str, np.ndarray], args, costs: dict,
                seed: int) -> dict[str, Any]:
    from golden_store.scoring.cascade import LABELED, drift_flags, sample_figures

    n = len(pool["key"])
    sigma = find_sigma(target, pool, pool_draws)
    ans = judge(pool, pool_draws, sigma)
    human_fail = pool["grade"] < CUT
    judge_fail = fail_of(ans["grade"])
    out: dict[str, Any] = {"target_kappa": target, "sigma": round(sigma, 4)}
    out["judge_alone"] = figures(human_fail, judge_fail)

    def calibrated_run(cal_seed: int, timed: bool) -> dict[str, Any]:
        rng = np.random.default_rng([seed, cal_seed, 1])
        cal = make_items(args.cal_items + 10, rng, "cal-")
        cal_ans = judge(cal, judge_draws(len(cal["key"]), rng), sigma)
        take = np.flatnonzero(~np.isnan(cal_ans["p"]))[: args.cal_items]  # cal_items items with a p
        cal = {k: v[take] for k, v in cal.items()}
        cal_ans = {k: v[take] for k, v in cal_ans.items()}
        a = calibrate(cal, cal_ans, seed=cal_seed)
        band = dict(a.band)
        keys, strata = pool["key"].tolist(), pool["stratum"].tolist()
        grades, quote = ans["grade"].tolist(), ans["quote_ok"].tolist()

        def run(parts: dict[str, float] | None = None) -> tuple[list[str], set[str]]:
            return route_pool(keys, strata, grades, ans["p"], quote, a.isotonic, band, args.share, args.chunk,
                              seed=cal_seed, parts=parts)

        times: list[float] = []
        parts: list[dict[str, float]] = []
        outcomes, sampled = run()
        if timed:
            for _ in range(args.repeats):
                parts.append({})
                t0 = time.perf_counter()
                again = run(parts[-1])
                times.append(time.perf_counter() - t0)
                assert again == (outcomes, sampled), "the routing is not deterministic"
        labeled = np.array([o == LABELED for o in outcomes])
        in_sample = np.array([k in sampled for k in keys])
        escalated = ~labeled
        to_people = escalated | in_sample
        final_fail = np.where(to_people, human_fail, judge_fail)
        standing = labeled & ~in_sample  # the judge's label is the final one
        wrong = judge_fail != human_fail  # the judge alone disagrees with people at the cut
        r: dict[str, Any] = {
            "cal_seed": cal_seed,
            "calibration": {"n": a.n, "kappa": a.report["kappa"] if a.report else math.nan,
                            "fail_recall": a.report["fail_recall"] if a.report else math.nan,
                            "clears_gate": bool(a.report and a.report["passes_gate"]),
                            "ece_raw": a.reliability_raw["ece"] if a.reliability_raw else math.nan,
                            "ece_recalibrated": a.reliability_cal["ece"] if a.reliability_cal else math.nan,
                            "band": band, "band_report": a.band_report,
                            "cascade_report_split": a.cascade},
            "escalated": int(escalated.sum()), "escalation_rate": float(escalated.mean()),
            "labeled": int(labeled.sum()), "sampled": int(in_sample.sum()),
            "human_items": int(to_people.sum()),
            "cascade": figures(human_fail, final_fail),
            # the band alone: the sample's people-labels not used as corrections
            "band_only": figures(human_fail, np.where(escalated, human_fail, judge_fail)),
            # the budgets' promise on the pool: bad items left with the judge's PASS, good with its FAIL
            "missed_bad_share": float((standing & human_fail & ~judge_fail).sum() / max(1, human_fail.sum())),
            "false_fail_share": float((standing & ~human_fail & judge_fail).sum() / max(1, (~human_fail).sum())),
            # where the judge's wrong labels went: to people (escalated, of which its grade contradicted
            # its own p by the 3% flips; or sampled) or left standing
            "judge_wrong": {"n": int(wrong.sum()), "escalated": int((wrong & escalated).sum()),
                            "escalated_flipped": int((wrong & escalated & ans["flipped"]).sum()),
                            "sampled": int((wrong & labeled & in_sample).sum()),
                            "standing": int((wrong & standing).sum())},
            "escalation_reasons": dict(Counter(_reason_kind(outcomes, pool, ans, band, a.isotonic))),
        }
        strata_arr = pool["stratum"]
        per = {}
        for s in STRATUM_SHARE:
            in_s = strata_arr == s
            n_lab = int((labeled & in_s).sum())
            per[s] = {"labeled": n_lab, "sampled": int((in_sample & in_s).sum()),
                      "target": math.floor(args.share * n_lab + 0.5)}
        r["sample_per_stratum"] = per
        sm = np.flatnonzero(in_sample)
        sf = sample_figures(ans["grade"][sm].tolist(), pool["grade"][sm].tolist(), cut=CUT)
        r["sample_figures"] = {k: sf[k] for k in ("n", "kappa", "fail_recall", "grade_agreement", "clears_gate")}
        r["drift_flags"] = drift_flags([{"window": "pool", "n": sf["n"], "kappa": sf["kappa"],
                                         "fail_recall": sf["fail_recall"], "model": MODEL,
                                         "rubric_sha": JUDGE_RUBRIC_SHA}],
                                       calibration_kappa=r["calibration"]["kappa"])
        if timed:
            med = statistics.median(times)
            r["routing"] = {"repeats": len(times), "median_s": med, "min_s": min(times), "max_s": max(times),
                            "items_per_s": n / med, "us_per_item": med / n * 1e6,
                            "parts_median_s": {k: statistics.median(p[k] for p in parts) for k in parts[0]}}
        return r

    main = calibrated_run(seed % 10_000, timed=True)
    out["main"] = main
    draws = [calibrated_run(seed % 10_000 + 1 + k, timed=False) for k in range(args.cal_draws)]
    if draws:
        def spread(f):
            v = [f(d) for d in draws]
            return {"median": statistics.median(v), "min": min(v), "max": max(v)}
        out["cal_draws"] = {"n": len(draws),
                            "escalation_rate": spread(lambda d: d["escalation_rate"]),
                            "human_items": spread(lambda d: d["human_items"]),
                            "kappa": spread(lambda d: d["cascade"]["kappa"]),
                            "fail_recall": spread(lambda d: d["cascade"]["fail_recall"]),
                            "missed_bad_share": spread(lambda d: d["missed_bad_share"]),
                            "calibration_kappa": spread(lambda d: d["calibration"]["kappa"]),
                            "clears_gate": sum(d["calibration"]["clears_gate"] for d in draws),
                            # the 2% budget of bad items auto-passed: on the pool, and as the report split says
                            "missed_bad_over_budget": sum(d["missed_bad_share"] > 0.02 for d in draws),
                            "report_split_missed_bad_share": spread(
                                lambda d: d["calibration"]["band_report"]["missed_bad_share"])}
    # $ and the expected human items
    from golden_store.scoring.cascade import cascade_vs_alternatives

    h, jpi = costs["human_per_item"], costs["judge_per_item"]
    exp = cascade_vs_alternatives(n, judge_cost_per_item=jpi, human_cost_per_item=h,
                                  escalation_rate=main["escalation_rate"], sample_share=args.share)
    out["expected"] = exp
    hi = main["human_items"]
    out["rows"] = {
        "all_human": {"human_items": n, "saved": 0, "kappa": 1.0, "fail_recall": 1.0, "usd": n * h,
                      "escalation_rate": None},
        "all_judge": {"human_items": 0, "saved": n, **{k: out["judge_alone"][k] for k in ("kappa", "fail_recall")},
                      "usd": n * jpi, "escalation_rate": None},
        "cascade": {"human_items": hi, "saved": n - hi,
                    **{k: main["cascade"][k] for k in ("kappa", "fail_recall")},
                    "usd": n * jpi + hi * h, "escalation_rate": main["escalation_rate"]},
    }
    return out


def _reason_kind(outcomes, pool, ans, band, iso) -> list[str]:
    """Why each escalated item went to people, in four kinds."""
    p = ans["p"]
    p_used = iso(np.nan_to_num(p, nan=0.5)) if iso is not None else p
    kinds = []
    for i, o in enumerate(outcomes):
        if o != "escalated":
            continue
        g = ans["grade"][i]
        if math.isnan(p[i]):
            kinds.append("refused")
        elif g < 0:
            kinds.append("cannot tell")
        elif band["low"] < p_used[i] < band["high"]:
            kinds.append("in band")
        elif p_used[i] <= band["low"] and g >= CUT:
            kinds.append("quote not verbatim")
        else:
            kinds.append("grade against p")
    return kinds


# ---- report --------------------------------------------------------------------------------------


def reference_arithmetic() -> dict[str, float]:
    """§11.7's optimized Opus 5 run and §11.8's two-tier total, through the studio's functions."""
    from golden_store.scoring.cascade import two_tier_cost
    from golden_store.scoring.cost import eval_run_cost

    opus = eval_run_cost(5000, 1800, 150, 5.00, 25.00, batch=True, cache_hit_frac=0.99, cached_frac_of_input=0.78)
    c = two_tier_cost(5000, 1800, 0.042, 0.20, round(opus, 2))
    return {"opus_batch_cached": opus, "first_tier": c["first_tier"], "second_tier": c["second_tier"],
            "total": c["total"], "total_of_rounded_parts": round(round(c["first_tier"], 2)
                                                                 + round(c["second_tier"], 2), 2)}


def judge_costs(args) -> dict[str, Any]:
    from annotator.judge import llm_cost
    from annotator.judge.relevance_judge import DEFAULT_RUBRIC, PURPOSE_POOL, content

    item_chars = len(content("q" * args.question_chars, "p" * args.passage_chars))
    est = llm_cost.estimate(PURPOSE_POOL, model=args.model, n_items=args.items, prefix_chars=len(DEFAULT_RUBRIC),
                            item_chars=item_chars, out_tokens=args.out_tokens)
    usd = est.usd[(True, est.caches)]
    if usd is None:
        raise SystemExit(f"no price for {args.model} in annotator.judge.llm.PRICES")
    cal = llm_cost.estimate(PURPOSE_POOL, model=args.model, n_items=args.cal_items, prefix_chars=len(DEFAULT_RUBRIC),
                            item_chars=item_chars, out_tokens=args.out_tokens)
    human = args.human_seconds / 3600 * args.human_rate
    return {"estimate_lines": est.lines(), "caches": est.caches, "prefix_tokens": est.prefix_tokens,
            "item_tokens": est.item_tokens, "judge_usd": usd, "judge_per_item": usd / args.items,
            "judge_usd_sync_uncached": est.usd[(False, False)], "human_per_item": human,
            "calibration_usd": {"human": args.cal_items * human, "judge_sync": cal.usd[(False, cal.caches)]}}


def f2(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def markdown(res: dict[str, Any]) -> str:
    n = res["items"]
    ref = res["reference_11_8"]
    lines = [
        "§11.8 reference arithmetic (cascade.two_tier_cost): first tier 5,000 x 1,800 tokens at $0.042/M = "
        f"${ref['first_tier']:.3f} (≈ ${ref['first_tier']:.2f}); second tier 0.20 x ${ref['opus_batch_cached']:.2f} "
        f"= ${ref['second_tier']:.3f} (≈ ${ref['second_tier']:.2f}); "
        f"{ref['first_tier']:.2f} + {ref['second_tier']:.2f} = {ref['total_of_rounded_parts']:.2f} "
        f"(unrounded total ${ref['total']:.4f})",
        "",
        f"Pool: {n:,} items, {res['fail_share']:.1%} FAIL at the cut {CUT}; standing sample {res['share']:.0%} per "
        f"stratum; people ${res['costs']['human_per_item']:.2f}/item ({res['human_seconds']:g} s at "
        f"${res['human_rate']:g}/h); judge {res['model']} batch"
        f"{' + cache' if res['costs']['caches'] else ''} ${res['costs']['judge_per_item'] * 1000:.2f} per 1,000 items.",
        "",
        "| judge (κ on pool) | labeling | human items | saved | κ vs people | FAIL recall | $ | x all-human $ "
        "| escalated |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in res["settings"]:
        name = f"κ {s['judge_alone']['kappa']:.2f}"
        for row in ("all_human", "all_judge", "cascade"):
            r = s["rows"][row]
            esc = "-" if r["escalation_rate"] is None else f"{r['escalation_rate']:.1%}"
            saved = f"{r['saved']:,} ({r['saved'] / n:.0%})"
            lines.append(f"| {name} | {row.replace('_', '-')} | {r['human_items']:,} | {saved} | {f2(r['kappa'])} | "
                         f"{f2(r['fail_recall'])} | {r['usd']:,.2f} | {r['usd'] / s['rows']['all_human']['usd']:.3f} "
                         f"| {esc} |")
    lines.append("")
    for s in res["settings"]:
        m, c = s["main"], s["main"]["calibration"]
        b = c["band"]
        lines.append(f"Judge κ {s['judge_alone']['kappa']:.3f} (target {s['target_kappa']}, sigma {s['sigma']}): "
                     f"calibration κ {c['kappa']:.3f} on {c['n']} items ({'clears' if c['clears_gate'] else 'UNDER'} "
                     f"the 0.70 gate), ECE {c['ece_raw']:.3f} -> {c['ece_recalibrated']:.3f} after the map; band "
                     f"({b['low']:.4f}, {b['high']:.4f}), escalation {b['escalation_rate']:.1%} on the fit split, "
                     f"{c['band_report']['escalation_rate']:.1%} on the report split, {m['escalation_rate']:.1%} "
                     f"on the pool.")
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(m["escalation_reasons"].items()))
        lines.append(f"  escalated {m['escalated']:,} ({reasons}); judge-labeled {m['labeled']:,}, sampled "
                     f"{m['sampled']:,}; expected human items (cascade_vs_alternatives) "
                     f"{s['expected']['cascade']['human_items']:.1f}, routed {m['human_items']:,}; bad items left with "
                     f"a judge PASS {m['missed_bad_share']:.2%}, good with a judge FAIL {m['false_fail_share']:.2%}; "
                     f"without the sample's corrections κ {m['band_only']['kappa']:.3f}, FAIL recall "
                     f"{m['band_only']['fail_recall']:.3f}.")
        w = m["judge_wrong"]
        lines.append(f"  the judge alone is wrong on {w['n']:,} items: {w['escalated']:,} escalated "
                     f"({w['escalated_flipped']:,} of them with a grade flipped across the cut, against its own p), "
                     f"{w['sampled']:,} in the sample, {w['standing']:,} left standing.")
        per = ", ".join(f"{k} {v['sampled']}/{v['labeled']}" for k, v in m["sample_per_stratum"].items())
        sf = m["sample_figures"]
        lines.append(f"  sample per stratum (sampled/judge-labeled): {per}; judge vs people on the sample: κ "
                     f"{f2(sf['kappa'])}, FAIL recall {f2(sf['fail_recall'])} (n {sf['n']}); drift flags: "
                     f"{'; '.join(m['drift_flags']) or 'none'}.")
        if "cal_draws" in s:
            d = s["cal_draws"]

            def sp(key, fmt="{:.3f}"):
                v = d[key]
                return f"{fmt.format(v['median'])} [{fmt.format(v['min'])}-{fmt.format(v['max'])}]"
            lines.append(f"  over {d['n']} other calibration sets (median [min-max]): escalation "
                         f"{sp('escalation_rate', '{:.1%}')}, human items {sp('human_items', '{:,.0f}')}, cascade κ "
                         f"{sp('kappa')}, FAIL recall {sp('fail_recall')}, bad items left passed "
                         f"{sp('missed_bad_share', '{:.2%}')} (over the 2% budget in {d['missed_bad_over_budget']}; "
                         f"the report split said {sp('report_split_missed_bad_share', '{:.2%}')}); calibration κ "
                         f"{sp('calibration_kappa')}, clears the gate {d['clears_gate']}/{d['n']}.")
        rt = m.get("routing")
        if rt:
            pm = rt["parts_median_s"]
            lines.append(f"  routing {n:,} items (map + route + sample in chunks of {res['chunk']}): median "
                         f"{rt['median_s'] * 1000:.1f} ms of {rt['repeats']} ({rt['min_s'] * 1000:.1f}-"
                         f"{rt['max_s'] * 1000:.1f}), {rt['items_per_s']:,.0f} items/s, {rt['us_per_item']:.2f} "
                         f"µs/item (map {pm['map'] * 1000:.1f} ms, route {pm['route'] * 1000:.1f} ms, draw_sample "
                         f"{pm['sample'] * 1000:.1f} ms).")
    cu = res["costs"]["calibration_usd"]
    lines.append("")
    lines.append(f"One-off per calibration: {res['cal_items']} human labels (${cu['human']:.2f}) and "
                 f"{res['cal_items']} synchronous judge calls (${cu['judge_sync']:.2f}); not in the table.")
    lines.append("Judge estimate (llm_cost.estimate): " + " ".join(res["costs"]["estimate_lines"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    global INCONSISTENT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=5000, help="pool items")
    ap.add_argument("--kappas", default="0.9,0.8,0.6", help="the judges' binary κ against people on the pool")
    ap.add_argument("--cal-items", type=int, default=200, help="calibration set (half fits the map and band)")
    ap.add_argument("--share", type=float, default=0.10, help="standing human sample per stratum")
    ap.add_argument("--chunk", type=int, default=500, help="items per chunk of the grading job")
    ap.add_argument("--repeats", type=int, default=15, help="timed routing repeats (the median is reported)")
    ap.add_argument("--cal-draws", type=int, default=20, help="more calibration sets per judge, for the spread")
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--question-chars", type=int, default=80)
    ap.add_argument("--passage-chars", type=int, default=1500)
    ap.add_argument("--out-tokens", type=int, default=200)
    ap.add_argument("--human-seconds", type=float, default=45.0, help="a person's time per item (assumption)")
    ap.add_argument("--human-rate", type=float, default=60.0, help="$ per hour of a person (assumption)")
    ap.add_argument("--inconsistent", type=float, default=INCONSISTENT,
                    help="share of the judge's grades flipped across the cut while its p stays (grade against p)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--quick", action="store_true", help="smoke test: 2,000 items, 2 judges, 3 repeats, 2 draws")
    ap.add_argument("--json", action="store_true", help="end with one JSON line of every figure")
    args = ap.parse_args(argv)
    if args.quick:
        args.items, args.kappas, args.repeats, args.cal_draws = 2000, "0.8,0.6", 3, 2
    set_quiet(args.json)
    INCONSISTENT = args.inconsistent
    t_start = time.perf_counter()

    rng = np.random.default_rng(args.seed)
    pool = make_items(args.items, rng, "item-")
    pool_draws = judge_draws(args.items, rng)
    costs = judge_costs(args)
    res: dict[str, Any] = {
        "benchmark": "cascade", "date": date.today().isoformat(), "git_head": git_head(ROOT),
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform()},
        "seed": args.seed, "items": args.items, "cal_items": args.cal_items, "share": args.share, "chunk": args.chunk,
        "inconsistent": INCONSISTENT, "model": args.model, "human_seconds": args.human_seconds,
        "human_rate": args.human_rate,
        "fail_share": float((pool["grade"] < CUT).mean()),
        "grade_dist": {int(k): int(v) for k, v in sorted(Counter(pool["grade"].tolist()).items())},
        "strata": {k: int(v) for k, v in sorted(Counter(pool["stratum"].tolist()).items())},
        "costs": costs, "reference_11_8": reference_arithmetic(), "settings": [],
    }
    for k in (float(x) for x in args.kappas.split(",")):
        log(f"judge κ {k}: calibrating and routing ...")
        res["settings"].append(one_setting(k, pool, pool_draws, args, costs, args.seed))
    res["wall_s"] = time.perf_counter() - t_start
    print(markdown(res))
    if args.json:
        print(json.dumps(res, default=_json_default))
    return 0


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (tuple, set)):
        return list(o)
    return str(o)


if __name__ == "__main__":
    raise SystemExit(main())
