"""Nuggets (METHODOLOGY §10.9): Claude drafts a question's atomic facts from its evidence,
a domain expert edits and approves them, graders assign them to system answers, and the
V_strict / V / A_strict / A scores follow.

The drafting rules of §11.4-11.5 and DESIGN: structured output, the instructions as a cached
prefix, an escape hatch ("the evidence is not enough"), refusals counted as their own
outcome, every supporting quote checked mechanically against the evidence with the
resolver (a quote that is not there is flagged, never accepted silently), usage and cost
recorded, held-out questions refused before any request is built.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from golden_store.db.cursor import Cursor
import pandas as pd
import pydantic

from annotator.judge import llm, llm_cost
from annotator.labeling import labeling
from annotator.process import cache
from annotator.evidence.evidence_authoring import resolver as corpus_resolver
from annotator.labeling.evidence_rounds import is_blind, visible_evidence
from annotator.judge.held_out import HeldOut
from annotator.people.identity import User, require
from annotator.labeling.labeling import Ack, Label, LabelRefused
from annotator.people.roles import Permission, PermissionDenied
from golden_store.live import documents
from golden_store.live import answer_citations, evidence, label_receipts, llm_log, nuggets, queries
from golden_store.live import evidence_rounds
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live.nuggets import NuggetDraft
from golden_store.live.rubric import current_rubric
from golden_store.scoring.abstention import AbstentionReport, abstention_report
from golden_store.scoring.generation import NO_VITAL_CONVENTIONS, NO_VITAL_DEFINITIONS, Nugget, Support, nugget_scores
from golden_store.db.store import Store
from golden_store.core.system_names import check_system_name

PURPOSE = "draft_nuggets"
# the output guessed per question for the estimate: ~6 nuggets of text, importance and a quote
# (~70 tokens each as JSON) and the envelope
OUT_TOKENS = 450
INSTRUCTIONS = """You write the nuggets of a question for a RAG evaluation set (TREC-RAG style).
A nugget is one atomic fact that a good answer to the question must or should contain. Nuggets
are the recall side of answer evaluation: graders later check, for every system answer and every
nugget, whether the answer supports it (support / partial / none), and V_strict is the share of
vital nuggets an answer fully supports. A domain expert edits your draft before it is used, so
make the draft easy to check: short nuggets, exact quotes, honest importance.

You get the question and numbered evidence passages from the company's corpus.

Rules:
- Use only facts stated in the evidence. Never add outside knowledge, common sense or advice
  that the passages do not give, even when it would make a better answer.
- Each nugget is ONE fact, 1 to 12 words, written as a short statement (not a question). If a
  sentence holds two facts (a number and a condition, a step and its deadline), split it.
- Write what a correct answer has to say, not where it is said: no "the policy states",
  "according to passage 2", document names or section numbers.
- Keep exact codes, names, numbers, units and dates as they are written in the evidence
  ("BIOS-LOCK-12", "EUR 25", "30 days"), so a grader can match them in an answer.
- importance: "vital" if a good answer must contain it (without it the answer is wrong or
  useless to the person asking); "okay" if it is useful but optional (context, a detail, a
  second-order exception). Most questions have 1 to 3 vital nuggets. When in doubt between the
  two, choose "okay": a vital nugget an answer may rightly omit penalizes good answers.
- quote: copy, VERBATIM and character for character, the shortest span of one evidence
  passage (5 to 40 words) that supports the nugget. Keep the passage's spelling, punctuation,
  capitals and numbers; do not join text from two places, do not drop words from the middle,
  do not fix typos. A paraphrased quote is rejected by a mechanical check.
- Order nuggets from most to least important; usually 2 to 8 nuggets. Do not repeat a fact in
  other words, and do not write a nugget that only restates the question.
- If the passages disagree (an old and a new rule), write the nugget the question's wording
  asks for and quote the passage that states it; do not merge the two values.
- If the evidence does not answer the question, set insufficient_evidence to true and return
  no nuggets. Do not guess from passages that are only on the same topic.

Worked example 1 (a direct question).
Question: How long do I have to submit a travel expense claim?
Passage 1: "Expense claims must be submitted in the expense tool within 30 days of the end of
the trip. Claims submitted later than 90 days after the trip are not reimbursed. Attach an
itemized receipt for every expense above EUR 25."
A good draft:
  1. "Claims are due within 30 days after the trip" - vital - quote "Expense claims must be
     submitted in the expense tool within 30 days of the end of the trip"
  2. "Claims later than 90 days are not reimbursed" - vital - quote "Claims submitted later
     than 90 days after the trip are not reimbursed"
  3. "Claims are submitted in the expense tool" - okay - quote "Expense claims must be
     submitted in the expense tool"
The receipt rule is left out: it is true but does not answer this question.
A bad draft: "Submit claims quickly, ideally within a month, with receipts" (three facts in
one nugget, "ideally within a month" is not what the text says, and the receipts are off topic).

Worked example 2 (a procedure).
Question: What should I do when the laptop shows error BIOS-LOCK-12?
Passage 1: "BIOS-LOCK-12 appears after three wrong firmware passwords. Do not restart the
laptop repeatedly. Call the service desk on extension 4400; the agent unlocks the device
remotely after verifying your identity."
A good draft:
  1. "Call the service desk on extension 4400" - vital - quote "Call the service desk on
     extension 4400"
  2. "The agent unlocks the device remotely" - vital - quote "the agent unlocks the device
     remotely after verifying your identity"
  3. "Do not restart the laptop repeatedly" - okay - quote "Do not restart the laptop
     repeatedly"
  4. "Caused by three wrong firmware passwords" - okay - quote "BIOS-LOCK-12 appears after
     three wrong firmware passwords"

