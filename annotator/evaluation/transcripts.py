"""Failure transcript review and the label flywheel (METHODOLOGY §12.5, §13.6, §15.4), and the
judge check (§11.1 step 6, Case 3).

Engineers import an evaluation run's transcripts; reviewers draw a stratified sample of
failures and (``pass_share``, 0.2 by default) of the judge's passes, read each one blind to
the judge (no verdict, justification or metrics on the card until they have given theirs) and
say whether the system failed (and how), the answer is right (no failure), the grader was
wrong, or it is ambiguous. A judged pass a reviewer says failed is a judge false pass, a judged
failure they say is right a false fail; :func:`judge_check` counts them per evaluation. Every
verdict that contradicts the judge goes to the lead's adjudication queue; system failures on
questions not yet in the golden set can be added to it in one step, tagged with their source
and date so new items can be measured apart for a release or two.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from golden_store.db.cursor import Cursor

from annotator.labeling import labeling
from annotator.labeling.evidence_rounds import visible_evidence
from annotator.people.identity import User, require
from annotator.labeling.labeling import Ack, Label, LabelRefused
from annotator.people.roles import Permission
from annotator.evaluation.transcript_sampling import DEFAULT_PASS_SHARE, Candidate, sample_draw
from golden_store.live import documents
from golden_store.live import label_receipts, queries
from golden_store.live import transcripts
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.db.store import Store

SOURCES = ("eval_run", "production_log")
_MAX_PROBLEMS = 50
SURFACE = "transcripts"
# The keys of the review surface: 1-6 a system failure of that class, n no failure, g grader,
# a ambiguous.
KEYS = tuple((str(i), "system_failure", cls, cls.replace("_", " ")) for i, cls in
             enumerate(transcripts.FAILURE_CLASSES, 1)) + (
    ("n", "no_failure", None, "no failure: the answer is right"),
    ("g", "grader_failure", None, "grader failure (the judge or the label was wrong)"),
    ("a", "ambiguous", None, "ambiguous"))
QUEUE_AHEAD = 4  # transcripts are long; a few ahead is enough to never wait
WILSON_Z = 1.959963984540054  # the two-sided 95% normal quantile


def _validate(line: int, obj: dict, known: set[str], where: str) -> dict[str, Any]:
    if "evaluation_id" not in obj and "run_id" in obj:  # files written before the rename (schema 15)
        obj = {**obj, "evaluation_id": obj["run_id"]}

    def need_str(key: str, src: dict = obj) -> str:
        v = src.get(key)
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"field {key!r} must be a non-empty string")
        return v.strip()

    evaluation_id, qid = need_str("evaluation_id"), need_str("query_id")
    trial = obj.get("trial", 0)
    if not isinstance(trial, int) or isinstance(trial, bool) or not 0 <= trial < 2**31:
        raise ValueError("field 'trial' must be an integer from 0 to 2147483647")
    source = obj.get("source") or "eval_run"
    if source not in SOURCES:
        raise ValueError(f"field 'source' must be eval_run or production_log, not {source!r}")
    if qid not in known and source != "production_log":
        raise ValueError(f"unknown query_id {qid!r} (only production_log items may bring new questions)")
    passed = obj.get("passed")
    if not isinstance(passed, bool):
        raise ValueError("field 'passed' must be true or false")
    metrics = obj.get("metrics") or {}
    if not isinstance(metrics, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                and math.isfinite(v) for v in metrics.values()):
        raise ValueError("field 'metrics' must be an object of finite numbers")
    t = obj.get("transcript")
    if not isinstance(t, dict):
        raise ValueError("field 'transcript' must be an object (question, retrieved, answer, judge)")
    question = need_str("question", t)
    retrieved = t.get("retrieved") or []
    if not isinstance(retrieved, list) or not all(isinstance(p, dict) and isinstance(p.get("text"), str)
                                                  for p in retrieved):
        raise ValueError("transcript.retrieved must be a list of objects with a 'text' (and 'doc_id')")
    judge = t.get("judge") or {}
    if not isinstance(judge, dict):
        raise ValueError("transcript.judge must be an object (verdict, justification)")
    for key in ("stratum", "failure_type", "trace_id"):  # optional, but text when given
        if obj.get(key) is not None and not isinstance(obj.get(key), str):
            raise ValueError(f"field {key!r} must be a string (or left out)")
    return {"evaluation_id": evaluation_id, "query_id": qid, "trial": trial, "source": source, "question": question,
            "stratum": (obj.get("stratum") or None) if qid not in known else None, "passed": passed,
            "failure_type": obj.get("failure_type") or None, "metrics": metrics,
            "retrieved": [{"doc_id": p.get("doc_id"), "text": p["text"], "score": p.get("score")} for p in retrieved],
            "answer": t.get("answer") if isinstance(t.get("answer"), str) else None,
            "judge_verdict": str(judge["verdict"]) if judge.get("verdict") is not None else None,
            "judge_justification": judge.get("justification") if isinstance(judge.get("justification"), str)
            else None, "trace_id": obj.get("trace_id") or None}


def import_file(store: Store, user: User, path: str | Path,
                progress: Callable[[int, int], None] | None = None, *, name: str | None = None) -> int:
    """Import a JSONL of transcripts, all or nothing; every problem names its line (and the
    file by ``name`` when given: an upload's own name, not its temporary copy's path)."""
    require(user, Permission.IMPORT_RUNS)
    from golden_store.core import textin

    p = Path(path)
    label = name or str(p)
    data = textin.read_file(p, label)
    text = textin.decode(label, data)  # the importers' one text rule: the line and column of a bad byte
    known = set(queries.list_queries(store)["query_id"])
    problems: list[str] = []
    rows, seen = [], set()
    objs = list(iter_objects(label, text, problems))
    for k, (line, obj) in enumerate(objs):
        try:
            r = _validate(line, obj, known, label)
            key = (r["evaluation_id"], r["query_id"], r["trial"])
            if key in seen:
                raise ValueError(f"evaluation {key[0]} query {key[1]} trial {key[2]} appears twice")
            seen.add(key)
            rows.append(r)
        except ValueError as exc:
            problems.append(f"{label} line {line}: {exc}")
        if progress and k % 200 == 0:
            progress(k, len(objs))
    if problems:
        raise ValidationError(f"Transcripts refused ({len(problems)} problem(s)); nothing was imported.",
                              problems[:_MAX_PROBLEMS])
    if not rows:
        raise ValidationError(f"{label}: no transcripts in the file.")
    n = transcripts.store_transcripts(store, rows, actor=user.username)
    if progress:
        progress(len(objs), len(objs))
    return n


# ---- sampling and reading ------------------------------------------------------------------------


def draw(store: Store, user: User, n: int = 10, seed: int = 0,
         pass_share: float = DEFAULT_PASS_SHARE) -> tuple[str | None, list[str]]:
    """Draw a stratified sample of unreviewed transcripts (recorded, so the next draw moves
    on): failures, and ``pass_share`` of the sample from the judge's passes (rounded half
    up; either kind fills in when the other runs short). See
    :func:`annotator.evaluation.transcript_sampling.sample_draw`."""
    require(user, Permission.REVIEW)
    fails = transcripts.failures(store)
    passed = transcripts.passes(store) if pass_share else []

    def cands(rows: list[dict]) -> list[Candidate]:
        return [Candidate(r["item_id"], r["stratum"], r["failure_type"] or "") for r in rows]

    reviewed = {f["item_id"] for f in fails + passed if f["verdict"]}
    try:
        items = sample_draw(cands(fails), cands(passed), n, seed, pass_share=pass_share, reviewed=reviewed,
                            drawn_before=transcripts.drawn_before(store))
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc
    if not items:
        return None, []
    return transcripts.record_draw(store, items, seed, actor=user.username), items


def latest_draw(store: Store, user: User) -> list[dict]:
    """The reviewer's latest sample, each item with its current verdict."""
    require(user, Permission.REVIEW)
    did = transcripts.latest_draw(store, user.username)
    return [transcript(store, user, it) for it in transcripts.draw_items(store, did)] if did else []


