"""Issue 27 item 3: frozen versions say who labeled what.

A freeze writes the judge's labels beside people's (``judge_labels.parquet``, an optional data
file of the format), the manifest counts labels by who made them (``label_counts``) and names
the judges (``judge_labels``), ``qrels.parquet`` stays people's labels only, and a scorer is
told which labels to use (``labels='human'`` by default, or ``'human+judge'``) and says so.

The store is the demo (evidence spans, no grades) with a few human grades and judge labels
written through the real write paths (``grade_state.append_tx``, ``judge_labels.insert_tx``)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from golden_store.core.errors import ValidationError, VerificationError
from golden_store.db.store import Store, utcnow
from golden_store.freezing import freeze
from golden_store.live import grade_state
from golden_store.live.judge_labels import JudgeLabel, create_job_tx, insert_tx
from golden_store.live.results import evaluation_summaries, record_evaluation, trial_provenance
from golden_store.scoring import evaluate
from golden_store.versions import format as version_format, load_version, verify, writer
from tests.conftest import prepared_store

RUBRIC_A, RUBRIC_B = "a" * 64, "b" * 64
MEASURES = ["RR", "P@5", "nDCG@10"]


def grade(store: Store, qid: str, doc: str, start: int, end: int, g: int, actor: str) -> None:
    store.write(lambda cur: grade_state.append_tx(cur, query_id=qid, doc_id=doc, start=start, end=end, op="grade",
                                                  grade=g, actor=actor, created_at=utcnow(), doc_sha256=None,
                                                  rubric_version=1))


def judge(store: Store, labels: list[JudgeLabel], *, model: str, rubric: str, calibration: str) -> str:
    """One pool-grading job and its labels, in one transaction, as the judging service writes them."""
    def tx(cur) -> str:
        job = create_job_tx(cur, calibration_id=calibration, judge_model=model, rubric_sha=rubric, mode="direct",
                            sample_share=0.1, sample_seed=7, gate_kappa=0.8, gate_override=None, estimate=None,
                            actor="lead")
        insert_tx(cur, job, labels)
        return job
    return store.write(tx)


def labeled(qid: str, doc: str, start: int, end: int, g: int, route: str = "judge", p_fail: float = 0.1) -> JudgeLabel:
    return JudgeLabel(qid, doc, start, end, outcome="labeled", route=route, grade=g, p_fail=p_fail, p_used=p_fail)


def build(store: Store) -> tuple[str, str]:
    """Version A: the demo and one agreed human grade (q001, pension[0:50] = 1). Then two judge
    jobs label the pool, and version B freezes the same human labels plus the judge's:

    ========  ======================  =====  ======  ==========================================
    query     passage                 grade  route   in human+judge
    ========  ======================  =====  ======  ==========================================
    q001      pension[0:50]           3      sample  no: people graded it 1, the person wins
    q001      annual-leave[0:100]     2      judge   yes: a new relevant document
    q002      pension[200:300]        0      judge   yes: a judged-irrelevant document
    q002      sick-leave[0:100]       1      judge   counts, but sick-leave holds q002's evidence (3)
    q003      remote-work[0:50]       -      human   no: escalated, not a judge label
    q009      remote-work[0:50]       3      judge   yes (q009 is held out)
    q004      laptop-refresh[0:80]    3      sample  yes (job j2, another model; not yet graded)
    ========  ======================  =====  ======  ==========================================
    """
    grade(store, "q001", "pension", 0, 50, 1, "ann")
    grade(store, "q001", "pension", 0, 50, 1, "bob")
    freeze(store, "A", actor="eng")
    judge(store, [labeled("q001", "pension", 0, 50, 3, "sample"),
                  labeled("q001", "annual-leave", 0, 100, 2),
                  labeled("q002", "pension", 200, 300, 0),
                  labeled("q002", "sick-leave", 0, 100, 1),
                  JudgeLabel("q003", "remote-work", 0, 50, outcome="escalated", route="human", p_fail=0.5),
                  labeled("q009", "remote-work", 0, 50, 3)],
          model="judge-a", rubric=RUBRIC_A, calibration="cal-1")
    judge(store, [labeled("q004", "laptop-refresh", 0, 80, 3, "sample")],
          model="judge-b", rubric=RUBRIC_B, calibration="cal-2")
    freeze(store, "B", actor="eng")
    return "A", "B"


def demo_frozen_a_b(request: pytest.FixtureRequest) -> Store:
    """The demo after :func:`build` (versions A and B beside it): built once, copied per test.
    The fixture calling this takes ``golden_db``."""
    return prepared_store(request, "demo-frozen-A-B", lambda s, _: build(s), demo=True)[0]


@pytest.fixture
def versions(request, golden_db):
    demo_store = demo_frozen_a_b(request)
    vdir = demo_store.path.parent / "versions"
    return load_version("A", vdir), load_version("B", vdir), demo_store


# a run over the labeled documents: for q001 the judge's new relevant document first, the
# human-graded 1 second, the evidence document third
RUN = pd.DataFrame([
    ("q001", "annual-leave", 3.0), ("q001", "pension", 2.0), ("q001", "vpn-troubleshooting", 1.0),
    ("q002", "pension", 2.0), ("q002", "sick-leave", 1.0),
], columns=["query_id", "doc_id", "score"])


def test_the_freeze_writes_the_judge_labels_and_says_who_labeled_what(versions):
    a, b, _ = versions
    # version A: the file is there (the format has it), empty; the counts say people only
    assert a.has_judge_labels_file and a.judge_labels.empty
    assert list(a.judge_labels.columns) == list(version_format.JUDGE_LABEL_COLUMNS)
    assert a.manifest["label_counts"] == {"human": 1, "adjudicated": 0, "agreed": 1, "judge": 0, "judge_total": 0,
                                          "standing_sample": 0}
    assert version_format.thaw(a.manifest["judge_labels"]) == {"calibration_ids": [], "models": [], "rubric_shas": [],
                                                       "jobs": []}
    jl = b.judge_labels
    assert list(jl.columns) == list(version_format.JUDGE_LABEL_COLUMNS)
    keys = {(r.query_id, r.doc_id, int(r.start), int(r.end)): (int(r.grade), r.route, r.model, r.job_id,
                                                                r.calibration_id)
            for r in jl.itertuples(index=False)}
    assert keys == {
        ("q001", "pension", 0, 50): (3, "sample", "judge-a", "j1", "cal-1"),
        ("q001", "annual-leave", 0, 100): (2, "judge", "judge-a", "j1", "cal-1"),
        ("q002", "pension", 200, 300): (0, "judge", "judge-a", "j1", "cal-1"),
        ("q002", "sick-leave", 0, 100): (1, "judge", "judge-a", "j1", "cal-1"),
        ("q009", "remote-work", 0, 50): (3, "judge", "judge-a", "j1", "cal-1"),
        ("q004", "laptop-refresh", 0, 80): (3, "sample", "judge-b", "j2", "cal-2"),
    }  # the escalated item is not a judge label
    assert set(jl["rubric_sha"]) == {RUBRIC_A, RUBRIC_B} and jl["p_fail"].tolist() == [0.1] * 6
    assert jl["created_at"].notna().all()
    m = b.manifest
    assert m["label_counts"] == {"human": 1, "adjudicated": 0, "agreed": 1, "judge": 5, "judge_total": 6,
                                 "standing_sample": 2}
    assert version_format.thaw(m["judge_labels"]) == {"calibration_ids": ["cal-1", "cal-2"], "models": ["judge-a", "judge-b"],
                                              "rubric_shas": [RUBRIC_A, RUBRIC_B], "jobs": ["j1", "j2"]}
    assert m["files"]["judge_labels.parquet"]["rows"] == 6
    # people's files are the same bytes in both versions: a judge label is never a person's grade
    for f in ("judgments.parquet", "qrels.parquet", "spans.parquet"):
        assert a.manifest["files"][f]["sha256"] == m["files"][f]["sha256"], f
    assert a.manifest["data_digest"] != m["data_digest"]  # the judge labels are content
    assert verify("A", a.path.parent).ok and verify("B", b.path.parent).ok
    assert verify("B", b.path.parent).checked["judge_labels"] == 6


def test_human_scores_are_the_same_with_or_without_judge_labels_and_differ_with_them(versions):
    """The MUST-SHOW: told labels='human', a version frozen with judge labels scores exactly as
    one frozen without them; told 'human+judge', it scores differently and says so."""
    a, b, _ = versions
    human_a = evaluate(a, RUN, MEASURES, n_boot=200)
    human_b = evaluate(b, RUN, MEASURES, n_boot=200, labels="human")
    assert human_a.labels == human_b.labels == "human" and human_b.judge_labels is None
    assert human_a.mean == human_b.mean and human_a.ci95 == human_b.ci95
    pd.testing.assert_frame_equal(human_a.per_query, human_b.per_query)
    assert b.qrels() == a.qrels() == b.qrels(labels="human")
    assert human_b.definitions["_labels"].startswith("human: people's labels only")

    both = evaluate(b, RUN, MEASURES, n_boot=200, labels="human+judge")
    rr = next(m for m in both.measures if m.startswith("RR"))
    p5 = next(m for m in both.measures if m.startswith("P"))
    assert both.mean != human_b.mean
    # by hand, q001: people's qrels {vpn-troubleshooting: 3 (evidence), pension: 1}; the run
    # ranks annual-leave, pension, vpn. Human: the first relevant (grade >= 2) is rank 3, so
    # RR 1/3 and P@5 1/5; with the judge's annual-leave = 2 it is rank 1: RR 1, P@5 2/5
    assert human_b.per_query.loc["q001", rr] == pytest.approx(1 / 3)
    assert human_b.per_query.loc["q001", p5] == pytest.approx(1 / 5)
    assert both.per_query.loc["q001", rr] == pytest.approx(1.0)
    assert both.per_query.loc["q001", p5] == pytest.approx(2 / 5)
    # q002: pension judged 0 by the judge changes nothing; sick-leave keeps its evidence grade 3
    assert both.per_query.loc["q002"].tolist() == human_b.per_query.loc["q002"].tolist()
    # it says so: which labels, how many judge labels, from whom
    assert both.labels == "human+judge"
    assert both.judge_labels == {"n_passages": 5, "models": ["judge-a", "judge-b"],
                                 "rubric_shas": [RUBRIC_A, RUBRIC_B], "calibration_ids": ["cal-1", "cal-2"],
                                 "jobs": ["j1", "j2"]}
    assert "scored on 5 judge label(s) from model judge-a, judge-b" in both.definitions["_labels"]
    d = both.as_dict()
    assert d["labels"] == "human+judge" and d["judge_labels"]["n_passages"] == 5
    assert human_b.as_dict()["labels"] == "human" and "judge_labels" not in human_b.as_dict()
    # version A has no judge labels: human+judge is the human scoring, said as 0 judge labels
    a_both = evaluate(a, RUN, MEASURES, n_boot=200, labels="human+judge")
    assert a_both.mean == human_a.mean and a_both.judge_labels["n_passages"] == 0


def test_human_plus_judge_qrels_by_hand(versions):
    a, b, _ = versions
    human = b.qrels()
    assert human["q001"] == {"vpn-troubleshooting": 3, "pension": 1}
    expected = {q: dict(d) for q, d in human.items()}
    expected["q001"]["annual-leave"] = 2          # the judge's, nobody graded it
    expected["q002"]["pension"] = 0               # a judged 0 is kept (judged, not relevant)
    expected.setdefault("q009", {})["remote-work"] = 3
    expected.setdefault("q004", {})["laptop-refresh"] = 3
    # q001 pension stays 1 (people graded it: the judge's 3 is not used); q002 sick-leave stays
    # 3 (evidence); the escalated q003 item is no label
    got = b.qrels(labels="human+judge")
    assert got == expected
    assert "remote-work" not in got.get("q003", {})
    # held-out questions are left out with include_held_out=False, judge labels too
    assert "q009" not in b.qrels(labels="human+judge", include_held_out=False)
    assert b.qrels(labels="human+judge", include_held_out=False) == {
        q: d for q, d in expected.items() if q not in {"q009", "q018", "q023", "q024"}}
    # the judge-only labels are the five passages no person graded
    only = b.judge_only_labels()
    assert len(only) == 5 and ("q001", "pension") not in set(zip(only["query_id"], only["doc_id"]))


def test_chunk_qrels_follow_the_label_set(versions):
    _, b, _ = versions
    chunks = [("c1", "annual-leave", 0, 60), ("c2", "pension", 10, 40), ("c3", "pension", 250, 280)]
    human = b.chunk_qrels(chunks)
    both = b.chunk_qrels(chunks, labels="human+judge")
    assert "c1" not in human.get("q001", {}) and both["q001"]["c1"] == 2
    assert human["q001"]["c2"] == both["q001"]["c2"] == 1     # the person's 1, not the judge's 3
    assert "q002" not in human and both["q002"] == {"c3": 0}
    # a passage run scored on both label sets: the same rule, recorded on the result
    run = pd.DataFrame([("q001", "annual-leave", 0, 60, 2.0), ("q001", "pension", 10, 40, 1.0)],
                       columns=["query_id", "doc_id", "start", "end", "score"])
    h = evaluate(b, run, ["RR"], n_boot=50)
    j = evaluate(b, run, ["RR"], n_boot=50, labels="human+judge")
    assert h.per_query.loc["q001"].iloc[0] == 0.0 and j.per_query.loc["q001"].iloc[0] == 1.0
    assert j.labels == "human+judge" and j.definitions["hit_rule"] == "any_overlap"


def test_an_unknown_label_set_is_refused_clearly(versions):
    _, b, _ = versions
    for call in (lambda: b.qrels(labels="judge"), lambda: b.chunk_qrels([], labels="all"),
                 lambda: evaluate(b, RUN, ["RR"], labels="machine")):
        with pytest.raises(ValidationError, match="'human' .* or 'human\\+judge'|human\\+judge"):
            call()


def _as_old_version(path) -> None:
    """Make a version look frozen before judge_labels.parquet existed: no such file, no entry,
    no label facts, the digests recomputed (as that studio wrote them)."""
    m = json.loads((path / "manifest.json").read_text())
    (path / version_format.JUDGE_LABELS_FILE).unlink()
    del m["files"][version_format.JUDGE_LABELS_FILE]
    m.pop("label_counts")
    m.pop("judge_labels")
    m["data_digest"] = version_format.data_digest(m["files"])
    m["content_digest"] = version_format.manifest_digest(m)
    writer.write_manifest(path, m)


def test_a_version_frozen_before_judge_labels_loads_verifies_and_scores_human(versions):
    a, _, _ = versions
    human_qrels = a.qrels()
    _as_old_version(a.path)
    old = load_version("A", a.path.parent)
    rep = verify("A", a.path.parent)
    assert rep.ok, rep.problems
    assert "judge_labels" not in rep.checked
    assert not old.has_judge_labels_file and old.judge_labels.empty
    assert list(old.judge_labels.columns) == list(version_format.JUDGE_LABEL_COLUMNS)
    assert old.qrels(labels="human+judge") == old.qrels() == human_qrels
    res = evaluate(old, RUN, ["RR"], n_boot=50, labels="human+judge")
    assert res.judge_labels["n_passages"] == 0
    # a judge-labels file dropped into an old version is not part of it
    (a.path / version_format.JUDGE_LABELS_FILE).write_bytes(b"not listed")
    with pytest.raises(VerificationError, match="judge_labels.parquet: file not listed"):
        load_version("A", a.path.parent)


def test_tampering_with_the_judge_labels_fails_the_checks(versions):
    _, b, _ = versions
    path = b.path / version_format.JUDGE_LABELS_FILE
    t = pq.read_table(path).to_pandas()
    t.loc[t["doc_id"] == "annual-leave", "grade"] = 3   # the judge said 2
    t.to_parquet(path, index=False)
    with pytest.raises(VerificationError, match="judge_labels.parquet: sha256"):
        load_version("B", b.path.parent)
    rep = verify("B", b.path.parent)
    assert not rep.ok and any(p.startswith("judge_labels.parquet: sha256") for p in rep.problems)


def test_restamped_label_counts_or_judges_fail_verify(versions):
    """An edited manifest fails on its digest; one re-digested by hand still fails verify, which
    re-derives the counts and the judges from the files."""
    _, b, _ = versions
    mpath = b.path / "manifest.json"
    original = mpath.read_text()
    m = json.loads(original)
    m["label_counts"]["judge"] = 0
    mpath.write_text(json.dumps(m))
    assert any("content_digest" in p for p in verify("B", b.path.parent).problems)
    m["content_digest"] = version_format.manifest_digest(m)
    writer.write_manifest(b.path, m)
    assert any(p.startswith("manifest label_counts=") for p in verify("B", b.path.parent).problems)
    m = json.loads(original)
    m["judge_labels"]["models"] = ["someone-else"]
    m["content_digest"] = version_format.manifest_digest(m)
    writer.write_manifest(b.path, m)
    assert any(p.startswith("manifest judge_labels=") for p in verify("B", b.path.parent).problems)
    m = json.loads(original)
    m["label_counts"]["judge_total"] = 7
    m["content_digest"] = version_format.manifest_digest(m)
    writer.write_manifest(b.path, m)
    with pytest.raises(VerificationError, match="label_counts.judge_total='7' but judge_labels.parquet holds 6 rows"):
        load_version("B", b.path.parent)


def test_a_judge_label_on_an_earlier_text_is_left_out_and_counted(demo_store):
    judge(demo_store, [labeled("q001", "annual-leave", 0, 100, 2), labeled("q002", "pension", 0, 50, 1)],
          model="judge-a", rubric=RUBRIC_A, calibration="cal-1")
    demo_store.write(lambda cur: cur.execute(
        "UPDATE judge_label_events SET doc_sha256 = 'sha256:earlier' WHERE doc_id = 'pension'"))
    res = freeze(demo_store, "v", actor="eng")
    v = load_version("v", res.path.parent)
    assert v.judge_labels["doc_id"].tolist() == ["annual-leave"]
    assert res.manifest["judge_labels"]["left_out_stale"] == 1
    assert res.manifest["label_counts"]["judge_total"] == 1
    assert verify("v", res.path.parent).ok


def test_recorded_evaluations_keep_their_labels(versions):
    _, b, store = versions
    human = evaluate(b, RUN, ["RR"], n_boot=50)
    both = evaluate(b, RUN, ["RR"], n_boot=50, labels="human+judge")
    record_evaluation(store, "h", human.per_query, dataset_version="B", labels=human.labels)
    record_evaluation(store, "j", both.per_query, dataset_version="B", labels=both.labels)
    record_evaluation(store, "old", human.per_query, dataset_version="B")
    store.write(lambda cur: cur.execute("UPDATE eval_results SET labels = NULL WHERE evaluation_id = 'old'"))
    s = evaluation_summaries(store).set_index("evaluation_id")
    assert s.loc["h", "labels"] == "human" and s.loc["j", "labels"] == "human+judge"
    assert s.loc["old", "labels"] == "human"  # NULL: recorded before the column, human labels
    assert trial_provenance(store, "j")[0]["labels"] == "human+judge"
    with pytest.raises(ValidationError, match="scored on human\\+judge labels; trial 1 is on human"):
        record_evaluation(store, "j", human.per_query, dataset_version="B", trial=1, labels="human")
    with pytest.raises(ValidationError, match="Unknown label set"):
        record_evaluation(store, "x", human.per_query, dataset_version="B", labels="judge")


def test_diff_lists_the_judge_labels_apart_from_peoples(versions):
    from golden_store.versions import diff_versions, format_diff

    a, b, _ = versions
    d = diff_versions("A", "B", a.path.parent)
    assert d["judgments"] == {"added": [], "removed": [], "changed": []}  # people's labels did not move
    added = {(x["query_id"], x["doc_id"]): (x["grade"], x["route"], x["model"]) for x in d["judge_labels"]["added"]}
    assert added[("q001", "annual-leave")] == (2, "judge", "judge-a") and len(added) == 6
    assert d["judge_labels"]["removed"] == [] and d["judge_labels"]["changed"] == []
    text = format_diff(d)
    assert "judge labels (not people's): +6 -0 ~0" in text
    assert "  + q004 laptop-refresh[0:80] = 3 (sample, judge-b)" in text
    _as_old_version(a.path)  # against a version frozen before judge labels: all of B's are added
    assert len(diff_versions("A", "B", a.path.parent)["judge_labels"]["added"]) == 6
