"""`golden --server URL` (issue 28): the same commands run on a studio's API over real HTTP,
printing what the local commands print; the token from GOLDEN_TOKEN or --token-file; a
command with no remote form says so in one sentence."""

from __future__ import annotations

import json

import pytest

from annotator import cli
from tests.http_api.conftest import api, run_file, tokens, transcripts_file  # noqa: F401  (fixtures)


@pytest.fixture
def remote(api, tokens, monkeypatch):  # noqa: F811
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["engineer"])
    return api.removesuffix("/api/v1")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_imports_freeze_verify_and_lists_run_remotely_as_locally(demo_store, remote, tokens, tmp_path,  # noqa: F811
                                                                  capsys):
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 6)], name="nightly.trec")
    code, out, _ = _run(capsys, "--server", remote, "runs", "import", str(run), "--system", "nightly")
    assert code == 0 and out == "Imported 15 results as run nightly (trec).\n"
    assert demo_store.read("SELECT count(*) FROM run_results WHERE system = 'nightly'") == [(15,)]
    code, out, _ = _run(capsys, "--server", remote, "transcripts", "import", str(transcripts_file(tmp_path, "ev1")))
    assert code == 0 and out == "Imported 1 transcript(s).\n"
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"query_id": "q001", "answer": "Twenty-five days."}\n')
    code, out, _ = _run(capsys, "--server", remote, "answers", "import", str(answers), "--system", "nightly")
    assert code == 0 and out == "Imported 1 answer(s) of 'nightly'.\n"
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query_id": "new-1", "text": "Where is the VPN guide?", "stratum": "lexical"}\n')
    code, out, _ = _run(capsys, "--server", remote, "--json", "queries", "import", str(queries))
    assert code == 0 and json.loads(out) == {"added": 1, "updated": 0, "unchanged": 0}

    code, out, _ = _run(capsys, "--server", remote, "freeze", "golden.v1", "--note", "ci")
    assert code == 0 and out.startswith("Frozen golden.v1 on ") and "queries" in out
    code, out, _ = _run(capsys, "--server", remote, "verify", "golden.v1")
    assert code == 0 and out.startswith("golden.v1: OK (all file hashes match")
    for argv in (["versions"], ["--json", "versions"], ["pool", "status"], ["--json", "pool", "status"],
                 ["evaluations"], ["--json", "evaluations"]):
        local = _run(capsys, *argv)
        assert _run(capsys, "--server", remote, *argv)[:2] == local[:2], argv
    lead = tmp_path / "lead-token"
    lead.write_text(tokens["lead"])
    for argv in (["agreement"], ["--json", "agreement"]):  # a lead's figures (RUN_ROUNDS)
        local = _run(capsys, *argv)
        assert _run(capsys, "--server", remote, "--token-file", str(lead), *argv)[:2] == local[:2], argv


def test_compare_remotely_gives_the_gate_verdict_and_exit_status(demo_store, remote, tmp_path, capsys):
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 11)])
    assert _run(capsys, "--server", remote, "freeze", "v1")[0] == 0
    for e in ("base", "cand"):
        code, _, err = _run(capsys, "score", "--version", "v1", "--run", str(run), "-m", "nDCG@10", "--record", e)
        assert code == 0, err
    for argv in (["evaluations"], ["--json", "evaluations"]):  # the recorded ones, as the Results page lists them
        local_list = _run(capsys, *argv)
        assert "base" in local_list[1] and _run(capsys, "--server", remote, *argv)[:2] == local_list[:2]
    local = _run(capsys, "compare", "base", "cand")
    code, out, _ = _run(capsys, "--server", remote, "compare", "base", "cand")
    assert (code, out) == local[:2]
    code, out, _ = _run(capsys, "--server", remote, "--json", "compare", "base", "cand")
    assert json.loads(out)["metrics"]["nDCG@10"]["verdict"]
    code, _, err = _run(capsys, "--server", remote, "compare", "base", "cand", "--tier", "smoke")
    assert code == 2 and "--tier has no remote form" in err  # compare: 2 = could not compare


def test_refusals_and_commands_without_a_remote_form(demo_store, remote, tokens, tmp_path, capsys, monkeypatch):  # noqa: F811
    code, _, err = _run(capsys, "--server", remote, "init")
    assert code == 2 and err.startswith("golden: init does not use the studio's store, so it has no remote form")
    assert err.count("\n") == 1
    # every command that uses the store has a remote form (issue 38 item 1): the studio runs it, same output
    local = _run(capsys, "runs", "retire", "x", "--reason", "y")
    assert local[0] == 2 and _run(capsys, "--server", remote, "runs", "retire", "x", "--reason", "y") == local
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["annotator"])
    code, _, err = _run(capsys, "--server", remote, "freeze", "v9")
    assert code == 2 and "may not freeze a version" in err
    monkeypatch.delenv("GOLDEN_TOKEN")
    code, _, err = _run(capsys, "--server", remote, "versions")
    assert code == 2 and "needs an API token" in err
    token_file = tmp_path / "token"
    token_file.write_text(tokens["lead"] + "\n")
    code, out, _ = _run(capsys, "--server", remote, "--token-file", str(token_file), "versions")
    assert code == 0 and out.startswith("No frozen versions yet")
    monkeypatch.setenv("GOLDEN_SERVER", remote)  # the environment's server, no flag
    code, out, _ = _run(capsys, "versions", "--token-file", str(token_file))
    assert code == 0 and out.startswith("No frozen versions yet")


def test_agreement_figures_remotely_as_locally(demo_store, remote, tokens, tmp_path, capsys):  # noqa: F811
    from tests.golden_store.test_judge_labels_frozen import grade

    for i, (a, b) in enumerate([(3, 3), (2, 3), (0, 0), (1, 2), (3, 2), (0, 1)]):
        grade(demo_store, f"q{i + 1:03d}", "annual-leave", 0, 40, a, "ann")
        grade(demo_store, f"q{i + 1:03d}", "annual-leave", 0, 40, b, "bob")
    lead = tmp_path / "lead-token"
    lead.write_text(tokens["lead"])
    local = _run(capsys, "agreement")
    assert "6 items graded by 2+ of 2 annotators" in local[1] and "ann x bob: n=6" in local[1]
    assert _run(capsys, "--server", remote, "--token-file", str(lead), "agreement")[:2] == local[:2]
