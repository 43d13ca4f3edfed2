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