def transcript(store: Store, user: User, item_id: str) -> dict:
    """One transcript, its retrieved passages split into (text, is_evidence) segments: the
    question's known evidence quotes are marked where they occur in a passage."""
    require(user, Permission.REVIEW)
    t = transcripts.get(store, item_id)
    quotes = []
    if t["in_golden_set"]:
        for e in visible_evidence(store, user, t["query_id"]):
            raw = documents.raw_text(store, e["doc_id"]) or ""
            span = raw[e["start"]:e["end"]]
            if span.strip():
                quotes.append((e["doc_id"], span))
    for p in t["retrieved"]:
        p["segments"] = _mark(p["text"], [q for d, q in quotes if not p.get("doc_id") or d == p.get("doc_id")])
        p["has_evidence"] = any(hit for _, hit in p["segments"])
    return t


MIN_PARTIAL_CHARS = 40  # a chunk cut through the evidence still shows the part it holds


def _mark(text: str, spans: list[str]) -> list[tuple[str, bool]]:
    """Mark every occurrence of an evidence span in ``text``; where a span is not there
    whole (the chunk cut through it), mark the longest piece of it the text does hold, if
    that piece is at least MIN_PARTIAL_CHARS long."""
    from difflib import SequenceMatcher

    hits = []
    for s in spans:
        start = text.find(s)
        if start == -1:
            m = SequenceMatcher(None, text, s, autojunk=False).find_longest_match(0, len(text), 0, len(s))
            if m.size >= MIN_PARTIAL_CHARS:
                hits.append((m.a, m.a + m.size))
        while start != -1:
            hits.append((start, start + len(s)))
            start = text.find(s, start + 1)
    hits.sort()
    out, pos = [], 0
    for a, b in hits:
        if a < pos:
            continue
        if a > pos:
            out.append((text[pos:a], False))
        out.append((text[a:b], True))
        pos = b
    if pos < len(text) or not out:
        out.append((text[pos:], False))
    return out


