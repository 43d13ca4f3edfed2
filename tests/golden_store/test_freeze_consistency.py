"""Freeze and export consistency (issue 29, M11): a question marked unanswerable that carries
answering grades (2 or 3, or an evidence quote) is refused at freeze, naming the question,
the passages and what to do; a related passage (grade 1, a near-miss negative) is fine. The
JSONL export says what each grade rests on: one annotator's (``single``), two or more who
agreed (``agreed``), or a lead's decision (``adjudicated``)."""

from __future__ import annotations

import json

import pytest

from golden_store.core.errors import ValidationError
from golden_store.db.store import utcnow
from golden_store.freezing import freeze
from golden_store.live import grade_state
from golden_store.versions import load_version
from golden_store.versions.export import export_version, grade_basis


def _grade(store, qid, doc, start, end, grade, actor, op="grade"):
    store.write(lambda cur: grade_state.append_tx(cur, query_id=qid, doc_id=doc, start=start, end=end, op=op,
                                                  grade=grade, actor=actor, created_at=utcnow(), doc_sha256=None,
                                                  rubric_version=1))


def test_a_freeze_refuses_an_unanswerable_question_with_answering_grades(demo_store, tmp_path):
    # q005 "What is the CEO's annual salary?" is answerable=false (negative stratum)
    _grade(demo_store, "q005", "annual-leave", 0, 40, 3, "ann")
    _grade(demo_store, "q005", "health-insurance", 5, 50, 2, "ann")
    _grade(demo_store, "q005", "health-insurance", 5, 50, 2, "bob")
    _grade(demo_store, "q005", "pension", 0, 30, 1, "ann")  # related, not answering: allowed
    with pytest.raises(ValidationError) as err:
        freeze(demo_store, "v1", actor="eng")
    exc = err.value
    assert exc.summary.startswith("Freeze refused: 1 question(s) marked unanswerable have passages graded as "
                                  "answering them")
    assert exc.problems == [
        "query q005 (\"What is the CEO's annual salary?\") is marked unanswerable but 2 passage(s) answer it: "
        "annual-leave [0, 40) grade 3 by ann; health-insurance [5, 50) grade 2 by ann,bob. Fix it on the Freeze "
        "conflicts page (Review → Freeze conflicts in the app): a lead re-grades each passage (1 = related, not "
        "answering) or retracts it, or, if the corpus does answer the question, marks it answerable with a reason"]
    # the refusal itself names the place to go (issue 37 item 9)
    assert "Freeze conflicts page (Review → Freeze conflicts in the app) lists each with its fixes" in exc.summary
    assert not (tmp_path / "versions" / "v1").exists()
    # a lead settles it: adjudicated down to "related", the freeze goes through
    _grade(demo_store, "q005", "annual-leave", 0, 40, 1, "lead", op="adjudicate")
    _grade(demo_store, "q005", "health-insurance", 5, 50, 0, "lead", op="adjudicate")
    v = freeze(demo_store, "v1", actor="eng")
    assert load_version("v1").qrels()["q005"] == {"annual-leave": 1, "health-insurance": 0, "pension": 1}
    assert v.manifest["n_judgments"] == 3


def test_the_jsonl_export_tells_single_from_agreed_and_adjudicated(demo_store, tmp_path):
    _grade(demo_store, "q001", "vpn-troubleshooting", 0, 50, 2, "ann")  # one annotator
    _grade(demo_store, "q001", "sick-leave", 0, 40, 1, "ann")  # two who agree
    _grade(demo_store, "q001", "sick-leave", 0, 40, 1, "bob")
    _grade(demo_store, "q002", "pension", 10, 60, 3, "ann")  # two who disagree, then a lead decides
    _grade(demo_store, "q002", "pension", 10, 60, 0, "bob")
    _grade(demo_store, "q002", "pension", 10, 60, 2, "lead", op="adjudicate")
    freeze(demo_store, "v1", actor="eng")
    v = load_version("v1")
    assert sorted(v.judgments["basis"]) == ["adjudicated", "agreed", "agreed"]  # the frozen file keeps its word
    export_version(v, "jsonl", tmp_path / "jl")
    rows = {r["query_id"]: r for r in map(json.loads, (tmp_path / "jl" / "golden.jsonl").read_text().splitlines())}
    got = {(j["doc_id"], j["basis"], j.get("annotators")) for q in ("q001", "q002") for j in rows[q]["judgments"]}
    assert got == {("vpn-troubleshooting", "single", 1), ("sick-leave", "agreed", 2), ("pension", "adjudicated", None)}


@pytest.mark.parametrize("basis,who,expected", [
    ("agreed", "ann", ("single", 1)), ("agreed", "ann,bob", ("agreed", 2)), ("agreed", "a,b,c", ("agreed", 3)),
    ("adjudicated", "lead", ("adjudicated", None)), ("agreed", "import:trec", ("single", 1)),
])
def test_grade_basis(basis, who, expected):
    assert grade_basis(basis, who) == expected
