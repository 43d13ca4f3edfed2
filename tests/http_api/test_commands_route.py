"""POST /api/v1/commands (issue 38 item 1): every golden command that uses the store has a
remote form. Over real HTTP on loopback: files the command reads are uploaded, files it writes
come back to the caller's path, the token's roles apply, and the studio never reads or writes a
path of its own machine for a caller."""

from __future__ import annotations

import json

import httpx

from annotator import cli
from tests.annotator.test_cli_remote import _run, remote  # noqa: F401  (fixtures)
from tests.http_api.conftest import api, run_file, tokens  # noqa: F401  (fixtures)


def test_a_command_without_a_route_runs_remotely_with_its_local_output(demo_store, remote, tokens, tmp_path,  # noqa: F811
                                                                       capsys, monkeypatch):
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 6)], name="nightly.trec")
    assert _run(capsys, "--server", remote, "runs", "import", str(run), "--system", "nightly")[0] == 0
    for argv in (["runs", "list"], ["strata", "list"], ["pool", "judge-status"], ["judgments", "list"],
                 ["--json", "runs", "list"]):
        local = _run(capsys, *argv)
        assert _run(capsys, "--server", remote, *argv) == local, argv
    # a write through the route, as the token's account: the event names the token, not the CLI user
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["admin"])
    code, out, err = _run(capsys, "--server", remote, "strata", "add", "from_ci", "--description", "added by CI")
    assert (code, out, err) == (0, "Stratum 'from_ci' added.\n", "")
    actor = demo_store.read("SELECT created_by FROM strata WHERE name = 'from_ci'")
    assert actor and actor[0][0].startswith("token:")


def test_files_a_command_writes_come_back_to_the_callers_path(demo_store, remote, tokens, tmp_path, capsys):  # noqa: F811
    local_out, remote_out = tmp_path / "local.parquet", tmp_path / "sub" / "remote.parquet"
    remote_out.parent.mkdir()
    code, out, _ = _run(capsys, "results", "export", "--out", str(local_out))
    assert code == 0
    code, out, err = _run(capsys, "--server", remote, "results", "export", "--out", str(remote_out))
    assert code == 0 and out == f"Wrote 0 result rows to {remote_out}\n", (out, err)  # the caller's path, not the studio's
    assert remote_out.read_bytes()[:4] == b"PAR1"


def test_the_tokens_roles_apply(demo_store, remote, tokens, capsys, monkeypatch):  # noqa: F811
    code, _, err = _run(capsys, "--server", remote, "users", "list")  # an engineer's token
    assert code != 0 and "may not manage user accounts" in err and err.count("\n") == 1
    code, _, err = _run(capsys, "--server", remote, "strata", "add", "nope", "--description", "x")
    assert code != 0 and "may not add strata" in err
    assert demo_store.read("SELECT count(*) FROM strata WHERE name = 'nope'") == [(0,)]
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["annotator"])
    code, _, err = _run(capsys, "--server", remote, "runs", "list")
    assert code == 0 or "may not" in err


def test_a_path_on_the_studios_machine_is_refused(demo_store, api, tokens, tmp_path):  # noqa: F811
    secret = tmp_path / "server-side.trec"
    secret.write_text("q001 Q0 doc 1 1.0 x\n")
    r = httpx.post(f"{api}/commands", headers={"Authorization": f"Bearer {tokens['admin']}"},
                   data={"argv": json.dumps(["runs", "import", str(secret), "--system", "x"])})
    body = r.json()
    assert r.status_code == 200 and body["exit_code"] != 0
    assert "does not read or write paths of its own machine" in body["stderr"]
    assert demo_store.read("SELECT count(*) FROM run_results WHERE system = 'x'") == [(0,)]
    r = httpx.post(f"{api}/commands", headers={"Authorization": f"Bearer {tokens['admin']}"},
                   data={"argv": json.dumps(["results", "export", "--out", "/tmp/anywhere.parquet"])})
    assert r.json()["exit_code"] != 0 and "does not read or write paths" in r.json()["stderr"]
    r = httpx.post(f"{api}/commands", headers={"Authorization": f"Bearer {tokens['admin']}"},
                   data={"argv": "runs list"})
    assert r.status_code == 422 and "JSON list" in r.json()["detail"]


def test_commands_that_need_no_store_say_so(demo_store, remote, capsys):  # noqa: F811
    code, _, err = _run(capsys, "--server", remote, "diff", "a", "b")
    assert code != 0 and "does not use the studio's store" in err and err.count("\n") == 1
    assert cli.main(["--server", remote, "webhooks", "deliver", "--loop"]) != 0
    assert "already delivers webhooks" in capsys.readouterr().err


def test_score_record_remotely_pins_the_callers_git_checkout(demo_store, remote, tokens, tmp_path, capsys,  # noqa: F811
                                                              monkeypatch):
    import subprocess

    repo = tmp_path / "pipeline"
    repo.mkdir()
    git = ["git", "-c", "user.email=ci@example.org", "-c", "user.name=ci"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "config.yaml").write_text("k: 10\n")
    subprocess.run([*git, "add", "config.yaml"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 11)])
    assert _run(capsys, "--server", remote, "freeze", "v1")[0] == 0
    monkeypatch.chdir(repo)  # the pipeline's checkout, on the caller's machine (the studio runs elsewhere)
    code, out, err = _run(capsys, "--server", remote, "score", "--version", "v1", "--run", str(run), "-m", "R@10",
                          "--record", "e1", "--system", "s")
    assert code == 0, err
    assert demo_store.read("SELECT DISTINCT git_sha FROM eval_results WHERE evaluation_id = 'e1'") == [(sha,)]
