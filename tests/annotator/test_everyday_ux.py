"""Issue 17 (everyday UX): what a freeze left out is said where the freeze happens (CLI), the
digest shown is the one that identifies content, and the shell: `golden serve` hides the
Deploy button and honours STREAMLIT_SERVER_PORT, `golden … | head` ends quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from annotator import cli
from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.live import judging, runs
from golden_store.live.pool import build_pool
from golden_store.db.store import Store

GOLDEN = Path(sys.executable).parent / "golden"
REPO = Path(__file__).resolve().parents[2]


def _store_with_a_disagreement(db: str, tmp_path: Path) -> None:
    """The demo, a pool of three items, and two annotators who disagree on one of them."""
    with Store.open(db) as s:
        load_demo(s, cli_user())
        run = tmp_path / "r.txt"
        run.write_text("q001 Q0 vpn-troubleshooting 1 3 x\nq001 Q0 sick-leave 2 2 x\nq002 Q0 sick-leave 1 3 x\n")
        runs.store_run(s, runs.parse_run(s, run, "sys", "trec"), actor="t")
        build_pool(s, 5, actor="t")
        end = s.read_one("SELECT length(raw_text) FROM documents WHERE doc_id = 'sick-leave'")[0]
        judging.record(s, "ann", "q001", "sick-leave", 0, end, op="grade", grade=0)
        judging.record(s, "bob", "q001", "sick-leave", 0, end, op="grade", grade=3)


def test_cli_freeze_says_what_it_left_out_and_shows_the_data_digest(tmp_path, capsys):
    db = os.environ["GOLDEN_DB"]
    _store_with_a_disagreement(db, tmp_path)
    assert cli.main(["--db", str(db), "freeze", "v1"]) == 0
    out = capsys.readouterr().out
    assert "1 graded item(s) where annotators disagree" in out and "Adjudication page" in out
    assert "data_digest sha256:" in out
    assert cli.main(["--db", str(db), "freeze", "v2"]) == 0
    out2 = capsys.readouterr().out
    digest = lambda text: text.split("data_digest ")[1].split()[0].rstrip(";")  # noqa: E731
    assert digest(out) == digest(out2)  # identical content: the same digest shown
    assert cli.main(["--db", str(db), "versions"]) == 0
    assert digest(out)[:19] in capsys.readouterr().out


def test_cli_freeze_of_a_settled_store_says_nothing_was_left_out(tmp_path, capsys):
    db = os.environ["GOLDEN_DB"]
    with Store.open(db) as s:
        load_demo(s, cli_user())
    assert cli.main(["--db", str(db), "freeze", "v1"]) == 0
    assert "Note:" not in capsys.readouterr().out


# ---- item 11: the shell ---------------------------------------------------------------------


def test_streamlit_config_hides_the_deploy_button():
    import tomllib

    cfg = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert cfg["client"]["toolbarMode"] == "viewer"


def test_streamlit_config_and_golden_serve_agree_on_every_server_setting():
    """`streamlit run app.py` (config.toml) serves the studio as `golden serve` does: no source
    watcher and no forced collection after each run (issue 19: together ~0.5 s of every page's
    first render at team scale), no Deploy button."""
    import tomllib

    cfg = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    flat = {f"{section}.{k}": str(v).lower() if isinstance(v, bool) else str(v)
            for section, opts in cfg.items() for k, v in opts.items()}
    assert flat == cli.SERVER_OPTIONS
    assert cli.SERVER_OPTIONS["server.fileWatcherType"] == "none"
    assert cli.SERVER_OPTIONS["runner.postScriptGC"] == "false"


def _serve_argv(monkeypatch, tmp_path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    """The command line `golden serve` would exec (exec itself captured)."""
    seen: list[list[str]] = []
    monkeypatch.setattr(os, "execve", lambda exe, argv, environ: seen.append(list(argv)))
    monkeypatch.setattr(cli.subprocess, "call", lambda argv, env=None: seen.append(list(argv)) or 0)
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    cli.main(["--db", os.environ["GOLDEN_DB"], "serve", *args])
    assert seen, "serve did not start streamlit"
    return seen[0]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_serve_hides_the_deploy_button(monkeypatch, tmp_path):
    argv = _serve_argv(monkeypatch, tmp_path)
    assert _flag(argv, "--client.toolbarMode") == "viewer"
    for name, value in cli.SERVER_OPTIONS.items():
        assert _flag(argv, f"--{name}") == value
    assert _flag(argv, "--server.port") == "8501"


def test_serve_port_from_flag_or_environment(monkeypatch, tmp_path):
    assert _flag(_serve_argv(monkeypatch, tmp_path, "--port", "8600"), "--server.port") == "8600"
    argv = _serve_argv(monkeypatch, tmp_path, env={"STREAMLIT_SERVER_PORT": "8700"})
    assert _flag(argv, "--server.port") == "8700"
    # an explicit --port wins over the environment
    argv = _serve_argv(monkeypatch, tmp_path, "--port", "8800", env={"STREAMLIT_SERVER_PORT": "8700"})
    assert _flag(argv, "--server.port") == "8800"


def test_serve_refuses_a_bad_port_in_the_environment(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("STREAMLIT_SERVER_PORT", "eighty")
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("must not start"))
    assert cli.main(["--db", os.environ["GOLDEN_DB"], "serve"]) == 2
    assert "STREAMLIT_SERVER_PORT" in capsys.readouterr().err


def test_make_run_honours_port():
    out = subprocess.run(["make", "-n", "run", "PORT=8765"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--port 8765" in out.stdout


def _into_closed_pipe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `golden ARGS` with stdout a pipe nobody reads any more (as `golden … | head` once
    head has exited): every write to it fails with EPIPE."""
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([str(GOLDEN), *args], stdout=w, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=tmp_path, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [("strata", "list"), ("--json", "strata", "list"), ("--help",)])
def test_output_into_a_closed_pipe_ends_quietly(tmp_path, args):
    """`golden strata list | head -1`: the reader went away; no BrokenPipe traceback."""
    env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
    assert subprocess.run([str(GOLDEN), "demo", "--small"], env=env, capture_output=True, timeout=120).returncode == 0
    res = _into_closed_pipe(tmp_path, *args)
    assert res.stderr == "", res.stderr
    # as a Unix tool stopped by SIGPIPE (`set -o pipefail` still sees it); argparse's help
    # output swallows the error itself and exits 0
    assert res.returncode == (0 if args == ("--help",) else 141)