Worked example 3 (not answerable).
Question: How much is the car allowance for team leads?
Passage 1: "Company cars are assigned by the fleet office. Pool cars are booked in the
facilities portal at least two days ahead."
The passages talk about cars but never state an allowance: insufficient_evidence is true and
the nugget list is empty."""


class ProposedNugget(pydantic.BaseModel):
    text: str = pydantic.Field(description="one atomic fact, 1-12 words")
    importance: Literal["vital", "okay"]
    quote: str = pydantic.Field(description="verbatim supporting quote from one evidence passage")


class NuggetProposal(pydantic.BaseModel):
    insufficient_evidence: bool
    nuggets: list[ProposedNugget]


@dataclass(frozen=True)
class Passage:
    doc_id: str
    start: int
    end: int
    text: str
    kind: str  # evidence | judged


@dataclass
class DraftOutcome:
    query_id: str
    outcome: str  # ok | refusal | insufficient_evidence | error | skipped
    added: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)  # nugget ids whose quote is not in the evidence
    message: str = ""
    cost_usd: float | None = None
    usage: llm.Usage = field(default_factory=llm.Usage)
    call: "llm.CallResult | llm.LLMOutputError | None" = None  # the call it made (None: nothing sent)


# ---- the evidence a draft is made from ---------------------------------------------------------


def passages(store: Store, query_id: str, include_judged: bool = True, user: User | None = None) -> list[Passage]:
    """The question's evidence spans (those ``user`` may see, if given: only their own on a
    question of an unsettled evidence round), plus (optionally) pooled passages whose gold
    grade is ≥ 2."""
    out = []
    for e in (visible_evidence(store, user, query_id) if user is not None else evidence.list_evidence(store, query_id)):
        raw = documents.raw_text(store, e["doc_id"]) or ""
        out.append(Passage(e["doc_id"], e["start"], e["end"], raw[e["start"]:e["end"]], "evidence"))
    if include_judged:
        for j in nuggets.judged_relevant(store, query_id):
            if any(p.doc_id == j["doc_id"] and p.start <= j["start"] and j["end"] <= p.end for p in out):
                continue
            raw = documents.raw_text(store, j["doc_id"]) or ""
            out.append(Passage(j["doc_id"], j["start"], j["end"], raw[j["start"]:j["end"]], "judged"))
    return out


def prompt_content(question: str, ps: list[Passage]) -> str:
    body = "\n\n".join(f'<passage n="{i + 1}" doc="{p.doc_id}">\n{p.text}\n</passage>' for i, p in enumerate(ps))
    return f"<question>\n{question}\n</question>\n\n{body}"


def verify_quote(store: Store, quote: str | None, ps: list[Passage]) -> tuple[str, int, int] | None:
    """Place ``quote`` in the documents of the evidence and accept it only if it is there
    verbatim (after canonicalization: the resolver's exact match) and the place lies inside
    one of the passages: (doc_id, start, end), else None (flagged; approval is refused).

    Exact only, never the resolver's fuzzy match: a nugget's quote is its support, and a
    near-match is exactly the changed fact the check exists to catch ("ten years or more"
    resolved fuzzily onto evidence saying "five years or more" and was approved; newcomer
    walkthrough 2026-12-04, H1)."""
    if not quote or not quote.strip():
        return None
    resolver = corpus_resolver(store)
    for doc in sorted({p.doc_id for p in ps}):
        try:
            r = resolver.resolve(quote, doc_id=doc, exact_only=True)
        except ValidationError:
            return None
        if r is None:  # not in this document verbatim
            continue
        cands = [r.best] if r.best else list(r.candidates) if r.status == "ambiguous" else []
        for c in cands:
            if any(p.doc_id == c.doc_id and p.start <= c.start and c.end <= p.end for p in ps):
                return c.doc_id, c.start, c.end
    return None


# ---- drafting ------------------------------------------------------------------------------------


def eligible(store: Store, query_id: str, include_judged: bool,
              user: User | None = None, guard: HeldOut | None = None) -> tuple[queries.QueryRecord, list[Passage]]:
    """The question and its passages, once nothing held out would be sent: not the question's
    own flag, and no held-out question's text in the question or a passage (a copy of a
    held-out question under another id carries no flag)."""
    q = queries.get_query(store, query_id)
    if q is None:
        raise NotFoundError(f"Query {query_id!r} is not in the store.")
    # contamination (§3.8): refused before anything is built or sent
    llm.refuse_held_out(bool(q.held_out), query_id)
    guard = guard or HeldOut.of(store)
    if query_id in guard.ids:  # held out once: its text may already be a test item somewhere (issue 37)
        raise llm.LLMRefused(f"{query_id} was held out once, and held-out questions are never sent to a hosted "
                             "model, even after the flag is cleared (§3.8). Write its nuggets by hand.")
    ps = passages(store, query_id, include_judged, user)
    if not ps:
        raise ValidationError(f"{query_id} has no evidence to draft from: add evidence quotes (Evidence page) or "
                              "judge pooled passages first, or write its nuggets by hand.")
    if hit := guard.text_in(q.text, *(p.text for p in ps)):
        raise llm.LLMRefused(f"{query_id}: its question or evidence contains the text of held-out question {hit}, "
                             "and held-out questions are never sent to a hosted model (§3.8). Write its nuggets by "
                             "hand.")
    return q, ps


def _store_result(store: Store, user: User, query_id: str, res: llm.CallResult, ps: list[Passage]) -> DraftOutcome:
    u = res.usage
    llm_log.record_call(store, purpose=PURPOSE, item=query_id, model=res.model, prompt_sha=res.prompt_sha,
                        outcome=res.outcome if res.outcome == "refusal" or not res.parsed
                        or not res.parsed.insufficient_evidence else "insufficient_evidence",
                        input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                        cache_creation_input_tokens=u.cache_creation_input_tokens,
                        cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=res.cost_usd,
                        actor=user.username)
    out = DraftOutcome(query_id, res.outcome, cost_usd=res.cost_usd, usage=u, call=res)
    if res.outcome == "refusal":
        out.message = "Claude declined to draft nuggets for this question (counted as a refusal)."
        return out
    proposed = res.answer
    if proposed.insufficient_evidence or not proposed.nuggets:
        out.outcome = "insufficient_evidence"
        out.message = "Claude says the evidence does not answer the question: check the evidence first."
        return out
    drafts, problems = [], []
    for i, pn in enumerate(proposed.nuggets):
        place = verify_quote(store, pn.quote, ps)
        d = NuggetDraft(pn.text.strip(), pn.importance, pn.quote.strip(), *(place or (None, None, None)))
        try:
            nuggets.check(d, f"{query_id} proposal {i + 1}")
        except ValidationError as exc:
            problems.append(str(exc))
            continue
        drafts.append(d)
    rubric = current_rubric(store)
    ids = nuggets.add_draft(store, query_id, drafts, actor=user.username, model=res.model, prompt_sha=res.prompt_sha,
                            rubric_version=rubric["version"] if rubric else None) if drafts else []
    out.added = ids
    out.flagged = [nid for nid, d in zip(ids, drafts) if d.quote and d.doc_id is None]
    out.message = (f"{len(ids)} nugget(s) drafted" + (f", {len(out.flagged)} flagged: quote not in the evidence"
                                                      if out.flagged else "")
                   + (f"; {len(problems)} proposal(s) dropped: " + "; ".join(problems) if problems else ""))
    return out


def draft(store: Store, user: User, query_id: str, *, include_judged: bool = True,
          client: llm.LLMClient | None = None) -> DraftOutcome:
    """Ask Claude for the question's nuggets and append them as a draft (events)."""
    require(user, Permission.LABEL)
    _refuse_blind(store, user, query_id)
    q, ps = eligible(store, query_id, include_judged, user)
    client = client or llm.LLMClient()
    try:
        res = client.structured(item=query_id, instructions=INSTRUCTIONS, content=prompt_content(q.text, ps),
                                output=NuggetProposal)
    except llm.LLMOutputError as exc:
        llm.record_failure(store, purpose=PURPOSE, item=query_id, error=exc, actor=user.username)
        raise
    return _store_result(store, user, query_id, res, ps)


