"""``golden answers review-report`` in-process on a real store: the reviewers' agreement with the
judge on claim verdicts as text and as JSON (κ, raw agreement, confusion, FAIL recall with its
counts), filtered by system; with no review yet, one sentence saying how to get some."""

from __future__ import annotations

import json

from annotator.cli import main
from annotator.labeling import claim_review
from annotator.people import identity
from tests.annotator.test_claim_review import make_checks


def golden(golden_db, capsys, *argv):
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_review_report_text_and_json(demo_store, golden_db, capsys, tmp_path):
    code, out, _ = golden(golden_db, capsys, "answers", "review-report")
    assert code == 0 and out.startswith("No claim reviewed yet: reviewers check the judge's claim verdicts")

    make_checks(demo_store, tmp_path)
    admin = identity.create_user(demo_store, None, "admin", ["admin"], password="0123456789")
    rev = identity.create_user(demo_store, admin, "rita", ["reviewer"], password="0123456789")
    drawn = claim_review.sample(demo_store, rev, 6, seed=0)  # 2 of each of the judge's verdicts
    # rita calls every claim contradicted: she agrees on the judge's 2 contradicted ones only
    for r in drawn:
        claim_review.record(demo_store, rev, r["check_id"], r["claim_no"], "contradicted")

    code, out, err = golden(golden_db, capsys, "--json", "answers", "review-report", "--system", "s1")
    assert code == 0, err
    rep = json.loads(out)
    o = rep["overall"]
    assert rep["reviews"] == 6 and rep["reviewers"] == ["rita"] and o["n"] == 6
    assert o["confusion"] == [[0, 0, 0], [2, 2, 2], [0, 0, 0]]  # rows: people, columns: the judge
    assert o["raw_agreement"] == 2 / 6 and o["kappa"] == 0.0
    # of rita's 6 failing claims the judge called 4 contradicted or insufficient
    assert (o["fail_recall"]["caught"], o["fail_recall"]["human_fail"], o["fail_recall"]["recall"]) == (4, 6, 4 / 6)
    assert o["fail_precision"] == 1.0  # the judge's 4 failures are all failures to rita

    code, out, _ = golden(golden_db, capsys, "answers", "review-report")
    assert code == 0
    assert "All reviewers: 6 claim review(s); Cohen's kappa 0.000 (below bar 0.7), raw agreement 0.333" in out
    assert "FAIL recall 0.667: the judge did not call supported 4 of the 6 claim(s) people call" in out
    assert "  rita: 6 claim review(s)" in out and "Judge judge-model; check prompt(s) c1" in out

    code, out, _ = golden(golden_db, capsys, "--json", "answers", "review-report", "--system", "other")
    assert code == 0 and json.loads(out)["reviews"] == 0