def review(store: Store, user: User, item_id: str, verdict: str, failure_class: str | None = None,
           note: str = "") -> None:
    require(user, Permission.REVIEW)
    transcripts.record_verdict(store, item_id, verdict, failure_class, note, actor=user.username)


def verdict_label(verdict: str | None, failure_class: str | None = None) -> str:
    """A verdict as the review keys name it ("system failure: retrieval miss", "no failure",
    "grader failure", "ambiguous"); "" for none."""
    if not verdict:
        return ""
    if verdict == "system_failure":
        return "system failure" + (f": {failure_class.replace('_', ' ')}" if failure_class else "")
    if verdict == transcripts.WITHDRAWN:
        return "withdrawn (undone)"
    return verdict.replace("_", " ")


# The verdicts a reviewer can correct to, as (verdict, failure class), in the keys' order.
VERDICT_CHOICES = tuple((action, value) for _, action, value, _ in KEYS)


def correct_verdict(store: Store, user: User, item_id: str, verdict: str, failure_class: str | None = None,
                    reason: str = "", *, expected_event: int | None = None) -> int:
    """A reviewer changes their own verdict on a transcript of their samples, after the
    sample (issue 37 item 10: a wrong verdict that agrees with the judge was stuck). The new
    verdict is a new review event that supersedes the current one (the old one stays in the
    history, :func:`verdict_history`), with ``reason`` as its note: the reviewer has seen the
    judge's verdict by now, so the change says why. Refused, with nothing written, when the
    transcript is not in the reviewer's draws, has no current verdict (never reviewed, or
    undone: it is back in the review queue), its verdict is another reviewer's (a lead settles
    that on Adjudication), the verdict is the current one, or (``expected_event``: the review
    event the page showed) the verdict changed since the page showed it. Returns the new
    event's id."""
    require(user, Permission.REVIEW)
    if verdict not in transcripts.VERDICTS:
        raise ValidationError(f"A review verdict is one of {', '.join(transcripts.VERDICTS)}, not {verdict!r}.")
    if verdict != "system_failure":
        failure_class = None
    elif failure_class not in transcripts.FAILURE_CLASSES:
        raise ValidationError(f"A system failure needs its class: one of {', '.join(transcripts.FAILURE_CLASSES)}.")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Not changed: say why you change the verdict (it is kept with the new one).")

    def tx(cur: Cursor) -> int:
        state = transcripts.review_state_tx(cur, item_id, user.username)
        if state is None:
            raise NotFoundError(f"No transcript {item_id!r}.")
        if not state["in_draws"]:
            raise ValidationError(f"Not changed: {item_id} is not in your samples.")
        if state["verdict"] is None:
            raise ValidationError(f"Not changed: {item_id} has no verdict now (never given, or undone); review it "
                                  "from your sample at the top of the page.")
        if state["actor"] != user.username:
            raise ValidationError(f"Not changed: the verdict on {item_id} is {state['actor']}'s, not yours; a lead "
                                  "settles it on the Adjudication page.")
        if expected_event is not None and state["event_id"] != expected_event:
            raise ValidationError(f"Not changed: the verdict on {item_id} changed since the page showed it (now "
                                  f"{verdict_label(state['verdict'], state['failure_class'])}); look again.")
        if (state["verdict"], state["failure_class"]) == (verdict, failure_class):
            raise ValidationError(f"Not changed: {verdict_label(verdict, failure_class)} is already your verdict "
                                  f"on {item_id}.")
        return transcripts.review_tx(cur, item_id, verdict, failure_class, reason, user.username)

    return store.write(tx)