def _ready(store: Store, user: User, query_ids: list[str], include_judged: bool
           ) -> tuple[list[tuple[str, queries.QueryRecord, list[Passage]]], list[DraftOutcome]]:
    """The questions that can be sent with their passages, and those skipped with the reason."""
    ready: list[tuple[str, queries.QueryRecord, list[Passage]]] = []
    skipped: list[DraftOutcome] = []
    guard = HeldOut.of(store)
    for qid in query_ids:
        try:
            _refuse_blind(store, user, qid)
            q, ps = eligible(store, qid, include_judged, user, guard)
            ready.append((qid, q, ps))
        except (llm.LLMRefused, ValidationError, NotFoundError) as exc:
            skipped.append(DraftOutcome(qid, "skipped", message=str(exc)))
    return ready, skipped


def plan(store: Store, user: User, query_ids: list[str], *, batch: bool = False, include_judged: bool = True,
         model: str | None = None) -> llm_cost.JobPlan:
    """The estimate of drafting ``query_ids`` (METHODOLOGY §11.7), from the real inputs: the
    instructions as the cached prefix, each question's prompt as its item, ``OUT_TOKENS`` of
    output each. Nothing is sent. Held-out, blind and evidence-less questions are skipped (as
    the job would), each with its reason in ``skipped``."""
    require(user, Permission.LABEL)
    ready, skipped = _ready(store, user, query_ids, include_judged)
    est = llm_cost.estimate_items("Nugget drafting", model=model or llm.model_id(), prefix=INSTRUCTIONS,
                                  items=[prompt_content(q.text, ps) for _, q, ps in ready], out_tokens=OUT_TOKENS)
    return llm_cost.JobPlan(est, batch, [qid for qid, _, _ in ready], [(o.query_id, o.message) for o in skipped])


