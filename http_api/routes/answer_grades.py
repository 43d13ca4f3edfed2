"""People grading systems' answers per rubric criterion, over HTTP: the seeded sample to grade
(blind: each answer named by an opaque key, never by its system), a person's marks of one answer,
and the rubric judge's calibration against people per criterion - the same service as the Answer
grading page and ``golden answers grade-sample / grade / rubric-report``
(:mod:`annotator.labeling.answer_grading`)."""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from fastapi import APIRouter, Depends, Path, Query

from annotator.people.identity import User
from golden_store.db.store import Store
from http_api.auth import caller
from http_api.shapes import jsonable
from http_api.store import store

router = APIRouter(tags=["answer grades"])

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]


class AnswerMarksIn(pydantic.BaseModel):
    marks: dict[str, int] = pydantic.Field(
        description="criterion id -> mark, 0 up to the criterion's scale (1, 2 or 3); some or all criteria")


def _service():
    from annotator.labeling import answer_grading

    return answer_grading


@router.get("/answers/grading/sample",
            summary="The seeded sample of answers people grade per rubric criterion (per system, stratified by "
                    "stratum), blind to the system, with each criterion and its worked example")
def answer_grade_sample(s: TheStore, user: Caller,
                        system: Annotated[str | None, Query(description="only this system's answers")] = None,
                        n: Annotated[int, Query(ge=1, le=2000, description="answers per system")] = 20,
                        seed: Annotated[int, Query(ge=0, lt=2**31, description="the sample's seed")] = 0
                        ) -> list[dict[str, Any]]:
    return jsonable(_service().sample(s, user, system=system, n=n, seed=seed))  # type: ignore[no-any-return]


@router.post("/answers/grading/answers/{key}", status_code=201,
             summary="Record a person's marks of one answer's rubric criteria, the answer named by its key from the "
                     "grading sample (blind: the system is neither asked for nor returned); all or nothing")
def record_answer_grade(s: TheStore, user: Caller, key: Annotated[str, Path(max_length=64)],
                        body: AnswerMarksIn) -> dict[str, Any]:
    return jsonable(_service().record(s, user, key, body.marks))  # type: ignore[no-any-return]


@router.get("/answers/grading/report",
            summary="The rubric judge against people's grades per criterion: Cohen's kappa, raw agreement and FAIL "
                    "recall against the 0.7 / 0.9 bar, per judge model and prompt")
def answer_grade_report(s: TheStore, user: Caller,
                        system: Annotated[str | None, Query(description="only this system")] = None
                        ) -> dict[str, Any]:
    return jsonable(_service().report(s, user, system))  # type: ignore[no-any-return]
