"""trec_eval's own test suite, run through ``golden score``.

``shared/conformance/trec_eval/`` (next to the repository) holds trec_eval 10.0's public test
files: qrels and runs with comment lines, ``#`` inside document ids, graded and negative
relevance, a run with text after the run tag, tabs and padded scores, ties, and the outputs
trec_eval printed for them (``out.*``, 4 decimals). Each case below is one of trec_eval's own
quick-test commands (its Makefile); the same files go to ``golden score --json --per-query``
with the same options, and every number trec_eval printed, per query and overall ("all"), is
compared: the measure's trec_eval name is read back to ours with the library's
``parse_trec_eval`` (``P_10`` -> ``P@10``), checked against the name ``golden score`` reports
for it. Only ``runid`` and ``relstring`` (text, not numbers) are not compared.

The files are not copied into the repository: the test reads them where they are and is
skipped, saying so, when the folder is absent.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from golden_store.scoring.measures import TREC_TEXT_MEASURES, parse_trec_eval

FOLDER = Path(__file__).resolve().parents[3] / ".." / "shared" / "conformance" / "trec_eval"

MEAS_PARAMS = ["-m", "iprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
               "-m", "Rprec_mult.5.0,0.2,0.35", "-m", "utility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
               "-m", "ndcg.1=3,2=9,4=4.5", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20"]

# (expected output, qrels, run, trec_eval's options; only the queries listed are compared)
CASES = {
    "basic": ("out.test", "qrels.test", "results.test", ["-m", "official"], None),
    "qrels with comments": ("out.test", "qrels.test.with-comments", "results.test", ["-m", "official"], None),
    "# in doc ids, graded": ("out.comment.test", "qrels.comment.test", "results.comment.test", ["-m", "official"],
                             None),
    "all_trec per query": ("out.test.aq", "qrels.test", "results.test", ["-m", "all_trec"], None),
    "truncated run, -c": ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec"], None),
    "levels, -l2": ("out.test.aql", "qrels.rel_level", "results.test", ["-m", "all_trec", "-l", "2"], None),
    "measure parameters": ("out.test.meas_params", "qrels.test", "results.test", MEAS_PARAMS, None),
    # the single-topic pair has no output of its own: its topic's lines in out.test.aq are its
    "topic 302 alone": ("out.test.aq", "qrels-302.test", "results-302.test", ["-m", "all_trec"], {"302"}),
}

pytestmark = pytest.mark.skipif(not FOLDER.is_dir(), reason=f"trec_eval's test files are not at {FOLDER} "
                                "(shared/conformance/trec_eval next to the repository): conformance not checked")


def expected_lines(path: Path):
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        yield name, qid, value


def golden_score(qrels: Path, run: Path, options: list[str], tmp_path: Path, *, in_process: bool = True) -> dict:
    """``golden score --qrels --run ... --json --per-query``: through ``annotator.cli.main`` in
    this process (the entry point the ``golden`` script calls), or as a real ``golden`` process."""
    argv = ["score", "--qrels", str(qrels), "--run", str(run), *options, "--json", "--per-query"]
    if in_process:
        from annotator import cli

        out_text, err_text = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out_text), contextlib.redirect_stderr(err_text):
            code = cli.main(argv)
        out = subprocess.CompletedProcess(argv, code, out_text.getvalue(), err_text.getvalue())
    else:
        golden = str(Path(sys.executable).parent / "golden")
        env = dict(os.environ)  # GOLDEN_DB: this test's store (conftest)
        out = subprocess.run([golden, *argv], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "Warning" not in out.stderr, out.stderr
    return json.loads(out.stdout)


def test_every_file_pair_has_a_case():
    """Every qrels and run file of the folder is scored by some case."""
    if not FOLDER.is_dir():
        pytest.skip("no folder")
    used = {f for case in CASES.values() for f in case[:3]}
    present = {p.name for p in FOLDER.iterdir() if p.name.startswith(("qrels", "results", "out."))}
    assert present <= used, sorted(present - used)


@pytest.mark.parametrize("case", list(CASES))
def test_golden_score_prints_what_trec_eval_printed(case, tmp_path):
    out_file, qrels, run, options, only = CASES[case]
    level = int(options[options.index("-l") + 1]) if "-l" in options else None
    # the first case as a real `golden` process, the others through the same entry point in this one
    res = golden_score(FOLDER / qrels, FOLDER / run, options, tmp_path, in_process=case != next(iter(CASES)))
    trec_to_ours = {v: k for k, v in res["trec_eval"].items()}
    compared, wrong, texts = 0, [], 0
    for name, qid, value in expected_lines(FOLDER / out_file):
        if name.split("_")[0] in TREC_TEXT_MEASURES or name.startswith("relstring"):
            texts += 1
            continue
        if only is not None and qid not in only:
            continue
        (measure,) = parse_trec_eval(name, rel=level)
        ours_name = str(measure)
        assert ours_name in res["measures"], (name, ours_name)
        if name in trec_to_ours:  # golden score names the measure the same way
            assert trec_to_ours[name] == ours_name, (name, trec_to_ours[name], ours_name)
        ours = res["mean"][ours_name] if qid == "all" else res["per_query"][qid][ours_name]
        compared += 1
        if name.startswith("num_"):  # counts print as integers
            ok = ours == float(value)
        else:  # trec_eval prints 4 decimals
            ok = abs(ours - float(value)) <= 0.5e-4 + 1e-9
        if not ok:
            wrong.append((name, qid, value, round(ours, 6)))
    assert compared > 25, compared
    assert not wrong, f"{len(wrong)} of {compared} values differ from trec_eval's: {wrong[:20]}"
    # every query trec_eval printed is one golden scored, and no other
    printed = {qid for _, qid, _ in expected_lines(FOLDER / out_file) if qid != "all"}
    if printed and only is None:
        assert printed == set(res["per_query"]), (printed ^ set(res["per_query"]))
