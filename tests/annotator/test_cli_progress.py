"""Progress of long jobs (issue 38, item 4): a real `golden corpus import` in a pseudo-terminal
names every phase with its units, rate and time left; with stderr not a terminal (a script, a
pipe, CI) it writes nothing there."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(sys.executable).parent / "golden"
_STYLE = re.compile(r"\x1b\[[0-9;]*m")                                  # colours: dropped
_MOVE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")      # redraws: a line break


def _corpus(root: Path, n: int = 60) -> Path:
    """``n`` Markdown documents of ~8 KB each, generated (no dependence on files in the repo)."""
    folder = root / "corpus"
    folder.mkdir()
    for i in range(n):
        words = " ".join(f"word{(i * 7 + k) % 997}" for k in range(1200))
        (folder / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{words}.\n", "utf-8")
    return folder


def _env(golden_db: str) -> dict[str, str]:
    env = dict(os.environ, GOLDEN_DB=golden_db, TERM="xterm-256color", COLUMNS="200")
    env.pop("NO_COLOR", None)
    return env


def _in_a_terminal(args: list[str], env: dict[str, str], cwd: Path, stdout: int) -> tuple[subprocess.Popen, str]:
    """Start ``golden ARGS`` with stderr on a pseudo-terminal (as a person's shell gives it)
    and read what the terminal shows until the child closes it."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([str(GOLDEN), *args], stdin=subprocess.DEVNULL, stdout=stdout, stderr=slave, env=env,
                            cwd=cwd)
    os.close(slave)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal's last writer
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc, shown.decode("utf-8", "replace")


def _run_in_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """``golden ARGS`` with stderr on a pseudo-terminal and stdout on a pipe; returns (exit
    code, stdout, what the terminal showed, escapes removed)."""
    proc, shown = _in_a_terminal(args, env, cwd, subprocess.PIPE)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=300)
    return code, out, _MOVE.sub("\n", _STYLE.sub("", shown))


def test_corpus_import_on_a_terminal_shows_every_phase_with_units_rate_and_time_left(tmp_path, golden_db):
    corpus = _corpus(tmp_path)
    code, out, shown = _run_in_a_terminal(["corpus", "import", str(corpus)], _env(golden_db), tmp_path)
    assert code == 0, shown
    assert "60 added" in out
    lines = [ln.strip() for ln in shown.splitlines() if ln.strip()]

    def last_line_of(phase: str) -> str:
        mine = [ln for ln in lines if phase in ln]
        assert mine, f"no progress line for {phase!r} in:\n{shown}"
        return mine[-1]

    reading = last_line_of("corpus import: reading and canonicalizing files")
    assert re.search(r"\d+(\.\d+)?/\d+(\.\d+)? (kB|MB)", reading), reading  # bytes, in units people read
    assert re.search(r"(kB|MB|bytes)/s", reading), reading                  # a rate
    assert "done in 0:00:" in reading, reading                              # the time it took
    # DuckDB folds the import into its file as a phase of its own (issue 41, item 4), not silently at exit
    saving = () if golden_db.startswith("postgresql") else ("saving the store file",)
    for phase in ("writing documents to the store", "committing the import", *saving, "indexing documents for search"):
        line = last_line_of(f"corpus import: {phase}")
        assert "60/60 documents" in line and "documents/s" in line and "done in" in line, line
    # while a phase runs its line says the time left (eta), even if this small import is quick
    assert re.search(r"elapsed, eta (\d+:\d\d:\d\d|-:--:--)", shown), shown
    # the phases come in the order they run: nothing silent between the bar and the summary
    order = [shown.rfind(p) for p in ("reading and canonicalizing", "writing documents", "committing the import", *saving,
                                      "indexing documents")]
    assert order == sorted(order), order


