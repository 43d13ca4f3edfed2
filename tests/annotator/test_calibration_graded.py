"""Graded calibration (METHODOLOGY §11.4) and the calibration's Claude judge as the pool's
judge: a graded (0-3) upload, a file mixing scales refused, the per-grade report and the
binary figures at the lead's cut, saving the scale, cut and rubric text, and a Batch API
run against the local Messages-API server (results out of order, one errored, held-out
items never in any request)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotator.judge import calibration, llm_cost, relevance_judge
from annotator.people.identity import LOCAL_USER
from golden_store.core.errors import ValidationError
from golden_store.live import calibrations, judging
from golden_store.scoring.calibration import FAIL, INSUFFICIENT, PASS
from tests.llm_server import message


def _graded_csv(n: int = 200, seed: int = 0) -> tuple[bytes, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, n)
    judge = np.clip(human + rng.choice([0, 0, 0, 1, -1], n), 0, 3)
    p_fail = np.clip(np.where(human >= 2, 0.25, 0.75) + rng.normal(0, 0.15, n), 0, 1).round(4)
    judge_label = judge.astype(str).astype(object)
    judge_label[:5] = "insufficient"  # the escape hatch: no grade
    df = pd.DataFrame({"item_id": [f"g{i}" for i in range(n)], "human_label": human, "judge_label": judge_label,
                       "judge_p": p_fail})
    return df.to_csv(index=False).encode(), df


def test_a_graded_upload_and_a_file_mixing_scales():
    data, raw = _graded_csv()
    df = calibration.load_upload("graded.csv", data)
    assert calibration.scale_of(df) == "graded" and list(df["human_grade"][:3]) == list(raw["human_label"][:3])
    assert (df["judge_grade"][:5] == INSUFFICIENT).all()
    # the binary labels at the default cut (2)
    assert list(df["human_label"]) == [PASS if g >= 2 else FAIL for g in raw["human_label"]]
    # JSONL grades as numbers
    jl = b'{"item_id": "a", "human_label": 3, "judge_label": 2}\n{"item_id": "b", "human_label": 0, "judge_p": 0.9}\n'
    j = calibration.load_upload("g.jsonl", jl)
    assert list(j["human_grade"]) == [3, 0] and list(j["judge_label"]) == [PASS, None]
    with pytest.raises(ValidationError, match=r"mixes pass/fail \(1 line\(s\), first line 3\) and grades 0-3 "
                                              r"\(2 line\(s\), first line 2\).*binary \(pass/fail\) OR graded"):
        calibration.load_upload("mixed.csv", b"item_id,human_label,judge_p\na,2,0.1\nb,pass,0.2\nc,0,0.9\n")
    with pytest.raises(ValidationError) as e:
        calibration.load_upload("g.csv", b"item_id,human_label,judge_label\na,2,pass\nb,1,5\n")
    assert "g.csv line 2 judge_label: 'pass' is not a grade 0-3 or insufficient (the file is graded)" in e.value.problems
    assert any("line 3 judge_label: '5'" in p for p in e.value.problems)


def test_graded_analysis_per_grade_and_at_the_cut():
    data, raw = _graded_csv()
    df = calibration.load_upload("graded.csv", data)
    graded = raw.iloc[5:]  # the five insufficient items have no judge grade
    h, j = graded["human_label"].astype(int), graded["judge_label"].astype(int)
    for cut in (1, 2, 3):
        a = calibration.analyze(df, cut=cut)
        assert a.scale == "graded" and a.cut == cut and a.judge_insufficient == 5
        g = a.graded
        assert g["confusion"] == confusion_matrix(h, j, labels=[0, 1, 2, 3]).tolist()
        assert g["kappa"] == pytest.approx(cohen_kappa_score(h, j))
        assert g["kappa_linear"] == pytest.approx(cohen_kappa_score(h, j, weights="linear"))
        assert g["kappa_quadratic"] == pytest.approx(cohen_kappa_score(h, j, weights="quadratic"))
        # the gate figure: binary κ at the cut, on every item with a judge label (insufficient = not-FAIL)
        hb = ["pass" if x >= cut else "fail" for x in raw["human_label"]]
        jb = ["insufficient" if v == "insufficient" else "pass" if int(v) >= cut else "fail"
              for v in raw["judge_label"]]
        assert a.report["kappa"] == pytest.approx(cohen_kappa_score(hb, jb))
        s = a.summary()
        assert s["judge_report"]["kappa"] == pytest.approx(a.report["kappa"], abs=1e-6)
        assert s["graded"]["kappa_quadratic"] == pytest.approx(g["kappa_quadratic"], abs=1e-6)
        assert s["scale"] == "graded" and s["pass_cut"] == cut and s["graded"]["judge_insufficient"] == 5
        assert a.band is not None  # p = judge_p (probability of FAIL at the cut)
    # the split does not move with the cut (stratified by grade)
    assert list(calibration.analyze(df, cut=1).fit_idx) == list(calibration.analyze(df, cut=3).fit_idx)
    with pytest.raises(ValidationError, match="cut on the graded scale"):
        calibration.analyze(df, cut=0)


def test_saving_keeps_scale_cut_and_rubric_text(demo_store):
    data, _ = _graded_csv()
    df = calibration.load_upload("graded.csv", data)
    a = calibration.analyze(df, cut=3, seed=2)
    cid = calibration.save(demo_store, LOCAL_USER, df, a, judge_model="claude-sonnet-4-5",
                           rubric=relevance_judge.DEFAULT_RUBRIC, question_sha=None, source="upload:graded.csv",
                           seed=2, fit_share=0.5, max_missed_bad=0.02, max_false_fail=0.02)
    row = next(r for r in calibrations.list_all(demo_store) if r["calibration_id"] == cid)
    assert (row["scale"], row["pass_cut"], row["rubric_text"]) == ("graded", 3, relevance_judge.DEFAULT_RUBRIC)
    assert row["rubric_sha"] == calibration.rubric_sha(relevance_judge.DEFAULT_RUBRIC)
    assert row["report"]["judge_report"]["kappa"] == pytest.approx(a.report["kappa"], abs=1e-6)
    assert row["report"]["graded"]["confusion"] == a.graded["confusion"]
    items = dict(demo_store.read("SELECT item_id, human_label || '/' || coalesce(judge_label, '-') "
                                 "FROM calibration_items WHERE calibration_id = ?", [cid]))
    assert items["g0"].endswith("/insufficient") and items["g10"].split("/")[0] in {"0", "1", "2", "3"}
    # a binary calibration is saved as binary at cut 2; a bare sha keeps no text
    b = calibration.load_upload("b.csv", b"item_id,human_label,judge_label\na,pass,pass\nb,fail,fail\nc,fail,pass\n"
                                b"d,pass,pass\n")
    cid2 = calibration.save(demo_store, LOCAL_USER, b, calibration.analyze(b), judge_model="j", rubric="f" * 64,
                            question_sha=None, source="upload", seed=0, fit_share=0.5, max_missed_bad=0.02,
                            max_false_fail=0.02)
    row2 = next(r for r in calibrations.list_all(demo_store) if r["calibration_id"] == cid2)
    assert (row2["scale"], row2["pass_cut"], row2["rubric_text"], row2["rubric_sha"]) == ("binary", 2, None, "f" * 64)


def graded_pool(s, tmp_path, sick_leave: int = 2) -> None:
    """The demo's pool of four passages from one run, each graded by "expert": three pass and
    the pension passage fails; the sick-leave grade is the caller's (2 here: a graded-scale
    case; 3 in the binary workflow's test)."""
    from annotator.evaluation import runs_import

    run = tmp_path / "r.txt"
    run.write_text("q001 Q0 vpn-troubleshooting 1 3 x\nq001 Q0 pension 2 2 x\nq002 Q0 sick-leave 1 1 x\n"
                   "q009 Q0 parental-leave 1 1 x\n")
    runs_import.import_run(s, LOCAL_USER, run, "sys")
    runs_import.build_pool(s, LOCAL_USER, 5)
    for q, d, g in (("q001", "vpn-troubleshooting", 3), ("q001", "pension", 0), ("q002", "sick-leave", sick_leave),
                    ("q009", "parental-leave", 3)):
        st, en = s.read_one("SELECT start, \"end\" FROM pool_items WHERE query_id = ? AND doc_id = ?", [q, d])
        judging.record(s, "expert", q, d, st, en, op="grade", grade=g)


