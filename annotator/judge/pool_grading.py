"""Pool grading by a calibrated judge: the cascade at work (METHODOLOGY §11.1, §11.6, §11.8).

A lead or engineer picks a saved calibration whose judge clears the κ gate against people
(or records why it goes ahead below it); the judge (the calibration's model and its exact
rubric text, :mod:`annotator.judge.relevance_judge`) grades the pool's ungraded items; the band
decides, item by item, whether its label stands or a person grades the item
(:func:`golden_store.scoring.cascade.route`); a standing share of what it labeled goes to
people too, blind, so the judge is watched (:func:`golden_store.scoring.cascade.draw_sample`).

Nothing here is a person's label: the judge's answers are ``judge_label_events``
(:mod:`golden_store.live.judge_labels`), attributed to model id + rubric sha + calibration
id. Held-out questions are never sent (they are not candidates, and every passage and
question is checked against their text before a request is built). A job runs in chunks
(one Batch API batch, or a run of direct calls, per chunk); pausing takes effect between
chunks, and resuming grades what is left.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotator.judge import llm, llm_cost, relevance_judge
from annotator.judge.held_out import HeldOut
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store
from golden_store.live import calibrations, judge_labels, llm_log
from golden_store.live.judge_labels import JudgeLabel
from golden_store.scoring import calibration as cal
from golden_store.scoring import cascade

PURPOSE = relevance_judge.PURPOSE_POOL
DIRECT_UP_TO = 20       # a few items go as direct calls; more go through the Batch API (half price)
CHUNK = 500             # items per batch / per run of direct calls: a pause takes effect between chunks
OUT_TOKENS = 250        # a verdict: justification, grade, quote, p
MIN_CALIBRATION_ITEMS = 100  # §11.1 step 1: 100-200 human-labeled items; fewer cannot show a judge may gate


def _key(it: dict[str, Any]) -> tuple[str, str, int, int]:
    return (it["query_id"], it["doc_id"], int(it["start"]), int(it["end"]))


def _name(k: tuple[str, str, int, int]) -> str:
    return f"{k[0]}|{k[1]}|{k[2]}|{k[3]}"


def calibration(store: Store, calibration_id: str) -> dict[str, Any]:
    found = [c for c in calibrations.list_all(store) if c["calibration_id"] == calibration_id]
    if not found:
        raise NotFoundError(f"No saved calibration {calibration_id!r}: save one on the Judge calibration page first.")
    return found[0]


def gate_kappa(cal_row: dict[str, Any]) -> float:
    """The judge's κ against people on the calibration set (at its pass/fail cut)."""
    k = ((cal_row.get("report") or {}).get("judge_report") or {}).get("kappa")
    return math.nan if k is None else float(k)


def calibration_size(cal_row: dict[str, Any]) -> int:
    """How many items the judge's κ against people was measured on."""
    report = cal_row.get("report") or {}
    return int((report.get("judge_report") or {}).get("n") or report.get("n") or 0)


def gate_shortfall(cal_row: dict[str, Any]) -> str | None:
    """Why this calibration does not show that its judge may gate (None when it does): κ under
    the gate, or a calibration set under the 100 items §11.1 asks for."""
    k, n = gate_kappa(cal_row), calibration_size(cal_row)
    if math.isnan(k) or k < cal.KAPPA_GATE:
        return (f"its judge has κ {k:.2f} against people, under the gate {cal.KAPPA_GATE} (methodology §11.1 step 4: "
                "below it a judge labels noise)")
    if n < MIN_CALIBRATION_ITEMS:
        return (f"its κ {k:.2f} was measured on {n} item(s), under the {MIN_CALIBRATION_ITEMS} the methodology's §11.1 "
                "step 1 asks for: too few to show the judge may gate")
    return None


def problems(cal_row: dict[str, Any], model: str) -> list[str]:
    """Why this calibration cannot drive pool grading by ``model`` (empty when it can)."""
    cid = cal_row["calibration_id"]
    out = []
    if (cal_row.get("scale") or "binary") == "nugget":
        out.append(f"Calibration {cid} is of nugget support, not passage relevance.")
    if cal_row.get("band_low") is None or cal_row.get("band_high") is None:
        out.append(f"Calibration {cid} has no band: its judge gave no probabilities, so nothing tells a sure label "
                   "from an unsure one. Calibrate the Claude judge (it states p(FAIL)).")
    if not cal_row.get("rubric_text"):
        out.append(f"Calibration {cid} does not keep its rubric text, so the pool cannot be graded with exactly the "
                   "calibrated prompt. Calibrate again (a calibration saved now keeps it).")
    failed = (cal_row.get("report") or {}).get("checks_failed") or []
    if failed:
        out.append(f"Calibration {cid} was saved despite failing its checks ({'; '.join(failed)}): its band does not "
                   "keep the error rates it promises. Calibrate again (more items, or targets the judge can meet).")
    if cal_row["judge_model"] != model:
        out.append(f"Calibration {cid} is of judge {cal_row['judge_model']}; this studio's judge is {model} "
                   "(GOLDEN_LLM_MODEL). A new model is a new judge: calibrate it first (methodology §11.6).")
    return out


