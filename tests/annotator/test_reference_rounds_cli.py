"""`golden references round-open / round-status / round-draft / round-submit / round-adjudicate`:
each person acting as themselves (as a token's user through a served studio is:
``identity.acting_as``), blind status before one's own submission, the agreement printed with
the hand-computed figures, an adjudication that becomes the approved reference answer; bad input
is one line on stderr, exit 2, and the store unchanged."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from annotator.people import identity
from annotator.people.identity import User
from annotator.people.roles import Role
from golden_store.live import reference_answers as live_refs
from tests.conftest import table_snapshot

LEAD = User("lena", "Lena", frozenset({Role.LEAD}))
ANN = User("ann", "Ann", frozenset({Role.ANNOTATOR}))
BEN = User("ben", "Ben", frozenset({Role.ANNOTATOR}))


def golden(golden_db, capsys, who: User, *argv) -> tuple[int, str, str]:
    with identity.acting_as(who):
        code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def span(demo_store) -> str:
    doc_id, start, end = demo_store.read_one(
        "SELECT doc_id, start, \"end\" FROM current_evidence WHERE query_id = 'q004' ORDER BY start LIMIT 1")
    return f"{doc_id}:{start}-{end}"


def test_a_round_from_the_command_line(demo_store, golden_db, capsys, span, tmp_path):
    code, out, _ = golden(golden_db, capsys, LEAD, "references", "round-open", "--authors", "ann,ben", "--query", "q004")
    assert code == 0 and "Reference round ref1 opened" in out
    crit = tmp_path / "c.json"
    crit.write_text(json.dumps([{"id": "amount", "text": "States the amount", "example": "EUR 58", "weight": 2},
                                {"id": "source", "text": "Names the policy", "example": "the per diem table"}]))
    assert golden(golden_db, capsys, ANN, "references", "round-draft", "ref1", "q004", "--short", "EUR 58",
                  "--evidence", span, "--criteria", str(crit))[0] == 0
    code, out, _ = golden(golden_db, capsys, ANN, "references", "round-status")
    assert code == 0 and "waiting for you: ref1 q004 (draft saved)" in out
    assert golden(golden_db, capsys, ANN, "references", "round-submit", "ref1", "q004")[0] == 0  # her draft
    # ben: ann submitted, and he reads nothing of what
    code, out, _ = golden(golden_db, capsys, BEN, "--json", "references", "round-status", "ref1")
    q = json.loads(out)["questions"][0]
    assert q["authors"]["ann"]["state"] == "submitted" and q["authors"]["ann"]["submission"] is None
    assert "EUR 58" not in out
    crit.write_text(json.dumps([{"id": "a", "text": "t", "example": "e"}]))
    assert golden(golden_db, capsys, BEN, "references", "round-submit", "ref1", "q004", "--short", "58 euros",
                  "--full", "It is 58 euros.", "--evidence", span, "--criteria", str(crit))[0] == 0
    code, out, _ = golden(golden_db, capsys, LEAD, "references", "round-status", "ref1")
    # by hand: "eur 58" / "58 euros": EM 0, F1 1/2; the same span: Jaccard 1; criteria 2 vs 1 with weights
    # (2/3, 1/3) vs (1): (1/3 + 1/3)/2 = 1/3
    assert "exact match 0.000 (n=1), token F1 0.500 (n=1)" in out
    assert "character Jaccard 1.000, anchors agree 1.000" in out
    assert "same count 0.000, weight distance 0.333" in out
    assert "q004  DISAGREE" in out and "ann (submission): short 'EUR 58'" in out

    code, out, _ = golden(golden_db, capsys, LEAD, "references", "round-adjudicate", "ref1", "q004", "--accept",
                          "ann", "--note", "the policy writes EUR")
    assert code == 0 and "accepted ann's answer" in out
    (now,) = live_refs.current(demo_store, "q004")
    assert (now["short_answer"], now["approved"]) == ("EUR 58", True)
    assert live_refs.history(demo_store, "q004")[-1]["round_id"] == "ref1"
    code, out, _ = golden(golden_db, capsys, BEN, "references", "round-status")
    assert "ref1  ann,ben  1/1 question(s) adjudicated" in out


def test_bad_input_is_one_line_and_changes_nothing(demo_store, golden_db, capsys, span):
    assert golden(golden_db, capsys, LEAD, "references", "round-open", "--authors", "ann,ben", "--query", "q004")[0] == 0
    before = table_snapshot(demo_store)
    for who, argv, words in (
            (LEAD, ("round-open", "--authors", "ann,ben", "--query", "q-nope"), "No live question 'q-nope'"),
            (ANN, ("round-open", "--authors", "ann,ben", "--query", "q001"), "may not run annotation rounds"),
            (BEN, ("round-submit", "ref1", "q004", "--short", " "), "needs a short answer, a full answer or both"),
            (User("cy", "Cy", frozenset({Role.ANNOTATOR})), ("round-submit", "ref1", "q004", "--short", "x"),
             "cy is not an author of reference round ref1"),
            (BEN, ("round-submit", "ref1", "q004", "--short", "x", "--evidence", "nodoc:1-2"), "names no document"),
            (LEAD, ("round-adjudicate", "ref1", "q004", "--accept", "ben"), "ben has not submitted"),
            (BEN, ("round-adjudicate", "ref1", "q004", "--accept", "ben"), "may not adjudicate"),
            (LEAD, ("round-status", "ref7"), "No reference round 'ref7'")):
        code, _, err = golden(golden_db, capsys, who, "references", *argv)
        assert code != 0 and words in err and err.count("\n") == 1, (argv, err)
    assert table_snapshot(demo_store) == before
