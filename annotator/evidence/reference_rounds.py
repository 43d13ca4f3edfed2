"""Double authoring of reference answers (role-checked), as evidence rounds do it for quotes
(METHODOLOGY §3.7): a lead opens a round over chosen questions with two or more authors; each
author writes the question's reference answer - short and/or full, anchored to evidence spans,
with the criteria they would mark answers by - in private drafts, then submits it once; a lead
sees the submissions side by side with their agreement and adjudicates each question (accept
one author's answer, or write a merged one), which becomes the question's next reference answer
revision, approved, naming the round, with a note of why.

Blindness, the rule every reader here applies (:func:`_sees_submissions`): a round's author sees
the other authors' submissions of a question only once they have submitted their own (or the
question is adjudicated); a lead who is not an author sees them all; anybody else sees who has
submitted, never what. Drafts are only ever their author's. Agreement figures are computed from
what the reader may see, so a figure never tells an author what the other wrote before they
submitted. While a question waits in a round, only leads write its reference answer directly
(:func:`check_can_write`): an author's revision outside the round would show the other author
their answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotator.people.identity import User, get_user, require
from annotator.people.roles import Permission
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store
from golden_store.live import reference_rounds as live
from golden_store.live import users
from golden_store.live.reference_answers import Anchor, CriterionDraft
from golden_store.live.reference_rounds import RoundAnswer
from golden_store.scoring import reference_agreement as agreement

__all__ = ["RoundAnswer", "RoundView", "adjudicate", "answer_from", "check_can_write", "list_rounds", "my_questions",
           "open_round", "save_draft", "status", "submit"]


def answer_from(short_answer: str | None = None, full_answer: str | None = None,
                evidence: Sequence[Anchor] = (), criteria: Sequence[CriterionDraft] = ()) -> RoundAnswer:
    return RoundAnswer(short_answer, full_answer, tuple(evidence), tuple(criteria))


def check_can_write(store: Store, user: User, query_ids: Sequence[str]) -> None:
    """Refuse a direct write of the reference answer of a question waiting in a round, unless
    the writer is a lead (ADJUDICATE)."""
    if user.can(Permission.ADJUDICATE):
        return
    busy = live.open_questions(store)
    for q in query_ids:
        if q in busy:
            raise ValidationError(f"{q} is in reference round {busy[q]}: write your answer in the round (Reference "
                                  f"answers page, Rounds; or golden references round-submit); a lead adjudicates it.")


def open_round(store: Store, user: User, authors: Sequence[str], query_ids: Sequence[str],
               note: str | None = None) -> str:
    """A lead gives the same questions to two or more authors; the round's id."""
    require(user, Permission.RUN_ROUNDS)
    names = sorted({a.strip() for a in authors if a and a.strip()})
    if users.count_users(store):  # with accounts, each author is one that may write labels
        bad = [a for a in names if (u := get_user(store, a)) is None or not u.can(Permission.LABEL)]
        if bad:
            raise ValidationError(f"{', '.join(bad)}: no enabled account that may write labels; a round's authors "
                                  f"are annotators or leads.")
    return live.create(store, names, query_ids, actor=user.username, note=note)


def list_rounds(store: Store, user: User) -> list[dict]:
    require(user, Permission.VIEW_STORE)
    return live.rounds(store)


def my_questions(store: Store, user: User) -> list[dict]:
    """The questions waiting for this person's submission, in every open round, oldest first."""
    require(user, Permission.LABEL)
    out = []
    for r in reversed(live.rounds(store)):
        if user.username not in r["authors"] or r["n_adjudicated"] == r["n_questions"]:
            continue
        mine = {e["query_id"]: e for e in live.entries(store, r["round_id"]) if e["author"] == user.username}
        for q in live.questions(store, r["round_id"]):
            e = mine.get(q["query_id"])
            if q["adjudicated"] or (e and e["submission"]):
                continue
            out.append({"round_id": r["round_id"], "query_id": q["query_id"], "text": q["text"],
                        "state": "draft saved" if e and e["draft"] else "to write"})
    return out


def _sees_submissions(user: User, round_row: dict, question: dict, submitted: set[str]) -> bool:
    if question["adjudicated"]:
        return True
    if user.username in round_row["authors"]:
        return user.username in submitted
    return user.can(Permission.ADJUDICATE)


