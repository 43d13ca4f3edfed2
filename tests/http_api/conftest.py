"""The API over real HTTP on loopback: uvicorn in a thread of the test process, on a free
port, serving this test's store (GOLDEN_DB: a DuckDB file, or a PostgreSQL database on the
PostgreSQL pass); tokens made with the real ``create_token``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from annotator.people import api_tokens
from annotator.versions import versioning
from annotator.people.identity import LOCAL_USER
from golden_store.db.store import Store

ROLES = ("annotator", "lead", "engineer", "reviewer", "admin")


@pytest.fixture
def api(store: Store) -> Iterator[str]:
    """The API's base URL (``http://127.0.0.1:PORT/api/v1``) on this test's store, through a
    handle of its own: CLI commands run by the test close the process's shared handles."""
    from http_api.serving import ThreadedServer

    own = Store.open(os.environ["GOLDEN_DB"])
    server = ThreadedServer(os.environ["GOLDEN_DB"], store=own).start()
    try:
        yield f"http://127.0.0.1:{server.port}/api/v1"
    finally:
        server.stop()
        own.close()


@pytest.fixture
def tokens(store: Store) -> dict[str, str]:
    """A secret per role, plus ``revoked`` and ``expired`` ones (an engineer's, else valid)."""
    out = {role: api_tokens.create_token(store, LOCAL_USER, f"t-{role}", [role])[1] for role in ROLES}
    _, out["revoked"] = api_tokens.create_token(store, LOCAL_USER, "t-revoked", ["engineer"])
    api_tokens.revoke_token(store, LOCAL_USER, "t-revoked")
    _, out["expired"] = api_tokens.create_token(store, LOCAL_USER, "t-expired", ["engineer"],
                                                expires_in=timedelta(seconds=-1))
    return out


def auth(secret: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def run_file(tmp: Path, qids: list[str], name: str = "run.trec", bad_line_at_end: bool = False) -> Path:
    lines = [f"{q} Q0 {doc} {r + 1} {10 - r} sys" for q in qids
             for r, doc in enumerate(("annual-leave", "code-of-conduct", "data-protection"))]
    if bad_line_at_end:
        lines.insert(len(lines) - 1, "q001 Q0 annual-leave notarank")
    p = tmp / name
    p.write_text("\n".join(lines) + "\n")
    return p


def transcripts_file(tmp: Path, evaluation_id: str) -> Path:
    rec = {"evaluation_id": evaluation_id, "query_id": "q001", "trial": 0, "passed": False, "source": "eval_run",
           "metrics": {"recall@10": 0.0},
           "transcript": {"question": "q", "retrieved": [{"doc_id": "annual-leave", "text": "t"}], "answer": "a",
                          "judge": {"verdict": "fail", "justification": "j"}}}
    p = tmp / f"{evaluation_id}.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    return p


def freeze(store: Store, name: str) -> None:
    versioning.freeze(store, LOCAL_USER, name)


__all__ = ["ROLES", "auth", "freeze", "httpx", "run_file", "transcripts_file"]
