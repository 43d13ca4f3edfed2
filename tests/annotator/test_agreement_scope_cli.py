"""Issue 36 re-check, item 1: `golden agreement` with no `--round` reported every label pooled
("25 items graded by 2+ of 4 annotators") without naming the scope, while the Agreement page
opens on the newest round and names it. The command now reads the newest round by default,
names the scope on its first line and in `--json` (`scope`), and `--round all` reads every
label pooled; `golden --server URL agreement` and the API's GET /agreement say the same.

References: scikit-learn's ``cohen_kappa_score`` on the grades this test gives (one pair, so
the group's κ is the pair's): the newest round's eight items, and the round's plus six items
graded outside any round for the pooled figure."""

from __future__ import annotations

import json

import httpx
import pytest
from sklearn.metrics import cohen_kappa_score

from annotator import cli
from annotator.labeling import rounds
from annotator.people.identity import LOCAL_USER
from golden_store.db.store import Store
from golden_store.live import judging
from tests.golden_store.test_judge_labels_frozen import grade
from tests.http_api.conftest import api, auth, tokens  # noqa: F401  (fixtures)
from tests.pooled import pool_first_documents

ROUND_A = [3, 2, 3, 0, 1, 3, 2, 0]
ROUND_B = [0, 3, 1, 2, 3, 0, 0, 2]  # the newest round's pair disagrees more than chance
OLD_A = [3, 2, 0, 1, 3, 0]
OLD_B = [3, 2, 0, 1, 2, 0]  # earlier labels, outside any round, nearly all agreed
NEWEST = cohen_kappa_score(ROUND_A, ROUND_B, labels=[0, 1, 2, 3])
POOLED = cohen_kappa_score(ROUND_A + OLD_A, ROUND_B + OLD_B, labels=[0, 1, 2, 3])


@pytest.fixture
def two_scopes(demo_store: Store, tmp_path) -> Store:
    """A pool, round r1 of ann and bob graded (ROUND_A / ROUND_B), and six other pool items the
    two graded before any round (OLD_A / OLD_B)."""
    s = demo_store
    pool_first_documents(s, tmp_path, 4)
    assert rounds.start_calibration(s, LOCAL_USER, ["ann", "bob"], n=len(ROUND_A), seed=1) == "r1"
    in_round = s.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments WHERE annotator = 'ann' "
                      "ORDER BY 1, 2, 3")
    assert len(in_round) == len(ROUND_A)
    others = [it for it in s.read("SELECT query_id, doc_id, start, \"end\" FROM pool_items ORDER BY 1, 2, 3")
              if it not in in_round][:len(OLD_A)]
    for (q, d, st, en), ga, gb in zip(in_round, ROUND_A, ROUND_B):  # as the Judge page records them
        judging.record(s, "ann", q, d, st, en, op="grade", grade=ga)
        judging.record(s, "bob", q, d, st, en, op="grade", grade=gb)
    for (q, d, st, en), ga, gb in zip(others, OLD_A, OLD_B):
        grade(s, q, d, st, en, ga, "ann")
        grade(s, q, d, st, en, gb, "bob")
    assert NEWEST < 0 < POOLED
    return s


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_agreement_reads_the_newest_round_and_names_it(two_scopes, capsys):
    code, out, err = _run(capsys, "agreement")
    assert code == 0, err
    first, second = out.splitlines()[:2]
    assert first == f"Round r1 (newest): {len(ROUND_A)} items graded by 2+ of 2 annotators"
    assert f"kappa graded unweighted {NEWEST:.3f} (poor)" in second

    code, out, _ = _run(capsys, "agreement", "--round", "all")
    assert code == 0
    first, second = out.splitlines()[:2]
    assert first == f"All rounds pooled: {len(ROUND_A) + len(OLD_A)} items graded by 2+ of 2 annotators"
    assert f"kappa graded unweighted {POOLED:.3f}" in second

    code, out, _ = _run(capsys, "--json", "agreement")
    rep = json.loads(out)
    assert rep["scope"] == {"round": "r1", "name": "Round r1 (newest)"}
    assert rep["n_units"] == len(ROUND_A)
    assert rep["kappa_unweighted"] == pytest.approx(NEWEST, abs=1e-4)  # the JSON rounds to 4 places
    code, out, _ = _run(capsys, "--json", "agreement", "--round", "all")
    rep = json.loads(out)
    assert rep["scope"] == {"round": "all", "name": "All rounds pooled"}
    assert rep["kappa_unweighted"] == pytest.approx(POOLED, abs=1e-4)  # the JSON rounds to 4 places


def test_a_round_that_does_not_exist_is_refused_naming_those_that_do(two_scopes, capsys):
    code, out, err = _run(capsys, "agreement", "--round", "r9")
    assert code != 0 and not out
    assert "No round 'r9' (rounds: r1)" in err and "'all'" in err


def test_the_help_says_what_agreement_reads_by_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["agreement", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: the newest round of graded items" in text and "'all' for every label" in text


def test_the_remote_form_and_the_api_say_the_same_scope(two_scopes, api, tokens, tmp_path, capsys):  # noqa: F811
    lead = tmp_path / "lead-token"
    lead.write_text(tokens["lead"])
    server = api.removesuffix("/api/v1")
    for argv in (["agreement"], ["agreement", "--round", "all"], ["--json", "agreement"],
                 ["--json", "agreement", "--round", "all"]):
        local = _run(capsys, *argv)
        assert local[0] == 0
        assert _run(capsys, "--server", server, "--token-file", str(lead), *argv)[:2] == local[:2], argv
    newest = httpx.get(f"{api}/agreement", headers=auth(tokens["lead"]), timeout=60).json()
    assert newest["scope"] == {"round": "r1", "name": "Round r1 (newest)"}
    assert newest["kappa_unweighted"] == pytest.approx(NEWEST, abs=1e-4)  # the JSON rounds to 4 places
    pooled = httpx.get(f"{api}/agreement", params={"round_id": "all"}, headers=auth(tokens["lead"]), timeout=60)
    assert pooled.json()["scope"]["name"] == "All rounds pooled"
    assert pooled.json()["kappa_unweighted"] == pytest.approx(POOLED, abs=1e-4)  # the JSON rounds to 4 places
    missing = httpx.get(f"{api}/agreement", params={"round_id": "r9"}, headers=auth(tokens["lead"]), timeout=60)
    assert missing.status_code == 404 and "No round 'r9'" in missing.text