def draft_many(store: Store, user: User, query_ids: list[str], *, batch: bool = False, include_judged: bool = True,
               client: llm.LLMClient | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[DraftOutcome]:
    """Draft for many questions (a stratum, or all): held-out and evidence-less questions are
    skipped with the reason; with ``batch`` the requests go through the Message Batches API."""
    require(user, Permission.LABEL)
    ready, outcomes = _ready(store, user, query_ids, include_judged)
    if not ready:
        return outcomes
    client = client or llm.LLMClient()
    if batch:
        results = client.batch_structured(items=[(qid, prompt_content(q.text, ps)) for qid, q, ps in ready],
                                          instructions=INSTRUCTIONS, output=NuggetProposal, progress=progress)
        for qid, _, ps in ready:
            r = results[qid]
            if isinstance(r, llm.LLMOutputError):
                llm.record_failure(store, purpose=PURPOSE, item=qid, error=r, actor=user.username)
                outcomes.append(DraftOutcome(qid, "error", message=str(r), usage=r.usage, call=r))
            else:
                outcomes.append(_store_result(store, user, qid, r, ps))
        return outcomes
    for k, (qid, q, ps) in enumerate(ready):
        try:
            outcomes.append(draft(store, user, qid, include_judged=include_judged, client=client))
        except llm.LLMOutputError as exc:
            outcomes.append(DraftOutcome(qid, "error", message=str(exc), usage=exc.usage, call=exc))
        if progress:
            progress(k + 1, len(ready))
    return outcomes


def job_usage(outcomes: list[DraftOutcome]) -> llm_cost.JobUsage:
    """What a drafting job really used (the API's own counts, cache reads included)."""
    return llm_cost.usage_of([o.call for o in outcomes if o.call is not None])


def summarize(outcomes: list[DraftOutcome]) -> dict:
    """Counts per outcome, nuggets added and flagged, tokens and cost of a bulk draft."""
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.outcome] = by.get(o.outcome, 0) + 1
    costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
    return {"questions": len(outcomes), "outcomes": by, "nuggets_added": sum(len(o.added) for o in outcomes),
            "flagged": sum(len(o.flagged) for o in outcomes),
            "input_tokens": sum(o.usage.input_tokens for o in outcomes),
            "output_tokens": sum(o.usage.output_tokens for o in outcomes),
            "cache_read_tokens": sum(o.usage.cache_read_input_tokens for o in outcomes),
            "cache_write_tokens": sum(o.usage.cache_creation_input_tokens for o in outcomes),
            "cost_usd": sum(costs) if costs else None,
            "usage": (job := job_usage(outcomes)).as_dict(), "usage_lines": job.lines()}


# ---- editing and approval ---------------------------------------------------------------------


def _blind(store: Store, user: User, query_id: str) -> bool:
    """A question of an unsettled evidence round is blind for everyone but leads: its
    nuggets would show the quotes another annotator placed."""
    return is_blind(store, query_id) and not user.can(Permission.ADJUDICATE)


def _refuse_blind(store: Store, user: User, query_id: str) -> None:
    """Nobody - leads and the CLI included - drafts or edits the nuggets of an unsettled
    evidence-round question: they would rest on quotes the settlement may retract."""
    if is_blind(store, query_id):
        raise ValidationError(f"{query_id} is in an evidence round a lead has not settled yet: its nuggets wait "
                              "until then (they would rest on quotes the settlement may retract).")


def current(store: Store, user: User, query_id: str) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return [] if _blind(store, user, query_id) else nuggets.current(store, query_id)


def history(store: Store, user: User, query_id: str) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return [] if _blind(store, user, query_id) else nuggets.history(store, query_id)


def history_summary(query_id: str, events: list[dict]) -> str:
    """"7 event(s) on q003: 3 add, 1 edit, 3 approve." (ops in the order add, edit, delete, approve)."""
    counts = {op: sum(e["op"] == op for e in events) for op in ("add", "edit", "delete", "approve")}
    return (f"{len(events)} event(s) on {query_id}: "
            + ", ".join(f"{n} {op}" for op, n in counts.items() if n) + ".")


def status(store: Store, user: User) -> list[dict]:
    """Per question: stratum, evidence count (as this user may see it), nuggets, approved."""
    require(user, Permission.VIEW_STORE)
    # the store-wide table is cached per store generation (one read of every question: 0.1 s at
    # 20,000, on every rerun of the Nuggets page); the visitor's copy is then made blind
    rows = [dict(r) for r in cache.cached(store, "nuggets_status", (), lambda: nuggets.status(store))]
    blind = set() if user.can(Permission.ADJUDICATE) else evidence_rounds.unsettled(store)  # one read, not one per question
    for r in rows:
        if r["query_id"] in blind:
            r["n_evidence"] = len(visible_evidence(store, user, r["query_id"]))
            r["n_nuggets"] = r["n_approved"] = 0
    return rows


def save(store: Store, user: User, query_id: str, rows: list[dict]) -> dict[str, int]:
    """Save the edited list (rows: nugget_id or None, text, importance, quote; in order). A
    changed quote is re-verified against the evidence; a cleared quote is allowed."""
    require(user, Permission.LABEL)
    _refuse_blind(store, user, query_id)
    ps = passages(store, query_id, user=user)
    old = {n["nugget_id"]: n for n in nuggets.current(store, query_id)}
    out = []
    for r in rows:
        nid = r.get("nugget_id") or None
        quote = (r.get("quote") or "").strip() or None
        place: tuple[str, int, int] | None
        if nid and nid in old and (old[nid]["quote"] or None) == quote:
            place = (old[nid]["doc_id"], old[nid]["start"], old[nid]["end"])
        else:
            place = verify_quote(store, quote, ps) if quote else None
        out.append((nid, NuggetDraft((r.get("text") or "").strip(), (r.get("importance") or "").strip(), quote,
                                     *(place or (None, None, None)))))
    rubric = current_rubric(store)
    return nuggets.save_list(store, query_id, out, actor=user.username,
                             rubric_version=rubric["version"] if rubric else None)


