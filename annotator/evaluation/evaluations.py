"""Recorded evaluations (METHODOLOGY §13, §14): the list, each one's judged@k health (§3.6),
and the paired comparison of two with its gate verdict. One place for the Results page and
``golden compare``, so both show the same verdict, interval and notes.

An evaluation is recorded by ``golden score --version V --run R --record EVALUATION_ID``
(``golden_store.live.results``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pandas as pd

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import ValidationError
from golden_store.live import results
from golden_store.scoring.compare import TOO_FEW, compare_runs, verdict_text
from golden_store.scoring.health import JUDGED_K, JUDGED_THRESHOLD
from golden_store.scoring.types import Comparison
from golden_store.db.store import Store

if TYPE_CHECKING:  # typing.NotRequired is 3.11+; the annotations are strings, never evaluated
    from typing_extensions import NotRequired

JUDGED_COLUMN = f"judged@{JUDGED_K}"
NOT_RECORDED = "not recorded"
NOT_A_RANKING = "n/a (answers)"  # an answer evaluation has no ranking to be judged@k of
OVERALL = "(all)"  # the stratum column's value on a metric's overall row
# recorded()'s columns before the metric means
LIST_COLUMNS = ("evaluation", "system", "dataset version", "labels", "metric_impl_sha", "recorded", "queries",
                "trials", JUDGED_COLUMN, "judged health")
SHA_SHOWN = 12  # characters of a metric_impl_sha in the list (the full one is in the store and the export)


_JUDGE_MORE = ("judge the pool (golden pool build or Runs & pool, then Judge) and score again before trusting "
               "a delta")


def judged_status(judged: float | None) -> str:
    """``ok``, ``suspect`` (under the §3.6 threshold) or ``not recorded``."""
    if judged is None or pd.isna(judged):
        return NOT_RECORDED
    return "suspect" if judged < JUDGED_THRESHOLD else "ok"


def judged_warning(evaluation_id: str, judged: float | None) -> str | None:
    """One sentence for the screen when an evaluation is under-judged, else None."""
    if judged_status(judged) != "suspect":
        return None
    return (f"{evaluation_id}: {JUDGED_COLUMN} is {judged:.3f}, below {JUDGED_THRESHOLD}: its numbers are suspect - "
            f"unjudged results count as non-relevant; {_JUDGE_MORE} (methodology §3.6)")


def recorded(store: Store, user: User) -> pd.DataFrame:
    """The recorded evaluations, newest first: evaluation, system, dataset version, labels
    (human or human+judge), metric_impl_sha, recorded (when), queries, trials, judged@10 (mean of its rows'
    judged_fraction; NaN when not recorded), judged health, then the mean of each metric."""
    require(user, Permission.VIEW_RESULTS)
    summary = results.evaluation_summaries(store)
    if summary.empty:
        return pd.DataFrame(columns=list(LIST_COLUMNS))
    judged = [None if n == 0 else float(v) for v, n in zip(summary["judged_fraction"], summary["judged_rows"])]
    out = pd.DataFrame({
        "evaluation": summary["evaluation_id"], "system": summary["system"],
        "dataset version": summary["dataset_version"],
        # which labels the numbers are on (issue 27): human, or human+judge (NULL in old rows: human)
        "labels": summary["labels"],
        "metric_impl_sha": [_short_shas(v) for v in summary["metric_impl_sha"]],
        "recorded": pd.to_datetime(summary["ts"]), "queries": summary["queries"].astype(int),
        "trials": summary["trials"].astype(int), JUDGED_COLUMN: pd.Series(judged, dtype="float64"),
        "judged health": [NOT_A_RANKING if level == results.ANSWER_LEVEL else judged_status(j)
                          for j, level in zip(judged, summary["run_level"])],
    })
    means = results.evaluation_means(store)
    if not means.empty:
        wide = means.pivot(index="evaluation_id", columns="metric", values="mean")
        for m in wide.columns:
            out[m] = out["evaluation"].map(wide[m]).astype("float64")
    return out


class RecordedComparison(Comparison):
    """:func:`compare`'s answer: ``compare_runs``'s comparison plus what the recorded
    evaluations say about it."""

    notes: list[str]                   # the sentences to read before trusting a delta
    judged: dict[str, float | None]    # evaluation -> mean judged fraction (None: not recorded)
    labels: dict[str, str]             # evaluation -> the labels it was scored on
    labels_differ: bool
    gate: str                          # :func:`gate`: PASS, WARN or FAIL
    scope: NotRequired[list[str]]      # golden compare: a sentence per restriction of the questions compared


def _short_shas(joined: str | None) -> str | None:
    if joined is None or pd.isna(joined):
        return None
    return ", ".join(sha[:SHA_SHOWN] for sha in str(joined).split(", "))


def health_warning(table: pd.DataFrame) -> str | None:
    """One sentence naming every under-judged evaluation of :func:`recorded`'s table, else None."""
    low = [(e, j) for e, j in zip(table["evaluation"], table[JUDGED_COLUMN]) if judged_status(j) == "suspect"]
    if not low:
        return None
    named = ", ".join(f"{e} {j:.3f}" for e, j in low)
    return (f"{len(low)} evaluation(s) with {JUDGED_COLUMN} below {JUDGED_THRESHOLD}: {named}. Their numbers are "
            f"suspect - unjudged results count as non-relevant; {_JUDGE_MORE} (methodology §3.6)")