def _authored(sub: dict) -> agreement.AuthoredAnswer:
    return agreement.AuthoredAnswer(
        sub["short_answer"], tuple((str(e["doc_id"]), int(e["start"]), int(e["end"])) for e in sub["evidence"]),
        tuple(float(c["weight"]) for c in sub["criteria"]))


@dataclass
class RoundView:
    """A round as one person may see it: per question each author's state, the submissions
    the reader may read (``visible``), their own draft, the question's agreement where
    visible, and the round's agreement over the questions the reader sees in full."""

    round: dict
    questions: list[dict]
    agreement: agreement.RoundAgreement
    hidden: int  # questions with two or more submissions the reader may not see yet

    def as_dict(self) -> dict:
        return {"round": self.round, "questions": self.questions, "agreement": self.agreement.as_dict(),
                "hidden": self.hidden}


def status(store: Store, user: User, round_id: str) -> RoundView:
    require(user, Permission.VIEW_STORE)
    rnd = live.get_round(store, round_id)
    entries: dict[str, dict[str, dict]] = {}
    for e in live.entries(store, round_id):
        entries.setdefault(e["query_id"], {})[e["author"]] = e
    out, compared, hidden = [], [], 0
    for q in live.questions(store, round_id):
        got = entries.get(q["query_id"], {})
        submitted = {a for a, e in got.items() if e["submission"]}
        visible = _sees_submissions(user, rnd, q, submitted)
        authors = {}
        for a in rnd["authors"]:
            e = got.get(a, {"draft": None, "submission": None})
            state = "submitted" if e["submission"] else "drafting" if e["draft"] else "not started"
            authors[a] = {"state": state,
                          "submission": e["submission"] if e["submission"] and (visible or a == user.username)
                          else None,
                          "draft": e["draft"] if a == user.username and not e["submission"] else None}
        qa = agreement.question_agreement({a: _authored(got[a]["submission"]) for a in sorted(submitted)}) \
            if visible else None
        if qa is not None:
            compared.append(qa)
        elif not visible and len(submitted) >= 2:
            hidden += 1
        out.append({**q, "authors": authors, "submitted": sorted(submitted), "visible": visible,
                    "agreement": qa.as_dict() if qa else None})
    out.sort(key=lambda q: (q["adjudicated"], not (q["agreement"] or {}).get("disagrees", False), q["query_id"]))
    return RoundView(rnd, out, agreement.round_agreement(compared), hidden)


def _own(store: Store, user: User, round_id: str, query_id: str, answer: RoundAnswer, submit: bool) -> int:
    require(user, Permission.LABEL)
    return live.save(store, round_id, query_id, user.username, answer, submit=submit)


def save_draft(store: Store, user: User, round_id: str, query_id: str, answer: RoundAnswer) -> int:
    """Keep the author's draft (only they see it); the event id."""
    return _own(store, user, round_id, query_id, answer, submit=False)


def submit(store: Store, user: User, round_id: str, query_id: str, answer: RoundAnswer | None = None) -> int:
    """The author's one submission (final): ``answer``, or their latest draft when None."""
    if answer is None:
        require(user, Permission.LABEL)
        mine = [e for e in live.entries(store, round_id) if e["query_id"] == query_id and e["author"] == user.username]
        draft = mine[0]["draft"] if mine else None
        if draft is None:
            raise ValidationError(f"{query_id}: nothing to submit; write the answer (a short answer, a full answer or "
                                  f"both) or save a draft first.")
        answer = live.answer_of(draft)
    return _own(store, user, round_id, query_id, answer, submit=True)


def adjudicate(store: Store, user: User, round_id: str, query_id: str, *, accept: str | None = None,
               merged: RoundAnswer | None = None, note: str | None = None) -> int:
    """A lead accepts one author's submission or writes a merged answer: the question's next
    reference answer revision (approved, naming the round). A lead who is an author of the
    round adjudicates a question only after submitting their own answer to it."""
    require(user, Permission.ADJUDICATE)
    rnd = live.get_round(store, round_id)
    if user.username in rnd["authors"]:
        mine = [e for e in live.entries(store, round_id)
                if e["query_id"] == query_id and e["author"] == user.username and e["submission"]]
        if not mine:
            raise ValidationError(f"You are an author of round {round_id}: submit your own answer to {query_id} "
                                  f"before reading and adjudicating the others'.")
    return live.adjudicate(store, round_id, query_id, actor=user.username, accept=accept, merged=merged, note=note)
