"""Judge calibration as a lead uses it: an uploaded set with bad lines refused, a Claude judge
run against the local Messages API server (quote backstop, refusals counted, held-out never
sent), the analysis on fit/report splits, saving pinned to the judge, the offset between two
judges on the archived items, and the manifest entry."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from annotator.judge import calibration
from annotator.people.identity import LOCAL_USER
from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from golden_store.scoring.calibration import FAIL, PASS
from tests.conftest import table_snapshot
from tests.llm_server import message


def _csv(n: int = 200, seed: int = 0, judge_noise: float = 0.1) -> bytes:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        bad = rng.random() < 0.3
        p = float(np.clip((0.7 if bad else 0.25) + rng.normal(0, 0.18), 0, 1))
        judge = ("fail" if bad else "pass") if rng.random() > judge_noise else ("pass" if bad else "fail")
        rows.append({"item_id": f"i{i}", "human_label": "fail" if bad else "pass", "judge_label": judge,
                     "judge_p": round(p, 4), "stratum": "s" + str(i % 3), "length": int(rng.integers(50, 900))})
    return pd.DataFrame(rows).to_csv(index=False).encode()


def test_upload_errors_name_the_line_and_field():
    bad = b"item_id,human_label,judge_p\ni1,pass,0.2\ni2,maybe,0.3\ni1,fail,0.4\ni4,fail,1.7\n"
    with pytest.raises(ValidationError) as e:
        calibration.load_upload("cal.csv", bad)
    problems = "\n".join(e.value.problems)
    assert "cal.csv line 3 human_label: 'maybe' is not one of pass, fail" in problems
    assert "cal.csv line 4: item_id 'i1' appears twice" in problems
    assert "cal.csv line 5: judge_p '1.7' is not a probability" in problems
    jl = b'{"item_id": "a", "human_label": "fail", "judge_label": "fail"}\nnot json\n'
    with pytest.raises(ValidationError) as e:
        calibration.load_upload("cal.jsonl", jl)
    assert any("cal.jsonl" in p and "line 2" in p for p in e.value.problems)
    with pytest.raises(ValidationError, match="judge_label and/or judge_p"):
        calibration.load_upload("c.csv", b"item_id,human_label\na,pass\n")


def test_analysis_save_offset_and_manifest(demo_store, tmp_path):
    df = calibration.load_upload("cal.csv", _csv())
    a = calibration.analyze(df, seed=3, max_missed_bad=0.05, max_false_fail=0.05)
    assert a.report["n"] == 200 and 0 < a.report["kappa"] < 1
    assert not set(a.fit_idx) & set(a.report_idx)
    assert a.band["low"] <= a.band["high"] and a.cascade is not None and a.length["n"] == 200
    # the band promises hold on the fit split, where it was fitted
    y = (df["human_label"] == FAIL).to_numpy()
    pf = a.p_used[a.fit_idx]
    assert np.mean(pf[y[a.fit_idx]] <= a.band["low"]) <= 0.05 + 1e-12
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match="Name the judge"):
        calibration.save(demo_store, LOCAL_USER, df, a, judge_model=" ", rubric="r", question_sha=None,
                         source="upload", seed=3, fit_share=0.5, max_missed_bad=0.05, max_false_fail=0.05)
    assert table_snapshot(demo_store) == before
    c1 = calibration.save(demo_store, LOCAL_USER, df, a, judge_model="judge-a", rubric="rubric one",
                          question_sha="q" * 8, source="upload:cal.csv", seed=3, fit_share=0.5,
                          max_missed_bad=0.05, max_false_fail=0.05)
    # a new judge (another rubric) on the same items: a new calibration, and the offset
    df2 = calibration.load_upload("cal2.csv", _csv(seed=0, judge_noise=0.3))
    a2 = calibration.analyze(df2, seed=3)
    assert a.failed_checks == [] and {c.name for c in a2.failed_checks} == {"missed_bad_within_target", "rule1"}
    before = table_snapshot(demo_store)
    with pytest.raises(ValidationError, match=r"fails 2 check\(s\): Share of bad items auto-passed"):
        calibration.save(demo_store, LOCAL_USER, df2, a2, judge_model="judge-a", rubric="rubric two",
                         question_sha=None, source="upload:cal2.csv", seed=3, fit_share=0.5,
                         max_missed_bad=0.02, max_false_fail=0.02)
    assert table_snapshot(demo_store) == before
    c2 = calibration.save(demo_store, LOCAL_USER, df2, a2, judge_model="judge-a", rubric="rubric two",
                          question_sha=None, source="upload:cal2.csv", seed=3, fit_share=0.5,
                          max_missed_bad=0.02, max_false_fail=0.02, acknowledge_failed_checks=True)
    assert (c1, c2) == ("c1", "c2")
    off = calibration.offset(demo_store, LOCAL_USER, c1, c2)
    assert off["shared_items"] == 200 and off["labelled_by_both"] == 200
    agree = np.mean(df["judge_label"].to_numpy() == df2["judge_label"].to_numpy())
    assert off["label_agreement"] == pytest.approx(agree)
    assert off["fail_rate_offset"] == pytest.approx(np.mean(df2["judge_label"] == FAIL) - np.mean(df["judge_label"] == FAIL))
    saved = calibration.saved(demo_store, LOCAL_USER)
    assert saved[0]["rubric_sha"] == calibration.rubric_sha("rubric one") and saved[0]["split_seed"] == 3
    assert saved[0]["report"]["judge_report"]["kappa"] == pytest.approx(a.report["kappa"], abs=1e-6)
    m = freeze(demo_store, "cal.v1", actor="eng", versions_dir=tmp_path / "v").manifest
    entries = m["judge_calibrations"]
    assert [e["calibration_id"] for e in entries] == ["c1", "c2"]  # one per judge identity (two rubrics)
    assert entries[0]["band"]["low"] == pytest.approx(a.band["low"]) and entries[0]["split_seed"] == 3
    assert entries[0]["question_sha"] == "q" * 8 and entries[0]["isotonic"]["x"]
    assert (entries[0]["scale"], entries[0]["pass_cut"]) == ("binary", 2)
    assert list(entries[0]["checks_failed"]) == [] and entries[0]["judge_p"]["flipped"] is False
    assert list(entries[1]["checks_failed"]) == [c.message for c in a2.failed_checks]  # saved anyway, and says so
    on_disk = json.loads((tmp_path / "v" / "cal.v1" / "manifest.json").read_text())
    assert on_disk["judge_calibrations"][1]["judge_model"] == "judge-a"


def test_claude_judge_on_store_grades(demo_store, llm_server, tmp_path):
    from tests.annotator.test_calibration_graded import graded_pool

    graded_pool(demo_store, tmp_path, sick_leave=3)
    df = calibration.store_set(demo_store, LOCAL_USER)
    assert sorted(df["human_label"]) == [FAIL, PASS, PASS, PASS]
    answers = {
        "VPN-ERR-0417": {"justification": "It explains the error.", "grade": 3,
                         "supporting_quote": "VPN-ERR-0417 means the device certificate", "p_fail": 0.05},
        "pension": {"justification": "Off topic.", "grade": 0, "supporting_quote": None, "p_fail": 0.97},
    }

    def respond(body):
        text = body["messages"][0]["content"]
        if "Woke up" in text:
            return 200, message("I cannot help.", stop_reason="refusal")
        passage = text.split("<passage>")[1]
        key = "VPN-ERR-0417" if "VPN-ERR-0417 means" in passage else "pension"
        return 200, message(json.dumps(answers[key]))

    llm_server.default = respond
    r = calibration.run_claude_judge(demo_store, LOCAL_USER, df)
    assert r.skipped_held_out == 1 and r.refusals == 1
    assert sorted(v for v in r.labels.values() if v) == [FAIL, PASS]
    assert sorted(g for g in r.grades.values() if g is not None) == [0, 3]
    assert sorted(r.p_fail.values()) == [0.05, 0.97]
    sent = [q["body"]["messages"][0]["content"] for q in llm_server.requests]
    assert len(sent) == 3 and not any("new mum" in t for t in sent)  # q009 is held out: never sent
    # the system block is the pool judge's rubric, cached, long enough to be cached (§11.5)
    from annotator.judge import llm_cost, relevance_judge

    system = llm_server.requests[0]["body"]["system"]
    assert system == [{"type": "text", "text": relevance_judge.DEFAULT_RUBRIC, "cache_control": {"type": "ephemeral"}}]
    assert llm_cost.approx_tokens(len(system[0]["text"])) >= 1024
    assert r.rubric == relevance_judge.DEFAULT_RUBRIC and r.usage.calls == 3
    assert r.usage.cache_write_tokens == 3 * 900 and any("Cost: $" in line for line in r.usage.lines())
    # the run's outputs become the set's judge outputs: label at the cut and p of FAIL
    judged = calibration.with_run(df, {"labels": r.labels, "grades": r.grades, "p_fail": r.p_fail})
    assert sorted(judged["judge_p"].dropna()) == [0.05, 0.97]
    # a pass whose quote is not verbatim in the passage becomes insufficient
    answers["VPN-ERR-0417"]["supporting_quote"] = "a quote that is not there"
    llm_server.requests.clear()
    r2 = calibration.run_claude_judge(demo_store, LOCAL_USER, df)
    assert r2.quote_backstops == 1 and "insufficient" in r2.labels.values()
    calls = dict(demo_store.read("SELECT outcome, count(*) FROM llm_calls WHERE purpose = 'judge_calibration' "
                                 "GROUP BY 1"))
    assert calls == {"ok": 4, "refusal": 2}


def test_nugget_support_labels_as_a_calibration_set(demo_store, tmp_path):
    from tests.annotator.test_calibration_graded import nugget_support_labels

    nugget_support_labels(demo_store, tmp_path)
    df = calibration.store_set(demo_store, LOCAL_USER, "nuggets")
    assert list(df["item_id"]) == ["rag|q001|n1", "rag|q001|n2", "rag|q001|n3"]  # partial kept
    assert list(df["human_grade"]) == [2, 1, 0] and calibration.scale_of(df) == "nugget"
    assert list(df["human_label"]) == [PASS, FAIL, FAIL]  # the default cut: support only passes
    assert list(calibration.with_cut(df, 1)["human_label"]) == [PASS, PASS, FAIL]
    assert df["question"].iloc[0].endswith("Certificate expired") and df["text"].iloc[0] == "Your certificate expired."


def test_an_empty_split_is_a_clear_error():
    df = calibration.load_upload("c.csv", b"item_id,human_label,judge_p\na,pass,0.1\nb,fail,0.9\n")
    with pytest.raises(ValidationError, match="one split is empty"):
        calibration.analyze(df, fit_share=0.8)


def test_calibrating_the_judge_is_its_own_permission(demo_store):
    """'Calibration' names two things: a round of double annotation (kind 'calibration') and
    measuring the LLM judge against people. Judge calibration asks for its own permission."""
    from annotator.people.identity import User
    from annotator.people.roles import ROLE_PERMISSIONS, Permission, PermissionDenied, Role

    assert Permission.CALIBRATE_JUDGE in ROLE_PERMISSIONS[Role.LEAD]
    assert Permission.CALIBRATE_JUDGE is not Permission.RUN_ROUNDS
    engineer = User("eng", "Eng", frozenset({Role.ENGINEER}))
    with pytest.raises(PermissionDenied, match="may not calibrate the LLM judge"):
        calibration.saved(demo_store, engineer)
    assert calibration.saved(demo_store, User("lea", "Lea", frozenset({Role.LEAD}))) == []


def test_a_missing_column_is_one_sentence_and_a_wrong_format_says_what_it_read():
    """Issue 37, item 10 (the newcomer): a 150-line CSV without human_label gave 150 copies of
    "human_label is missing", and a TREC line uploaded as a calibration CSV said "no items"."""
    rows = "item_id,judge_label\n" + "".join(f"i{i},pass\n" for i in range(150))
    with pytest.raises(ValidationError) as e:
        calibration.load_upload("calib_missing_human.csv", rows.encode())
    assert str(e.value).startswith("calib_missing_human.csv: the header (line 1) lacks human_label")
    assert not e.value.problems  # one sentence, not 150 lines
    with pytest.raises(ValidationError) as e:
        calibration.load_upload("calib_wrongformat.csv", b"q001 Q0 pension 1 3.0 sys\nq002 Q0 remote-work 1 2.0 sys\n")
    assert "lacks item_id, human_label (it has: 'q001 Q0 pension 1 3.0 sys')" in str(e.value)
    assert "no items" not in str(e.value)
    with pytest.raises(ValidationError, match=r"lacks human_label \(it has: 'item_id', 'judge_p'\)"):
        calibration.load_upload("c.jsonl", b'{"item_id": "a", "judge_p": 0.2}\n{"item_id": "b", "judge_p": 0.9}\n')
