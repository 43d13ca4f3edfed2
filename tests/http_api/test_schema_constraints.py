"""The schema states the server's real constraints, and the server answers as the schema says
(issue 38 item 3; each found by schemathesis against the running API,
tests/http_api/test_schemathesis.py): non-empty form fields, the version-name and hit-rule
patterns, optional form fields without a null, a 405 whose ``Allow`` lists every method of
the path, an unreadable body as a documented 422. Real HTTP on loopback, a real store."""

from __future__ import annotations

import functools
import json
import re

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate

from golden_store.core.errors import ValidationError
from golden_store.versions.chunk_labels import parse_hit_rule
from golden_store.versions.format import NAME_PATTERN, validate_name
from http_api.openapi import render
from http_api.routes.versions import HIT_RULE_PATTERN, hit_rule_given
from tests.conftest import table_snapshot
from tests.http_api.conftest import auth, freeze, run_file

PROBLEM = "application/problem+json"


@functools.lru_cache(maxsize=1)
def _rendered() -> str:
    return render()  # the same document every time in one process: rendered once


def _schema() -> dict:
    return json.loads(_rendered())  # a fresh dict per test


def _unchanged(before: dict, after: dict) -> bool:
    for t in ("api_token_uses", "api_tokens"):  # the request itself is audited; last_used_at moves
        before.pop(t), after.pop(t)
    return before == after


def test_the_served_schema_is_a_valid_openapi_document(api):
    """openapi-spec-validator (what the ecosystem review ran by hand) on the served document."""
    doc = httpx.get(f"{api}/openapi.json", timeout=30).json()
    validate(doc)
    assert doc["openapi"].startswith("3.1")


def test_required_form_fields_say_min_length_1():
    comps = _schema()["components"]["schemas"]
    for body, field in (("Body_import_run", "system"), ("Body_import_answers", "system"),
                        ("Body_record_evaluation", "evaluation_id"), ("Body_record_evaluation", "version")):
        assert comps[body]["properties"][field]["minLength"] == 1, (body, field)
    measure = comps["Body_record_evaluation"]["properties"]["measure"]
    assert measure["minItems"] == 1 and measure["items"]["minLength"] == 1


def test_an_empty_form_field_is_422_naming_it_and_the_store_is_unchanged(demo_store, api, tokens, tmp_path):
    run = run_file(tmp_path, ["q001"])
    before = table_snapshot(demo_store)
    r = httpx.post(f"{api}/runs", headers=auth(tokens["engineer"]), files={"file": (run.name, run.read_bytes())},
                   data={"system": ""}, timeout=60)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert r.json()["type"] == "/api/v1/problems/request-validation"
    assert r.json()["detail"] == "The request's system: required, and may not be empty."
    r = httpx.post(f"{api}/evaluations", headers=auth(tokens["engineer"]), timeout=60,
                   files={"file": (run.name, run.read_bytes())},
                   data={"evaluation_id": "e1", "version": "v1", "measure": [""]})
    assert r.status_code == 422 and "measure.0" in r.json()["detail"], r.text
    assert _unchanged(before, table_snapshot(demo_store))


def test_the_version_name_pattern_is_in_the_schema_and_the_server_keeps_it_to_the_end(demo_store, api, tokens,
                                                                                      tmp_path):
    """``$`` in a Python pattern also matches before a final newline: ``validate_name`` let
    "v1\\n" through, and a freeze made a folder whose name ends in a newline."""
    comps = _schema()["components"]["schemas"]
    assert comps["FreezeRequest"]["properties"]["name"]["pattern"] == NAME_PATTERN
    assert comps["Body_record_evaluation"]["properties"]["version"]["pattern"] == NAME_PATTERN
    with pytest.raises(ValidationError):
        validate_name("nl.v1\n")
    r = httpx.post(f"{api}/versions", headers=auth(tokens["admin"]), json={"name": "nl.v1\n"}, timeout=60)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert "must start with a letter or digit" in r.json()["detail"]
    assert httpx.get(f"{api}/versions", headers=auth(tokens["admin"]), timeout=60).json() == []


@settings(max_examples=200, deadline=None)
@given(st.from_regex(HIT_RULE_PATTERN))
def test_every_hit_rule_the_schema_allows_is_one_the_studio_reads(text):
    rule = hit_rule_given(text)
    assert rule is None or parse_hit_rule(rule)


@pytest.mark.parametrize("text", ["min_overlap(0)", "min_overlap(0.0)", "min_overlap(1.5)", "overlap", "any"])
def test_a_hit_rule_the_studio_refuses_is_outside_the_pattern(text):
    assert not re.search(HIT_RULE_PATTERN, text)
    with pytest.raises(ValidationError):
        parse_hit_rule(text)