def _answer(passage: str) -> dict:
    if "VPN-ERR-0417 means" in passage:
        return {"justification": "States the error.", "grade": 3,
                "supporting_quote": "VPN-ERR-0417 means the device certificate", "p_fail": 0.04}
    return {"justification": "Off topic.", "grade": 1, "supporting_quote": None, "p_fail": 0.9}


def test_batch_run_out_of_order_one_errored_held_out_never_sent(demo_store, llm_server, tmp_path):
    from tests.annotator.test_leaks import assert_nothing_held_out_sent

    graded_pool(demo_store, tmp_path)
    df = calibration.store_set(demo_store, LOCAL_USER, "graded")
    assert calibration.scale_of(df) == "graded" and sorted(df["human_grade"]) == [0, 2, 3, 3]
    plan = calibration.plan_run(demo_store, LOCAL_USER, df, batch=True)
    est = plan.estimate
    assert est.n_items == 3 and est.prefix_tokens >= 1024 and est.caches  # q009 is held out: not counted
    assert [i.split("|")[0] for i, _ in plan.skipped] == ["q009"] and "held out" in plan.skipped[0][1]
    assert any("Batch API" in line for line in plan.lines()) and plan.confirm_label.startswith("Confirm: spend")
    assert llm_server.requests == []  # an estimate sends nothing

    sick = df.loc[df["item_id"].str.contains("sick-leave"), "text"].iloc[0]

    def result(cid, params):
        text = params["messages"][0]["content"]
        if relevance_judge.content(df.loc[df["item_id"].str.contains("sick-leave"), "question"].iloc[0], sick) == text:
            return {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": "boom"}}}
        return {"type": "succeeded", "message": message(json.dumps(_answer(text.split("<passage>")[1])))}

    llm_server.batch_result = result  # the server streams results in reverse order
    seen = []
    r = calibration.run_claude_judge(demo_store, LOCAL_USER, df, batch=True, cut=2,
                                     progress=lambda d, t: seen.append((d, t)))
    assert r.batch and r.skipped_held_out == 1 and len(r.errors) == 1 and "batch request errored" in r.errors[0]
    by_doc = {item.split("|")[1]: (r.labels.get(item), r.grades.get(item), r.p_fail.get(item))
              for item in df["item_id"]}
    assert by_doc == {"vpn-troubleshooting": (PASS, 3, 0.04), "pension": (FAIL, 1, 0.9),
                      "sick-leave": (None, None, None), "parental-leave": (None, None, None)}
    assert seen[-1] == (3, 3)
    creates = [q for q in llm_server.requests if q["path"].startswith("/v1/messages/batches") and q["method"] == "POST"]
    assert len(creates) == 1 and len(creates[0]["body"]["requests"]) == 3
    system = creates[0]["body"]["requests"][0]["params"]["system"]
    assert system == [{"type": "text", "text": relevance_judge.DEFAULT_RUBRIC, "cache_control": {"type": "ephemeral"}}]
    assert llm_cost.approx_tokens(len(system[0]["text"])) >= 1024
    assert_nothing_held_out_sent(llm_server, demo_store)
    assert r.usage.calls == 3 and r.usage.outcomes == {"ok": 2, "error:batch_errored": 1}
    calls = dict(demo_store.read("SELECT outcome, count(*) FROM llm_calls WHERE purpose = 'judge_calibration' "
                                 "GROUP BY 1"))
    assert calls == {"ok": 2, "error:batch_errored": 1}
    # the run's grades become the set's judge grades; the analysis is graded at the cut
    judged = calibration.with_run(df, {"labels": r.labels, "grades": r.grades, "p_fail": r.p_fail})
    grades = dict(zip(judged["item_id"].str.split("|").str[1], judged["judge_grade"]))
    assert grades == {"vpn-troubleshooting": 3, "pension": 1, "sick-leave": None, "parental-leave": None}
    a = calibration.analyze(pd.concat([judged] * 3, ignore_index=True).assign(
        item_id=lambda d: d["item_id"] + "#" + d.index.astype(str)), cut=2)
    assert a.graded["n"] == 6 and a.graded["confusion"][0][1] == 3 and a.graded["confusion"][3][3] == 3


def nugget_support_labels(s, tmp_path) -> None:
    """Question q001 with three approved vital nuggets, system "rag"'s answer to it, and that
    answer's support label per nugget: n1 support, n2 partial, n3 none."""
    from annotator.evidence import nuggets

    for text in ("Certificate expired", "Renew in Company Portal", "Restart the client"):
        nuggets.edit_one(s, LOCAL_USER, "q001", None, text=text, importance="vital")
    nuggets.approve(s, LOCAL_USER, "q001")
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"query_id": "q001", "answer": "Your certificate expired."}) + "\n")
    nuggets.import_answers(s, LOCAL_USER, str(f), "rag")
    for nid, label in (("n1", "support"), ("n2", "partial"), ("n3", "none")):
        nuggets.assign(s, LOCAL_USER, "rag", "q001", nid, label)