def judged_line(c: RecordedComparison) -> str | None:
    """The under-judged evaluations of a comparison in one sentence, else None."""
    low = [(e, j) for e, j in c.get("judged", {}).items() if judged_status(j) == "suspect"]
    if not low:
        return None
    named = ", ".join(f"{e} ({JUDGED_COLUMN} {j:.3f})" for e, j in low)
    return f"Under-judged: {named}. The deltas below are suspect (methodology §3.6)."


def other_notes(c: RecordedComparison) -> list[str]:
    """The comparison's notes besides the judged@10 ones (:func:`judged_line` says those)."""
    judged = {judged_warning(e, j) for e, j in c.get("judged", {}).items()}
    return [n for n in c.get("notes", []) if n not in judged]


def _judged_of(store: Store, evaluation_id: str) -> float | None:
    s = results.evaluation_summaries(store)
    row = s[s["evaluation_id"] == evaluation_id]
    if row.empty or int(row["judged_rows"].iloc[0]) == 0:
        return None
    return float(row["judged_fraction"].iloc[0])


# a definition that makes two evaluations' numbers different quantities: a comparison across
# it is refused unless asked for (the same run under two hit rules read as +0.107 R@10, PASS).
# A different depth stays a warning: how many results a system returns is part of the system.
_REFUSED_DIFFERENCES = ("hit rule differs:",)
# how the command line asks to compare across them; a page names its own control instead
CLI_COMPARE_ANYWAY = "compare anyway with --allow-different-definitions"


