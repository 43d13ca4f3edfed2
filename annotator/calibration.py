"""Judge calibration for leads (METHODOLOGY §11.1, §11.8): a calibration set (gold relevance
grades from the store, or an uploaded CSV/JSONL), the judge's outputs (uploaded, or a Claude
judge run here), the judge report, reliability and isotonic recalibration on a fit split,
the cascade band fitted on the fit split and reported on the other, bias diagnostics, and
saving the calibration pinned to the judge's model and rubric sha."""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pydantic

from annotator import llm
from annotator.held_out import HeldOut
from annotator.identity import User, require
from annotator.roles import Permission
from golden_store.live import calibrations, llm_log
from golden_store.core import textin
from golden_store.core.canonical import canonical_text
from golden_store.core.errors import ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.scoring import calibration as cal
from golden_store.db.store import Store

PURPOSE = "judge_calibration"
LABELS = {"pass": cal.PASS, "fail": cal.FAIL, "insufficient": cal.INSUFFICIENT}
DEFAULT_RUBRIC = """You judge whether a retrieved passage answers a question, for a RAG evaluation.

Verdicts:
- pass: the passage answers the question, fully or in a clearly useful part.
- fail: the passage does not answer it (off topic, or only related background).
- insufficient: you cannot tell from the passage and question alone.

Write the justification FIRST, then the verdict. For pass, copy a short supporting quote
verbatim from the passage; a quote that is not in the passage turns a pass into insufficient.
Length and fluency of the passage are not criteria."""


class Verdict(pydantic.BaseModel):
    justification: str  # before the verdict, deliberately (§11.4)
    verdict: Literal["pass", "fail", "insufficient"]
    supporting_quote: str | None


# ---- the calibration set -----------------------------------------------------------------------


def _label(value: Any, where: str, allowed: tuple[str, ...]) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == "":
        return None
    v = str(value).strip().lower()
    if v not in allowed:
        raise ValueError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return LABELS[v]


def load_upload(name: str, data: bytes) -> pd.DataFrame:
    """Read a calibration file: CSV or JSONL with ``item_id, human_label`` and
    ``judge_label`` and/or ``judge_p`` (probability of FAIL), optionally ``stratum``,
    ``length``, ``question``, ``text`` (to run a Claude judge on it), ``winner_ab`` and
    ``winner_ba`` (pairwise runs in both orders). Every problem names its line."""
    text = textin.decode(name, data)  # the importers' one text rule
    problems: list[str] = []
    if name.lower().endswith((".jsonl", ".json")):
        rows = [(line, obj) for line, obj in iter_objects(name, text, problems)]
    else:
        if not text.strip():
            raise ValidationError(f"{name}: the file is empty (expected a header row: item_id, human_label, "
                                  "judge_label and/or judge_p).")
        try:
            frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
            raise ValidationError(f"{name}: not a readable CSV ({textin.shown(str(exc), 200)}).") from None
        rows = [(i + 2, rec) for i, rec in enumerate(frame.to_dict("records"))]  # line 1 is the header
    out, seen = [], set()
    for line, obj in rows:
        where = f"{name} line {line}"
        try:
            item = str(obj.get("item_id") or "").strip()
            if not item:
                raise ValueError(f"{where}: item_id is missing")
            if item in seen:
                raise ValueError(f"{where}: item_id {textin.shown(item)} appears twice")
            seen.add(item)
            human = _label(obj.get("human_label"), f"{where} human_label", ("pass", "fail"))
            if human is None:
                raise ValueError(f"{where}: human_label is missing (pass or fail)")
            judge = _label(obj.get("judge_label"), f"{where} judge_label", ("pass", "fail", "insufficient"))
            p_raw = obj.get("judge_p")
            try:
                p = None if p_raw in (None, "") else textin.parse_finite(p_raw)
            except ValueError:
                p = math.nan
            if p is not None and not 0 <= p <= 1:
                raise ValueError(f"{where}: judge_p {textin.shown(p_raw)} is not a probability in [0, 1]")
            length_raw = obj.get("length")
            try:
                length = None if length_raw in (None, "") else textin.parse_finite(length_raw)
            except ValueError:
                length = -1.0
            if length is not None and not 0 <= length < 2**53:
                raise ValueError(f"{where}: length {textin.shown(length_raw)} is not a number of characters")
            out.append({"item_id": item, "human_label": human, "judge_label": judge, "judge_p": p,
                        "stratum": str(obj.get("stratum") or "") or None,
                        "length": None if length is None else int(length),
                        "question": obj.get("question") or None, "text": obj.get("text") or None,
                        "held_out": False,
                        "winner_ab": obj.get("winner_ab") or None, "winner_ba": obj.get("winner_ba") or None})
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            problems.append(msg if msg.startswith(name) else f"{where}: {msg}")
    if problems:
        raise ValidationError(f"{name}: {len(problems)} problem(s); fix them and upload again.", problems[:50])
    if not out:
        raise ValidationError(f"{name}: no items.")
    df = pd.DataFrame(out)
    if df["judge_label"].isna().all() and df["judge_p"].isna().all() and df["text"].isna().all():
        raise ValidationError(f"{name}: give judge_label and/or judge_p per item (or question and text, to run "
                              "a Claude judge on the set).")
    return df


