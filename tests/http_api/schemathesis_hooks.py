"""A check of our own for the schemathesis run (tests/http_api/test_schemathesis.py loads this
module through its config's ``hooks``): a request the schema allows is never refused as not
fitting the endpoint.

Why beside schemathesis's ``positive_data_acceptance``: on the operations whose input the
schema cannot fully state (an uploaded file's lines, a measure's name, a command's words), the
studio refusing the *content* is a legitimate 422 (problem kind ``validation``, one sentence
naming the line and what to do), so the run lets those operations answer 422. What must still
never happen there is a 422 of kind ``request-validation``: the framework refusing a request
whose fields the schema allows, which is the schema and the route disagreeing (an empty form
field the schema did not say was required, a form field sent as "null"...)."""

from __future__ import annotations

from typing import Any

import schemathesis

FRAMEWORK_REFUSAL = "/api/v1/problems/request-validation"


@schemathesis.check
def schema_valid_requests_fit_the_endpoint(ctx: Any, response: Any, case: Any) -> bool | None:
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    try:
        kind = response.json().get("type")
    except ValueError:
        return None  # content_type_conformance and response_schema_conformance say what is wrong
    if kind == FRAMEWORK_REFUSAL:
        raise AssertionError(f"a request the schema allows was refused as not fitting the endpoint: "
                             f"{response.json().get('detail')}")
    return None
