"""The rubric judge over a system's answers as a job: estimate first, then one call per answer
with all its criteria (:mod:`annotator.judge.rubric_judge`), each mark kept as a judge grade
(``answer_grades``, with the model, the prompt's sha and the answer text's sha).

Which answers are sent: a system's answers to live questions that have criteria, except those
this judge (model and prompt) already marked on every criterion, their text unchanged (``redo``
sends them again: grading twice spends twice). A held-out question's answer is never sent, nor
one where the question, answer, reference or a criterion carries a held-out question's words;
each skip is counted with its reason. A refusal is counted and records no mark; a call that
fails is recorded in the call log with what it used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from annotator.judge import llm, llm_cost
from annotator.judge import rubric_judge as rj
from annotator.judge.held_out import HeldOut
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core.errors import NotFoundError
from golden_store.db.store import Store
from golden_store.live import answer_grades, llm_log

OUT_TOKENS = 350  # a reason and a mark per criterion, 3-5 criteria


def _reference(ref: dict | None) -> str | None:
    if ref is None:
        return None
    parts = [p for p in (ref.get("short_answer"), ref.get("full_answer")) if isinstance(p, str) and p.strip()]
    return "\n".join(parts) or None


def _graded(store: Store, system: str, model: str, crit: dict[str, list[dict]]) -> set[str]:
    """The questions whose answer this judge (model and prompt) has marked on every current
    criterion, on the answer's text as it is now: grading them again would spend for nothing."""
    marked: dict[str, set[str]] = {}
    for g in answer_grades.current_grades(store, system, "judge"):
        if not g["stale"] and g["grader"] == model and g["prompt_sha"] == rj.PROMPT_SHA:
            marked.setdefault(g["query_id"], set()).add(g["criterion_id"])
    return {q for q, ids in marked.items() if q in crit and {c["criterion_id"] for c in crit[q]} <= ids}


def _items(store: Store, system: str, query_ids: list[str] | None, model: str,
           redo: bool = False) -> tuple[list[rj.RubricItem], list[tuple[str, str]]]:
    rows = answer_grades.gradeable_answers(store, system)
    if not rows:
        raise NotFoundError(f"No answer of system {system!r} to a question with criteria: import its answers "
                            f"(golden answers import) and set criteria (golden references criteria) first.")
    guard = HeldOut.of(store)
    crit = answer_grades.criteria_by_query(store)
    refs = answer_grades.approved_references(store)
    done = set() if redo else _graded(store, system, model, crit)
    ready: list[rj.RubricItem] = []
    skipped: list[tuple[str, str]] = []
    for r in rows:
        qid = r["query_id"]
        if query_ids and qid not in query_ids:
            continue
        it = rj.RubricItem(f"{system}|{qid}", r["question"], r["answer"] or "", crit[qid], _reference(refs.get(qid)))
        if r["held_out"]:
            skipped.append((qid, "held out: never sent to a hosted model"))
            continue
        if qid in done:
            skipped.append((qid, f"already graded by {model} with this prompt, its text unchanged (--redo grades it "
                                 "again)"))
            continue
        try:
            rj.guard(it, held_out=False, guard_index=guard)
        except llm.LLMRefused as exc:
            skipped.append((qid, str(exc)))
            continue
        ready.append(it)
    return ready, skipped


def _qid(it: rj.RubricItem) -> str:
    return it.item.rsplit("|", 1)[1]


def plan(store: Store, user: User, system: str, *, query_ids: list[str] | None = None,
         model: str | None = None, redo: bool = False) -> llm_cost.JobPlan:
    """The estimate of grading ``system``'s answers (one call each); nothing is sent. Skipped
    answers are listed with why (an answer this judge already graded is skipped unless
    ``redo``)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    model = model or llm.model_id()
    ready, skipped = _items(store, system, query_ids, model, redo)
    est = llm_cost.estimate_items("Rubric grading (one call per answer, every criterion)",
                                  model=model, prefix=rj.INSTRUCTIONS,
                                  items=[rj.content(i) for i in ready], out_tokens=OUT_TOKENS)
    return llm_cost.JobPlan(est, False, [_qid(i) for i in ready], skipped)


@dataclass
class RunSummary:
    system: str
    graded: int = 0
    refused: int = 0
    marks: int = 0
    unmarked: list[tuple[str, str, str]] = field(default_factory=list)  # (query, criterion, why)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _record(store: Store, user: User, system: str, it: rj.RubricItem, res: rj.RubricResult) -> None:
    if res.outcome == "ok" and res.marks:
        store.write(functools.partial(
            answer_grades.record_judge_tx, system=system, query_id=_qid(it), answer=it.answer, model=res.model,
            prompt_sha=res.prompt_sha,
            marks=[answer_grades.JudgeMark(m.criterion_id, m.mark, m.reason) for m in res.marks]))
    u = res.usage
    llm_log.record_call(store, purpose=rj.PURPOSE, item=it.item, model=res.model, prompt_sha=res.prompt_sha,
                        outcome=res.outcome, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                        cache_creation_input_tokens=u.cache_creation_input_tokens,
                        cache_read_input_tokens=u.cache_read_input_tokens, cost_usd=u.cost_usd(res.model),
                        actor=user.username)


def run(store: Store, user: User, system: str, *, query_ids: list[str] | None = None,
        client: llm.LLMClient | None = None, progress: Callable[[int, int], None] | None = None,
        redo: bool = False) -> RunSummary:
    """Grade each ready answer and record its marks (see the module docstring)."""
    require(user, Permission.GRADE_POOL_BY_JUDGE)
    ready, skipped = _items(store, system, query_ids, client.model if client else llm.model_id(), redo)
    out = RunSummary(system, skipped=skipped)
    if not ready:
        return out
    client = client or llm.LLMClient()
    guard = HeldOut.of(store)
    for n, it in enumerate(ready, 1):
        try:
            res = rj.grade_answer(client, it, guard_index=guard)
        except llm.LLMOutputError as exc:
            llm.record_failure(store, purpose=rj.PURPOSE, item=it.item, error=exc, actor=user.username)
            out.failed.append((_qid(it), str(exc)))
            continue
        except llm.LLMRefused as exc:
            out.skipped.append((_qid(it), str(exc)))
            continue
        _record(store, user, system, it, res)
        out.graded += 1
        out.refused += res.outcome == "refusal"
        out.marks += len(res.marks)
        out.unmarked += [(_qid(it), c, why) for c, why in res.unmarked]
        out.input_tokens += res.usage.input_tokens
        out.output_tokens += res.usage.output_tokens
        out.cache_read_input_tokens += res.usage.cache_read_input_tokens
        if progress:
            progress(n, len(ready))
    return out