NUGGET_RUBRIC = """You judge whether a system's answer states a given fact (a nugget), for a RAG evaluation.

Verdicts:
- pass: the answer states the fact (wording may differ).
- fail: the answer does not state it, or contradicts it.
- insufficient: you cannot tell.

Write the justification FIRST, then the verdict. For pass, copy the sentence of the answer
that states the fact verbatim as the supporting quote."""


def store_set(store: Store, user: User, kind: Literal["relevance", "nuggets"] = "relevance") -> pd.DataFrame:
    """Human labels from the store as a calibration set (no judge outputs yet): gold
    relevance grades (pass = grade ≥ 2) or nugget support labels (support / none)."""
    require(user, Permission.CALIBRATE_JUDGE)
    rows = calibrations.relevance_set(store) if kind == "relevance" else calibrations.nugget_support_set(store)
    df = pd.DataFrame(rows)
    if df.empty:
        raise ValidationError("No gold relevance grades in the store yet: judge pooled passages first, or upload a "
                              "calibration file." if kind == "relevance" else
                              "No nugget support labels in the store yet: assign nuggets to answers first.")
    return df.assign(judge_label=None, judge_p=np.nan, winner_ab=None, winner_ba=None)


def rubric_sha(text: str) -> str:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"The rubric holds an invalid character (a lone surrogate, U+{ord(text[exc.start]):04X}, "
                              f"at character {exc.start + 1}); delete it and try again.") from None
    return hashlib.sha256(data).hexdigest()


# ---- a Claude judge on the set -------------------------------------------------------------------


@dataclass
class JudgeRun:
    labels: dict[str, str | None] = field(default_factory=dict)  # item -> pass/fail/insufficient; None = refused
    justifications: dict[str, str] = field(default_factory=dict)
    refusals: int = 0
    skipped_held_out: int = 0
    quote_backstops: int = 0
    errors: list[str] = field(default_factory=list)
    cost_usd: float = 0.0
    model: str = ""
    prompt_sha: str = ""


def run_claude_judge(store: Store, user: User, df: pd.DataFrame, rubric: str = DEFAULT_RUBRIC,
                     client: llm.LLMClient | None = None,
                     progress: Callable[[int, int], None] | None = None) -> JudgeRun:
    """Judge every item that has a question and a text. Held-out items are never sent: those
    flagged so, and any row (an uploaded file's too) whose id names a held-out question or
    whose question or text is or holds one (normalized); a rubric quoting one is refused. A
    pass whose quote is not verbatim in the text becomes insufficient (§11.5); refusals
    are counted and left unlabelled; usage and cost are recorded per call."""
    require(user, Permission.CALIBRATE_JUDGE)
    run = JudgeRun()
    guard = HeldOut.of(store)  # contamination (§3.8): checked before any request is built
    rubric_sha(rubric)  # a rubric that is not valid text is refused before anything else
    if hit := guard.text_in(rubric):
        raise llm.LLMRefused(f"The rubric contains the text of held-out question {hit}; held-out questions are never "
                             "sent to a hosted model. Take it out of the rubric.")
    todo = []
    for r in df.to_dict("records"):
        if (r.get("held_out") or guard.id_in(r.get("item_id")) or guard.id_in(r.get("query_id"))
                or guard.text_in(r.get("question"), r.get("text"))):
            run.skipped_held_out += 1
        elif r.get("question") and r.get("text"):
            todo.append(r)
    if not todo:
        raise ValidationError("No item can be sent to the judge: each needs a question and a text, and held-out "
                              "items are never sent.")
    client = client or llm.LLMClient()
    run.model = client.model
    for k, r in enumerate(todo):
        content = f"<question>\n{r['question']}\n</question>\n<passage>\n{r['text']}\n</passage>"
        try:
            res = client.structured(item=r["item_id"], instructions=rubric, content=content, output=Verdict,
                                    max_tokens=1024)
        except llm.LLMOutputError as exc:
            llm.record_failure(store, purpose=PURPOSE, item=r["item_id"], error=exc, actor=user.username)
            run.errors.append(str(exc))
            continue
        u = res.usage
        run.prompt_sha = res.prompt_sha
        llm_log.record_call(store, purpose=PURPOSE, item=r["item_id"], model=res.model, prompt_sha=res.prompt_sha,
                            outcome=res.outcome, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                            cache_creation_input_tokens=u.cache_creation_input_tokens,
                            cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=res.cost_usd,
                            actor=user.username)
        run.cost_usd += res.cost_usd or 0.0
        if res.outcome == "refusal":
            run.refusals += 1
            run.labels[r["item_id"]] = None
        else:
            v = res.parsed
            label = v.verdict
            if label == "pass" and (not v.supporting_quote
                                    or canonical_text(v.supporting_quote) not in canonical_text(r["text"])):
                label = "insufficient"  # the verbatim-quote backstop
                run.quote_backstops += 1
            run.labels[r["item_id"]] = LABELS[label]
            run.justifications[r["item_id"]] = v.justification
        if progress:
            progress(k + 1, len(todo))
    return run