def test_optional_form_fields_are_a_value_or_absent_never_null():
    """A form cannot send null: FastAPI's ``anyOf [..., null]`` made clients send "null", which
    ``fmt`` refused (422)."""
    schema = _schema()
    for item in schema["paths"].values():
        for op in item.values():
            form = op.get("requestBody", {}).get("content", {}).get("multipart/form-data")
            if not form:
                continue
            body = schema["components"]["schemas"][form["schema"]["$ref"].rsplit("/", 1)[-1]]
            for name, prop in body["properties"].items():
                assert {"type": "null"} not in prop.get("anyOf", []), (op["operationId"], name)
    fmt = schema["components"]["schemas"]["Body_import_run"]["properties"]["fmt"]
    assert fmt["enum"] == ["trec", "jsonl"] and "default" not in fmt


def test_a_405_lists_every_method_the_path_takes(api, tokens):
    """Starlette's 405 named the methods of the first route that matched: ``/versions`` said
    ``Allow: GET`` though it takes POST too (RFC 9110 §15.5.6)."""
    for path, allow in (("/versions", "GET, POST"), ("/evaluations", "GET, POST"), ("/runs", "POST"),
                        ("/versions/v1", "GET")):
        r = httpx.request("DELETE", f"{api}{path}", headers=auth(tokens["admin"]), timeout=60)
        assert r.status_code == 405 and r.headers["allow"] == allow, (path, r.headers)
        assert r.headers["content-type"] == PROBLEM and r.json()["detail"].endswith(f"it takes {allow}.")


def test_the_schema_documents_the_405_and_its_allow_header():
    for item in _schema()["paths"].values():
        for op in item.values():
            answer = op["responses"]["405"]
            assert "Allow" in answer["headers"], op["operationId"]
            assert answer["content"][PROBLEM]["schema"] == {"$ref": "#/components/schemas/Problem"}


def test_an_unreadable_body_is_a_documented_422_not_an_undocumented_400(demo_store, api, tokens):
    before = table_snapshot(demo_store)
    r = httpx.post(f"{api}/versions", headers={**auth(tokens["admin"]), "Content-Type": "application/json"},
                   content=b"\xff\xfe{", timeout=60)
    assert r.status_code == 422 and r.headers["content-type"] == PROBLEM
    assert r.json()["type"] == "/api/v1/problems/request-validation"
    assert "could not be read" in r.json()["detail"]
    assert _unchanged(before, table_snapshot(demo_store))


def test_a_refused_upload_is_named_as_sent_never_by_the_servers_temporary_copy(demo_store, api, tokens, tmp_path):
    """The evaluation path named the server's temporary copy ("/tmp/golden-upload-x/run.trec
    line 1: ..."), already deleted when the problem was made, so the redaction missed it."""
    freeze(demo_store, "c.v1")
    bad = tmp_path / "nightly.trec"
    bad.write_bytes(b"\x89PNG not a run\n")
    r = httpx.post(f"{api}/evaluations", headers=auth(tokens["engineer"]), timeout=60,
                   files={"file": (bad.name, bad.read_bytes())},
                   data={"evaluation_id": "e1", "version": "c.v1", "measure": ["nDCG@10"]})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("nightly.trec line 1"), r.json()["detail"]
    assert "golden-upload-" not in r.text and "/tmp" not in r.text


def test_a_hit_rule_with_a_trec_run_is_a_422_saying_what_to_do(demo_store, api, tokens, tmp_path):
    """It was a bare studio error (400, which the schema did not list) for bad input."""
    freeze(demo_store, "c.v1")
    run = run_file(tmp_path, ["q001"])
    r = httpx.post(f"{api}/evaluations", headers=auth(tokens["engineer"]), timeout=60,
                   files={"file": (run.name, run.read_bytes())},
                   data={"evaluation_id": "e1", "version": "c.v1", "measure": ["nDCG@10"],
                         "hit_rule": "contains_span"})
    assert r.status_code == 422 and r.json()["type"] == "/api/v1/problems/validation"
    assert "leave hit_rule out" in r.json()["detail"]


def test_errors_are_documented_as_problem_documents_only():
    """The server answers every error as ``application/problem+json``; FastAPI listed an
    ``application/json`` twin beside each, and ``GET /problems/{kind}``'s 422 as its own
    ``HTTPValidationError`` shape, which the server never sends."""
    schema = _schema()
    for item in schema["paths"].values():
        for op in item.values():
            for status, answer in op["responses"].items():
                if int(status) >= 400:
                    assert list(answer["content"]) == [PROBLEM], (op["operationId"], status)
    assert "HTTPValidationError" not in schema["components"]["schemas"]


def test_a_version_file_is_documented_as_bytes_with_its_sha256_header():
    """Its 200 declared no content, so a generated client handed back raw bytes, untyped."""
    answer = _schema()["paths"]["/api/v1/versions/{name}/files/{file}"]["get"]["responses"]["200"]
    assert answer["content"]["application/octet-stream"]["schema"] == {"type": "string", "format": "binary"}
    assert "X-Golden-SHA256" in answer["headers"]
