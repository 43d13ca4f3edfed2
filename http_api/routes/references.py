"""Reference answers over HTTP: read a question's reference answer (with its history and
criteria), write a revision anchored to evidence spans, approve what was read, import a JSONL
file of them, set the criteria of a question or stratum, and score systems' answers against the
approved short references (exact match, token F1) - the same service as the CLI's
``golden references`` and the Reference answers page (:mod:`annotator.evidence.reference_answers`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic
from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from starlette.concurrency import run_in_threadpool

from annotator.people.identity import User
from golden_store.db.store import Store
from golden_store.scoring.answer_checks import DEFAULT_MAX_CHARS
from http_api.auth import caller
from http_api.shapes import jsonable
from http_api.store import store
from http_api.uploads import saved

router = APIRouter(tags=["references"])

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]


class Span(pydantic.BaseModel):
    doc_id: str = pydantic.Field(min_length=1)
    start: int = pydantic.Field(ge=0)
    end: int = pydantic.Field(gt=0)


class ReferenceIn(pydantic.BaseModel):
    short_answer: str | None = pydantic.Field(None, description="what exact match and token F1 compare against")
    full_answer: str | None = None
    evidence: list[Span] = pydantic.Field(default_factory=list, description="spans in the document as imported")
    note: str | None = None


class ApproveIn(pydantic.BaseModel):
    revision: int | None = pydantic.Field(None, description="refused unless the latest revision is this one")


class CriterionIn(pydantic.BaseModel):
    id: str = pydantic.Field(min_length=1)
    text: str = pydantic.Field(min_length=1)
    example: str = pydantic.Field(min_length=1, description="a worked example: what an answer meeting it says")
    weight: float = pydantic.Field(1.0, gt=0)
    scale_max: Literal[1, 2, 3] = 1


class CriteriaIn(pydantic.BaseModel):
    scope: Literal["query", "stratum"]
    scope_id: str = pydantic.Field(min_length=1)
    criteria: list[CriterionIn] = pydantic.Field(min_length=1, max_length=5)


def _refs():
    from annotator.evidence import reference_answers

    return reference_answers


@router.get("/references", summary="Every current reference answer, with whether it is approved")
def list_references(s: TheStore, user: Caller) -> list[dict[str, Any]]:
    return jsonable(_refs().current(s, user))  # type: ignore[no-any-return]


@router.get("/answers/match", summary="Exact match and token F1 of systems' answers against the approved "
                                         "short reference answers")
def match_references(s: TheStore, user: Caller,
                     system: Annotated[str | None, Query(description="only this system")] = None) -> dict[str, Any]:
    return jsonable({name: rep.as_dict() for name, rep in _refs().match(s, user, system).items()})  # type: ignore[no-any-return]


@router.get("/answers/citations", summary="Citation validity per system: each citation resolves to a real span "
                                            "of the corpus (gate FAIL on any that does not)")
def answer_citations(s: TheStore, user: Caller,
                     system: Annotated[str | None, Query(description="only this system")] = None) -> dict[str, Any]:
    from annotator.evaluation import answer_checks

    return jsonable({name: r.as_dict()  # type: ignore[no-any-return]
                     for name, r in answer_checks.citation_validity(s, user, system).items()})


@router.get("/answers/checks", summary="The deterministic checks of systems' answers, no model asked: empty answers, "
                                       "answers over a length cap, forbidden patterns, invalid citations, length "
                                       "shift against a baseline, refusal and abstention rates per stratum (gate "
                                       "FAIL on any failed check)")
def answer_checks_report(
        s: TheStore, user: Caller,
        system: Annotated[str | None, Query(description="only this system")] = None,
        baseline: Annotated[str | None, Query(description="flag a shift of answer length against this system (KS "
                                                          "p < 0.01 and the median moved by 25% or more)")] = None,
        forbid: Annotated[list[Annotated[str, pydantic.Field(min_length=1)]] | None, Query(description="a regular expression no answer may contain "
                                                              "(case-insensitive; repeat the parameter for more), "
                                                              "beside the default prompt-scaffolding markers")] = None,
        max_chars: Annotated[int, Query(ge=1, description="the length cap in characters")] = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    from annotator.evaluation import answer_checks

    return jsonable(answer_checks.checks(s, user, system, baseline=baseline, forbid=forbid or (),  # type: ignore[no-any-return]
                                         max_chars=max_chars).as_dict())


@router.get("/references/{query_id}", summary="A question's reference answer, its history and its criteria")
def get_reference(s: TheStore, user: Caller, query_id: str) -> dict[str, Any]:
    r = _refs()
    now = r.current(s, user, query_id)
    source, criteria = r.criteria_for_query(s, user, query_id)
    return jsonable({"query_id": query_id, "current": now[0] if now else None,  # type: ignore[no-any-return]
                     "history": r.history(s, user, query_id), "criteria": criteria, "criteria_from": source or None})


@router.put("/references/{query_id}", summary="Write a revision of a question's reference answer (not approved "
                                              "until someone approves it)")
def put_reference(s: TheStore, user: Caller, query_id: str, body: ReferenceIn) -> dict[str, Any]:
    r = _refs()
    from golden_store.live.reference_answers import Anchor

    anchors = [Anchor(e.doc_id, e.start, e.end) for e in body.evidence]
    revision = r.write(s, user, query_id, short_answer=body.short_answer, full_answer=body.full_answer,
                       evidence=anchors, note=body.note)
    return {"query_id": query_id, "revision": revision, "approved": False}


@router.post("/references/{query_id}/approve", summary="Approve a question's latest reference answer")
def approve_reference(s: TheStore, user: Caller, query_id: str, body: ApproveIn) -> dict[str, Any]:
    event = _refs().approve(s, user, query_id, revision=body.revision)
    return {"query_id": query_id, "approved": True, "event_id": event}


@router.post("/references", status_code=201, summary="Import reference answers from JSONL (all lines or none)")
async def import_references(s: TheStore, user: Caller,
                            file: Annotated[UploadFile, File(description='JSONL: {"query_id", "short_answer", '
                                                                         '"full_answer", "evidence": [...]}')],
                            approve: Annotated[bool, Form(description="approve each imported answer")] = False,
                            ) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        with saved(file, "references.jsonl") as (path, name):
            n = _refs().import_file(s, user, path, approve_all=approve, label=name)
        return {"imported": n, "approved": approve, "file": name}

    return await run_in_threadpool(run)


@router.put("/criteria", summary="Set the criteria answers are marked by, for a question or a stratum")
def put_criteria(s: TheStore, user: Caller, body: CriteriaIn) -> dict[str, Any]:
    from golden_store.live.reference_answers import CriterionDraft

    drafts = [CriterionDraft(c.id, c.text, c.example, c.weight, c.scale_max) for c in body.criteria]
    events = _refs().set_criteria(s, user, scope=body.scope, scope_id=body.scope_id, criteria=drafts)
    return {"scope": body.scope, "scope_id": body.scope_id, "criteria": len(drafts), "events": events}


# ---- double authoring: reference-answer rounds ------------------------------------------------


class RoundOpenIn(pydantic.BaseModel):
    authors: list[str] = pydantic.Field(min_length=2, description="two or more usernames")
    query_ids: list[str] = pydantic.Field(min_length=1)
    note: str | None = None


class RoundAnswerIn(pydantic.BaseModel):
    short_answer: str | None = pydantic.Field(None, description="what exact match and token F1 compare against")
    full_answer: str | None = None
    evidence: list[Span] = pydantic.Field(default_factory=list, description="spans in the document as imported")
    criteria: list[CriterionIn] = pydantic.Field(default_factory=list, max_length=5,
                                                 description="the criteria the author would mark answers by")


class SubmitIn(pydantic.BaseModel):
    answer: RoundAnswerIn | None = pydantic.Field(None, description="without it, the caller's latest draft")


class AdjudicateIn(pydantic.BaseModel):
    accept: str | None = pydantic.Field(None, description="accept this author's submission")
    merged: RoundAnswerIn | None = pydantic.Field(None, description="or write this merged answer (one of the two)")
    note: str | None = pydantic.Field(None, description="why (kept with the decision and the revision)")


def _rounds():
    from annotator.evidence import reference_rounds

    return reference_rounds


def _answer(body: RoundAnswerIn) -> Any:
    from golden_store.live.reference_answers import Anchor, CriterionDraft

    return _rounds().answer_from(body.short_answer, body.full_answer,
                                 [Anchor(e.doc_id, e.start, e.end) for e in body.evidence],
                                 [CriterionDraft(c.id, c.text, c.example, c.weight, c.scale_max) for c in body.criteria])


@router.get("/reference-rounds", summary="Every reference-answer round, and the questions waiting for the caller's "
                                         "answer")
def list_reference_rounds(s: TheStore, user: Caller) -> dict[str, Any]:
    from annotator.people.roles import Permission

    rr = _rounds()
    mine = rr.my_questions(s, user) if user.can(Permission.LABEL) else []
    return jsonable({"rounds": rr.list_rounds(s, user), "waiting_for_you": mine})  # type: ignore[no-any-return]


@router.post("/reference-rounds", status_code=201, summary="Open a reference-answer round: two or more authors each "
                                                           "write the same questions' answers, blind to each other")
def open_reference_round(s: TheStore, user: Caller, body: RoundOpenIn) -> dict[str, Any]:
    rid = _rounds().open_round(s, user, body.authors, body.query_ids, note=body.note)
    return {"round_id": rid}


@router.get("/reference-rounds/{round_id}", summary="A round as the caller may see it: each question's submissions "
                                                    "(another author's only once the caller submitted theirs), the "
                                                    "caller's own draft, and the authors' agreement")
def get_reference_round(s: TheStore, user: Caller, round_id: str) -> dict[str, Any]:
    return jsonable(_rounds().status(s, user, round_id).as_dict())  # type: ignore[no-any-return]


@router.put("/reference-rounds/{round_id}/questions/{query_id}/draft",
            summary="Save the caller's draft of a question's answer in a round (only they see it)")
def save_reference_round_draft(s: TheStore, user: Caller, round_id: str, query_id: str,
                               body: RoundAnswerIn) -> dict[str, Any]:
    event = _rounds().save_draft(s, user, round_id, query_id, _answer(body))
    return {"round_id": round_id, "query_id": query_id, "event_id": event, "submitted": False}


@router.post("/reference-rounds/{round_id}/questions/{query_id}/submit",
             summary="Submit the caller's answer to a question in a round (final; without an answer, their draft)")
def submit_reference_round_answer(s: TheStore, user: Caller, round_id: str, query_id: str,
                                  body: SubmitIn) -> dict[str, Any]:
    event = _rounds().submit(s, user, round_id, query_id, _answer(body.answer) if body.answer else None)
    return {"round_id": round_id, "query_id": query_id, "event_id": event, "submitted": True}


@router.post("/reference-rounds/{round_id}/questions/{query_id}/adjudicate",
             summary="Settle a question of a round: accept one author's answer or write a merged one; it becomes "
                     "the question's approved reference answer revision")
def adjudicate_reference_round(s: TheStore, user: Caller, round_id: str, query_id: str,
                               body: AdjudicateIn) -> dict[str, Any]:
    revision = _rounds().adjudicate(s, user, round_id, query_id, accept=body.accept,
                                    merged=_answer(body.merged) if body.merged else None, note=body.note)
    return {"round_id": round_id, "query_id": query_id, "revision": revision, "approved": True}
