"""RFC 9457 problem documents: every error the API answers, with the same one-sentence
message the CLI prints (``str(exc)`` of the annotator's :class:`GoldenError`), never a
stack trace. The status comes from the error's class, so a new error kind is mapped here once."""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from annotator.people.api_tokens import TokenRefused
from annotator.people.roles import PermissionDenied
from golden_store.core import errors

MEDIA_TYPE = "application/problem+json"
# A relative reference (RFC 9457 §3.1.1): resolved against the API's own URL it names
# GET /api/v1/problems/{kind}, which describes the kind (no token needed). A made-up absolute
# URL would point at a domain the studio does not own.
TYPE_BASE = "/api/v1/problems/"

# What each kind of problem means and what to do; the kinds a client may switch on.
KINDS: dict[str, str] = {
    "validation": "The input is not valid (a file's line, a field): detail names where and what to do; nothing "
                  "was written.",
    "option-required": "The action needs an explicit option (e.g. --again, replace): detail names it; nothing "
                       "was written.",
    "not-found": "What the request names does not exist (a version, a file, an evaluation).",
    "version-exists": "A frozen version of that name exists; a frozen version never changes: pick a new name.",
    "verification": "A frozen version failed its integrity checks (digests, spans, signature).",
    "store-locked": "The store is in use by another process; retry later.",
    "store-schema": "The store's schema is not the one this server expects; migrate it (golden init).",
    "store-unavailable": "The store's database server is unreachable (stopped, restarting or not taking "
                         "connections); retry after Retry-After seconds: the studio reconnects by itself.",
    "disk-full": "The server had no room to write what the request needed (its disk is full, a quota or a "
                 "file-size limit was reached); nothing was kept of the request: its operator must make room.",
    "permission-denied": "The token's roles do not allow the action; an admin can create a token with a role "
                         "that does.",
    "token-refused": "The token is missing, unknown, revoked or expired (401), or the address sent too many "
                     "unknown tokens (429, see Retry-After).",
    "upload-too-large": "The upload is larger than GOLDEN_API_MAX_UPLOAD_MB; split the file or raise the limit "
                        "on the server.",
    "request-validation": "The request does not fit the endpoint (a missing or ill-typed field, named in detail); "
                          "see /api/v1/docs.",
    "golden": "The studio refused the request; detail says why and what to do.",
    "method-not-allowed": "The endpoint does not take this HTTP method; see /api/v1/docs.",
    "internal-server-error": "The server met an unexpected error; its log has the details.",
}
_log = logging.getLogger("http_api")

# most specific first: VersionExistsError before GoldenError, OptionRequiredError before ValidationError
STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (errors.OptionRequiredError, 409),
    (errors.ValidationError, 422),
    (errors.NotFoundError, 404),
    (errors.VersionExistsError, 409),
    (errors.VerificationError, 409),
    (errors.StoreLockedError, 503),
    (errors.StoreSchemaError, 503),
    (errors.StoreUnavailableError, 503),
    (errors.DiskFullError, 507),
    (PermissionDenied, 403),
    (errors.GoldenError, 400),
)


