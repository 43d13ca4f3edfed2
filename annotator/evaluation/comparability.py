"""Whether two recorded evaluations measured the same thing (issue 36, item 6): the same run
scored under two hit rules, at two depths or on two label sets differs by a number that says
nothing about the system, so a comparison must say so before it gives a verdict.

:func:`differences` is pure: it reads the definition columns of two frames of
``golden_store.live.results.evaluation_frame`` (``labels``, ``run_level``, ``hit_rule``,
``run_depth``, ``label_judge_models``, ``label_rubric_shas``; see ``record_evaluation``) and
returns one sentence per definition that differs or cannot be checked, each naming both
evaluations' values. ``run_level`` NULL means the evaluation was recorded before these were
kept: its hit rule, depth and label judge are "not recorded", never taken to match."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from golden_store.core.errors import GoldenError

NOT_RECORDED = "not recorded"
DOCUMENT_RUN = "none (document run)"
ANSWER_EVALUATION = "none (answer evaluation)"
NONE_USED = "none used"
SHA_SHOWN = 12


def _value(frame: pd.DataFrame, column: str) -> Any:
    """The one value ``column`` has on every row of ``frame``; None when the column is missing
    or any row has none (not recorded); several distinct values joined with " / "."""
    if column not in frame.columns or frame.empty:
        return None
    col = frame[column]
    if col.isna().any():
        return None
    distinct = sorted({(int(v) if column == "run_depth" else str(v)) for v in col}, key=str)
    if len(distinct) == 1:
        return distinct[0]
    return " / ".join(str(v) for v in distinct)


def _definitions(frame: pd.DataFrame) -> dict[str, Any]:
    level = _value(frame, "run_level")
    recorded = level is not None
    return {
        "recorded": recorded,
        "labels": _value(frame, "labels"),
        "run_level": level,
        "hit_rule": _value(frame, "hit_rule") if recorded else None,
        "run_depth": _value(frame, "run_depth") if recorded else None,
        "label_judge_models": _value(frame, "label_judge_models") if recorded else None,
        "label_rubric_shas": _value(frame, "label_rubric_shas") if recorded else None,
    }


def _same_hit_rule(a: str, b: str) -> bool:
    """Two spellings of one rule match (``contains_span`` is ``min_overlap(1)``)."""
    if a == b:
        return True
    from golden_store.versions.chunk_labels import parse_hit_rule

    try:
        return parse_hit_rule(a).min_fraction == parse_hit_rule(b).min_fraction
    except GoldenError:
        return False


def _hit_rule_shown(d: dict[str, Any]) -> str:
    if not d["recorded"]:
        return NOT_RECORDED
    if d["run_level"] == "document":
        return DOCUMENT_RUN
    if d["run_level"] == "answer":
        return ANSWER_EVALUATION
    return str(d["hit_rule"]) if d["hit_rule"] is not None else NOT_RECORDED


def _depth_reach(metric: str) -> int | None:
    """How deep into a ranking ``metric`` looks: its cutoff k when it reads only the top k
    results, else None (the whole ranking: AP, Bpref, R-precision, a recall level, ...)."""
    from golden_store.scoring.measures import parse_measure

    try:
        m = parse_measure(metric)
    except GoldenError:
        return None
    if m.k is None or m.spec.cutoff_kind != "int":
        return None
    return int(m.k)


def _depth_matters(metrics: list[str], da: int, db: int) -> list[str]:
    """The metrics whose values can change between a run listing ``da`` and one listing ``db``
    results per question: those that look deeper than the shallower of the two."""
    shallow = min(da, db)
    out = []
    for m in metrics:
        reach = _depth_reach(m)
        if reach is None or reach > shallow:
            out.append(m)
    return out


def _short_shas(v: str) -> str:
    """A ', '-joined sha list at 12 characters a sha ('' : none used)."""
    return ", ".join(s[:SHA_SHOWN] for s in v.split(", ")) if v else NONE_USED


def _sha_pair(a: str, b: str) -> tuple[str, str]:
    """Two sha lists shown at 12 characters, in full where 12 do not tell them apart."""
    sa, sb = _short_shas(a), _short_shas(b)
    if sa == sb:
        return a or NONE_USED, b or NONE_USED
    return sa, sb


def _sentence(what: str, baseline_id: str, a: str, candidate_id: str, b: str, tail: str = "") -> str:
    verb = "differs" if NOT_RECORDED not in (a, b) else "not known to match"
    return f"{what} {verb}: {baseline_id} {a}, {candidate_id} {b}{tail}"


def differences(baseline_id: str, a_frame: pd.DataFrame, candidate_id: str, b_frame: pd.DataFrame, *,
                metrics: Iterable[str] | None = None) -> list[str]:
    """One sentence per definition under which the two evaluations' numbers were scored that
    differs, or that cannot be checked because one was recorded before it was kept; empty when
    the two measured the same way. In this order:

    * hit rule (a document run shows ``none (document run)``, an answer evaluation ``none
      (answer evaluation)``, so an answer evaluation is never compared with a run; ``contains_span`` and
      ``min_overlap(1)`` are one rule);
    * retrieval depth (the most results a scored question had in the run; not for two answer
      evaluations), only when it can
      change a compared metric: one that reads the whole ranking, or whose cutoff k is deeper
      than the shallower run (R@10 of runs 20 and 50 deep cannot differ by depth; AP can);
    * label set (human / human+judge);
    * with human+judge labels on both: the judge labels' models, then their rubric shas.

    A sentence says "<definition> differs: <baseline_id> <value>, <candidate_id> <value>", or
    "<definition> not known to match: ..." when a value is "not recorded" (it is never taken
    to match). ``a_frame``/``b_frame``: frames of ``evaluation_frame`` (or any frame with those
    columns; a missing column is "not recorded"); ``metrics``: the metrics compared (default:
    those both frames have in their ``metric`` column; without any, depth always matters)."""
    a, b = _definitions(a_frame), _definitions(b_frame)
    out: list[str] = []

    ha, hb = _hit_rule_shown(a), _hit_rule_shown(b)
    same_rule = (NOT_RECORDED not in (ha, hb) and a["run_level"] == b["run_level"]
                 and (a["run_level"] in ("document", "answer") or _same_hit_rule(ha, hb)))
    if not same_rule:
        out.append(_sentence("hit rule", baseline_id, ha, candidate_id, hb))

    da, db = a["run_depth"], b["run_depth"]
    if a["run_level"] == b["run_level"] == "answer":
        pass  # answers have no ranking: depth does not apply
    elif da is None or db is None:
        out.append(_sentence("retrieval depth", baseline_id, NOT_RECORDED if da is None else str(da), candidate_id,
                             NOT_RECORDED if db is None else str(db)))
    elif da != db:
        if metrics is not None:
            compared = list(dict.fromkeys(metrics))
        elif "metric" in a_frame.columns and "metric" in b_frame.columns:
            compared = sorted(set(a_frame["metric"]) & set(b_frame["metric"]))
        else:
            compared = []
        if isinstance(da, int) and isinstance(db, int):
            matter = _depth_matters(compared, da, db) if compared else []
            if matter or not compared:
                why = (f" (can change {', '.join(matter)})" if matter else "")
                out.append(_sentence("retrieval depth (most results per question)", baseline_id, str(da),
                                     candidate_id, str(db), why))
        else:  # several depths in one frame: shown as they are
            out.append(_sentence("retrieval depth (most results per question)", baseline_id, str(da), candidate_id,
                                 str(db)))

    la = a["labels"] if a["labels"] is not None else NOT_RECORDED
    lb = b["labels"] if b["labels"] is not None else NOT_RECORDED
    if la != lb or NOT_RECORDED in (la, lb):
        out.append(_sentence("label set", baseline_id, la, candidate_id, lb))
    elif la != "human":
        for col, what in (("label_judge_models", "label judge model"), ("label_rubric_shas", "label judge rubric sha")):
            va, vb = a[col], b[col]
            if va is None or vb is None:
                shown = _short_shas if col == "label_rubric_shas" else (lambda v: v or NONE_USED)
                sa = NOT_RECORDED if va is None else shown(va)
                sb = NOT_RECORDED if vb is None else shown(vb)
                out.append(_sentence(what, baseline_id, sa, candidate_id, sb))
            elif va != vb:
                sa, sb = _sha_pair(va, vb) if col == "label_rubric_shas" else (va or NONE_USED, vb or NONE_USED)
                out.append(_sentence(what, baseline_id, sa, candidate_id, sb))
    return out