def test_nugget_run_grades_on_the_nugget_scale(demo_store, llm_server, tmp_path):
    nugget_support_labels(demo_store, tmp_path)
    df = calibration.store_set(demo_store, LOCAL_USER, "nuggets")
    answers = iter([{"justification": "j", "grade": 2, "supporting_quote": "Your certificate expired.", "p_fail": 0.1},
                    {"justification": "j", "grade": 3, "supporting_quote": "Your certificate expired.", "p_fail": 0.2},
                    {"justification": "j", "grade": 0, "supporting_quote": None, "p_fail": 0.95}])
    llm_server.default = lambda body: (200, message(json.dumps(next(answers))))
    r = calibration.run_claude_judge(demo_store, LOCAL_USER, df, calibration.NUGGET_RUBRIC)
    assert r.out_of_scale == 1  # a 3 is not on the nugget scale: no grade
    assert llm_server.requests[0]["body"]["system"][0]["text"] == calibration.NUGGET_RUBRIC
    judged = calibration.with_run(df, {"labels": r.labels, "grades": r.grades, "p_fail": r.p_fail})
    assert list(judged["judge_grade"]) == [2, INSUFFICIENT, 0]
    a = calibration.analyze(pd.concat([judged] * 2, ignore_index=True).assign(
        item_id=lambda d: d["item_id"] + "#" + d.index.astype(str)), cut=2)
    assert a.scale == "nugget" and a.graded["grades"] == [0, 1, 2] and a.judge_insufficient == 2
    assert a.graded["confusion"] == [[2, 0, 0], [0, 0, 0], [0, 0, 2]]