def edit_one(store: Store, user: User, query_id: str, nugget_id: str | None, *, text: str = "",
             importance: str = "vital", quote: str = "", position: int | None = None,
             delete: bool = False) -> dict[str, int]:
    """Change, add (``nugget_id`` None) or delete one nugget; the rest of the list stays."""
    rows = [{"nugget_id": n["nugget_id"], "text": n["text"], "importance": n["importance"], "quote": n["quote"]}
            for n in nuggets.current(store, query_id)]
    idx = next((i for i, r in enumerate(rows) if r["nugget_id"] == nugget_id), None)
    if nugget_id is not None and idx is None:
        raise NotFoundError(f"{query_id} has no current nugget {nugget_id}.")
    if delete:
        if idx is None:
            raise ValidationError(f"Nothing to delete: name the nugget of {query_id} to delete.")
        rows.pop(idx)
        return save(store, user, query_id, rows)
    new = {"nugget_id": nugget_id, "text": text, "importance": importance, "quote": quote}
    if idx is None:
        rows.append(new)
        idx = len(rows) - 1
    else:
        rows[idx] = new
    if position is not None:
        rows.insert(max(0, min(len(rows) - 1, position - 1)), rows.pop(idx))
    return save(store, user, query_id, rows)


def approve(store: Store, user: User, query_id: str) -> int:
    require(user, Permission.LABEL)
    _refuse_blind(store, user, query_id)
    return nuggets.approve(store, query_id, actor=user.username)


def export_rows(store: Store, user: User) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return nuggets.approved(store)


# ---- answers, assignment and scores ----------------------------------------------------------


def import_answers(store: Store, user: User, path: str, system: str, *, replace: bool = False,
                   name: str | None = None) -> int:
    """JSONL ``{"query_id", "answer"}`` per line, with optional ``"contexts"`` (the passages the
    answer was generated from), ``"citations"`` (what it cites) and ``"outcome"``: answered,
    abstained (the system declined: "the documents do not say") or refused (a safety
    refusal, its own category, METHODOLOGY §10.5). Unknown query ids, empty answers and a bad
    outcome are errors with their line number; all or nothing. ``name``: what messages call
    the file (an upload's own name; default the path).

    An answer imported without an outcome is ``unknown``, not "answered", until a reviewer
    marks it (:func:`mark_outcome`). Defaulting to "answered" would score every decline the
    file did not label as a fabrication on an unanswerable question (abstention recall
    understated) and as a correct answer on an answerable one (over-refusal understated):
    a number computed from a guess, not from the data. Unknown answers are left out of the
    abstention figures and counted as unmarked, so a partial marking shows as partial."""
    require(user, Permission.IMPORT_RUNS)
    from golden_store.core.jsonl import iter_objects
    from golden_store.core.textin import read_text, shown

    check_system_name(system)
    label = name or str(path)
    known = set(queries.list_queries(store)["query_id"])
    rows: list[tuple[str, str, str]] = []
    problems: list[str] = []
    seen: set[str] = set()
    contexts: dict[str, list[answer_citations.Context]] = {}
    cited: dict[str, list[answer_citations.Cited]] = {}
    # the importers' one text rule (golden_store.core.textin)
    text = read_text(path, name)
    for line, obj in iter_objects(label, text, problems):
        qid, ans = obj.get("query_id"), obj.get("answer")
        outcome = obj.get("outcome", nuggets.UNMARKED)
        if not isinstance(qid, str) or qid not in known:
            problems.append(f"{label} line {line}: unknown query_id {shown(qid)}")
        elif not isinstance(ans, str) or not ans.strip():
            problems.append(f"{label} line {line}: field 'answer' must be a non-empty string")
        elif "outcome" in obj and outcome not in nuggets.OUTCOMES:
            problems.append(f"{label} line {line}: field 'outcome' must be one of {', '.join(nuggets.OUTCOMES)} "
                            f"(or left out when not known), not {shown(outcome)}")
        elif qid in seen:
            problems.append(f"{label} line {line}: a second answer for {qid}")
        else:
            seen.add(qid)
            rows.append((qid, ans, outcome))
            where = f"{label} line {line}"
            contexts[qid] = _contexts(obj.get("contexts"), where, problems)
            cited[qid] = _citations(obj.get("citations"), where, problems)
    if problems:
        raise ValidationError(f"Answers refused ({len(problems)} problem(s)); nothing was imported.", problems[:50])
    if not rows:
        raise ValidationError(f"{label}: no answers in the file.")
    return nuggets.store_answers(store, system, rows, actor=user.username, replace=replace, contexts=contexts,
                                 citations=cited)


def _offsets(obj: dict, where: str, problems: list[str]) -> tuple[int | None, int | None] | None:
    start, end = obj.get("start"), obj.get("end")
    if start is None and end is None:
        return None, None
    if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
        problems.append(f"{where}: \"start\" and \"end\" are character offsets (integers), given together")
        return None
    return start, end