def verdict_history(store: Store, user: User, item_id: str) -> list[dict]:
    """Every review event of one transcript, oldest first: verdicts, corrections, undos."""
    require(user, Permission.REVIEW)
    return transcripts.verdict_history(store, item_id)


# ---- the keyed review surface ------------------------------------------------------------------


def _digest(question: str, retrieved: list, answer: str | None) -> str:
    """Digest of what a reviewer reads before giving a verdict: question, retrieved passages,
    answer. The judge's verdict and justification (and the metrics) are not on the card, so not
    in the digest: the review is blind to the judge."""
    return labeling.digest(question, json.dumps(retrieved, sort_keys=True, ensure_ascii=False), answer or "")


def card(t: dict) -> dict[str, Any]:
    """One transcript (as :func:`transcript` returns it) as the labeling surface paints it,
    blind to the judge: no verdict, no justification, no metrics, nothing that says whether
    the judge passed it (passes and failures are drawn together). What the judge said is shown
    once the reviewer has given a verdict (:func:`my_reviewed`)."""
    raw_retrieved = [{k: v for k, v in p.items() if k not in ("segments", "has_evidence")} for p in t["retrieved"]]
    blocks = [{"heading": f"[{i}] {p.get('doc_id') or '?'}" + (" · contains evidence" if p["has_evidence"] else ""),
               "segments": [[text, "evidence" if hit else "plain"] for text, hit in p["segments"]]}
              for i, p in enumerate(t["retrieved"], 1)]
    if not blocks:
        blocks = [{"heading": "Retrieved passages", "segments": [["Nothing was retrieved.", "plain"]]}]
    blocks.append({"heading": "Answer", "segments": [[t["answer"] or "(no answer)", "plain"]]})
    return {
        "item": {"item_id": t["item_id"]},
        "digest": _digest(t["question"], raw_retrieved, t["answer"]),
        "title": t["question"],
        "meta": f"{t['item_id']} · {t['stratum']} · {t['source']}"
                + (f" · trace {t['trace_id']}" if t["trace_id"] else "")
                + ("" if t["in_golden_set"] else " · not in the golden set"),
        "blocks": blocks}


def review_cards(store: Store, user: User, n: int = QUEUE_AHEAD) -> list[dict[str, Any]]:
    """The reviewer's next transcripts to review, ready to paint."""
    require(user, Permission.REVIEW)
    return [card(transcript(store, user, it)) for it in transcripts.review_queue(store, user.username, n)]


