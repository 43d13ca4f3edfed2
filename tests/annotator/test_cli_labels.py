"""Issue 27 item 3 through the CLI: `golden score --labels human|human+judge` says which labels
the numbers are on (and, on judge labels, how many and from which model, rubric and
calibration) in its text and JSON output; `--record` keeps the labels; `golden compare` warns
when two evaluations were scored on different label sets."""

from __future__ import annotations

import json

import pytest

from annotator import cli
from tests.golden_store.test_judge_labels_frozen import RUN, demo_frozen_a_b


@pytest.fixture
def frozen_pair(request, golden_db, tmp_path):
    """The demo frozen as A (people's labels) and B (the same, plus two judges' labels)."""
    demo_frozen_a_b(request).close()  # the CLI opens it
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {score} sys\n"
                           for i, (q, d, score) in enumerate(RUN.itertuples(index=False))))
    return golden_db, str(run)


def score(capsys, db: str, *args: str) -> tuple[int, str, str]:
    code = cli.main(["--db", db, "score", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_score_says_which_labels_and_judge_labels_change_the_numbers(frozen_pair, capsys):
    db, run = frozen_pair
    code_a, out_a, err_a = score(capsys, db, "--version", "A", "--run", run, "-m", "RR", "-m", "P@5")
    code_b, out_b, err_b = score(capsys, db, "--version", "B", "--run", run, "-m", "RR", "-m", "P@5",
                                 "--labels", "human")
    assert code_a == code_b == 0
    assert out_a == out_b  # people's labels: the judge labels frozen in B change nothing
    for err in (err_a, err_b):
        assert "# labels: human (people's labels only" in err and "judge labels from" not in err
    code, out_j, err_j = score(capsys, db, "--version", "B", "--run", run, "-m", "RR", "-m", "P@5",
                               "--labels", "human+judge")
    assert code == 0 and out_j != out_b
    assert ("# labels: human+judge (a person's grade wins where there is one): scored on 5 judge labels from model "
            "judge-a, judge-b rubric sha aaaaaaaaaaaa, bbbbbbbbbbbb calibration cal-1, cal-2") in err_j
    code, out, _ = score(capsys, db, "--version", "B", "--run", run, "-m", "RR", "--labels", "human+judge", "--json")
    d = json.loads(out)
    assert d["labels"] == "human+judge"
    assert d["judge_labels"] == {"n_passages": 5, "models": ["judge-a", "judge-b"],
                                 "rubric_shas": ["a" * 64, "b" * 64], "calibration_ids": ["cal-1", "cal-2"],
                                 "jobs": ["j1", "j2"]}
    assert d["definitions"]["_labels"].startswith("human+judge")
    code, out, _ = score(capsys, db, "--version", "A", "--run", run, "-m", "RR", "--json")
    assert json.loads(out)["labels"] == "human" and "judge_labels" not in json.loads(out)


def test_judge_labels_need_a_version_and_a_known_label_set(frozen_pair, capsys, tmp_path):
    db, run = frozen_pair
    (tmp_path / "q.txt").write_text("q001 0 pension 1\n")
    assert cli.main(["--db", db, "score", "--qrels", str(tmp_path / "q.txt"), "--run", run, "-m", "RR",
                     "--labels", "human+judge"]) != 0
    assert "--labels human+judge needs --version" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--db", db, "score", "--version", "B", "--run", run, "-m", "RR", "--labels", "judge"])
    assert "invalid choice: 'judge'" in capsys.readouterr().err


def test_recorded_labels_and_compare_warns_on_different_label_sets(frozen_pair, capsys):
    db, run = frozen_pair
    for eid, labels in (("h", "human"), ("h2", "human"), ("j", "human+judge")):
        code, _, err = score(capsys, db, "--version", "B", "--run", run, "-m", "RR", "--labels", labels,
                             "--record", eid, "--git-sha", "0" * 40)
        assert code == 0 and f"labels {labels}" in err
    assert cli.main(["--db", db, "compare", "h", "j"]) in (0, 1)
    out = capsys.readouterr()
    assert "labels: h human; j human+judge" in out.out
    assert "warning: the evaluations were scored on different label sets (h: human, j: human+judge)" in out.err
    assert cli.main(["--db", db, "compare", "h", "j", "--json"]) in (0, 1)
    c = json.loads(capsys.readouterr().out)
    assert c["labels"] == {"h": "human", "j": "human+judge"} and c["labels_differ"] is True
    assert any("different label sets" in n for n in c["notes"])
    assert cli.main(["--db", db, "compare", "h", "h2", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["labels_differ"] is False and not any("label sets" in n for n in c["notes"])
    assert cli.main(["--db", db, "results", "trials", "j"]) == 0
    assert "labels human+judge" in capsys.readouterr().err


def test_freeze_says_how_many_judge_labels_it_kept_apart(frozen_pair, capsys):
    db, _ = frozen_pair
    assert cli.main(["--db", db, "freeze", "C"]) == 0
    out = capsys.readouterr().out
    assert ("Judge labels: 6 (5 on passages no person graded, 2 in the standing sample) from model judge-a, judge-b, "
            "calibration ") in out and "kept apart from people's labels" in out
    assert "Note:" not in out