def _contexts(raw: object, where: str, problems: list[str]) -> list[answer_citations.Context]:
    """An answer's optional ``contexts``: the passages it was generated from, each
    ``{"doc_id", "start", "end"}`` (a span of the corpus) or ``{"text"}``."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(f"{where}: \"contexts\" is a list of {{\"doc_id\", \"start\", \"end\"}} or {{\"text\"}}")
        return []
    out = []
    for c in raw:
        if isinstance(c, dict) and isinstance(c.get("text"), str) and "doc_id" not in c:
            out.append(answer_citations.Context(text=c["text"]))
            continue
        if not (isinstance(c, dict) and isinstance(c.get("doc_id"), str)):
            problems.append(f"{where}: each context is {{\"doc_id\", \"start\", \"end\"}} or {{\"text\"}}")
            return []
        span = _offsets(c, where, problems)
        if span is None:
            return []
        out.append(answer_citations.Context(c["doc_id"], span[0], span[1]))
    return out


def _citations(raw: object, where: str, problems: list[str]) -> list[answer_citations.Cited]:
    """An answer's optional ``citations``: each ``{"doc_id", "start"?, "end"?, "quote"?,
    "claim"?}``. Whether one resolves to a real span is decided on import, not refused here:
    a made-up citation is a fact about the system, to be counted."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(f"{where}: \"citations\" is a list of {{\"doc_id\", \"start\", \"end\", \"quote\"}}")
        return []
    out = []
    for c in raw:
        text_ok = isinstance(c, dict) and all(c.get(k) is None or isinstance(c.get(k), str) for k in ("quote", "claim"))
        if not (text_ok and isinstance(c.get("doc_id"), str) and c["doc_id"]):
            problems.append(f"{where}: each citation names its \"doc_id\" (and may give \"start\"/\"end\", "
                            f"\"quote\", \"claim\" as text)")
            return []
        span = _offsets(c, where, problems)
        if span is None:
            return []
        out.append(answer_citations.Cited(c["doc_id"], span[0], span[1], c.get("quote"), c.get("claim")))
    return out


# Who may see which system wrote an answer. Graders assign nuggets blind (an answer is named by
# a reference, :func:`answer_ref`): a table with system names, complete or not, tells them
# whose answer they are grading ("rag-d · q003 · 3 nuggets · 2 assigned" while one q003 answer
# is left; newcomer walkthrough 2026-12-04, M6). So system-named reads need one of these.
SEES_SYSTEMS: tuple[Permission, ...] = (Permission.VIEW_RESULTS, Permission.IMPORT_RUNS, Permission.MARK_OUTCOMES)


def sees_systems(user: User | None) -> bool:
    """Whether ``user`` may see which system wrote an answer (leads, engineers, reviewers, admins)."""
    return user is not None and any(user.can(p) for p in SEES_SYSTEMS)


def require_sees_systems(user: User | None, what: str) -> User:
    """Refuse a grader (or anyone without :data:`SEES_SYSTEMS`) a read that names systems."""
    if user is None:
        raise PermissionDenied(f"Sign in to see {what}.")
    if not sees_systems(user):
        roles = ", ".join(sorted(r.value for r in user.roles)) or "none"
        raise PermissionDenied(f"{user.username} (roles: {roles}) may not see {what}: they name the system of each "
                               "answer, and graders assign nuggets blind. A lead, engineer or reviewer sees them.")
    return user


def require_scores(user: User | None) -> User:
    """Nugget scores per system and answer: for those who see results (leads, engineers,
    admins), never for graders, whose assignment is blind."""
    return require(user, Permission.VIEW_RESULTS)


def answers(store: Store, user: User, system: str | None = None) -> list[dict]:
    """Every imported answer with its system: not for graders (blind), see :func:`has_answers`."""
    require_sees_systems(user, "answers")
    return nuggets.answers(store, system)


def has_answers(store: Store, user: User) -> bool:
    """Whether any system answer is imported (what a grader may know: not whose)."""
    require(user, Permission.LABEL)
    return bool(nuggets.answers(store))


def assign(store: Store, user: User, system: str, query_id: str, nugget_id: str, label: str) -> None:
    require(user, Permission.LABEL)
    nuggets.assign(store, system, query_id, nugget_id, label, actor=user.username)


# ---- the keyed assignment surface (blind: an answer is named by a reference, never its system) ----

ASSIGN_SURFACE = "nugget_assignment"
ASSIGN_KEYS = (("1", "assign", "support", "supports the nugget"), ("2", "assign", "partial", "partially"),
               ("3", "assign", "none", "does not support it"))
ASSIGN_AHEAD = 10


def answer_ref(system: str, query_id: str) -> str:
    """The name a grader sees for an answer: a digest, so which system wrote it stays hidden."""
    return "A-" + hashlib.sha256(f"{system}\x1f{query_id}".encode()).hexdigest()[:8]


def _assign_digest(question: str, answer: str, nugget: str) -> str:
    return labeling.digest(question, answer, nugget)


