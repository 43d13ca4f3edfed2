"""The API's application: ``create_app(store_location)`` for ``golden api``, ``golden serve``
(beside the Streamlit app, in one process) and the tests (uvicorn on a loopback port)."""

from __future__ import annotations

import copy
import os

from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from annotator.people import api_tokens
from golden_store.db.store import Store
from http_api import auth, problems, uploads
from http_api.routes import (answer_grades, calibration, claims, commands, imports, meta, references, results,
                             surface, versions)

PREFIX = auth.PREFIX
DESCRIPTION = """The golden-set studio's HTTP API: import runs, transcripts, answers and queries;
list, fetch, freeze and verify versions; pool status, agreement and evaluation results.

Every endpoint but `/health` needs `Authorization: Bearer <token>` (an admin makes one with
`golden tokens create NAME --role engineer`); the token's roles decide what it may do, as in
the app. Errors are RFC 9457 problem documents (`application/problem+json`) whose `detail` is
the same one sentence the CLI prints. Uploads are limited to `GOLDEN_API_MAX_UPLOAD_MB`
(default 512) and are all or nothing."""


# what a route that touches the store may answer; 400: the studio refused the request for a
# reason of no narrower kind (problem kind "golden"; schemathesis met one on POST /evaluations)
ROUTE_ERRORS = (400, 401, 403, 404, 409, 413, 422, 429, 503, 507)


def create_app(store_location: str | None = None, *, store: Store | None = None) -> FastAPI:
    """The API on ``store_location`` (default ``GOLDEN_DB``, else ./golden.duckdb), through
    the process's shared handle (``annotator.process.context``: one per store per process, shared
    with the Streamlit app); ``store``: a handle of its own instead (an embedding program's,
    or a test's that also runs CLI commands, which close the shared handles when they end)."""
    import golden_store
    from golden_store.core.paths import default_db_path

    api_tokens.audit_retention()  # a bad GOLDEN_TOKEN_AUDIT_* setting is said now, not found a month later
    app = FastAPI(title="Golden-set studio API", version=golden_store.__version__, description=DESCRIPTION,
                  openapi_url=f"{PREFIX}/openapi.json", docs_url=f"{PREFIX}/docs", redoc_url=None,
                  generate_unique_id_function=operation_id)
    app.state.store_location = store_location or os.environ.get("GOLDEN_DB") or str(default_db_path())
    app.state.store = store
    problems.install(app)
    # 503 (the store's database unreachable) and 507 (no room on the disk) can come from any
    # route that touches the store: documented so a generated client knows them
    app.include_router(meta.router, prefix=PREFIX, responses=problems.responses(503))
    app.include_router(surface.router)  # the labeling surface's own path, outside /api/v1 (its pass is its credential)
    for r in (imports.router, versions.router, results.router, commands.router, calibration.router, references.router,
              claims.router, answer_grades.router):
        app.include_router(r, prefix=PREFIX, responses=problems.responses(*ROUTE_ERRORS))
    # the last added is outermost: the token is checked before a byte of the body is read,
    # and a refusal for size is audited like any answer
    app.add_middleware(uploads.UploadLimit)
    app.add_middleware(auth.TokenAuth)
    app.openapi = lambda: _finished(FastAPI.openapi(app))  # type: ignore[method-assign]
    return app


def operation_id(route: APIRoute) -> str:
    """A route's ``operationId`` is its function's name (``import_run``, ``list_versions``,
    ``freeze_version``): what a generated client names its methods, instead of FastAPI's
    ``import_run_api_v1_runs_post``. Unique because the functions' names are (tested)."""
    return route.name


def _finished(schema: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's schema, made to say what the server does (each step says why)."""
    return _with_method_not_allowed(_problems_only(_without_null_form_fields(_with_binary_files(schema))))


def _with_binary_files(schema: dict[str, Any]) -> dict[str, Any]:
    """Mark every uploaded file field ``format: binary`` beside FastAPI's
    ``contentMediaType``. Why: OpenAPI 3.1 says a file with ``contentMediaType`` alone, and
    openapi-python-client and several TypeScript generators read only the older ``format:
    binary``; without it they send each upload as a string and every upload endpoint answers
    422. (Done once: FastAPI caches the schema it returns.)"""
    for component in schema.get("components", {}).get("schemas", {}).values():
        for prop in component.get("properties", {}).values():
            if prop.get("type") == "string" and prop.get("contentMediaType") == "application/octet-stream":
                prop.setdefault("format", "binary")
    return schema


def _without_null_form_fields(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional form field of an upload is a value or no field at all: a form cannot send
    null, so FastAPI's ``anyOf: [..., {type: null}]`` for ``str | None`` invited clients (and
    schemathesis) to send the text "null", which ``fmt`` then refused with 422. The field's
    own type is kept; not being in ``required`` already says it may be left out."""
    forms = {op["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[-1]
             for item in schema.get("paths", {}).values() for op in item.values()
             if "multipart/form-data" in op.get("requestBody", {}).get("content", {})}
    for name in forms:
        for prop in schema["components"]["schemas"][name].get("properties", {}).values():
            kept = [s for s in prop.get("anyOf", ()) if s != {"type": "null"}]
            if "anyOf" in prop and len(kept) == 1:
                del prop["anyOf"]
                prop.update(kept[0])
                if prop.get("default", ...) is None:
                    del prop["default"]
    return schema


def _problems_only(schema: dict[str, Any]) -> dict[str, Any]:
    """An error is answered as a problem document only (``application/problem+json``): the
    ``application/json`` twin FastAPI adds beside it (from ``model=Problem``) told a client a
    content type the server never sends."""
    for item in schema.get("paths", {}).values():
        for op in item.values():
            for status, answer in op["responses"].items():
                content = answer.get("content", {})
                if int(status) >= 400 and problems.MEDIA_TYPE in content:
                    content.pop("application/json", None)
    return schema


METHOD_NOT_ALLOWED = {
    "description": "Method Not Allowed: the path does not take the request's method; Allow lists those it takes",
    "headers": {"Allow": {"description": "every method the path takes, e.g. GET, POST",
                          "schema": {"type": "string"}}},
    "content": {problems.MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


def _with_method_not_allowed(schema: dict[str, Any]) -> dict[str, Any]:
    """Every operation documents the 405 its path answers to another method, with the
    ``Allow`` header that lists every method the path takes (problems.allowed_methods), so a
    client or a conformance tool can rely on the header. Answers in the order of their status."""
    for item in schema.get("paths", {}).values():
        for op in item.values():
            op["responses"] = dict(sorted({"405": copy.deepcopy(METHOD_NOT_ALLOWED), **op["responses"]}.items()))
    return schema
