"""Bearer tokens for every ``/api/v1`` endpoint but health and the schema, as ASGI middleware:
the caller is known (or refused with 401/429) before a byte of an upload is read, and the
answered status is audited once the response has started (``record_use``).

The annotator layer does the rest: an endpoint passes :func:`caller` (the token's user) to
the annotator function, whose ``require`` answers 403 for a role that may not."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from annotator.people import api_tokens
from annotator.people.identity import User
from golden_store.core.errors import GoldenError
from http_api import problems
from http_api.store import store_of

_log = logging.getLogger("http_api")
PREFIX = "/api/v1"
OPEN_PATHS = frozenset({f"{PREFIX}/health", f"{PREFIX}/openapi.json", f"{PREFIX}/docs",
                        f"{PREFIX}/docs/oauth2-redirect"})

# documents the scheme in the OpenAPI schema; the middleware has already checked the token
bearer = HTTPBearer(auto_error=False, description="An API token (golden tokens create NAME --role ROLE).")


def _secret(headers: list[tuple[bytes, bytes]]) -> str | None:
    for k, v in headers:
        if k.lower() == b"authorization":
            scheme, _, value = v.decode("latin-1").partition(" ")
            return value.strip() if scheme.lower() == "bearer" and value.strip() else None
    return None


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class TokenAuth:
    """Authenticate ``Authorization: Bearer`` for protected paths; audit each answered request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or not scope["path"].startswith(PREFIX) or scope["path"] in OPEN_PATHS
                or scope["path"].startswith(f"{PREFIX}/problems/")):
            await self.app(scope, receive, send)
            return
        store = store_of(scope["app"])
        where = {"client": _client(scope), "method": scope["method"], "path": scope["path"]}
        try:
            info, user = await run_in_threadpool(api_tokens.authenticate_request, store,
                                                 _secret(scope["headers"]), **where)
        except GoldenError as exc:
            request = Request(scope)
            response = await problems.golden_problem(request, exc)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["user"] = user
        status: dict[str, int] = {}

        async def send_recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            try:
                await run_in_threadpool(api_tokens.record_use, store, info, status=status.get("code", 500), **where)
            except Exception:  # the answer has gone out; a lost audit row is logged, never hidden
                _log.exception("could not audit %s %s by token %s", where["method"], where["path"], info.name)


def caller(request: Request, _: HTTPAuthorizationCredentials | None = Depends(bearer)) -> User:
    """The user the request's token acts as (set by :class:`TokenAuth`)."""
    user: Any = getattr(request.state, "user", None)
    assert isinstance(user, User), "TokenAuth did not run for this path"
    return user