def saved_calibrations(store: Store, user: User) -> list[dict[str, Any]]:
    """Saved calibrations, newest first, each with ``problems``: why it cannot drive pool
    grading by this studio's judge (empty when it can)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    model = llm.model_id()
    rows = sorted(calibrations.list_all(store), key=lambda r: (r["created_at"], r["calibration_id"]), reverse=True)
    return [{**r, "problems": problems(r, model)} for r in rows]


@dataclass
class Plan:
    """What a job would do, shown (and confirmed) before it runs."""

    calibration_id: str
    model: str
    mode: str
    n_items: int
    counts: dict[str, int]
    kappa: float
    clears_gate: bool
    shortfall: str | None  # why the calibration does not clear the gate (None when it does)
    band: tuple[float, float]
    cut: int
    sample_share: float
    expected_escalation: float | None
    estimate: llm_cost.Estimate
    alternatives: dict[str, dict[str, float]] | None
    problems: list[str] = field(default_factory=list)

    @property
    def confirm_label(self) -> str:
        """The words that confirm the spend (the page's button, the CLI's question)."""
        return (f"{llm_cost.confirm_label(self.estimate, batch=self.mode == 'batch')} and grade "
                f"{self.n_items} item(s)")

    def lines(self) -> list[str]:
        c = self.counts
        out = [f"Pool: {c['pool_items']} items; graded by people {c['graded_by_people']}, in rounds {c['in_rounds']}, "
               f"answered by the judge already {c['judge_answered']}, held out (never sent) {c['held_out']}; "
               f"{c['to_grade']} to grade, {self.n_items} in this job ({self.mode}).",
               f"Judge: {self.model}, calibration {self.calibration_id}: κ {self.kappa:.2f} against people "
               f"({'clears the gate ' + str(cal.KAPPA_GATE) if self.clears_gate else 'BELOW the gate: '}"
               f"{self.shortfall or ''}); band p(FAIL) in "
               f"({self.band[0]:.3f}, {self.band[1]:.3f}) goes to people; pass = grade ≥ {self.cut}; "
               f"standing human sample {self.sample_share:.0%} of what the judge labels."]
        out += self.estimate.lines()
        if self.alternatives:
            a = self.alternatives
            esc = f"{self.expected_escalation:.0%}" if self.expected_escalation is not None else "?"
            out.append(f"Against the alternatives (escalation {esc} as on the calibration's report split; "
                       f"people's time at ${HUMAN_USD_PER_ITEM:.2f} an item): all-human ${a['all_human']['usd']:.2f} "
                       f"({a['all_human']['human_items']:.0f} items by people), all-judge "
                       f"${a['all_judge']['usd']:.2f} (nobody checks it), cascade ${a['cascade']['usd']:.2f} "
                       f"({a['cascade']['human_items']:.0f} items by people, "
                       f"{a['cascade']['human_items_saved']:.0f} saved).")
        return out


# People's time per graded passage, for the comparison only: 45 s at $60/h (GOLDEN_HUMAN_USD_PER_ITEM).
HUMAN_USD_PER_ITEM = 0.75


def _human_usd() -> float:
    try:
        return float(os.environ.get("GOLDEN_HUMAN_USD_PER_ITEM") or HUMAN_USD_PER_ITEM)
    except ValueError:
        return HUMAN_USD_PER_ITEM


def plan(store: Store, user: User, calibration_id: str, *, mode: str | None = None, limit: int | None = None,
         sample_share: float = cascade.DEFAULT_SAMPLE_SHARE) -> Plan:
    """What grading the pool with this calibration's judge would send and cost."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    if limit is not None and limit < 1:
        raise ValidationError("--limit is a number of items, 1 or more.")
    if not 0 <= sample_share <= 1:
        raise ValidationError(f"The human sample's share is between 0 and 1 (0.1 = 10%), not {sample_share}.")
    row = calibration(store, calibration_id)
    model = llm.model_id()
    counts = judge_labels.plan_counts(store)
    items = judge_labels.candidates(store, limit)
    n = len(items)
    mode = mode or ("direct" if n <= DIRECT_UP_TO else "batch")
    if mode not in ("batch", "direct"):
        raise ValidationError(f"Mode is 'batch' or 'direct', not {mode!r}.")
    mean_chars = (sum(it["length"] + len(it["question"]) for it in items) / n) if n else 0.0
    est = llm_cost.estimate("Pool grading", model=model, n_items=n, prefix_chars=len(row.get("rubric_text") or ""),
                            item_chars=mean_chars + 40, out_tokens=OUT_TOKENS)
    k = gate_kappa(row)
    esc = ((row.get("report") or {}).get("band_report") or {}).get("escalation_rate")
    per_item = llm_cost.expected_usd(est, batch=mode == "batch")
    alternatives = None
    if per_item is not None and n and esc is not None:
        alternatives = cascade.cascade_vs_alternatives(n, judge_cost_per_item=per_item / n,
                                                       human_cost_per_item=_human_usd(),
                                                       escalation_rate=float(esc), sample_share=sample_share)
    shortfall = gate_shortfall(row)
    return Plan(calibration_id, model, mode, n, counts, k, shortfall is None, shortfall,
                (float(row["band_low"] if row["band_low"] is not None else math.nan),
                 float(row["band_high"] if row["band_high"] is not None else math.nan)),
                int(row.get("pass_cut") or cascade.DEFAULT_CUT), sample_share,
                None if esc is None else float(esc), est, alternatives, problems(row, model))