def _write(cur: Cursor, user: User, label: Label) -> int:
    """The review surface's rules for one verdict, inside its transaction."""
    require(user, Permission.REVIEW)
    item_id = label.item.get("item_id")
    if not isinstance(item_id, str):
        raise LabelRefused("Not saved: the verdict does not name its transcript.")
    if label.action == "undo":
        target = label_receipts.written_by(cur, label.target, user.username)
        if target is None:
            raise LabelRefused("Nothing to undo: that verdict was never saved.")
        if transcripts.latest_verdict_event_tx(cur, target[1].get("item_id", "")) != target[0]:
            raise LabelRefused(f"Not undone: the verdict on {target[1].get('item_id')} changed since.")
        return transcripts.review_tx(cur, target[1]["item_id"], transcripts.WITHDRAWN, None, "undo", user.username)
    if label.action not in transcripts.VERDICTS:
        raise LabelRefused(f"Not saved: {label.action!r} is not a review verdict.")
    content = transcripts.content_tx(cur, item_id)
    if content is None:
        raise LabelRefused(f"Not saved: there is no transcript {item_id}.")
    if not content["drawn"]:
        raise LabelRefused(f"Not saved: {item_id} was never drawn for review.")
    if _digest(content["question"], content["retrieved"], content["answer"]) != label.digest:
        raise LabelRefused(f"Not saved: {item_id} is not the transcript that was on screen.")
    return transcripts.review_tx(cur, item_id, label.action, label.value, label.note, user.username)


def submit(store: Store, user: User | None, raw_labels: object) -> list[Ack]:
    """Write the verdicts the review surface sent (each bound to the transcript shown)."""
    return labeling.submit(store, user, SURFACE, raw_labels, _write, Permission.REVIEW)


def to_add(store: Store, user: User) -> list[dict]:
    """Transcripts the reviewer judged system failures on questions the golden set lacks
    (an overturned pass among them)."""
    require(user, Permission.REVIEW)
    return [{k: f[k] for k in ("item_id", "question", "stratum", "source")}
            for f in transcripts.failures(store) + transcripts.passes(store)
            if f["verdict"] == "system_failure" and not f["in_golden_set"]]


def draw_progress(store: Store, user: User) -> tuple[int, int]:
    """(reviewed, drawn) over the reviewer's samples."""
    require(user, Permission.REVIEW)
    return transcripts.draw_progress(store, user.username)


def my_reviewed(store: Store, user: User) -> list[dict]:
    """The reviewer's drawn transcripts that have a verdict, with it and, now that it is given,
    what the judge said (passed, its verdict and justification) and whether the review
    contradicts it (for looking back)."""
    require(user, Permission.REVIEW)
    return transcripts.reviewed_in_draws(store, user.username)


def strata(store: Store, user: User) -> set[str]:
    require(user, Permission.REVIEW)
    return queries.known_strata(store)


def summary(store: Store, user: User) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return transcripts.summary(store)


