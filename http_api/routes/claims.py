"""People checking the faithfulness judge's claim verdicts, over HTTP: record one reviewer's
verdict on a claim (blind: the judge's verdict comes back only in the answer, once the review is
written) and read the reviewers' agreement with the judge - the same service as the Claim review
page and ``golden answers review-report`` (:mod:`annotator.labeling.claim_review`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic
from fastapi import APIRouter, Depends, Query

from annotator.people.identity import User
from golden_store.db.store import Store
from http_api.auth import caller
from http_api.shapes import jsonable
from http_api.store import store

router = APIRouter(tags=["claims"])

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]


class ClaimReviewIn(pydantic.BaseModel):
    check_id: int = pydantic.Field(ge=1, description="the faithfulness check the claim belongs to")
    claim_no: int = pydantic.Field(ge=1, description="the claim's number in that check, from 1")
    verdict: Literal["supported", "contradicted", "insufficient"] = pydantic.Field(
        description="the reviewer's own verdict of the claim against the answer's context")


def _service():
    from annotator.labeling import claim_review

    return claim_review


@router.get("/answers/claim-reviews/agreement",
            summary="Reviewers' agreement with the faithfulness judge on claim verdicts: Cohen's kappa, raw "
                    "agreement, confusion and the judge's FAIL recall on claims people call unsupported")
def claim_review_agreement(s: TheStore, user: Caller,
                           system: Annotated[str | None, Query(description="only this system")] = None
                           ) -> dict[str, Any]:
    return jsonable(_service().report(s, user, system))  # type: ignore[no-any-return]


@router.post("/answers/claim-reviews", status_code=201,
             summary="Record a reviewer's verdict on one claim the judge checked; the judge's verdict comes back")
def record_claim_review(s: TheStore, user: Caller, body: ClaimReviewIn) -> dict[str, Any]:
    return jsonable(_service().record(s, user, body.check_id, body.claim_no, body.verdict))  # type: ignore[no-any-return]