def start(store: Store, user: User, p: Plan, *, override: str | None = None, seed: int = 0,
          limit: int | None = None) -> str:
    """Record a job for a confirmed plan; refused when the calibration cannot drive it, or
    when its κ is under the gate and no reason to go ahead is given (the reason is kept)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    if p.problems:
        raise ValidationError(p.problems[0], p.problems[1:])
    if not p.clears_gate and not (override and override.strip()):
        raise ValidationError(
            f"Refused: calibration {p.calibration_id} is under the gate: {p.shortfall}. Improve the rubric or the "
            "calibration set and calibrate again, or give the reason to go ahead anyway (--override / the override "
            "box); it is recorded.")
    if p.n_items == 0:
        raise ValidationError("Nothing to grade: every pool item is graded by people, in a round, held out, or "
                              "answered by the judge already.")
    row = calibration(store, p.calibration_id)
    estimate = {"lines": p.estimate.lines(), "n_items": p.n_items, "limit": limit,
                "usd": {f"{'batch' if b else 'sync'}{'_cached' if c else ''}": v for (b, c), v in p.estimate.usd.items()},
                "caches": p.estimate.caches, "cut": p.cut}
    return store.write(lambda cur: judge_labels.create_job_tx(
        cur, calibration_id=p.calibration_id, judge_model=p.model, rubric_sha=row["rubric_sha"], mode=p.mode,
        sample_share=p.sample_share, sample_seed=seed, gate_kappa=None if math.isnan(p.kappa) else p.kappa,
        gate_override=None if p.clears_gate else override.strip() if override else None, estimate=estimate,
        actor=user.username))


@dataclass
class RunSummary:
    job_id: str
    status: str = "running"
    sent: int = 0
    labeled: int = 0
    sampled: int = 0
    escalated: int = 0
    refused: int = 0
    errors: int = 0
    held_out_skipped: int = 0
    usage: llm_cost.JobUsage = field(default_factory=llm_cost.JobUsage)

    def lines(self) -> list[str]:
        return [f"Job {self.job_id}: {self.status}. Sent {self.sent}: the judge's label stands on {self.labeled} "
                f"(of which {self.sampled} also go to people as the standing sample), {self.escalated} go to people "
                f"(band or doubt), {self.refused} refused, {self.errors} failed (tried again by the next run); "
                f"{self.held_out_skipped} never sent (held-out text)."] + self.usage.lines()


def pause(store: Store, user: User, job_id: str) -> None:
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    status = judge_labels.job_status(store, job_id)
    if status in ("done", "failed", "paused"):
        raise ValidationError(f"Job {job_id} is {status}: nothing to pause.")
    store.write(lambda cur: judge_labels.job_event_tx(cur, job_id, "paused", actor=user.username))


def run(store: Store, user: User, job_id: str, *, client: llm.LLMClient | None = None,
        progress: Callable[[int, int], None] | None = None, chunk: int = CHUNK) -> RunSummary:
    """Grade the job's items chunk by chunk (a paused job resumes here). Each chunk's answers
    are written in one transaction; an item this job answered already is never written twice."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    job = judge_labels.job(store, job_id)
    status = judge_labels.job_status(store, job_id)
    if status == "done":
        raise ValidationError(f"Job {job_id} is done; start a new job to grade what the pool gained since.")
    row = calibration(store, job["calibration_id"])
    model = (client.model if client else llm.model_id())
    if model != job["judge_model"] or row["rubric_sha"] != job["rubric_sha"]:
        raise ValidationError(f"Job {job_id} was started for judge {job['judge_model']}; this studio's judge is now "
                              f"{model}. A changed judge is a new judge: calibrate it and start a new job (§11.6).")
    rubric = row["rubric_text"]
    guard = HeldOut.of(store)
    if hit := guard.text_in(rubric):
        raise llm.LLMRefused(f"The calibration's rubric contains the text of held-out question {hit}; it is never sent.")
    if status in ("paused", "failed"):
        store.write(lambda cur: judge_labels.job_event_tx(cur, job_id, "resumed", actor=user.username))
    limit = (job.get("estimate") or {}).get("limit")
    cut = int(row.get("pass_cut") or cascade.DEFAULT_CUT)
    low, high = float(row["band_low"]), float(row["band_high"])
    iso = cal.IsotonicMap(tuple(row["isotonic"]["x"]), tuple(row["isotonic"]["y"])) if row.get("isotonic") else None
    out = RunSummary(job_id)
    answered = judge_labels.answered_by_job(store, job_id)
    done_before = len(answered)
    left = None if limit is None else max(0, int(limit) - done_before)
    # an item this job failed on is tried again by the next job, not by this one's resumption
    todo = [it for it in judge_labels.candidates(store, None if left is None else left + len(answered))
            if _key(it) not in answered][:left]
    total = done_before + len(todo)
    client = client or llm.LLMClient(model=model)
    try:
        for at in range(0, len(todo), chunk):
            if judge_labels.job_status(store, job_id) == "paused":
                out.status = "paused"
                return out
            part = todo[at: at + chunk]
            within = (None if progress is None else
                      lambda d, _t, base=done_before + at: progress(base + d, total))  # a batch's own progress
            _grade_chunk(store, user, job, part, client, rubric, cut, low, high, iso, out, within)
            if progress:
                progress(done_before + min(at + chunk, len(todo)), total)
    except Exception as exc:
        why = str(exc)[:500]
        store.write(lambda cur: judge_labels.job_event_tx(cur, job_id, "failed", actor=user.username, note=why))
        raise
    store.write(lambda cur: judge_labels.job_event_tx(cur, job_id, "done", actor=user.username,
                                                      note="; ".join(out.lines())[:2000]))
    out.status = "done"
    return out