def assignment_cards(store: Store, user: User, n: int = ASSIGN_AHEAD) -> list[dict]:
    """The next ``n`` (answer, approved nugget) pairs nobody has labelled, answer by answer
    (all nuggets of one answer in a row), each ready to paint. No system name in them."""
    require(user, Permission.LABEL)
    done = {(x["system"], x["query_id"], x["nugget_id"]) for x in nuggets.assignments(store)}
    out: list[dict] = []
    todo = []
    for a in nuggets.answers(store):
        ns = [x for x in current(store, user, a["query_id"]) if x["approved"]]
        left = [(k, nug) for k, nug in enumerate(ns, 1) if (a["system"], a["query_id"], nug["nugget_id"]) not in done]
        if left:
            todo.append((a, ns, left))
    for i, (a, ns, left) in enumerate(todo):
        ref = answer_ref(a["system"], a["query_id"])
        for j, (k, nug) in enumerate(left):
            out.append({
                "item": {"query_id": a["query_id"], "answer": ref, "nugget_id": nug["nugget_id"]},
                "digest": _assign_digest(a["query_text"], a["answer"], nug["text"]),
                "title": nug["text"],
                "meta": f"{a['query_id']} · answer {ref} · nugget {k} of {len(ns)} · {nug['importance']}",
                "blocks": [{"heading": "Question", "segments": [[a["query_text"], "plain"]]},
                           {"heading": f"Answer {ref}", "segments": [[a["answer"], "plain"]]}]
                + ([{"heading": "The nugget's evidence", "segments": [[nug["quote"], "evidence"]]}]
                   if nug["quote"] else []),
                # the first nugget of an answer: the surface says a new answer starts (the last one is done)
                **({"notice": f"Answer {ref}: {len(left)} nugget(s) to assign · {len(todo) - i} answer(s) left"
                               + (" (the previous answer is done)" if out else "")} if j == 0 else {})})
            if len(out) >= n:
                return out
    return out


def _assign_write(cur: Cursor, user: User, label: Label, blind: frozenset[str]) -> int:
    """The assignment surface's rules for one support label, inside its transaction
    (``blind``: the questions whose nuggets this person may not see now)."""
    require(user, Permission.LABEL)
    item = label.item
    q, ref, nid = item.get("query_id"), item.get("answer"), item.get("nugget_id")
    if not (isinstance(q, str) and isinstance(ref, str) and isinstance(nid, str)):
        raise LabelRefused("Not saved: the label does not name its answer and nugget.")
    answer = next(((sys_, text) for sys_, text in nuggets.answers_to_tx(cur, q) if answer_ref(sys_, q) == ref), None)
    if answer is None:
        raise LabelRefused(f"Not saved: answer {ref} to {q} is gone (replaced or removed).")
    system = answer[0]
    if label.action == "undo":
        target = label_receipts.written_by(cur, label.target, user.username)
        if target is None or target[1] != item:
            raise LabelRefused("Nothing to undo: that label was never saved.")
        if nuggets.latest_assignment_event_tx(cur, system, q, nid) != target[0]:
            raise LabelRefused(f"Not undone: the label on {q} · {ref} · {nid} changed since.")
        return nuggets.assign_tx(cur, system, q, nid, "withdrawn", user.username)
    if label.action != "assign" or label.value not in nuggets.SUPPORT:
        raise LabelRefused("Not saved: a support label is support, partial or none.")
    nug = nuggets.nugget_tx(cur, q, nid)
    if nug is None or not nug[2]:
        raise LabelRefused(f"Not saved: nugget {nid} of {q} is no longer an approved nugget.")
    if q in blind:
        raise LabelRefused(f"Not saved: {q} is in an unsettled evidence round.")
    if _assign_digest(nug[0], answer[1], nug[1]) != label.digest:
        raise LabelRefused(f"Not saved: the answer or the nugget changed since it was shown ({q} · {ref}).")
    return nuggets.assign_tx(cur, system, q, nid, label.value, user.username)


def assignment_progress(store: Store, user: User) -> tuple[int, int]:
    """(labelled, to label) over every (answer, approved nugget) pair."""
    require(user, Permission.LABEL)
    done = {(x["system"], x["query_id"], x["nugget_id"]) for x in nuggets.assignments(store)}
    pairs = [(a["system"], a["query_id"], n["nugget_id"]) for a in nuggets.answers(store)
             for n in current(store, user, a["query_id"]) if n["approved"]]
    return sum(p in done for p in pairs), len(pairs)


def submit_assignments(store: Store, user: User | None, raw_labels: object) -> list[Ack]:
    """Write the support labels the assignment surface sent (each bound to what was shown)."""
    blind = frozenset() if user is None or user.can(Permission.ADJUDICATE) else frozenset(evidence_rounds.unsettled(store))
    return labeling.submit(store, user, ASSIGN_SURFACE, raw_labels,
                           lambda cur, who, label: _assign_write(cur, who, label, blind), Permission.LABEL)


def assignments(store: Store, user: User, system: str | None = None) -> list[dict]:
    """The latest support label per (system, question, nugget): names systems, so not for graders."""
    require_sees_systems(user, "assignments")
    return nuggets.assignments(store, system)