def compare(store: Store, user: User, baseline: str, candidate: str, *, metrics: list[str] | None = None,
            min_meaningful: float = 0.02, allow_different_definitions: bool = False,
            compare_anyway: str = CLI_COMPARE_ANYWAY, **options: Any) -> RecordedComparison:
    """The paired comparison of two recorded evaluations (``compare_runs``: per metric and per
    stratum, delta = candidate - baseline with its 95% bootstrap interval and the gate verdict),
    plus ``notes`` (different label sets: human vs human+judge; different dataset versions; a
    changed metric_impl_sha: re-baseline; an under-judged evaluation), ``labels`` (evaluation
    -> the labels it was scored on), ``labels_differ`` and ``judged`` (evaluation -> mean judged fraction of all its
    rows, or None when not recorded).
    ``options`` go to ``compare_runs`` as they are: the one call, for its newer switches.

    Two evaluations scored under a different hit rule (as recorded with their rows,
    :func:`annotator.evaluation.comparability.differences`) measured different things: the comparison is
    refused (:class:`ValidationError`, naming both values) unless
    ``allow_different_definitions``; the refusal ends with ``compare_anyway``, the way the
    caller's surface asks for it (the CLI's flag by default; the Results page names its
    checkbox). Every other difference (retrieval depth, the label
    judge) and a definition one of them was recorded without ("not known to match") is a
    note, so history recorded before definitions were kept can still be compared."""
    from annotator.evaluation.comparability import differences

    require(user, Permission.VIEW_RESULTS)
    a, b = results.evaluation_frame(store, baseline), results.evaluation_frame(store, candidate)
    c = compare_runs(a, b, metrics=metrics, min_meaningful=min_meaningful, names=(baseline, candidate), **options)
    definitions = differences(baseline, a, candidate, b, metrics=list(c["metrics"]))
    refused = [d for d in definitions if d.startswith(_REFUSED_DIFFERENCES)]
    if refused and not allow_different_definitions:
        raise ValidationError(f"{baseline} and {candidate} were scored under different definitions, so their delta "
                              f"would measure the change of definition, not of the system: {'; '.join(refused)}. "
                              f"Score both the same way (golden score --hit-rule, the same run depth), or "
                              f"{compare_anyway}.")
    notes = [f"{d} - the delta mixes that change with the system's" for d in definitions
             if not d.startswith("label set")]  # the label set has its own sentence below
    labels = {baseline: _labels_of(a), candidate: _labels_of(b)}
    if labels[baseline] != labels[candidate]:
        notes.append(f"the evaluations were scored on different label sets ({baseline}: {labels[baseline]}, "
                     f"{candidate}: {labels[candidate]}): judge labels count passages people never graded, so the "
                     f"delta mixes the systems with the labels; score both on the same labels "
                     f"(golden score --labels) before trusting it")
    if set(a["dataset_version"]) != set(b["dataset_version"]):
        notes.append("the evaluations were scored on different dataset versions; only shared queries are paired")
    if set(a["metric_impl_sha"]) != set(b["metric_impl_sha"]):
        notes.append("the metric implementation changed between the evaluations: re-baseline before trusting a delta")
    judged = {e: _judged_of(store, e) for e in (baseline, candidate)}
    notes += [w for e, j in judged.items() if (w := judged_warning(e, j))]
    return RecordedComparison(**c, notes=notes, judged=judged, labels=labels,
                              labels_differ=labels[baseline] != labels[candidate], gate=gate(c))


def gate(c: Comparison) -> str:
    """The comparison's gate, one word for CI: FAIL when any compared metric's overall verdict
    fails, WARN when none fails and one warns, PASS otherwise. ``golden compare`` exits 1 on
    FAIL and 0 on PASS or WARN; a comparison that cannot be made raises instead (exit 2)."""
    overall = [e["verdict"] for e in c["metrics"].values()]
    return "FAIL" if "FAIL" in overall else "WARN" if "WARN" in overall else "PASS"


def gate_reason(c: Comparison) -> str:
    """Why the comparison's :func:`gate` is what it is, in one sentence for the Results page
    beside the word itself (the word ``golden compare`` prints as ``gate: ...`` and exits on,
    and the API returns as ``gate``): the metrics that decided it and the exit status."""
    g = gate(c)
    deciding = ", ".join(m for m, e in c["metrics"].items() if e["verdict"] == g)
    why = {"FAIL": f"a credible drop of at least {c['min_meaningful']:g} in {deciding}",
           "WARN": f"a credible drop smaller than {c['min_meaningful']:g} in {deciding}, none failing",
           "PASS": f"no metric of the {len(c['metrics'])} compared fails or warns"}[g]
    few = [m for m, e in c["metrics"].items() if e["verdict"] == TOO_FEW]
    if few:
        why += f" ({', '.join(few)}: too few shared questions for a verdict)"
    return f"{why}; golden compare exits {1 if g == 'FAIL' else 0} on this comparison."


def labels_line(c: RecordedComparison) -> str:
    """Which labels each compared evaluation was scored on, in one sentence."""
    labels = c.get("labels") or {}
    return "Labels: " + "; ".join(f"{e} scored on {lb} labels" for e, lb in labels.items()) + "."