def _grade_chunk(store: Store, user: User, job: dict[str, Any], part: list[dict[str, Any]], client: llm.LLMClient,
                 rubric: str, cut: int, low: float, high: float, iso: cal.IsotonicMap | None,
                 out: RunSummary, progress: Callable[[int, int], None] | None = None) -> None:
    guard = HeldOut.of(store)  # read again per chunk: a question held out since the job began is not sent
    texts = judge_labels.passages(store, [_key(it) for it in part])
    send: list[tuple[tuple[str, str, int, int], dict[str, Any], str]] = []
    for it in part:
        k = _key(it)
        passage = texts.get(k)
        if passage is None:
            continue  # the document changed under the span: people will see it (or the pool drops it)
        if guard.id_in(k[0]) or guard.text_in(it["question"], passage):
            out.held_out_skipped += 1
            continue
        send.append((k, it, passage))
    if not send:
        return
    results: dict[str, llm.CallResult | llm.LLMOutputError] = {}
    if job["mode"] == "batch":
        try:
            results = client.batch_structured(items=[(_name(k), relevance_judge.content(it["question"], p))
                                                     for k, it, p in send],
                                              instructions=rubric, output=relevance_judge.RelevanceVerdict,
                                              max_tokens=1024, progress=progress)
        except llm.LLMOutputError as exc:  # the whole batch failed: every item stays with people for now
            results = {_name(k): exc for k, _, _ in send}
    else:
        for k, it, p in send:
            try:
                results[_name(k)] = client.structured(item=_name(k), instructions=rubric,
                                                      content=relevance_judge.content(it["question"], p),
                                                      output=relevance_judge.RelevanceVerdict, max_tokens=1024)
            except llm.LLMOutputError as exc:
                results[_name(k)] = exc
    labels: list[JudgeLabel] = []
    strata: dict[tuple[str, str, int, int], str] = {}
    for k, it, passage in send:
        res = results[_name(k)]
        out.sent += 1
        out.usage.add(res)
        if isinstance(res, llm.LLMOutputError):
            llm.record_failure(store, purpose=PURPOSE, item=_name(k), error=res, actor=user.username)
            labels.append(JudgeLabel(*k, outcome="error", route="human", reason=str(res)[:500]))
            out.errors += 1
            continue
        u = res.usage
        llm_log.record_call(store, purpose=PURPOSE, item=_name(k), model=res.model, prompt_sha=res.prompt_sha,
                            outcome=res.outcome, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                            cache_creation_input_tokens=u.cache_creation_input_tokens,
                            cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=res.cost_usd,
                            actor=user.username)
        if res.outcome == "refusal" or res.parsed is None:
            labels.append(JudgeLabel(*k, outcome="refused", route="human", reason="the judge refused",
                                     prompt_sha=res.prompt_sha))
            out.refused += 1
            continue
        reading = relevance_judge.read(res.parsed, passage, cut)
        p_used = float(iso([reading.p_fail])[0]) if iso else reading.p_fail
        d = cascade.route(p_used, reading.grade, low=low, high=high, cut=cut, quote_ok=reading.quote_ok)
        labeled = d.outcome == cascade.LABELED
        labels.append(JudgeLabel(*k, outcome=d.outcome, route="judge" if labeled else "human",
                                 grade=reading.grade if labeled else None, p_fail=reading.p_fail, p_used=p_used,
                                 reason=d.reason, justification=reading.justification[:4000],
                                 prompt_sha=res.prompt_sha))
        if labeled:
            strata[k] = it["stratum"]
            out.labeled += 1
        else:
            out.escalated += 1

    def tx(cur: Any) -> int:
        drawn = cascade.draw_sample([(_name(k), s) for k, s in strata.items()], share=float(job["sample_share"]),
                                    seed=int(job["sample_seed"]), before=judge_labels.sample_counts_tx(cur))
        final = [dataclasses.replace(lb, route="sample") if _name((lb.query_id, lb.doc_id, lb.start, lb.end))
                 in drawn else lb for lb in labels]
        out.sampled += len(drawn)
        return judge_labels.insert_tx(cur, job["job_id"], final)

    store.write(tx)


