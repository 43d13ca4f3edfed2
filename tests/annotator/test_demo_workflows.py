"""Issue 17 item 1: the demo fills every workflow. After loading it with its workflows, each
page's service call returns data: runs and a pool (with items left for the local user to
judge), a finished calibration round with agreement, disagreements (one adjudicated),
approved nuggets, answers with assignments and scores, transcripts with reviews, a saved
judge calibration, a frozen version that verifies, and scored runs for power planning."""

from __future__ import annotations

import pytest

from annotator import demo
from annotator.evaluation import evaluations, power, runs_import, transcripts
from annotator.evidence import nuggets
from annotator.judge import calibration
from annotator.labeling import adjudication, agreement, rounds
from annotator.versions import versioning
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import PermissionDenied, Role
from golden_store.live import judging
from golden_store.live.users import count_users


@pytest.fixture
def full_demo(store):
    res = demo.load_demo(store, LOCAL_USER, workflows=True)
    return store, res


def test_the_demo_fills_every_workflow(full_demo):
    s, res = full_demo
    u = LOCAL_USER
    assert res["documents"] == 20 and res["queries"] == 40  # the base demo as before

    # runs and the pool; the Judge page has work for the local user
    assert set(runs_import.run_table(s, u)["system"]) == {"bm25", "hybrid", "dense"}
    counts = judging.pool_counts(s)
    assert counts["pool_items"] > 100 and counts["double_graded"] == 17 and counts["rounds"] == 1
    assert judging.next_items(s, u.username, 5)
    assert runs_import.pool_status(s, u)

    # a finished calibration round with agreement figures
    (rnd,) = rounds.list_rounds(s, u)
    assert rnd["kind"] == "calibration" and rnd["n_assignments"] == rnd["n_done"] == 34
    ag = agreement.compute(s, u, rnd["round_id"])
    assert len(ag.pair_table()) == 1

    # disagreements: one adjudicated, the rest waiting
    assert adjudication.decided_count(s, u) == 1
    assert len(adjudication.queue(s, u)) == adjudication.pending_count(s, u) == 3

    # approved nuggets with their quotes placed, answers, assignments, scores
    approved = nuggets.export_rows(s, u)
    assert {n["query_id"] for n in approved} == {"q001", "q002", "q004", "q013", "q015", "q017"}
    assert all(n["doc_id"] for n in approved)
    assert len(nuggets.answers(s, u)) == 36  # two systems, 18 questions each (6 of them unanswerable)
    assert len(nuggets.assignments(s, u)) == 2 * len(approved)
    per_answer, per_system = nuggets.scores(s, u)
    assert len(per_system) == 2

    # transcripts, four failures reviewed
    assert len(transcripts.questioned(s, u)) == 1  # the grader failure waits for a lead
    summary = transcripts.summary(s, u)
    assert sum(r["failures"] for r in summary) == 7 and sum(r["reviewed"] for r in summary) == 4

    # a saved judge calibration
    assert len(calibration.saved(s, u)) == 1

    # a frozen version that verifies and says what it left out; scored runs for Power
    vdir = versioning.versions_dir(s)
    (v,) = versioning.list_versions(u, vdir)
    assert v["name"] == "demo.v0" and v["n_judgments"] > 0
    assert versioning.verify(u, vdir, "demo.v0").ok
    assert "3 graded item(s)" in versioning.left_out(versioning.manifest(u, vdir, "demo.v0"))[0]
    assert set(power.recorded_evaluations(s, u)["system"]) == {"bm25", "hybrid", "rag-bm25", "rag-hybrid"}
    # the two systems' answers recorded on it, compared and gated as runs are (issue 40)
    c = evaluations.compare(s, u, "answers-rag-bm25@demo.v0", "answers-rag-hybrid@demo.v0")
    assert {"answer_em", "answer_f1", "nugget_v", "nugget_a", "abstention_recall"} <= set(c["metrics"])
    assert c["gate"] == "PASS" and c["metrics"]["answer_f1"]["delta"] > 0

    # a graded answer sample (issue 40): people's criterion marks of 14 answers (tabular, temporal,
    # paraphrase), the rubric judge's of the 12 not held out (q009 is: never sent), its calibration
    # below the bar, and both rubric scores recorded in the answer evaluations
    from annotator.labeling import answer_grading
    from golden_store.live import answer_grades

    assert (res["workflows"]["human_answer_grades"], res["workflows"]["judge_answer_grades"]) == (57, 36)
    judged = {(g["system"], g["query_id"]) for g in answer_grades.current_grades(s, kind="judge")}
    assert len(judged) == 12 and not {q for _, q in judged} & {"q009"}
    (judge,) = answer_grading.report(s, u)["judges"]
    assert judge["model"] == demo.DEMO_JUDGE and judge["verdict"] == "fail" and judge["answers"] == 12
    verdicts = {c["criterion_id"]: c["verdict"] for c in judge["criteria"]}
    assert verdicts["current_rule"] == "pass" and verdicts["no_outdated"] == "fail"
    assert {"rubric_human", "rubric_judge"} <= set(c["metrics"])
    assert answer_grading.sample(s, u, n=20)  # the Answer grading page has answers to grade

    # no accounts were created: single-user local mode stays as it was
    assert count_users(s) == 0


def test_the_base_demo_is_unchanged(demo_store):
    assert judging.pool_counts(demo_store)["pool_items"] == 0
    assert calibration.saved(demo_store, LOCAL_USER) == []


def test_an_engineer_can_load_the_full_demo_and_a_lead_cannot(store):
    lead = User("lena", "Lena", frozenset({Role.LEAD}))
    with pytest.raises(PermissionDenied):
        demo.load_demo(store, lead, workflows=True)
    assert demo.store_is_empty(store)
    engineer = User("erik", "Erik", frozenset({Role.ENGINEER}))
    assert demo.load_demo(store, engineer, workflows=True)["workflows"]["version"] == "demo.v0"


def test_a_demo_version_left_behind_gets_a_fresh_name(tmp_path, store):
    (versioning.versions_dir(store) / "demo.v0").mkdir(parents=True)
    assert demo.load_demo(store, LOCAL_USER, workflows=True)["workflows"]["version"] == "demo.v0-2"