# ---- the analysis --------------------------------------------------------------------------------


@dataclass
class Analysis:
    n: int
    report: dict[str, Any] | None  # judge report on every item with a judge label
    fit_idx: np.ndarray
    report_idx: np.ndarray
    reliability_raw: dict[str, Any] | None = None  # on the report split
    reliability_cal: dict[str, Any] | None = None  # report split, after the isotonic map
    isotonic: cal.IsotonicMap | None = None
    band: dict[str, float] | None = None  # fitted on the fit split
    band_report: dict[str, Any] | None = None  # the band's behaviour on the report split
    cascade: dict[str, Any] | None = None
    length: dict[str, float] | None = None
    position: dict[str, float] | None = None
    p_used: np.ndarray | None = None  # p after recalibration (all items), for the charts

    def summary(self) -> dict[str, Any]:
        """The figures that are saved with a calibration and exported in a manifest."""
        def clean(o: Any) -> Any:
            if isinstance(o, dict):
                return {str(k): clean(v) for k, v in o.items()}
            if isinstance(o, (list, tuple)):
                return [clean(v) for v in o]
            if isinstance(o, (float, np.floating)):
                return None if math.isnan(o) else round(float(o), 6)
            if isinstance(o, np.integer):
                return int(o)
            return o

        return clean({"n": self.n, "n_fit": len(self.fit_idx), "n_report": len(self.report_idx),
                      "judge_report": {k: v for k, v in (self.report or {}).items()},
                      "ece_raw": self.reliability_raw["ece"] if self.reliability_raw else None,
                      "ece_recalibrated": self.reliability_cal["ece"] if self.reliability_cal else None,
                      "band": self.band, "band_report": self.band_report, "cascade": self.cascade,
                      "length_bias": self.length, "position_bias": self.position})


def analyze(df: pd.DataFrame, *, seed: int = 0, fit_share: float = 0.5, recalibrate: bool = True,
            max_missed_bad: float = 0.02, max_false_fail: float = 0.02, bins: int = 10,
            strategy: Literal["uniform", "quantile"] = "uniform") -> Analysis:
    """Everything the page shows. The split is seeded and stratified by the human label;
    the isotonic map and the band are fitted on the fit split and reported on the other."""
    human = df["human_label"].tolist()
    y = np.array([h == cal.FAIL for h in human], dtype=int)
    fit_idx, rep_idx = cal.split(human, fit_share, seed)
    if not len(fit_idx) or not len(rep_idx):
        raise ValidationError(f"With {len(df)} item(s) and a fit share of {fit_share:.0%} one split is empty: "
                              "use more items or a share nearer 50%.")
    labelled = df["judge_label"].notna().to_numpy()
    out = Analysis(len(df), None, fit_idx, rep_idx)
    if labelled.any():
        out.report = cal.judge_report([h for h, ok in zip(human, labelled) if ok],
                                      df.loc[labelled, "judge_label"].tolist())
    has_p = df["judge_p"].notna().to_numpy()
    if has_p.all():
        p = df["judge_p"].to_numpy(dtype=float)
        out.reliability_raw = cal.reliability(p[rep_idx], y[rep_idx], bins, strategy) if len(rep_idx) else None
        p_used = p
        if recalibrate and len(set(y[fit_idx])) > 1:
            out.isotonic = cal.fit_isotonic(p[fit_idx], y[fit_idx])
            p_used = out.isotonic(p)
            out.reliability_cal = cal.reliability(p_used[rep_idx], y[rep_idx], bins, strategy)
        out.p_used = p_used
        out.band = cal.pick_band(p_used[fit_idx], y[fit_idx], max_missed_bad, max_false_fail)
        d = cal.band_decisions(p_used[rep_idx], out.band["low"], out.band["high"])
        yr = y[rep_idx]
        out.band_report = {
            "escalation_rate": float(np.mean(d == "escalate")),
            "missed_bad_share": float(np.mean(d[yr == 1] == cal.PASS)) if (yr == 1).any() else math.nan,
            "false_fail_share": float(np.mean(d[yr == 0] == cal.FAIL)) if (yr == 0).any() else math.nan,
        }
        if labelled[rep_idx].all():
            out.cascade = cal.cascade_report(p_used[rep_idx], [human[i] for i in rep_idx],
                                             df["judge_label"].to_numpy()[rep_idx].tolist(),
                                             out.band["low"], out.band["high"])
    lengths = df["length"].notna().to_numpy() if "length" in df else np.zeros(len(df), bool)
    if lengths.sum() >= 3:
        score = (df["judge_p"].to_numpy(dtype=float) if has_p.all()
                 else np.array([1.0 if v == cal.FAIL else 0.0 for v in df["judge_label"]]))
        out.length = cal.length_bias(score[lengths], df.loc[lengths, "length"].to_numpy(dtype=float))
    if "winner_ab" in df and df["winner_ab"].notna().any():
        both = df["winner_ab"].notna() & df["winner_ba"].notna()
        out.position = cal.position_bias(df.loc[both, "winner_ab"].tolist(), df.loc[both, "winner_ba"].tolist())
    return out