# ---- watching the judge ------------------------------------------------------------------------


def status(store: Store, user: User) -> dict[str, Any]:
    """Jobs (newest first) with their counts, and the pool's items by the judge's route."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    return {"jobs": judge_labels.jobs(store), "items": judge_labels.counts(store),
            "plan": judge_labels.plan_counts(store)}


def sample_report(store: Store, user: User) -> dict[str, Any]:
    """The standing human sample (§11.1 step 6): judge against people on the sampled items
    people have graded, per job (oldest first: the judge over time) and overall, with the
    calibration's κ beside it and the drift flags (§11.6)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    pairs = judge_labels.sample_pairs(store)
    jobs = {j["job_id"]: j for j in judge_labels.jobs(store)}
    cals = {c["calibration_id"]: c for c in calibrations.list_all(store)}
    windows: list[dict[str, Any]] = []
    by_job: dict[str, list[dict[str, Any]]] = {}
    for p in pairs:
        by_job.setdefault(p["job_id"], []).append(p)
    for job_id in sorted(by_job, key=lambda j: (jobs[j]["created_at"], j) if j in jobs else (None, j)):
        rows = by_job[job_id]
        cut = int((cals.get(rows[0]["calibration_id"]) or {}).get("pass_cut") or cascade.DEFAULT_CUT)
        fig = cascade.sample_figures([r["judge_grade"] for r in rows], [r["human_grade"] for r in rows], cut)
        windows.append({"window": f"job {job_id}", "job_id": job_id, "started": jobs.get(job_id, {}).get("created_at"),
                        "model": rows[0]["model"], "rubric_sha": rows[0]["rubric_sha"],
                        "calibration_id": rows[0]["calibration_id"], **fig})
    overall = cascade.sample_figures([r["judge_grade"] for r in pairs], [r["human_grade"] for r in pairs])
    latest_cal = cals.get(windows[-1]["calibration_id"]) if windows else None
    flags = cascade.drift_flags(windows, calibration_kappa=gate_kappa(latest_cal) if latest_cal else None)
    model = llm.model_id()
    if windows and windows[-1]["model"] != model:
        flags.append(f"The studio's judge is now {model}, not {windows[-1]['model']} that labeled the pool: "
                     "re-validate it on the calibration set before it grades more (§11.6).")
    sampled = judge_labels.counts(store)["sample"]
    return {"windows": windows, "overall": overall, "flags": flags, "sampled_items": sampled,
            "graded_by_people": len(pairs)}
