"""Health (no token: a load balancer's probe) and who the token is."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from annotator.people import api_tokens
from annotator.people.identity import User
from golden_store.db.store import Store
from http_api.auth import caller
from golden_store.core.errors import NotFoundError
from http_api.problems import KINDS, TYPE_BASE, responses
from http_api.store import store

router = APIRouter(tags=["meta"])


class Health(BaseModel):
    status: str
    studio_version: str
    schema_version: int
    engine: str


class Me(BaseModel):
    token: str = Field(description="The token's name")
    token_id: str = Field(description="The token's id (a revoked token's name may be reused; its id never is)")
    username: str = Field(description="The actor its requests are attributed to: token:NAME#ID")
    roles: list[str]


@router.get("/health", response_model=Health, summary="Is the API up, on which store engine and schema")
def get_health(s: Annotated[Store, Depends(store)]) -> Health:
    import golden_store

    return Health(status="ok", studio_version=golden_store.__version__, schema_version=s.schema_version(),
                  engine=s.engine)


@router.get("/me", response_model=Me, summary="The token's name and roles", responses=responses(401, 429))
def get_me(user: Annotated[User, Depends(caller)]) -> Me:
    name, token_id = api_tokens.parse_actor(user.username) or (user.username, None)
    return Me(token=name, token_id=token_id or "", username=user.username, roles=sorted(r.value for r in user.roles))


class ProblemKind(BaseModel):
    type: str
    kind: str
    description: str


@router.get("/problems/{kind}", response_model=ProblemKind, responses=responses(404, 422),
            summary="What a problem document's type means (its type is a reference to this)")
def get_problem_kind(kind: str) -> ProblemKind:
    if kind not in KINDS:
        raise NotFoundError(f"No problem kind {kind!r}; the kinds are {', '.join(sorted(KINDS))}.")
    return ProblemKind(type=TYPE_BASE + kind, kind=kind, description=KINDS[kind])
