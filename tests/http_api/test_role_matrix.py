"""Every endpoint's role matrix over real HTTP (issue 28): a token per role (annotator, lead,
engineer, reviewer, admin), no token, a revoked one and an expired one. The expected status is
derived from the permission the endpoint's annotator function requires (annotator/people/roles.py),
not written out by hand: a role that holds it gets the endpoint's success status, one that
does not gets 403, and the last three get 401. On DuckDB and on PostgreSQL."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from annotator.evaluation import runs_import
from annotator.people import api_tokens
from annotator.versions import versioning
from annotator.evaluation.evaluation_record import score_and_record
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import ROLE_PERMISSIONS, Permission, Role
from golden_store.db.store import Store
from tests.http_api.conftest import ROLES, auth, run_file, transcripts_file

Request = Callable[[httpx.Client, str], httpx.Response]


def _holds(perm: Permission) -> Callable[[str], bool]:
    return lambda role: perm in ROLE_PERMISSIONS[Role(role)]


def _sees_coverage(role: str) -> bool:
    return runs_import.may_see_coverage(User("x", "x", frozenset({Role(role)})))


def _endpoints(tmp: Path) -> list[tuple[str, Callable[[str], bool], int, Request]]:
    """(name, which roles may, success status, the request for principal ``who``)."""
    run = run_file(tmp, ["q001", "q002", "q003"])

    def up(path: Path) -> dict[str, tuple[str, bytes]]:
        return {"file": (path.name, path.read_bytes())}

    queries = tmp / "queries.jsonl"
    queries.write_text('{"query_id": "api-q1", "text": "How do I reset my VPN?", "stratum": "lexical"}\n')
    answers = tmp / "answers.jsonl"
    answers.write_text('{"query_id": "q001", "answer": "Twenty-five days."}\n')
    references = tmp / "references.jsonl"
    references.write_text('{"query_id": "q002", "short_answer": "on the first day"}\n')
    return [
        ("GET /health", lambda role: True, 200, lambda c, who: c.get("/health")),
        ("GET /me", lambda role: True, 200, lambda c, who: c.get("/me")),
        ("POST /runs", _holds(Permission.IMPORT_RUNS), 201,
         lambda c, who: c.post("/runs", files=up(run), data={"system": f"sys-{who}", "replace": "true"})),
        ("POST /transcripts", _holds(Permission.IMPORT_RUNS), 201,
         lambda c, who: c.post("/transcripts", files=up(transcripts_file(tmp, f"ev-{who}")))),
        ("POST /answers", _holds(Permission.IMPORT_RUNS), 201,
         lambda c, who: c.post("/answers", files=up(answers), data={"system": f"sys-{who}", "replace": "true"})),
        ("POST /queries", _holds(Permission.EDIT_QUERIES), 201,
         lambda c, who: c.post("/queries", files=up(queries), data={"update": "true"})),
        ("GET /versions", _holds(Permission.VIEW_VERSIONS), 200, lambda c, who: c.get("/versions")),
        ("GET /versions/v0", _holds(Permission.VIEW_VERSIONS), 200, lambda c, who: c.get("/versions/v0")),
        ("GET /versions/v0/files/queries.parquet", _holds(Permission.VIEW_VERSIONS), 200,
         lambda c, who: c.get("/versions/v0/files/queries.parquet")),
        ("GET /versions/v0/verify", _holds(Permission.VIEW_VERSIONS), 200, lambda c, who: c.get("/versions/v0/verify")),
        ("POST /versions", _holds(Permission.FREEZE), 201, lambda c, who: c.post("/versions", json={"name": f"v-{who}"})),
        ("GET /pool", _sees_coverage, 200, lambda c, who: c.get("/pool")),
        ("GET /agreement", _holds(Permission.RUN_ROUNDS), 200, lambda c, who: c.get("/agreement")),
        ("GET /evaluations", _holds(Permission.VIEW_RESULTS), 200, lambda c, who: c.get("/evaluations")),
        ("POST /evaluations", _holds(Permission.IMPORT_RUNS), 201,
         lambda c, who: c.post("/evaluations", files=up(run), data={"evaluation_id": f"e-{who}", "version": "v0",
                                                                     "measure": ["nDCG@10"]})),
        ("GET /evaluations/compare", _holds(Permission.VIEW_RESULTS), 200,
         lambda c, who: c.get("/evaluations/compare", params={"baseline": "e1", "candidate": "e2"})),
        ("PUT /references/q004", _holds(Permission.LABEL), 200,
         lambda c, who: c.put("/references/q004", json={"short_answer": f"EUR 58 ({who})"})),
        ("POST /references/q004/approve", _holds(Permission.LABEL), 200,
         lambda c, who: c.post("/references/q004/approve", json={})),
        ("POST /references", _holds(Permission.LABEL), 201,
         lambda c, who: c.post("/references", files=up(references), data={"approve": "true"})),
        ("GET /references", _holds(Permission.VIEW_STORE), 200, lambda c, who: c.get("/references")),
        ("GET /references/q004", _holds(Permission.VIEW_STORE), 200, lambda c, who: c.get("/references/q004")),
        ("GET /answers/match", _holds(Permission.VIEW_RESULTS), 200, lambda c, who: c.get("/answers/match")),
        ("GET /answers/citations", _holds(Permission.VIEW_RESULTS), 200, lambda c, who: c.get("/answers/citations")),
        ("PUT /criteria", _holds(Permission.EDIT_RUBRIC), 200,
         lambda c, who: c.put("/criteria", json={"scope": "query", "scope_id": "q004", "criteria": [
             {"id": "amount", "text": "States the amount", "example": "EUR 58"}]})),
    ]


@pytest.fixture(params=["duckdb", "postgresql"])
def served(request: pytest.FixtureRequest, demo_store: Store, tmp_path: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, str]]:
    """(the store with the demo, a frozen version v0 and two recorded evaluations; the API's URL)."""
    from http_api.serving import ThreadedServer

    if request.param == "duckdb":
        store = demo_store
        location = os.environ["GOLDEN_DB"]
        owned = None
    else:
        from tests.pg import DEMO_TEMPLATE

        cluster = request.getfixturevalue("pg_cluster")
        monkeypatch.chdir(tmp_path)
        location = cluster.new_database(DEMO_TEMPLATE)
        store = owned = Store.open(location)
    versioning.freeze(store, LOCAL_USER, "v0")
    run = run_file(tmp_path, ["q001", "q002", "q003"], name="base.trec")
    for e in ("e1", "e2"):
        score_and_record(store, LOCAL_USER, evaluation_id=e, version="v0", run_path=run, measures=["nDCG@10"])
    server = ThreadedServer(location).start()
    try:
        yield store, f"http://127.0.0.1:{server.port}/api/v1"
    finally:
        server.stop()
        if owned is not None:
            from annotator.process import context

            owned.close()
            context.close_all()
            request.getfixturevalue("pg_cluster").drop_database(location)


def test_every_endpoint_answers_each_role_as_its_permission_says(served, tmp_path):
    store, base = served
    secrets = {role: api_tokens.create_token(store, LOCAL_USER, f"t-{role}", [role])[1] for role in ROLES}
    _, secrets["revoked"] = api_tokens.create_token(store, LOCAL_USER, "t-revoked", ["admin"])
    api_tokens.revoke_token(store, LOCAL_USER, "t-revoked")
    _, secrets["expired"] = api_tokens.create_token(store, LOCAL_USER, "t-expired", ["admin"],
                                                    expires_in=timedelta(seconds=-1))
    principals: dict[str, str | None] = {**secrets, "no token": None}
    wrong = []
    asked = 0
    for name, may, ok, send in _endpoints(tmp_path):
        for who, secret in principals.items():
            if name == "GET /health":
                expected = ok  # the probe needs no token
            elif who in ("no token", "revoked", "expired"):
                expected = 401
            else:
                expected = ok if may(who) else 403
            with httpx.Client(base_url=base, headers=auth(secret), timeout=60) as c:
                r = send(c, who.replace(" ", "-"))
            asked += 1
            if r.status_code != expected:
                wrong.append(f"{name} as {who}: {r.status_code} (expected {expected}) {r.text[:200]}")
            elif r.status_code >= 400:
                assert r.headers["content-type"] == "application/problem+json"
                body = r.json()
                assert body["status"] == r.status_code and body["detail"] and body["instance"].startswith("/api/v1/")
                if r.status_code == 401:
                    assert r.headers["www-authenticate"].startswith("Bearer")
    assert not wrong, "\n".join(wrong)
    assert asked == 24 * 8
