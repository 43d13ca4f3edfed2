"""Faithfulness of a system's answers as a job: estimate, check each answer's claims against
the context it was generated from (:mod:`annotator.judge.faithfulness_judge`), keep every
claim's verdict, and report per system.

Which answers are sent: those to live questions with a context imported (faithfulness is
support by the retrieved context; without it there is nothing to check against). A held-out
question's answer is never sent, nor one whose text carries a held-out question's words; each
skip is counted with its reason. A refusal is recorded as the answer's outcome and counted,
never scored; a call that fails is recorded in the call log with what it used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from annotator.judge import faithfulness_judge as fj
from annotator.judge import llm, llm_cost
from annotator.judge.held_out import HeldOut
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.db.store import Store
from golden_store.live import answer_citations, faithfulness, llm_log
from golden_store.live import nuggets as live_nuggets
from golden_store.live import queries as live_queries

OUT_TOKENS = 600  # claims and their checks: a few hundred tokens each call


@dataclass(frozen=True)
class Item:
    query_id: str
    question: str
    answer: str
    passages: list[str]


def _items(store: Store, system: str, query_ids: list[str] | None) -> tuple[list[Item], list[tuple[str, str]]]:
    guard = HeldOut.of(store)
    frame = live_queries.list_queries(store)
    held = {str(q): bool(h) for q, h in zip(frame["query_id"], frame["held_out"])}
    ready: list[Item] = []
    skipped: list[tuple[str, str]] = []
    for a in live_nuggets.answers(store, system):
        qid = a["query_id"]
        if query_ids and qid not in query_ids:
            continue
        passages = answer_citations.contexts(store, system, qid)
        if held.get(qid):
            skipped.append((qid, "held out: never sent to a hosted model"))
        elif not passages:
            skipped.append((qid, "no context imported with the answer: nothing to check its claims against"))
        elif hit := guard.text_in(a["query_text"], a["answer"], *passages):
            skipped.append((qid, f"carries the words of held-out question {hit}: never sent"))
        else:
            ready.append(Item(qid, a["query_text"], a["answer"], passages))
    return ready, skipped


def plan(store: Store, user: User, system: str, *, query_ids: list[str] | None = None,
         model: str | None = None) -> llm_cost.JobPlan:
    """The estimate of checking ``system``'s answers (two calls each: decompose, then check);
    nothing is sent. Skipped answers are listed with why."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    ready, skipped = _items(store, system, query_ids)
    contents = [fj.decomposition_content(i.question, i.answer) for i in ready] + \
               [fj.check_content([i.answer], i.passages) for i in ready]  # the claims are about the answer's size
    est = llm_cost.estimate_items("Faithfulness (claim decomposition and checks)", model=model or llm.model_id(),
                                  prefix=fj.CHECK_INSTRUCTIONS, items=contents, out_tokens=OUT_TOKENS)
    return llm_cost.JobPlan(est, False, [i.query_id for i in ready], skipped)


@dataclass
class RunSummary:
    system: str
    checked: int = 0
    refused: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


def run(store: Store, user: User, system: str, *, query_ids: list[str] | None = None,
        client: llm.LLMClient | None = None, progress: Callable[[int, int], None] | None = None) -> RunSummary:
    """Check each ready answer and record its claims (see the module docstring)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    ready, skipped = _items(store, system, query_ids)
    out = RunSummary(system, skipped=skipped)
    if not ready:
        return out
    client = client or llm.LLMClient()
    guard = HeldOut.of(store)
    for n, item in enumerate(ready, 1):
        key = f"{system}|{item.query_id}"
        try:
            res = fj.check_answer(client, item=key, question=item.question, answer=item.answer,
                                  passages=item.passages, guard_index=guard)
        except llm.LLMOutputError as exc:
            llm.record_failure(store, purpose=fj.PURPOSE, item=key, error=exc, actor=user.username)
            out.failed.append((item.query_id, str(exc)))
            continue
        except llm.LLMRefused as exc:
            out.skipped.append((item.query_id, str(exc)))
            continue
        u = res.usage
        rows = [faithfulness.ClaimRow(c.claim, c.verdict, c.judge_verdict, c.quote, c.quote_ok, c.justification)
                for c in res.claims] if res.outcome == "ok" else []
        store.write(functools.partial(
            faithfulness.record_tx, system=system, query_id=item.query_id, answer=item.answer, outcome=res.outcome,
            model=res.model, decompose_sha=res.decompose_sha, check_sha=res.check_sha, input_tokens=u.input_tokens,
            output_tokens=u.output_tokens, claims=rows, actor=user.username))
        llm_log.record_call(store, purpose=fj.PURPOSE, item=key, model=res.model, prompt_sha=res.check_sha,
                            outcome=res.outcome, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                            cache_creation_input_tokens=u.cache_creation_input_tokens,
                            cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=u.cost_usd(res.model),
                            actor=user.username)
        out.checked += 1
        out.refused += res.outcome == "refusal"
        out.input_tokens += u.input_tokens
        out.output_tokens += u.output_tokens
        if progress:
            progress(n, len(ready))
    return out


@dataclass(frozen=True)
class Report:
    """One system's faithfulness: the mean share of supported claims over its answers that
    make claims, and everything counted apart."""

    system: str
    answers_checked: int
    faithfulness: float | None      # mean over answers with at least one claim
    answers_with_claims: int
    no_claims: int                  # answers that make no claim (an abstention): not scored
    refused: int                    # checks the model refused: not scored
    stale: int                      # checks of an answer text since replaced: not scored
    claims: dict[str, int]
    quote_failed: int               # "supported" verdicts the verbatim backstop turned insufficient
    judges: list[str]
    prompt_shas: list[str]

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def report(store: Store, user: User, system: str | None = None) -> dict[str, Report]:
    require(user, Permission.VIEW_RESULTS)
    by_system: dict[str, list[dict]] = {}
    for c in faithfulness.current_checks(store, system):
        by_system.setdefault(c["system"], []).append(c)
    out: dict[str, Report] = {}
    for name, checks in sorted(by_system.items()):
        stale = [c for c in checks if c["answer"] is None or faithfulness.answer_sha(c["answer"]) != c["answer_sha"]]
        fresh = [c for c in checks if c not in stale]
        ok = [c for c in fresh if c["outcome"] == "ok"]
        scored = [c for c in ok if c["claims"]]
        shares = [c["supported"] / c["claims"] for c in scored]
        out[name] = Report(
            system=name, answers_checked=len(fresh),
            faithfulness=sum(shares) / len(shares) if shares else None, answers_with_claims=len(scored),
            no_claims=len(ok) - len(scored), refused=len(fresh) - len(ok), stale=len(stale),
            claims={k: sum(int(c[k]) for c in ok) for k in ("supported", "contradicted", "insufficient")},
            quote_failed=sum(int(c["quote_failed"]) for c in ok),
            judges=sorted({c["model"] for c in fresh}),
            prompt_shas=sorted({f"{c['decompose_sha'][:12]}/{c['check_sha'][:12]}" for c in fresh}))
    return out