def scores(store: Store, user: User, no_vital: str = "methodology") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (system, question) V_strict / V / A_strict / A over the approved nuggets, and the
    mean per system. An answer counts once every approved nugget of its question has a label
    (an unassigned nugget would silently count as "none").

    A question with no vital nugget has V undefined by default (METHODOLOGY §10.9): it is left
    out of the system's V means and counted in ``no_vital``; ``no_vital="nuggetizer"`` scores it
    0 instead, as castorini's nuggetizer does. ``v_answers`` is how many answers the V means are
    over; ``answers`` how many the A means are over.

    Only for those who see results (:func:`require_scores`): the table names each answer's
    system and whether it is complete, which would tell a grader whose answer is left."""
    require_scores(user)
    if no_vital not in NO_VITAL_CONVENTIONS:
        raise ValidationError(f"Unknown convention {no_vital!r} for questions with no vital nugget: use one of "
                              f"{', '.join(NO_VITAL_CONVENTIONS)}.")
    approved: dict[str, list[Nugget]] = {}
    for n in nuggets.approved(store):
        approved.setdefault(n["query_id"], []).append(Nugget(n["nugget_id"], n["text"], n["importance"] == "vital"))
    labels: dict[tuple[str, str], dict[str, Support]] = {}
    for a in nuggets.assignments(store):
        labels.setdefault((a["system"], a["query_id"]), {})[a["nugget_id"]] = a["label"]
    rows = []
    for ans in nuggets.answers(store):
        ns = approved.get(ans["query_id"])
        if not ns:
            continue
        got = labels.get((ans["system"], ans["query_id"]), {})
        done = all(n.id in got for n in ns)
        row = {"system": ans["system"], "query_id": ans["query_id"], "nuggets": len(ns),
               "assigned": sum(n.id in got for n in ns), "complete": done}
        if done:
            row.update(nugget_scores(ns, {n.id: got[n.id] for n in ns}, no_vital=no_vital))
        row["vital"] = sum(n.vital for n in ns)
        rows.append(row)
    per_answer = pd.DataFrame(rows)
    if per_answer.empty or "v_strict" not in per_answer:
        return per_answer, pd.DataFrame()
    complete = per_answer[per_answer["complete"]]
    grouped = complete.groupby("system")
    per_system = grouped[["v_strict", "v", "a_strict", "a"]].mean().reset_index()  # NaN (undefined) left out
    per_system.insert(1, "answers", grouped.size().values)
    per_system.insert(2, "v_answers", grouped["v"].count().values)
    per_system.insert(3, "no_vital", grouped["vital"].apply(lambda v: int((v == 0).sum())).values)
    per_system.attrs["no_vital_convention"] = no_vital
    per_system.attrs["no_vital_definition"] = NO_VITAL_DEFINITIONS[no_vital]
    return per_answer, per_system


# ---- an answer's outcome and abstention (METHODOLOGY §10.5) ---------------------------------------

OUTCOMES = nuggets.OUTCOMES


def answer_outcomes(store: Store, user: User, system: str | None = None) -> list[dict]:
    """Every answer to a live question with its current outcome and where it comes from
    (``basis``: marked by a reviewer, imported with the answers, or unmarked). Names systems:
    not for graders."""
    require_sees_systems(user, "answer outcomes")
    return nuggets.answer_outcomes(store, system)


def mark_outcome(store: Store, user: User, system: str, query_id: str, outcome: str, *,
                 note: str | None = None) -> int:
    """A reviewer (or lead, or admin) marks or corrects an answer's outcome: an appended event
    with who and when; the latest mark is the answer's outcome. ``withdrawn`` undoes marks
    (back to the imported outcome)."""
    require(user, Permission.MARK_OUTCOMES)
    return nuggets.mark_outcome(store, system, query_id, outcome, actor=user.username, note=note)


def outcome_history(store: Store, user: User, system: str, query_id: str) -> list[dict]:
    require_sees_systems(user, "outcome history")
    return nuggets.outcome_history(store, system, query_id)


def abstention(store: Store, user: User, system: str | None = None, *, n_boot: int = 10_000,
               seed: int = 0) -> dict[str, AbstentionReport]:
    """Per system: abstention precision, recall, over-refusal rate and refusal rate with
    bootstrap intervals, over its answers to live questions (``answerable`` as the question
    says now). Definitions: :mod:`golden_store.scoring.abstention`. Per system: not for graders."""
    require_sees_systems(user, "abstention")
    by_system: dict[str, list[tuple[bool, str]]] = {}
    for r in nuggets.answer_outcomes(store, system):
        by_system.setdefault(r["system"], []).append((bool(r["answerable"]), r["outcome"]))
    if system is not None and system not in by_system:
        raise NotFoundError(f"No answers of system {system!r} to a live question.")
    return {s: abstention_report(rows, n_boot=n_boot, seed=seed) for s, rows in sorted(by_system.items())}


def _shown_rate(rate) -> str:
    if rate.value is None:
        return "undefined"
    return f"{rate.value:.2f} [{rate.ci[0]:.2f}, {rate.ci[1]:.2f}] ({rate.numerator}/{rate.denominator})"


ABSTENTION_COLUMNS = {
    "abstention_precision": "abstention precision",
    "abstention_recall": "abstention recall",
    "over_refusal_rate": "over-refusal rate",
    "refusal_rate": "refusal rate",
}


def abstention_table(reports: dict[str, AbstentionReport]) -> pd.DataFrame:
    """One row per system for display: each rate as "value [low, high] (num/den)" or
    "undefined", the counts beside them."""
    rows = []
    for system, r in reports.items():
        row = {"system": system, "answerable": r.n_answerable, "unanswerable": r.n_unanswerable}
        row.update({label: _shown_rate(r.rates[k]) for k, label in ABSTENTION_COLUMNS.items()})
        row.update({"refused": r.refused, "fabricated": r.fabricated, "unmarked": r.n_unmarked})
        rows.append(row)
    return pd.DataFrame(rows, columns=["system", "answerable", "unanswerable", *ABSTENTION_COLUMNS.values(),
                                       "refused", "fabricated", "unmarked"])


def undefined_reasons(reports: dict[str, AbstentionReport]) -> list[str]:
    """"system: rate undefined - why" for every undefined rate."""
    return [f"{system}: {ABSTENTION_COLUMNS[k]} undefined - {rate.reason}"
            for system, r in reports.items() for k, rate in r.rates.items() if rate.value is None]
