"""The committed schema (docs/openapi.json) is the served one: regenerate it with
``python -m http_api.openapi`` when an endpoint changes."""

from __future__ import annotations

import json

from http_api.openapi import COMMITTED, render


def test_the_committed_openapi_schema_is_current():
    assert COMMITTED.exists(), "docs/openapi.json is missing: run python -m http_api.openapi"
    assert COMMITTED.read_text("utf-8") == render(), "docs/openapi.json is stale: run python -m http_api.openapi"


def test_the_schema_documents_every_endpoint_and_the_bearer_scheme():
    doc = json.loads(render())
    paths = doc["paths"]
    for p in ("/api/v1/health", "/api/v1/runs", "/api/v1/versions/{name}/files/{file}", "/api/v1/evaluations/compare"):
        assert p in paths
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "security" not in paths["/api/v1/health"]["get"]  # the probe needs no token
    assert paths["/api/v1/me"]["get"]["security"] == [{"HTTPBearer": []}]


def test_the_schema_documents_the_store_unavailable_and_disk_full_answers():
    """Issue 37 (P2, F1/F2): a generated client learns that any route touching the store may
    answer 503 (database unreachable) and a writing one 507 (no room), as problem documents."""
    paths = json.loads(render())["paths"]
    assert "503" in paths["/api/v1/health"]["get"]["responses"]
    for status in ("503", "507"):
        answer = paths["/api/v1/versions"]["post"]["responses"][status]
        assert answer["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}


def test_operation_ids_are_the_routes_names_and_unique():
    """Issue 38 item 3: a generated client names its methods by ``operationId``; FastAPI's
    default (``import_run_api_v1_runs_post``) made them unreadable."""
    ops = [op for path in json.loads(render())["paths"].values() for op in path.values()]
    ids = [op["operationId"] for op in ops]
    assert len(ids) == len(set(ids))
    assert {"import_run", "list_versions", "freeze_version", "get_version_file", "compare_evaluations"} <= set(ids)
    assert not [i for i in ids if "api_v1" in i]


def test_every_uploaded_file_field_is_format_binary():
    """Issue 38 item 3: FastAPI marks a file only ``contentMediaType`` (OpenAPI 3.1);
    openapi-python-client and several TypeScript generators need ``format: binary``, else they
    send the upload as a string and every upload endpoint answers 422."""
    schemas = json.loads(render())["components"]["schemas"]
    files = [(name, field, prop) for name, s in schemas.items() for field, prop in s.get("properties", {}).items()
             if prop.get("contentMediaType") == "application/octet-stream"]
    assert len(files) == 9  # runs, transcripts, answers, queries, evaluations, references; a calibration set read, analysed, saved
    assert all(prop.get("format") == "binary" for _, _, prop in files), files