def test_nothing_is_written_to_stderr_that_is_not_a_terminal(tmp_path, golden_db):
    corpus = _corpus(tmp_path, n=10)
    r = subprocess.run([str(GOLDEN), "corpus", "import", str(corpus)], capture_output=True, text=True,
                       env=_env(golden_db), cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "10 added" in r.stdout
    assert r.stderr == ""
    # a script reading --json: stdout is the JSON alone, stderr stays empty
    (tmp_path / "more").mkdir()
    corpus2 = _corpus(tmp_path / "more", n=5)
    r = subprocess.run([str(GOLDEN), "corpus", "import", str(corpus2), "--json"], capture_output=True, text=True,
                       env=_env(golden_db), cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout)


def test_freeze_score_and_export_on_a_terminal_count_steps_bytes_queries_and_documents(tmp_path, golden_db):
    env = _env(golden_db)
    assert _run_in_a_terminal(["demo", "--small"], env, tmp_path)[0] == 0
    code, out, shown = _run_in_a_terminal(["freeze", "v1"], env, tmp_path)
    assert code == 0 and "Frozen v1" in out, shown
    done = [ln for ln in shown.splitlines() if ln.strip().startswith("freezing") and "done in" in ln]
    assert done and re.search(r"(\d+)/\1 steps .*steps/s", done[-1]), shown
    # golden score on the frozen version: reading the run (bytes), then scoring (queries)
    from annotator.demo import DEMO_DIR

    code, out, shown = _run_in_a_terminal(["score", "--version", "v1", "--run", str(DEMO_DIR / "runs" / "bm25.trec"),
                                           "-m", "nDCG@10"], env, tmp_path)
    assert code == 0 and "nDCG@10\tall" in out, shown
    reading = [ln for ln in shown.splitlines() if "score: reading the run" in ln and "done in" in ln]
    scoring = [ln for ln in shown.splitlines() if "score: scoring" in ln and "done in" in ln]
    assert reading and re.search(r"(kB|bytes)/s", reading[-1]), shown
    assert scoring and re.search(r"(\d+)/\1 queries .*queries/s", scoring[-1]), shown
    # golden export: the version's files read and checked (bytes), then the export written
    code, out, shown = _run_in_a_terminal(["export", "v1", "--format", "beir", "--out", "beir-out"], env, tmp_path)
    assert code == 0 and (tmp_path / "beir-out" / "corpus.jsonl").exists(), shown
    loading = [ln for ln in shown.splitlines() if "export: loading and checking the version" in ln and "done in" in ln]
    writing = [ln for ln in shown.splitlines() if "export: writing the beir export" in ln and "done in" in ln]
    assert loading and re.search(r"(kB|MB|bytes)/s", loading[-1]), shown
    assert writing and re.search(r"(\d+)/\1 documents .*documents/s", writing[-1]), shown


def _raw_in_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """``golden ARGS`` on a terminal, stdout discarded: (exit code, what the terminal got, escapes kept)."""
    proc, shown = _in_a_terminal(args, env, cwd, subprocess.DEVNULL)
    return proc.wait(timeout=300), shown


def test_run_judgments_and_queries_imports_on_a_terminal_show_reading_placing_and_writing(tmp_path, golden_db):
    from annotator.demo import DEMO_DIR

    env = _env(golden_db)
    assert _run_in_a_terminal(["demo", "--small"], env, tmp_path)[0] == 0
    code, out, shown = _run_in_a_terminal(["runs", "import", str(DEMO_DIR / "runs" / "bm25.trec"), "--system",
                                           "bm25"], env, tmp_path)
    assert code == 0, shown
    reading = [ln for ln in shown.splitlines() if "run import: reading and checking the run file" in ln]
    writing = [ln for ln in shown.splitlines() if "run import: writing results to the store" in ln]
    assert reading and re.search(r"(kB|bytes)/s", reading[-1]) and "done in" in reading[-1], shown
    assert writing and re.search(r"(\d+)/\1 results .*results/s", writing[-1]) and "done in" in writing[-1], shown
    # a qrels file of judgments: read and checked (bytes), placed, then written (judgments)
    lines = (DEMO_DIR / "runs" / "bm25.trec").read_text("utf-8").splitlines()[:20]
    (tmp_path / "assessor.qrels").write_text("".join(f"{ln.split()[0]} 0 {ln.split()[2]} 1\n" for ln in lines), "utf-8")
    code, out, shown = _run_in_a_terminal(["judgments", "import", "assessor.qrels"], env, tmp_path)
    assert code == 0, shown
    for phase, unit in (("reading and checking the judgments file", r"(kB|bytes)/s"),
                        ("placing judgments on the store's queries and documents", r"(\d+)/\1 judgments"),
                        ("writing judgments to the store", r"(\d+)/\1 judgments .*judgments/s")):
        done = [ln for ln in shown.splitlines() if f"judgments import: {phase}" in ln and "done in" in ln]
        assert done and re.search(unit, done[-1]), (phase, shown)
    # a queries file: read and checked (bytes), then written (queries)
    (tmp_path / "more.jsonl").write_text("".join(json.dumps({"id": f"extra{i}", "text": f"question {i}?", "stratum": "lexical", "answerable": True}) + "\n"
                                                 for i in range(15)), "utf-8")
    code, out, shown = _run_in_a_terminal(["queries", "import", "more.jsonl"], env, tmp_path)
    assert code == 0 and "15 added" in out, shown
    reading = [ln for ln in shown.splitlines() if "queries import: reading and checking the queries file" in ln
               and "done in" in ln]
    writing = [ln for ln in shown.splitlines() if "queries import: writing queries to the store" in ln and "done in" in ln]
    assert reading and re.search(r"(kB|bytes)/s", reading[-1]), shown
    assert writing and re.search(r"15/15 queries .*queries/s", writing[-1]), shown


def test_an_error_mid_phase_is_printed_on_its_own_line_and_the_stalled_bar_is_erased(tmp_path, golden_db):
    """A refused import raises while its reading line is drawn: the error goes above the line
    (not glued to its end), and the line that will never move is erased at exit."""
    env = _env(golden_db)
    assert _run_in_a_terminal(["demo", "--small"], env, tmp_path)[0] == 0
    (tmp_path / "bad.trec").write_text("q01 Q0 nope 1 2.0 x\nnot a run line\n", "utf-8")
    code, raw = _raw_in_a_terminal(["runs", "import", "bad.trec", "--system", "x"], env, tmp_path)
    assert code != 0
    assert re.search(r"(\r\x1b\[2K|\n)golden: Run import refused", raw), repr(raw[-600:])
    tail = raw[raw.rfind("eta"):]
    assert "\x1b[2K" in tail and tail.rstrip().endswith("\x1b[2K"), repr(tail)  # erased last
    assert "\x1b[?25h" in tail  # the cursor shown again


def test_resolve_on_a_terminal_shows_indexing_the_folder_then_resolving_quotes(tmp_path):
    corpus = _corpus(tmp_path, n=12)
    quotes = tmp_path / "quotes.jsonl"
    quotes.write_text("\n".join(json.dumps({"quote_id": f"q{i}", "quote": f"word{i * 7} word{i * 7 + 1}"})
                                 for i in range(30)) + "\n", "utf-8")
    env = _env(str(tmp_path / "unused.duckdb"))
    code, out, shown = _run_in_a_terminal(["resolve", "--corpus", str(corpus), "--quotes", str(quotes),
                                           "--out", str(tmp_path / "out.jsonl")], env, tmp_path)
    assert code == 0, shown
    indexing = [ln for ln in shown.splitlines() if "resolve: indexing the corpus folder" in ln and "done in" in ln]
    resolving = [ln for ln in shown.splitlines() if "resolve: resolving quotes" in ln and "done in" in ln]
    assert indexing and re.search(r"12/12 documents .*documents/s", indexing[-1]), shown
    assert resolving and re.search(r"30/30 quotes .*quotes/s", resolving[-1]), shown


def test_library_code_never_imports_a_progress_display():
    """golden_store reports through ``golden_store.core.progress`` callbacks; what draws them
    (rich, here) is the caller's: a script or server using the store needs no terminal library."""
    import ast

    root = Path(__file__).resolve().parents[2] / "golden_store"
    for f in sorted(root.rglob("*.py")):
        tree = ast.parse(f.read_text("utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not names & {"rich", "tqdm", "streamlit"}, f
