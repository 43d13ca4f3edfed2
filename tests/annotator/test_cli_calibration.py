"""Issue 38 item 6: judge calibration from the command line, as a pipeline re-validates its judge
on every change of model, prompt or rubric: ``golden calibration upload|analyse|save|list|
compare``, exit 0 ok / 1 a check failed / 2 could not run, ``--json`` for scripts; a judge run
on the set never sends a held-out question.

References: κ and FAIL recall from scikit-learn on the files; the comparison's offset from the
two files' labels on the items both hold (scikit-learn's κ); the one-cut set of the demo before
issue 38 is the failing case."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, recall_score

from annotator import cli
from golden_store.db.store import Store
from tests.conftest import table_snapshot

DEMO_SET = Path(cli.__file__).parents[1] / "demo" / "data" / "judge_calibration.csv"
ONE_CUT = Path(__file__).parents[1] / "golden_store" / "one_cut_calibration.csv"


def golden(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _snapshot(db: str) -> dict:
    s = Store.open(db)
    try:
        return table_snapshot(s)
    finally:
        s.close()


def _second_judge(tmp_path: Path) -> Path:
    """The demo set judged again by a changed judge: the labels of ten items flipped and
    every p 0.05 higher (capped at 1)."""
    df = pd.read_csv(DEMO_SET, dtype=str)
    flip = df.index[:10]
    df.loc[flip, "judge_label"] = df.loc[flip, "judge_label"].map({"pass": "fail", "fail": "pass"})
    df["judge_p"] = [f"{min(1.0, float(p) + 0.05):.3f}" for p in df["judge_p"]]
    out = tmp_path / "judge2.csv"
    df.to_csv(out, index=False)
    return out


def test_upload_analyse_save_list_compare(store, golden_db, tmp_path, capsys):
    store.close()
    db = ("--db", golden_db)
    code, out, _ = golden(capsys, *db, "calibration", "upload", str(DEMO_SET))
    assert code == 0 and "200 item(s), binary" in out and "Next: golden calibration analyse" in out

    ref = pd.read_csv(DEMO_SET)
    y, j = (ref["human_label"] == "fail").astype(int), (ref["judge_label"] == "fail").astype(int)
    code, out, _ = golden(capsys, *db, "calibration", "analyse", str(DEMO_SET), "--json")
    rep = json.loads(out)
    assert code == 0 and rep["passed"] is True and rep["checks_failed"] == []
    assert rep["judge_report"]["kappa"] == pytest.approx(cohen_kappa_score(y, j), abs=1e-6)
    assert rep["judge_report"]["fail_recall"] == pytest.approx(recall_score(y, j), abs=1e-6)

    code, out, _ = golden(capsys, *db, "calibration", "analyse", str(ONE_CUT))
    assert code == 1 and "FAIL band_two_thresholds" in out and "check(s) failed" in out

    code, out, _ = golden(capsys, *db, "calibration", "save", str(DEMO_SET), "--judge-model", "judge-a")
    assert code == 0 and "Saved calibration c1 (judge judge-a)." in out and "golden pool judge --calibration c1" in out

    before = _snapshot(golden_db)
    code, _, err = golden(capsys, *db, "calibration", "save", str(ONE_CUT), "--judge-model", "judge-b")
    assert code == 1 and "not saved: this calibration fails" in err and "--acknowledge-failed-checks" in err
    assert _snapshot(golden_db) == before  # refused: nothing stored
    code, out, _ = golden(capsys, *db, "calibration", "save", str(ONE_CUT), "--judge-model", "judge-b",
                          "--acknowledge-failed-checks")
    assert code == 1 and "Saved calibration c2" in out and "MARKED AS FAILING" in out

    second = _second_judge(tmp_path)
    code, out, _ = golden(capsys, *db, "calibration", "save", str(second), "--judge-model", "judge-a2", "--json")
    saved = json.loads(out)
    assert saved["calibration_id"] == "c3" and code == (0 if saved["passed"] else 1)

    code, out, _ = golden(capsys, *db, "calibration", "list", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["calibration_id"] for r in rows] == ["c1", "c2", "c3"]
    assert [bool(r["checks_failed"]) for r in rows[:2]] == [False, True] and rows[0]["n"] == 200

    code, out, _ = golden(capsys, *db, "calibration", "compare", "c1", "c3", "--json")
    cmp_ = json.loads(out)
    two = pd.read_csv(second)
    assert code == 0 and cmp_["judge_changed"] == ["judge_model"]
    off = cmp_["offset"]
    assert off["shared_items"] == off["labelled_by_both"] == 200
    assert off["kappa_old_vs_new"] == pytest.approx(cohen_kappa_score(ref["judge_label"], two["judge_label"]))
    assert off["label_agreement"] == pytest.approx(190 / 200)
    assert off["mean_p_offset"] == pytest.approx(float(np.mean(two["judge_p"] - ref["judge_p"])), abs=1e-9)
    k2 = cohen_kappa_score(y, (two["judge_label"] == "fail").astype(int))
    assert cmp_["delta"]["kappa"] == pytest.approx(k2 - cohen_kappa_score(y, j), abs=1e-5)
    code, out, _ = golden(capsys, *db, "calibration", "compare", "c1", "c3")
    assert code == 0 and "Changed: judge_model; κ -" in out and "On the 200 item(s) both archived" in out


def test_what_cannot_run_exits_2_in_one_sentence_and_stores_nothing(store, golden_db, tmp_path, capsys):
    store.close()
    db = ("--db", golden_db)
    before = _snapshot(golden_db)
    no_human = tmp_path / "no_human.csv"
    with no_human.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "judge_label", "judge_p"])
        w.writerows([[f"i{k}", "pass", "0.1"] for k in range(150)])
    for args in (("upload", str(no_human)), ("analyse", str(no_human)),
                 ("save", str(no_human), "--judge-model", "m"), ("analyse", str(tmp_path / "missing.csv")),
                 ("save", str(DEMO_SET)), ("compare", "c1", "c9")):
        code, out, err = golden(capsys, *db, "calibration", *args)
        assert code == 2, (args, out, err)
        assert err.count("\n") == 1 and err.startswith("golden: "), err  # one sentence, not one per line
    code, _, err = golden(capsys, *db, "calibration", "analyse", str(no_human))
    assert "lacks human_label" in err
    code, _, err = golden(capsys, *db, "calibration", "save", str(DEMO_SET))
    assert "--judge-model is needed" in err
    code, _, err = golden(capsys, *db, "calibration", "compare", "c1", "c9")
    assert "No saved calibration 'c1'" in err
    assert _snapshot(golden_db) == before


def _judgeable_set(tmp_path: Path, held_out_text: str) -> Path:
    """Demo questions beside their own evidence (people: pass) and beside another question's
    (people: fail), plus one row whose question is a held-out question."""
    demo_dir = DEMO_SET.parent
    queries = {q["id"]: q for q in map(json.loads, (demo_dir / "queries.jsonl").open())}
    ev = [e for e in map(json.loads, (demo_dir / "evidence.jsonl").open()) if not queries[e["query_id"]]["held_out"]]
    rows = []
    for k, e in enumerate(ev):
        other = ev[(k + 7) % len(ev)]
        rows.append([f"p{k}", "pass", queries[e["query_id"]]["text"], e["quote"]])
        rows.append([f"f{k}", "fail", queries[e["query_id"]]["text"], other["quote"]])
    rows.append(["held", "pass", held_out_text, "Text about maternity pay."])
    out = tmp_path / "judgeable.csv"
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "human_label", "question", "text"])
        w.writerows(rows)
    return out


def test_a_judge_run_on_the_set_never_sends_a_held_out_question(demo_store, golden_db, tmp_path, capsys,
                                                                llm_server):
    from annotator.judge.llm_standin import standin_answer

    held = next(q for q in map(json.loads, (DEMO_SET.parent / "queries.jsonl").open()) if q["held_out"])
    demo_store.close()
    llm_server.default = standin_answer
    path = _judgeable_set(tmp_path, held["text"])
    db = ("--db", golden_db)

    code, out, err = golden(capsys, *db, "calibration", "analyse", str(path), "--run-judge")
    assert code == 2 and "pass --yes" in err and llm_server.requests == []  # the estimate, then no spend

    code, out, err = golden(capsys, *db, "calibration", "save", str(path), "--run-judge", "--yes", "--json",
                            "--acknowledge-failed-checks")
    rep = json.loads(out)
    assert code in (0, 1) and code == (0 if rep["passed"] else 1)
    sent = [r["body"]["messages"][0]["content"] for r in llm_server.requests if r["path"] == "/v1/messages"]
    n_rows = sum(1 for _ in path.open()) - 1
    assert len(sent) == n_rows - 1 and rep["judge_run"]["skipped_held_out"] == 1
    assert not any(held["text"] in body for body in sent)
    assert "1 held-out item(s) never sent" in err
    assert rep["judge_report"]["n"] == n_rows - 1  # the held-out row has no judge label
    code, out, _ = golden(capsys, *db, "calibration", "list", "--json")
    (row,) = json.loads(out)
    assert row["judge_model"] == "claude-sonnet-4-5"  # the studio's judge, pinned with the calibration


def test_through_a_studio_the_commands_need_the_calibration_permission():
    from annotator.cli import build_parser, channel
    from annotator.people.roles import Permission

    for argv in (["calibration", "analyse", "x.csv"], ["calibration", "list"], ["calibration", "compare", "a", "b"]):
        args = build_parser().parse_args(argv)
        assert channel.permission_for(channel.command_name(args)) == Permission.CALIBRATE_JUDGE