def _labels_of(frame: pd.DataFrame) -> str:
    """The label set(s) an evaluation's rows were scored on: human, human+judge (joined if mixed)."""
    return ", ".join(sorted({str(v) for v in frame["labels"].dropna()})) or "human"


def verdicts(c: Comparison) -> dict[str, str]:
    """metric -> the gate verdict of its overall comparison."""
    return {m: e["verdict"] for m, e in c["metrics"].items()}


def gate_rule(c: Comparison) -> str:
    """The gate's rule as applied in ``c``, in one sentence (METHODOLOGY §14.2, §13.3)."""
    corr = c.get("correction")
    level = round((1 - corr["alpha"]) * 100) if corr else 95
    adjusted = f", its adjusted p is at most {corr['alpha']}" if corr and corr["method"] != "none" else ""
    rule = (f"FAIL when the whole {level}% interval is below 0{adjusted} and the drop is at least "
            f"{c['min_meaningful']:g}; WARN when such a drop is smaller; PASS otherwise.")
    if corr:
        rule += (f" p-values are corrected with {corr['name']} over the {corr['comparisons']} comparisons shown "
                 f"(every metric, overall and per stratum).")
    if "min_n" in c:
        rule += (f" A cell of fewer than {c['min_n']} questions has no verdict (too few); under {c['small_n']} "
                 f"questions p is the sign-flip test's, not the bootstrap's.")
    return rule


def comparison_table(c: Comparison) -> pd.DataFrame:
    """One row per metric (stratum ``(all)``) and per metric and stratum (and, when the
    comparison has cohorts, per cohort and per cohort and stratum): verdict, delta, the 95%
    interval, p (and the corrected p when given), wins / losses / ties and n."""
    cohorts = any(e.get("cohorts") for e in c["metrics"].values())
    rows = []

    def add(metric: str, cohort: str | None, stratum: str, f: dict) -> None:
        ci = f["ci95"] or (None, None)  # a "too few" cell has no interval and no p
        row = {"metric": metric, "cohort": cohort, "stratum": stratum, "verdict": verdict_text(f), "delta": f["delta"],
               "ci95 low": ci[0], "ci95 high": ci[1], "p": f["p"], "p_adj": f.get("p_adj"),
               "test": f.get("test"), "wins": f["wins"], "losses": f["losses"], "ties": f["ties"], "n": f["n"]}
        rows.append(row)

    for m, e in c["metrics"].items():
        for stratum, f in [(OVERALL, e), *e["strata"].items()]:
            add(m, OVERALL if cohorts else None, stratum, f)
        for cohort, ce in (e.get("cohorts") or {}).items():
            for stratum, f in [(OVERALL, ce), *ce["strata"].items()]:
                add(m, cohort, stratum, f)
    cols = ["metric", "cohort", "stratum", "verdict", "delta", "ci95 low", "ci95 high", "p", "p_adj", "test",
            "wins", "losses", "ties", "n"]
    if not cohorts:
        cols.remove("cohort")
    if not any(r["p_adj"] is not None for r in rows):
        cols.remove("p_adj")
    return pd.DataFrame(rows, columns=cols)


def comparison_csv(c: RecordedComparison, baseline: str, candidate: str) -> bytes:
    """The comparison table as CSV, each row naming both evaluations and the gate's settings."""
    t = comparison_table(c)
    t.insert(0, "candidate", candidate)
    t.insert(0, "baseline", baseline)
    labels = c.get("labels") or {}
    t["baseline labels"] = labels.get(baseline)
    t["candidate labels"] = labels.get(candidate)
    t["min_meaningful"] = c["min_meaningful"]
    t["n_boot"] = c["n_boot"]
    t["seed"] = c["seed"]
    return t.to_csv(index=False).encode("utf-8")


def comparison_filename(baseline: str, candidate: str) -> str:
    safe = lambda s: re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_") or "evaluation"  # noqa: E731
    return f"compare_{safe(baseline)}_vs_{safe(candidate)}.csv"
