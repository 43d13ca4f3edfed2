"""schemathesis (a third-party API fuzzer) against the running API, over real HTTP on loopback:
every operation of the served schema, in all its phases (examples, coverage, fuzzing, stateful)
and with all its checks (no 5xx; status codes, content types, headers and bodies as the schema
says; a 405's ``Allow``; auth enforced; schema-valid requests accepted), plus our own
(tests/http_api/schemathesis_hooks.py). With an admin token, so the requests reach the routes.

Bounded for CI: ``GOLDEN_SCHEMATHESIS_EXAMPLES`` cases per operation and phase (default 10;
about 900 cases over 23 operations, 20-40 s on 2 cores) from a fixed seed (``GOLDEN_SCHEMATHESIS_SEED``),
so a failure reproduces; raise both locally to search further. schemathesis prints each
failure with a curl line that reproduces it.

What the run is told, and why:
- Real values for three operations that otherwise only meet 404 (a version's file, a
  comparison of two recorded evaluations, a problem kind): a version the test freezes, the
  demo's evaluations.
- The operations whose input the schema cannot fully state (an uploaded file's lines, a
  measure's name) may answer 422 to a schema-valid request: the studio
  refusing the content, in one sentence. Our check makes sure such a 422 is never the framework
  refusing fields the schema allows.
- The token throttle's limit is raised for this server: schemathesis's ``ignored_auth`` check
  sends one made-up token per operation (more than the 10 a client address may send before it
  is answered 429, which the schema documents and tests/annotator/test_api_tokens.py covers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from annotator.people import api_tokens
from annotator.people.identity import LOCAL_USER
from tests.http_api.conftest import freeze

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("GOLDEN_SCHEMATHESIS_EXAMPLES", "10"))
SEED = int(os.environ.get("GOLDEN_SCHEMATHESIS_SEED", "7"))
# free content beside the uploads: measure names (a 422 naming what is wrong in it is an answer)
# and what a reference answer rests on (a span of a real document, the revision the person read,
# criteria with distinct ids and text beyond whitespace)
CONTENT_CHECKED = ["compare_evaluations", "put_reference", "approve_reference", "put_criteria",
                   "answer_checks_report",  # a forbidden pattern that is not a valid regular expression
                   # a reference round's authors, questions, spans and who may write what now
                   "open_reference_round", "save_reference_round_draft", "submit_reference_round_answer",
                   "adjudicate_reference_round"]
VERSION = "st.v1"  # frozen by the test: the demo's recorded evaluations name demo.v0, whose folder it has not
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]


def content_checked(schema: dict[str, Any]) -> list[str]:
    """The operations whose input the schema cannot fully state: every upload (a file's lines),
    found in the served schema so a new upload route is covered the day it lands, and
    :data:`CONTENT_CHECKED`."""
    uploads = [op["operationId"] for item in schema["paths"].values() for op in item.values()
               if "multipart/form-data" in op.get("requestBody", {}).get("content", {})]
    return sorted({*uploads, *CONTENT_CHECKED})


def config(secret: str, content_checked: list[str]) -> str:
    """schemathesis.toml for the run (see the module's docstring)."""
    return f"""
hooks = "tests.http_api.schemathesis_hooks"
headers = {{ Authorization = "Bearer {secret}" }}
request-timeout = 60

[[operations]]
include-operation-id = {content_checked!r}
checks.positive_data_acceptance.expected-statuses = {ACCEPTED!r}

[[operations]]
include-operation-id = "get_version_file"
parameters = {{ name = "{VERSION}", file = "qrels.parquet" }}

[[operations]]
include-operation-id = "compare_evaluations"
parameters = {{ baseline = "bm25@demo.v0", candidate = "hybrid@demo.v0" }}

[[operations]]
include-operation-id = "get_problem_kind"
parameters = {{ kind = "validation" }}
""".replace("'", '"')


@pytest.mark.timeout(900)
def test_schemathesis_finds_nothing_against_the_running_api(demo_store, api, tmp_path, monkeypatch):
    monkeypatch.setattr(api_tokens.THROTTLE, "limit", 10_000)
    _, secret = api_tokens.create_token(demo_store, LOCAL_USER, "schemathesis", ["admin"])
    freeze(demo_store, VERSION)
    schema = httpx.get(f"{api}/openapi.json", timeout=30).json()
    (tmp_path / "schemathesis.toml").write_text(config(secret, content_checked(schema)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "NO_COLOR": "1", "COLUMNS": "160"}
    # run from tmp_path: hypothesis's example database and any report stay out of the repository
    done = subprocess.run([sys.executable, "-m", "schemathesis.cli", "--config-file", "schemathesis.toml",
                           "run", f"{api}/openapi.json", "--checks", "all", "--max-examples", str(EXAMPLES),
                           "--seed", str(SEED), "--workers", "1", "--output-truncate", "true"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=840)
    out = done.stdout + done.stderr
    print(out[out.find("SUMMARY"):])  # shown with pytest -rP: the phases run, the cases generated
    assert done.returncode == 0, out[-20000:]
    assert "Tested: " in out and "generated" in out, out[-3000:]  # it ran, and ran cases
