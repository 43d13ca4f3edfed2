"""Issue 37, item 3 (probe H3): a re-import with held_out=false cleared the flag of held-out
questions and answered "1 updated". Taking a question out of the held-out set is a lead's
explicit decision now: the CLI (`golden queries import --update`, locally and with
`--server`) and `POST /api/v1/queries` refuse such a file, naming every question it would
un-hold, with the store unchanged, unless a reason is given (`--unhold REASON`,
`unhold_reason`) by a lead or admin; the reason is kept on the revision. Holding stays free.
On DuckDB and on PostgreSQL, over real HTTP on loopback."""

from __future__ import annotations

import os

import httpx
import pytest

from annotator import cli
from golden_store.live import queries
from tests.conftest import table_snapshot
from tests.http_api.conftest import api, auth, tokens  # noqa: F401  (fixtures)

Q009 = "How long does the company keep paying a new mum her full wages while she's off?"
Q024 = "how many days a week do we need to be in the office these days?"
REASON = "q024 was published in the 2026 handbook; it is no longer a test question"


@pytest.fixture
def unhold_csv(tmp_path):
    """A pipeline's re-import of two held-out demo questions (q009, q024) with held_out false,
    and of q001 unchanged."""
    p = tmp_path / "unhold.csv"
    p.write_text("id,text,stratum,held_out\n"
                 f'q009,"{Q009}",paraphrase,false\n'
                 f"q024,{Q024},temporal,false\n")
    return p


def _golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _snapshot(s) -> dict[str, list]:
    """Every table but the token audit, which the API writes on its own schedule."""
    return {t: rows for t, rows in table_snapshot(s).items() if t != "api_token_uses"}


def _held(s) -> dict[str, bool]:
    return {q: bool(queries.get_query(s, q).held_out) for q in ("q009", "q024")}


def _reasons(s) -> list[tuple]:
    return s.read("SELECT query_id, held_out, change_reason, actor FROM query_revisions "
                  "WHERE change_reason IS NOT NULL ORDER BY query_id")


def test_the_cli_refuses_to_unhold_without_unhold_and_records_the_reason_with_it(demo_store, unhold_csv, capsys):
    s = demo_store
    before = _snapshot(s)
    rc, out, err = _golden(capsys, "--db", os.environ["GOLDEN_DB"], "queries", "import", str(unhold_csv), "--update")
    assert rc != 0 and out == ""
    assert "2 question(s) out of the held-out set (q009, q024)" in err and "--unhold REASON" in err
    assert _snapshot(s) == before
    rc, out, err = _golden(capsys, "--db", os.environ["GOLDEN_DB"], "queries", "import", str(unhold_csv), "--update",
                           "--unhold", REASON)
    assert rc == 0, err
    assert out == "Queries: 0 added, 2 updated, 0 unchanged. Taken out of the held-out set: q009, q024.\n"
    assert _held(s) == {"q009": False, "q024": False}
    assert [r[:3] for r in _reasons(s)] == [("q009", False, REASON), ("q024", False, REASON)]
    assert list(queries.query_history(s, "q024")["change_reason"])[-1] == REASON


def test_the_api_refuses_without_a_reason_and_an_engineer_with_one(demo_store, api, tokens, unhold_csv):  # noqa: F811
    s = demo_store
    before = _snapshot(s)
    files = {"file": (unhold_csv.name, unhold_csv.read_bytes())}
    r = httpx.post(f"{api}/queries", headers=auth(tokens["engineer"]), files=files, data={"update": "true"})
    assert r.status_code == 422, r.text
    assert "q009, q024" in r.text and "unhold_reason" in r.text
    r = httpx.post(f"{api}/queries", headers=auth(tokens["lead"]), files=files, data={"update": "true"})
    assert r.status_code == 422 and "q009, q024" in r.text  # a lead too must say so
    r = httpx.post(f"{api}/queries", headers=auth(tokens["engineer"]), files=files,
                   data={"update": "true", "unhold_reason": REASON})
    assert r.status_code == 403, r.text
    assert _snapshot(s) == before


def test_a_lead_token_with_a_reason_unholds_and_the_reason_is_recorded(demo_store, api, tokens, unhold_csv):  # noqa: F811
    s = demo_store
    files = {"file": (unhold_csv.name, unhold_csv.read_bytes())}
    r = httpx.post(f"{api}/queries", headers=auth(tokens["lead"]), files=files,
                   data={"update": "true", "unhold_reason": REASON})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["updated"] == 2 and body["unheld"] == ["q009", "q024"]
    assert body["summary"].endswith("Taken out of the held-out set: q009, q024.")
    assert _held(s) == {"q009": False, "q024": False}
    rows = _reasons(s)
    assert [r[:3] for r in rows] == [("q009", False, REASON), ("q024", False, REASON)]
    assert all("t-lead" in actor for *_, actor in rows)


def test_the_remote_cli_takes_unhold_with_a_lead_token(demo_store, api, tokens, unhold_csv, capsys,  # noqa: F811
                                                       monkeypatch):
    server = api.removesuffix("/api/v1")
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["lead"])
    rc, _, err = _golden(capsys, "--server", server, "queries", "import", str(unhold_csv), "--update")
    assert rc != 0 and "q009, q024" in err and _held(demo_store) == {"q009": True, "q024": True}
    rc, out, err = _golden(capsys, "--server", server, "queries", "import", str(unhold_csv), "--update",
                           "--unhold", REASON)
    assert rc == 0, err
    assert out.endswith("Taken out of the held-out set: q009, q024.\n")
    assert [r[:3] for r in _reasons(demo_store)] == [("q009", False, REASON), ("q024", False, REASON)]


def test_holding_needs_no_reason(demo_store, api, tokens, tmp_path):  # noqa: F811
    p = tmp_path / "hold.csv"
    p.write_text("id,text,stratum,held_out\nq001,"
                 f'"{queries.get_query(demo_store, "q001").text}",lexical,true\n')
    r = httpx.post(f"{api}/queries", headers=auth(tokens["engineer"]), files={"file": (p.name, p.read_bytes())},
                   data={"update": "true"})
    assert r.status_code == 201, r.text
    assert r.json()["updated"] == 1 and "unheld" not in r.json()
    assert queries.get_query(demo_store, "q001").held_out and _reasons(demo_store) == []
