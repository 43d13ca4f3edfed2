"""``annotator.evaluation.comparability.differences`` on hand-made frames (the columns evaluation_frame
returns): one sentence per definition that differs, naming both values; "not recorded" (an
evaluation recorded before schema 24) is never taken to match. Every expected sentence is
written out by hand."""

from __future__ import annotations

import pandas as pd

from annotator.evaluation.comparability import differences

SHA_A, SHA_B = "a" * 64, "b" * 64


def frame(*, labels="human", run_level="passage", hit_rule="any_overlap", run_depth=100, models=None, shas=None,
          metrics=("R@10",), queries=("q1", "q2")) -> pd.DataFrame:
    rows = [{"query_id": q, "stratum": "s", "metric": m, "value": 0.5, "dataset_version": "v1",
             "metric_impl_sha": "i", "labels": labels, "run_level": run_level, "hit_rule": hit_rule,
             "run_depth": run_depth, "label_judge_models": models, "label_rubric_shas": shas}
            for q in queries for m in metrics]
    f = pd.DataFrame(rows)
    f["run_depth"] = f["run_depth"].astype("Int64")
    return f


def old(**kw) -> pd.DataFrame:
    """An evaluation recorded before schema 24: its definitions NULL (labels NULL read as human)."""
    return frame(run_level=None, hit_rule=None, run_depth=None, **kw)


def test_the_same_definitions_compare_clean():
    assert differences("a", frame(), "b", frame()) == []
    assert differences("a", frame(run_level="document", hit_rule=None), "b",
                       frame(run_level="document", hit_rule=None)) == []
    judged = dict(labels="human+judge", models="m1, m2", shas=f"{SHA_A}, {SHA_B}")
    assert differences("a", frame(**judged), "b", frame(**judged)) == []


def test_the_issue_example_a_hit_rule_change():
    assert differences("d-any", frame(), "d-cs", frame(hit_rule="contains_span")) == [
        "hit rule differs: d-any any_overlap, d-cs contains_span"]


def test_two_spellings_of_one_hit_rule_match():
    assert differences("a", frame(hit_rule="contains_span"), "b", frame(hit_rule="min_overlap(1)")) == []
    assert differences("a", frame(hit_rule="min_overlap(0.5)"), "b", frame(hit_rule="min_overlap(1)")) == [
        "hit rule differs: a min_overlap(0.5), b min_overlap(1)"]


def test_a_document_run_against_a_passage_run():
    assert differences("bm25", frame(run_level="document", hit_rule=None), "dense", frame()) == [
        "hit rule differs: bm25 none (document run), dense any_overlap"]


def test_depth_counts_only_where_it_can_change_a_compared_metric():
    # R@10 of runs 20 and 50 deep reads the same top 10
    assert differences("a", frame(run_depth=20), "b", frame(run_depth=50)) == []
    # a run 5 deep has no 6th to 10th result: R@10 can change
    assert differences("a", frame(run_depth=5), "b", frame(run_depth=50)) == [
        "retrieval depth (most results per question) differs: a 5, b 50 (can change R@10)"]
    # AP reads the whole ranking: any depth difference can change it; P@5 cannot change
    both = ("AP", "P@5")
    assert differences("a", frame(run_depth=20, metrics=both), "b", frame(run_depth=50, metrics=both)) == [
        "retrieval depth (most results per question) differs: a 20, b 50 (can change AP)"]
    # the metrics compared can be named: only P@5 compared, so nothing to say
    assert differences("a", frame(run_depth=20, metrics=both), "b", frame(run_depth=50, metrics=both),
                       metrics=["P@5"]) == []
    # a recall level (IPrec@0.5) is not a rank: conservative, the depth matters
    assert differences("a", frame(run_depth=20, metrics=("IPrec@0.5",)), "b",
                       frame(run_depth=50, metrics=("IPrec@0.5",))) == [
        "retrieval depth (most results per question) differs: a 20, b 50 (can change IPrec@0.5)"]


def test_the_label_set_and_the_judge_behind_the_labels():
    assert differences("h", frame(), "j", frame(labels="human+judge", models="m1", shas=SHA_A)) == [
        "label set differs: h human, j human+judge"]
    j1 = frame(labels="human+judge", models="judge-a", shas=SHA_A)
    j2 = frame(labels="human+judge", models="judge-b", shas=SHA_B)
    assert differences("j1", j1, "j2", j2) == [
        "label judge model differs: j1 judge-a, j2 judge-b",
        "label judge rubric sha differs: j1 aaaaaaaaaaaa, j2 bbbbbbbbbbbb"]
    # 12 characters that do not tell two shas apart are shown in full
    near = "a" * 63 + "c"
    assert differences("j1", j1, "j3", frame(labels="human+judge", models="judge-a", shas=near)) == [
        f"label judge rubric sha differs: j1 {SHA_A}, j3 {near}"]
    # a human+judge scoring that used no judge label
    assert differences("j1", j1, "j0", frame(labels="human+judge", models="", shas="")) == [
        "label judge model differs: j1 judge-a, j0 none used",
        "label judge rubric sha differs: j1 aaaaaaaaaaaa, j0 none used"]


def test_an_old_evaluation_says_not_recorded_rather_than_match():
    assert differences("old", old(), "new", frame()) == [
        "hit rule not known to match: old not recorded, new any_overlap",
        "retrieval depth not known to match: old not recorded, new 100"]
    assert differences("old1", old(), "old2", old()) == [
        "hit rule not known to match: old1 not recorded, old2 not recorded",
        "retrieval depth not known to match: old1 not recorded, old2 not recorded"]
    # the label set was recorded before (NULL read as human by evaluation_frame); the judge was not
    assert differences("old", old(labels="human+judge"), "new",
                       frame(labels="human+judge", models="m1", shas=SHA_A)) == [
        "hit rule not known to match: old not recorded, new any_overlap",
        "retrieval depth not known to match: old not recorded, new 100",
        "label judge model not known to match: old not recorded, new m1",
        "label judge rubric sha not known to match: old not recorded, new aaaaaaaaaaaa"]


def test_a_frame_without_the_columns_reads_as_not_recorded():
    bare = frame()[["query_id", "stratum", "metric", "value"]]
    assert differences("bare", bare, "new", frame()) == [
        "hit rule not known to match: bare not recorded, new any_overlap",
        "retrieval depth not known to match: bare not recorded, new 100",
        "label set not known to match: bare not recorded, new human"]


def test_every_difference_at_once_in_order():
    a = frame(run_level="document", hit_rule=None, run_depth=1000, metrics=("nDCG@10", "AP"))
    b = frame(hit_rule="contains_span", run_depth=10, labels="human+judge", models="m", shas=SHA_B,
              metrics=("nDCG@10", "AP"))
    assert differences("base", a, "cand", b) == [
        "hit rule differs: base none (document run), cand contains_span",
        "retrieval depth (most results per question) differs: base 1000, cand 10 (can change AP)",
        "label set differs: base human, cand human+judge"]