def wilson_interval(k: int, n: int, z: float = WILSON_Z) -> tuple[float, float] | None:
    """The Wilson score interval of the proportion k/n (95% by default); None when n is 0.
    Unlike k/n +- z*se it stays inside [0, 1] and is not empty at k = 0 or k = n, which is
    where a judge check usually sits (a few overturned passes among a few dozen)."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"{k} of {n} is not a proportion.")
    p, z2 = k / n, z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def judge_check(store: Store, user: User) -> list[dict]:
    """Per evaluation (the judge is the evaluation's: transcripts carry no judge model of
    their own), the judge against its reviewers: passes reviewed, confirmed (no failure) and
    overturned (a system or grader failure: judge false passes); failures reviewed, confirmed
    (a system failure) and overturned (no failure or a grader failure: judge false fails). The
    false-pass rate is overturned / (confirmed + overturned) passes, with its Wilson 95%
    interval; the false-fail rate the same way. Each transcript counts once, by its latest
    verdict; withdrawn reviews do not count; an ambiguous verdict is reviewed, confirms and
    overturns nothing, and is left out of the rates."""
    require(user, Permission.VIEW_STORE)
    rows = transcripts.judge_check(store)
    for r in rows:
        for kind, plural in (("pass", "passes"), ("fail", "failures")):
            bad, n = r[f"{plural}_overturned"], r[f"{plural}_overturned"] + r[f"{plural}_confirmed"]
            ci = wilson_interval(bad, n)
            r[f"{plural}_decided"] = n
            r[f"false_{kind}_rate"] = bad / n if n else None
            r[f"false_{kind}_low"], r[f"false_{kind}_high"] = ci if ci else (None, None)
    return rows


# ---- the flywheel -------------------------------------------------------------------------------


NEGATIVE_STRATUM = "negative"  # the stratum of questions the corpus does not answer (as on Queries)


def add_to_golden_set(store: Store, user: User, item_id: str, stratum: str | None = None, *,
                      answerable: bool | None, reason: str = "", today: date | None = None) -> str:
    """Turn a reviewed system failure on a question the golden set lacks into a new query:
    source = the transcript's source, date = ``today`` (default: the local date), the stratum
    chosen (else the record's),
    a note naming the run. It then waits in the evidence queue like any new question.

    Whether the corpus answers the question is the reviewer's call, asked every time
    (``answerable``; None is refused): production-log questions are often unanswerable, and
    storing one as answerable made its judged-0 passages count against every system (issue
    37 item 10). An unanswerable question carries it as the queries do: ``answerable`` false,
    the negative stratum unless another is chosen, and ``reason`` (required: what the corpus
    lacks) first in its notes. An answerable question in the negative stratum is refused, as
    on Queries -> Edit."""
    require(user, Permission.REVIEW)
    if answerable is None:
        raise ValidationError("Not added: say whether the corpus answers the question (answerable or not).")
    reason = (reason or "").strip()
    if not answerable and not reason:
        raise ValidationError("Not added: say why the corpus does not answer it (what it lacks); it is kept in the "
                              "question's notes.")
    t = transcripts.get(store, item_id)
    if t["verdict"] != "system_failure":
        raise ValidationError(f"{item_id}: only a transcript reviewed as a system failure is added to the golden set.")
    if t["in_golden_set"]:
        raise ValidationError(f"{t['query_id']} is already in the golden set.")
    default = NEGATIVE_STRATUM if not answerable else (t["stratum"] if t["stratum"] != "unassigned" else None)
    chosen = stratum or default
    if not chosen:
        raise ValidationError("Choose the stratum of the new question.")
    if answerable and chosen == NEGATIVE_STRATUM:
        raise ValidationError("Not added: the negative stratum means the corpus does not answer the question; choose "
                              "the stratum it belongs in, or say it is not answerable.")
    qid = t["query_id"]
    if not queries.id_is_valid(qid) or queries.id_ever_used(store, qid):
        # a same-named (or retired) query must not come back with another question's labels
        qid = "fw-" + hashlib.sha256(item_id.encode()).hexdigest()[:10]
    origin = (f"added from transcript {item_id} ({t['failure_class']}) by {user.username}; "
              f"trace {t['trace_id'] or '-'}")
    notes = origin if answerable else f"Not answerable from the corpus: {reason} ({origin})"
    rec = queries.QueryRecord(qid, t["question"], chosen, answerable, t["source"], today or date.today(), False, notes)
    queries.save_query(store, rec, actor=user.username, must_exist=False)
    return qid


# ---- grader failures, for the lead -------------------------------------------------------------


def questioned(store: Store, user: User) -> list[dict]:
    require(user, Permission.ADJUDICATE)
    return transcripts.questioned(store)


def resolve(store: Store, user: User, item_id: str, resolution: str, rationale: str) -> None:
    require(user, Permission.ADJUDICATE)
    transcripts.resolve(store, item_id, resolution, rationale, actor=user.username)