def save(store: Store, user: User, df: pd.DataFrame, a: Analysis, *, judge_model: str, rubric: str,
         question_sha: str | None, source: str, seed: int, fit_share: float, max_missed_bad: float,
         max_false_fail: float, note: str | None = None) -> str:
    """Pin the calibration to the judge (model id + rubric sha), the split seed and the band;
    archive its items for comparing a later judge on them."""
    require(user, Permission.CALIBRATE_JUDGE)
    split_of = {int(i): "fit" for i in a.fit_idx} | {int(i): "report" for i in a.report_idx}
    items = [(r["item_id"], r["human_label"], None if pd.isna(r["judge_label"]) else r["judge_label"],
              None if r["judge_p"] is None or (isinstance(r["judge_p"], float) and math.isnan(r["judge_p"]))
              else float(r["judge_p"]), r.get("stratum"),
              None if r.get("length") is None or (isinstance(r.get("length"), float) and math.isnan(r["length"]))
              else int(r["length"]), split_of[i])
             for i, r in enumerate(df.to_dict("records"))]
    return calibrations.save(
        store, judge_model=judge_model, rubric_sha=rubric_sha(rubric) if len(rubric) != 64 else rubric,
        question_sha=question_sha, source=source, split_seed=seed, fit_share=fit_share, band=a.band,
        max_missed_bad=max_missed_bad if a.band else None, max_false_fail=max_false_fail if a.band else None,
        isotonic=a.isotonic.as_dict() if a.isotonic else None, report=a.summary(), note=note, items=items,
        actor=user.username)


def saved(store: Store, user: User) -> list[dict]:
    require(user, Permission.CALIBRATE_JUDGE)
    return calibrations.list_all(store)


def offset(store: Store, user: User, old: str, new: str) -> dict[str, Any]:
    """§11.6: the new judge against the old on the items both calibrations archived - how
    often their labels agree, κ between them, and the shift in FAIL rate and in mean p."""
    require(user, Permission.CALIBRATE_JUDGE)
    rows = calibrations.shared_items(store, old, new)
    known = set(LABELS.values())  # a refused or missing label is not a label
    both = [r for r in rows if r["old_label"] in known and r["new_label"] in known]
    out: dict[str, Any] = {"shared_items": len(rows), "labelled_by_both": len(both)}
    if both:
        from golden_store.scoring.agreement import cohens_kappa

        a = [r["old_label"] for r in both]
        b = [r["new_label"] for r in both]
        out["label_agreement"] = float(np.mean([x == y for x, y in zip(a, b)]))
        out["kappa_old_vs_new"] = float(cohens_kappa(a, b))
        out["fail_rate_old"] = float(np.mean([x == cal.FAIL for x in a]))
        out["fail_rate_new"] = float(np.mean([x == cal.FAIL for x in b]))
        out["fail_rate_offset"] = out["fail_rate_new"] - out["fail_rate_old"]
    ps = [(r["old_p"], r["new_p"]) for r in rows if r["old_p"] is not None and r["new_p"] is not None]
    if ps:
        out["mean_p_offset"] = float(np.mean([n - o for o, n in ps]))
    return out


def manifest_entries(store: Store, user: User) -> list[dict]:
    """What the next frozen version's manifest will carry (``judge_calibrations``)."""
    require(user, Permission.CALIBRATE_JUDGE)
    with store.cursor() as cur:
        return calibrations.manifest_entries(cur)