class Problem(BaseModel):
    """An RFC 9457 problem document (served as ``application/problem+json``)."""
    type: str
    title: str
    status: int
    detail: str = Field(description="one sentence: what went wrong, where, and what to do (as the CLI says it)")
    instance: str
    problems: list[str] | None = Field(None, description="every problem found, for bad input (file/line/field)")


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for these error statuses, as problem documents."""
    return {s: {"model": Problem, "description": HTTPStatus(s).phrase,
                "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}} for s in statuses}


class UploadTooLarge(errors.GoldenError):
    """An upload past ``GOLDEN_API_MAX_UPLOAD_MB`` (HTTP 413)."""


def status_of(exc: Exception) -> int:
    if isinstance(exc, TokenRefused):
        return exc.status
    if isinstance(exc, UploadTooLarge):
        return 413
    return next((s for cls, s in STATUS_OF if isinstance(exc, cls)), 500)


def problem(status: int, detail: str, *, instance: str, kind: str | None = None,
            headers: Mapping[str, str] | None = None, **extra: Any) -> JSONResponse:
    """One problem document. ``type`` names the kind (a stable slug a client may switch on)."""
    title = HTTPStatus(status).phrase
    slug = kind or title.lower().replace(" ", "-").replace("'", "")
    body = {"type": TYPE_BASE + slug, "title": title, "status": status, "detail": detail, "instance": instance,
            **extra}
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def _slug(cls: type) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in cls.__name__).lstrip("-").removesuffix("-error")


def _kind(exc: Exception) -> str:
    """The documented kind of ``exc``: its own class's, else its nearest documented base's
    (a new error class reads as the kind it specialises until it is given its own)."""
    return next((_slug(c) for c in type(exc).__mro__ if _slug(c) in KINDS), "golden")


async def golden_problem(request: Request, exc: Exception) -> JSONResponse:
    status = status_of(exc)
    headers = None
    if isinstance(exc, TokenRefused) and status == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="golden"'}
    retry = getattr(exc, "retry_after_s", getattr(exc, "retry_after", None))
    if status in (429, 503) and retry is not None:  # too many refusals; the database unreachable
        headers = {"Retry-After": str(max(1, int(float(retry) + 0.999)))}
    extra: dict[str, Any] = {}
    problems = getattr(exc, "problems", None)
    if problems:
        extra["problems"] = list(problems)
    # a full disk's sentence names the server's file; its ``public`` one says the same without it
    detail = exc.public if isinstance(exc, errors.DiskFullError) else str(exc)
    return problem(status, redact_locations(detail), instance=request.url.path, kind=_kind(exc), headers=headers,
                   **extra)


# A folder of the server or a bucket URL in a sentence (probe A7, issue 37): "No frozen version
# 's1' in /srv/studio/versions", "appeared at s3://team/versions/race.v1". The CLI says where;
# an HTTP client needs only the name, and the server's layout is not its business.
_LOCATION = re.compile(r"(?:\b(?:s3|gs|file|memory)://[^\s'\"(),]+|(?<![\w.:/])/[^\s'\"(),]+)")
HIDDEN_LOCATION = "the server's versions location"


def redact_locations(detail: str) -> str:
    """``detail`` with every object-storage URL, and every absolute path that is (or is in) a
    folder of this server, replaced by :data:`HIDDEN_LOCATION`; route paths such as
    /api/v1/runs, which are no folder here, stay."""
    def hide(m: re.Match[str]) -> str:
        token = m.group(0).rstrip(".;:")
        tail = m.group(0)[len(token):]
        if "://" in token:
            return HIDDEN_LOCATION + tail
        p = Path(token)
        return HIDDEN_LOCATION + tail if len(p.parts) > 2 and (p.exists() or p.parent.exists()) else m.group(0)

    return _LOCATION.sub(hide, detail)


# A form sends an empty field as no field (FastAPI reads "" as missing): "required" says both
MISSING = "required, and may not be empty"


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    """A request that does not fit the endpoint: name the field and what it needs."""
    assert isinstance(exc, RequestValidationError)
    parts = []
    for e in exc.errors():
        loc = [str(x) for x in e.get("loc", ()) if x not in ("body", "query", "path", "header")]
        field = ".".join(loc) or "request"
        parts.append(f"{field}: {MISSING if e.get('type') == 'missing' else e.get('msg', 'invalid')}")
    detail = "The request's " + "; ".join(parts) + "." if parts else "The request is not valid."
    return problem(422, detail, instance=request.url.path, kind="request-validation")


# FastAPI's answer to a body it cannot decode (not UTF-8, a broken multipart): a 400 the schema
# does not document; it is a request that does not fit the endpoint, as invalid JSON is (422)
_UNREADABLE_BODY = "There was an error parsing the body"
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app takes on this request's path. Why not Starlette's
    ``Allow``: it names the methods of the first route whose path matched, and ``/versions``
    (GET) and ``/versions`` (POST) are two routes, so a 405 said ``Allow: GET`` alone
    (RFC 9110 §15.5.6: the header lists what the resource supports)."""
    def takes(method: str) -> bool:
        scope = {**request.scope, "method": method}
        return any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes)

    return [m for m in METHODS if takes(m)]


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    headers = dict(exc.headers or {})
    if exc.status_code == 400 and detail == _UNREADABLE_BODY:
        detail = ("The request's body could not be read: send UTF-8 JSON, or multipart/form-data for an upload; "
                  "see /api/v1/docs.")
        return problem(422, detail, instance=request.url.path, kind="request-validation")
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"There is no endpoint {request.method} {request.url.path}; see /api/v1/docs."
    elif exc.status_code == 405:
        allow = allowed_methods(request)
        headers["Allow"] = ", ".join(allow)
        detail = f"{request.method} is not allowed on {request.url.path}; it takes {', '.join(allow)}."
    kind = "upload-too-large" if exc.status_code == 413 else None
    return problem(exc.status_code, detail, instance=request.url.path, kind=kind, headers=headers or None)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug: logged with its traceback on the server, one sentence to the caller."""
    _log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(500, "The server met an unexpected error; the studio's log has the details.",
                   instance=request.url.path)


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.GoldenError, golden_problem)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
