"""Double annotation of evidence quotes (METHODOLOGY §3.7): a lead gives the same questions
to several annotators; while a question is unsettled each of them sees only their own quotes
(on every page), "no answer" is their own verdict, and agreement is measured on span overlap
and on answerable/unanswerable. The lead settles each question (keep one annotator's
quotes, keep all, or no answer) with a rationale; until then its quotes stay out of a freeze."""

from __future__ import annotations

from dataclasses import dataclass

from annotator.labeling.assignment import pick_calibration
from annotator.people.identity import User, get_user, require
from annotator.people.roles import Permission
from golden_store.live import evidence, users
from golden_store.live import evidence_rounds
from golden_store.core.errors import ValidationError
from golden_store.scoring.agreement import spans_agree
from golden_store.db.store import Store

OVERLAP = 0.5  # span agreement: same document, overlap ≥ half of the shorter span


def visible_evidence(store: Store, user: User | None, query_id: str) -> list[dict]:
    """The question's current quotes as ``user`` may see them: all of them, except on a
    question of an unsettled evidence round, where only a lead (ADJUDICATE) sees everyone's
    and anybody else sees only their own."""
    return visible_evidence_for(store, user, [query_id])[query_id]


def visible_evidence_for(store: Store, user: User | None, query_ids: list[str]) -> dict[str, list[dict]]:
    """:func:`visible_evidence` of several questions in two reads, whatever their number
    (the Judge queue paints a dozen cards per key press)."""
    rows = evidence.list_evidence_for(store, query_ids)
    if user is not None and user.can(Permission.ADJUDICATE):
        return rows
    blind = evidence_rounds.unsettled(store)
    return {q: [r for r in rs if user is not None and r["author"] == user.username] if q in blind else rs
            for q, rs in rows.items()}


def is_blind(store: Store, query_id: str) -> bool:
    return query_id in evidence_rounds.unsettled(store)


def check_can_write(store: Store, user: User, query_id: str, *, quoting: bool = False) -> None:
    """On an unsettled evidence-round question only its annotators (and leads) write; an
    annotator who said "no answer" withdraws it before quoting."""
    if not is_blind(store, query_id) or user.can(Permission.ADJUDICATE):
        return
    if query_id not in evidence_rounds.assigned_to(store, user.username):
        raise ValidationError(f"{query_id} is in an evidence round you are not part of; its quotes come from the "
                              "round's annotators until a lead settles it.")
    if quoting and user.username in evidence_rounds.no_answer_actors(store, query_id):
        raise ValidationError(f"You said {query_id} has no answer in the corpus: withdraw that first, then quote.")


def start(store: Store, user: User, annotators: list[str], n: int = 20, seed: int = 0, note: str | None = None) -> str:
    """Give the same ``n`` answerable, not yet quoted questions (stratified) to every annotator."""
    require(user, Permission.RUN_ROUNDS)
    names = sorted({a.strip() for a in annotators if a and a.strip()})
    if users.count_users(store):
        bad = [a for a in names if (u := get_user(store, a)) is None or not u.can(Permission.LABEL)]
        if bad:
            raise ValidationError("Some annotators cannot take part (no such enabled account, or no label role).", bad)
    free = evidence_rounds.free_questions(store)
    picked = pick_calibration([r["query_id"] for r in free], {r["query_id"]: r["stratum"] for r in free}, n, seed) \
        if free else []
    return evidence_rounds.create(store, names, sorted(picked), actor=user.username, seed=seed, note=note)


def my_questions(store: Store, user: User) -> list[str]:
    require(user, Permission.LABEL)
    return evidence_rounds.assigned_to(store, user.username)


def say_no_answer(store: Store, user: User, query_id: str, on: bool = True) -> None:
    """An annotator's own "no answer in corpus" on an evidence-round question."""
    require(user, Permission.LABEL)
    if not is_blind(store, query_id):
        raise ValidationError(f"{query_id} is not in an unsettled evidence round.")
    if query_id not in evidence_rounds.assigned_to(store, user.username):
        raise ValidationError(f"{query_id} is in an evidence round you are not part of"
                              + ("; a lead decides by settling it (Adjudication page)."
                                 if user.can(Permission.ADJUDICATE) else "."))
    if on and any(r["author"] == user.username for r in evidence.list_evidence(store, query_id)):
        raise ValidationError(f"You still have quotes on {query_id}; retract them before saying it has no answer.")
    evidence_rounds.set_no_answer(store, query_id, user.username, on)




@dataclass
class EvidenceDispute:
    query_id: str
    query_text: str
    stratum: str
    annotators: dict[str, dict]  # annotator -> {"spans": [...], "no_answer": bool}
    finished: list[str]  # annotators who quoted or said no answer
    agree: bool | None  # None until two have finished

    @property
    def complete(self) -> bool:
        """Everyone in the round has quoted or said "no answer"."""
        return len(self.finished) == len(self.annotators)


def disputes(store: Store, user: User) -> list[EvidenceDispute]:
    """Every unsettled evidence-round question with each annotator's quotes or "no answer",
    and whether those who finished agree (same answerability; spans overlapping ≥ 50%)."""
    require(user, Permission.ADJUDICATE)
    by_q: dict[str, EvidenceDispute] = {}
    for st in evidence_rounds.round_state(store):
        d = by_q.setdefault(st["query_id"], EvidenceDispute(st["query_id"], st["query_text"], st["stratum"], {}, [],
                                                            None))
        d.annotators[st["annotator"]] = {"spans": st["spans"], "no_answer": st["no_answer"]}
        if st["spans"] or st["no_answer"]:
            d.finished.append(st["annotator"])
    for d in by_q.values():
        if len(d.finished) >= 2:
            sets = [[(s["doc_id"], s["start"], s["end"]) for s in d.annotators[a]["spans"]] for a in d.finished]
            d.agree = all(spans_agree(sets[0], other, OVERLAP) for other in sets[1:])
    return sorted(by_q.values(), key=lambda d: (d.agree is not False, d.stratum, d.query_id))


def settle(store: Store, user: User, query_id: str, decision: str, rationale: str) -> int:
    require(user, Permission.ADJUDICATE)
    return evidence_rounds.settle(store, query_id, decision, rationale, actor=user.username)


def accept_agreeing(store: Store, user: User) -> int:
    """Settle every question where everyone in the round finished and agrees, keeping the quotes of the first
    of them (alphabetically): agreeing quotes overlap, so one set is enough."""
    require(user, Permission.ADJUDICATE)
    n = 0
    for d in disputes(store, user):
        if d.agree and d.complete:  # never before everyone in the round has had their say
            keep = next(a for a in sorted(d.finished) if d.annotators[a]["spans"]) if any(
                d.annotators[a]["spans"] for a in d.finished) else None
            evidence_rounds.settle(store, d.query_id, f"keep:{keep}" if keep else "no_answer",
                      "annotators agree (accepted in bulk)", actor=user.username)
            n += 1
    return n

