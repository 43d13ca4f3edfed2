"""Reference answers and answer criteria in a frozen version: only approved revisions of live
questions are frozen (an unapproved edit is counted as left out), the manifest counts what the
files hold (a tampered count fails the load), the reader gives them back, and golden diff names
a changed, added and removed reference answer and a changed criterion."""

from __future__ import annotations

import json

import pytest

from golden_store.core.errors import VerificationError
from golden_store.freezing import freeze
from golden_store.live import reference_answers as refs
from golden_store.live.reference_answers import Anchor, CriterionDraft, ReferenceDraft
from golden_store.versions import diff_versions, format_diff, load_version, verify
from golden_store.versions.format import REFERENCE_ANSWERS_FILE, manifest_digest


def _write(store, qid, short, *, approve=True, evidence=()):
    def tx(cur):
        refs.write_tx(cur, qid, ReferenceDraft(short, None, tuple(evidence)), actor="ann")
        if approve:
            refs.approve_tx(cur, qid, actor="lena")
    store.write(tx)


def _criteria(store, *criteria):
    store.write(lambda cur: refs.set_criteria_tx(cur, "stratum", "tabular", list(criteria), actor="lena"))


def _span(store, qid):
    doc, start, end = store.read_one("SELECT doc_id, start, \"end\" FROM current_evidence WHERE query_id = ? "
                                     "ORDER BY start LIMIT 1", [qid])
    return Anchor(doc, int(start), int(end))


def test_approved_references_are_frozen_and_counted(demo_store):
    _write(demo_store, "q001", "Your device certificate has expired", evidence=[_span(demo_store, "q001")])
    _write(demo_store, "q004", "EUR 58")
    _write(demo_store, "q002", "before 10:00", approve=False)  # a revision nobody approved yet
    _criteria(demo_store, CriterionDraft("amount", "States the amount", "EUR 58", 2.0, 1))
    res = freeze(demo_store, "r.v1", actor="eng")
    m = json.loads((res.path / "manifest.json").read_text())
    assert m["reference_answers"] == {"approved": 2, "unapproved_left_out": 1, "criteria": 1}
    assert REFERENCE_ANSWERS_FILE in m["files"] and m["files"][REFERENCE_ANSWERS_FILE]["rows"] == 2
    v = load_version("r.v1")
    ra = v.reference_answers.set_index("query_id")
    assert list(ra.index) == ["q001", "q004"] and ra.at["q004", "short_answer"] == "EUR 58"
    (anchor,) = json.loads(ra.at["q001", "evidence"])
    assert (anchor["doc_id"], anchor["start"], anchor["end"]) == tuple(_span(demo_store, "q001").__dict__.values())
    assert ra.at["q004", "author"] == "ann"
    crit = v.answer_criteria
    assert crit[["scope", "scope_id", "criterion_id", "weight", "scale_max"]].values.tolist() == [
        ["stratum", "tabular", "amount", 2.0, 1]]
    assert verify("r.v1").ok


def test_a_tampered_count_fails_the_load(demo_store):
    _write(demo_store, "q004", "EUR 58")
    res = freeze(demo_store, "r.v1", actor="eng")
    path = res.path / "manifest.json"
    m = json.loads(path.read_text())
    m["reference_answers"]["approved"] = 3
    m.pop("content_digest", None)
    m["content_digest"] = manifest_digest(m)
    path.write_text(json.dumps(m))
    with pytest.raises(VerificationError, match="reference_answers.approved='3' but reference_answers.parquet holds 1 rows"):
        load_version("r.v1")


def test_diff_names_reference_and_criterion_changes(demo_store):
    _write(demo_store, "q001", "Your device certificate has expired")
    _write(demo_store, "q004", "EUR 58")
    _criteria(demo_store, CriterionDraft("amount", "States the amount", "EUR 58", 2.0, 1))
    freeze(demo_store, "r.v1", actor="eng")
    _write(demo_store, "q004", "58 euros")                    # changed
    _write(demo_store, "q017", "EUR 55 per night")            # added
    demo_store.write(lambda cur: refs.retire_tx(cur, "q001", actor="lena"))  # removed
    _criteria(demo_store, CriterionDraft("amount", "States the amount", "EUR 58", 3.0, 1))
    freeze(demo_store, "r.v2", actor="eng")
    d = diff_versions("r.v1", "r.v2")
    r = d["reference_answers"]
    assert [x["query_id"] for x in r["added"]] == ["q017"] and [x["query_id"] for x in r["removed"]] == ["q001"]
    assert r["changed"] == [{"query_id": "q004", "fields": {"short_answer": {"from": "EUR 58", "to": "58 euros"}}}]
    assert d["answer_criteria"]["changed"] == [{"scope": "stratum", "scope_id": "tabular", "criterion_id": "amount",
                                                "fields": {"weight": {"from": 2.0, "to": 3.0}}}]
    text = format_diff(d)
    assert "reference answers: +1 -1 ~1" in text and "~ q004 short_answer: 'EUR 58' -> '58 euros'" in text
    assert "answer criteria: +0 -0 ~1" in text
