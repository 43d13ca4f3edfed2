"""Faithfulness corrected by people's claim reviews (issue 40, item 7) on a real store: the
judge's share of supported claims beside the prediction-powered one, worked out by hand."""

from __future__ import annotations

import json

import pytest

from annotator.demo import DEMO_DIR
from annotator.evaluation.judge_corrected import corrected_faithfulness
from annotator.evidence import nuggets
from annotator.people.identity import LOCAL_USER, User
from annotator.people.roles import PermissionDenied, Role

from golden_store.live import faithfulness
from golden_store.live.faithfulness import ClaimRow


def _checked_and_reviewed(store) -> None:
    nuggets.import_answers(store, LOCAL_USER, str(DEMO_DIR / "answers" / "rag-bm25.jsonl"), "rag-bm25")
    answers = {a["query_id"]: a["answer"] for a in nuggets.answers(store, LOCAL_USER, "rag-bm25")}
    # the judge: q001 and q002 four supported claims each, q004 two contradicted ones
    plan = {"q001": ["supported"] * 4, "q002": ["supported"] * 4, "q004": ["contradicted"] * 2}
    # people reviewed claims 1-2 of q001 (supported, contradicted), 1-2 of q002 (supported,
    # supported) and both of q004 (contradicted, supported)
    reviews = {("q001", 1): "supported", ("q001", 2): "contradicted", ("q002", 1): "supported",
               ("q002", 2): "supported", ("q004", 1): "contradicted", ("q004", 2): "supported"}

    def tx(cur):
        for qid, verdicts in plan.items():
            check = faithfulness.record_tx(
                cur, system="rag-bm25", query_id=qid, answer=answers[qid], outcome="ok", model="judge-x",
                decompose_sha="d", check_sha="c", input_tokens=1, output_tokens=1, actor="eng",
                claims=[ClaimRow(f"claim {n}", v, v, None, True, None) for n, v in enumerate(verdicts, 1)])
            for (q, n), verdict in reviews.items():
                if q == qid:
                    faithfulness.review_tx(cur, check_id=check, claim_no=n, reviewer="rita", verdict=verdict)
    store.write(tx)


def test_the_corrected_share_equals_the_hand_computed_one(demo_store):
    _checked_and_reviewed(demo_store)
    (got,) = corrected_faithfulness(demo_store, LOCAL_USER).values()
    # judge: 8 of 10 claims supported. Stratum "supported" (8 claims): people 1, 0, 1, 1 on the
    # 4 reviewed -> judge 1 corrected by -1/4 = 0.75, weight 0.8; stratum "contradicted" (2
    # claims, both reviewed): people's mean 0.5, weight 0.2. Corrected: 0.6 + 0.1 = 0.7.
    assert (got.claims, got.reviewed) == (10, 6)
    assert got.estimate.judge_only.mean == pytest.approx(0.8)
    assert got.estimate.ppi.mean == pytest.approx(0.7)
    assert got.per_verdict == {"supported": {"claims": 8, "reviewed": 4}, "contradicted": {"claims": 2, "reviewed": 2}}
    d = got.as_dict()
    assert d["corrected"]["low"] < 0.7 < d["corrected"]["high"]


def test_a_withdrawn_review_no_longer_corrects(demo_store):
    _checked_and_reviewed(demo_store)
    check = demo_store.read("SELECT check_id FROM faithfulness_checks WHERE query_id = 'q001'")[0][0]
    demo_store.write(lambda cur: faithfulness.review_tx(cur, check_id=check, claim_no=2, reviewer="rita",
                                                        verdict="withdrawn"))
    (got,) = corrected_faithfulness(demo_store, LOCAL_USER).values()
    # supported stratum: 3 reviews (1, 1, 1) -> 1.0; corrected 0.8 * 1 + 0.2 * 0.5 = 0.9
    assert got.reviewed == 5 and got.estimate.ppi.mean == pytest.approx(0.9)


def test_a_grader_may_not_see_a_systems_numbers(demo_store):
    with pytest.raises(PermissionDenied):
        corrected_faithfulness(demo_store, User("gina", "Gina", frozenset({Role.ANNOTATOR})))


def test_golden_answers_faithfulness_shows_both_readings(demo_store, golden_db, capsys):
    from annotator import cli

    _checked_and_reviewed(demo_store)
    capsys.readouterr()
    assert cli.main(["--db", golden_db, "answers", "faithfulness", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["rag-bm25"]["corrected_by_reviews"]
    assert got["corrected"]["mean"] == pytest.approx(0.7) and got["judge_only"]["mean"] == pytest.approx(0.8)
    assert cli.main(["--db", golden_db, "answers", "faithfulness"]) == 0
    out = capsys.readouterr().out
    assert "corrected by people's reviews of 6 (prediction-powered, per judge verdict): 0.7000 [" in out
    # judge minus people on the 6 reviewed: 0, 1, 0, 0 (supported) and 0, -1 (contradicted): mean 0 -
    # the raw bias cancels across verdicts, which is why each verdict is corrected on its own
    assert "judge minus people on the reviewed claims +0.0000" in out



def test_checked_claims_nobody_reviewed_read_plain_figure_only(demo_store):
    from annotator.evaluation.judge_corrected import NO_SAMPLE, corrected_table

    _checked_and_reviewed(demo_store)
    checks = [r[0] for r in demo_store.read("SELECT check_id FROM faithfulness_checks")]
    demo_store.write(lambda cur: [faithfulness.review_tx(cur, check_id=c, claim_no=n, reviewer="rita", verdict="withdrawn")
                                  for c in checks for n in (1, 2)])
    got = corrected_faithfulness(demo_store, LOCAL_USER)
    assert got["rag-bm25"].reviewed == 0
    row = corrected_table(got).set_index("system").loc["rag-bm25"]
    assert row["corrected by reviews"] == NO_SAMPLE and row["judge alone"].startswith("0.800 [")
