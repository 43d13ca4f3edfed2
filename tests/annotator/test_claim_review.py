"""People review the judge's claim verdicts on a real store (DuckDB file or PostgreSQL): the
sample is seeded, stratified by the judge's verdict, never repeats a claim the reviewer has
reviewed (an undo puts it back), skips claims of stale or superseded checks; reviews are events
with undo; the agreement report counts pairs on current claims only; roles are enforced."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from annotator.evidence import nuggets
from annotator.labeling import claim_review
from annotator.people import identity
from annotator.people.identity import LOCAL_USER
from annotator.people.roles import PermissionDenied
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.store import Store
from golden_store.live import faithfulness
from tests.conftest import table_snapshot

CONTEXT = "Unused leave of up to 5 days may be carried over. Carried-over days lapse on 31 March."
# per answer, the judge's verdicts of its claims: 15 supported, 3 contradicted, 3 insufficient
VERDICTS = {"q001": "SSSSSC", "q002": "SSSSI", "q003": "SSSCI", "q004": "SSCI", "q005": "S"}


def _answers(tmp: Path, changed: str | None = None) -> str:
    rows = [{"query_id": q, "answer": f"Answer to {q}" + (" (rewritten)" if q == changed else ""),
             "contexts": [{"text": f"{CONTEXT} <b>{q}</b>"}]} for q in VERDICTS]
    p = tmp / "answers.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def make_checks(store: Store, tmp: Path, system: str = "s1") -> dict[str, int]:
    """Answers with contexts, and a judge's check of each (written as the faithfulness job
    writes it): query id -> check id."""
    nuggets.import_answers(store, LOCAL_USER, _answers(tmp), system)
    out = {}
    for qid, codes in VERDICTS.items():
        names = {"S": "supported", "C": "contradicted", "I": "insufficient"}
        claims = [faithfulness.ClaimRow(f"Claim {n} of {qid} <script>x</script>", names[c], names[c],
                                        "QUOTE-SENTINEL" if c == "S" else None, c == "S", f"why-sentinel {qid}")
                  for n, c in enumerate(codes, 1)]
        out[qid] = store.write(functools.partial(
            faithfulness.record_tx, system=system, query_id=qid, answer=f"Answer to {qid}", outcome="ok",
            model="judge-model", decompose_sha="d1", check_sha="c1", input_tokens=10, output_tokens=5,
            claims=claims, actor="local"))
    return out


@pytest.fixture
def people(demo_store):
    admin = identity.create_user(demo_store, None, "admin", ["admin"], password="0123456789")
    return {r: identity.create_user(demo_store, admin, r, [r], password="0123456789")
            for r in ("reviewer", "lead", "annotator", "engineer")} | {"reviewer2": identity.create_user(
                demo_store, admin, "reviewer2", ["reviewer"], password="0123456789")}


def test_the_sample_is_seeded_stratified_and_grows_by_adding(demo_store, people, tmp_path):
    make_checks(demo_store, tmp_path)
    rev = people["reviewer"]
    one = claim_review.sample(demo_store, rev, 9, seed=3)
    assert one == claim_review.sample(demo_store, rev, 9, seed=3)  # seeded: the same sample again
    assert Counter(r["verdict"] for r in one) == {"contradicted": 3, "insufficient": 3, "supported": 3}
    # 7 places: the failing verdicts first in turn (C, I, S, C, I, S, C)
    assert Counter(r["verdict"] for r in claim_review.sample(demo_store, rev, 7, seed=3)) == {
        "contradicted": 3, "insufficient": 2, "supported": 2}
    # a verdict without claims left gives its turn away: 12 = 3 C + 3 I + 6 S
    twelve = claim_review.sample(demo_store, rev, 12, seed=3)
    assert Counter(r["verdict"] for r in twelve) == {"contradicted": 3, "insufficient": 3, "supported": 6}
    key = lambda r: (r["check_id"], r["claim_no"])  # noqa: E731
    assert {key(r) for r in one} <= {key(r) for r in twelve}  # a larger sample only adds
    assert len({key(r) for r in twelve}) == 12  # no claim twice
    other = claim_review.sample(demo_store, rev, 12, seed=4)
    assert [key(r) for r in other] != [key(r) for r in twelve]  # another seed, another order/sample
    # mixed order: the sample is not grouped by the judge's verdict
    verdicts = [r["verdict"] for r in twelve]
    assert verdicts != sorted(verdicts) and verdicts != sorted(verdicts, reverse=True)
    assert len(claim_review.sample(demo_store, rev, 500, seed=0)) == 21  # every claim, once


def test_stale_and_superseded_checks_are_skipped(demo_store, people, tmp_path):
    checks = make_checks(demo_store, tmp_path)
    rev = people["reviewer"]
    # q001's answer replaced: its check describes text the system no longer gives
    nuggets.import_answers(demo_store, LOCAL_USER, _answers(tmp_path, changed="q001"), "s1", replace=True)
    # q002 checked again: the first check is superseded
    again = demo_store.write(functools.partial(
        faithfulness.record_tx, system="s1", query_id="q002", answer="Answer to q002", outcome="ok",
        model="judge-model", decompose_sha="d1", check_sha="c2", input_tokens=1, output_tokens=1,
        claims=[faithfulness.ClaimRow("One claim", "supported", "supported", "q", True, "j")], actor="local"))
    drawn = {r["check_id"] for r in claim_review.sample(demo_store, rev, 500, seed=0)}
    assert checks["q001"] not in drawn and checks["q002"] not in drawn and again in drawn
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match="the answer's text changed since its claims were checked"):
        claim_review.record(demo_store, rev, checks["q001"], 1, "supported")
    with pytest.raises(ValidationError, match="the answer was checked again since"):
        claim_review.record(demo_store, rev, checks["q002"], 1, "supported")
    with pytest.raises(NotFoundError, match="There is no claim 9 of check"):
        claim_review.record(demo_store, rev, checks["q005"], 9, "supported")
    with pytest.raises(ValidationError, match="'yes' is not a claim verdict"):
        claim_review.record(demo_store, rev, checks["q005"], 1, "yes")
    assert table_snapshot(demo_store) == before  # refused: nothing written


def test_reviews_leave_the_queue_undo_puts_them_back_and_agreement_is_reported(demo_store, people, tmp_path):
    make_checks(demo_store, tmp_path)
    rev = people["reviewer"]
    todo, done, total = claim_review.queue(demo_store, rev, 6, seed=1)
    assert (len(todo), done, total) == (6, 0, 6)
    # the card is blind: nothing of the judge's verdict, quote or justification; text stays text
    shown = claim_review.cards(demo_store, rev, todo)
    blob = json.dumps(shown)
    assert "QUOTE-SENTINEL" not in blob and "why-sentinel" not in blob and "supported" not in blob
    assert "<script>x</script>" in shown[0]["title"] and "<b>q00" in blob
    # the reviewer says the opposite of the judge on the first claim, agrees on the rest
    first, *rest = todo
    flip = {"supported": "contradicted", "contradicted": "supported", "insufficient": "supported"}
    got = claim_review.record(demo_store, rev, first["check_id"], first["claim_no"], flip[first["verdict"]])
    assert got["judge"] == first["verdict"] and got["agrees"] is False  # the judge's verdict, after
    for r in rest:
        claim_review.record(demo_store, rev, r["check_id"], r["claim_no"], r["verdict"])
    todo2, done2, _ = claim_review.queue(demo_store, rev, 6, seed=1)
    assert (todo2, done2) == ([], 6)  # never the same claim again
    # another reviewer has the same sample, still to do
    assert claim_review.queue(demo_store, people["reviewer2"], 6, seed=1)[1:] == (0, 6)

    rep = claim_review.report(demo_store, people["engineer"])  # engineers read results
    assert rep["reviews"] == 6 and rep["reviewers"] == ["reviewer"] and rep["judges"] == ["judge-model"]
    assert rep["overall"]["n"] == 6 and rep["overall"]["raw_agreement"] == pytest.approx(5 / 6)

    # undo through the surface's path: the review is withdrawn (a new event) and the claim comes back
    label = {"id": "a" * 32, "by": "reviewer", "item": {"check_id": first["check_id"], "claim_no": first["claim_no"]},
             "digest": claim_review.cards(demo_store, rev, [first])[0]["digest"], "action": "supported"}
    assert claim_review.submit(demo_store, rev, [label])[0].status == "saved"
    undo = {"id": "b" * 32, "by": "reviewer", "item": label["item"], "digest": label["digest"], "action": "undo",
            "target": "a" * 32}
    assert claim_review.submit(demo_store, rev, [undo])[0].status == "saved"
    todo3, done3, _ = claim_review.queue(demo_store, rev, 6, seed=1)
    assert [(r["check_id"], r["claim_no"]) for r in todo3] == [(first["check_id"], first["claim_no"])] and done3 == 5
    assert demo_store.read_one("SELECT count(*) FROM claim_reviews WHERE verdict = 'withdrawn'")[0] == 1
    assert claim_review.report(demo_store, rev)["reviews"] == 5
    # a label for text that is not what was shown is refused
    bad = {**label, "id": "c" * 32, "digest": "0" * 24}
    ack = claim_review.submit(demo_store, rev, [bad])[0]
    assert ack.status == "refused" and "not the claim that was on screen" in ack.message


def test_roles(demo_store, people, tmp_path):
    checks = make_checks(demo_store, tmp_path)
    for who in ("annotator", "engineer"):
        with pytest.raises(PermissionDenied, match="may not review the judge's claim verdicts"):
            claim_review.queue(demo_store, people[who])
        with pytest.raises(PermissionDenied):
            claim_review.record(demo_store, people[who], checks["q005"], 1, "supported")
        with pytest.raises(PermissionDenied):
            claim_review.my_reviews(demo_store, people[who])
    with pytest.raises(PermissionDenied, match="may not see the judge's agreement"):
        claim_review.report(demo_store, people["annotator"])
    label = {"id": "d" * 32, "by": "annotator", "item": {"check_id": checks["q005"], "claim_no": 1},
             "digest": "x", "action": "supported"}
    ack = claim_review.submit(demo_store, people["annotator"], [label])[0]
    assert ack.status == "refused" and "may no longer review" in ack.message
    # a lead reviews (calibrating the judge); nothing was written by the refusals
    assert claim_review.record(demo_store, people["lead"], checks["q005"], 1, "supported")["agrees"] is True
    assert demo_store.read("SELECT reviewer FROM claim_reviews") == [("lead",)]
