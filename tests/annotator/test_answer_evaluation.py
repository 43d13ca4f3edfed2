"""Answer evaluations (issue 40, item 6): a system's answers scored against a frozen version,
recorded as an evaluation and compared and gated by ``golden compare`` like a run's.

EM and F1 are checked against the SQuAD v1.1 evaluation script's own functions, transcribed
below (the reference implementation those two numbers come from), not against the studio's."""

from __future__ import annotations

import collections
import json
import math
import os
import re
import string

import pytest

from annotator import cli
from annotator.demo import DEMO_DIR, load_demo
from annotator.people.identity import cli_user
from golden_store.freezing import freeze
from golden_store.live import faithfulness
from golden_store.live.faithfulness import ClaimRow
from tests.conftest import prepared_store


# ---- SQuAD v1.1's evaluate-v1.1.py, normalize_answer / f1_score / exact_match_score ---------
def _squad_normalize(s: str) -> str:
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _squad_f1(prediction: str, ground_truth: str) -> float:
    p, g = _squad_normalize(prediction).split(), _squad_normalize(ground_truth).split()
    common = collections.Counter(p) & collections.Counter(g)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision, recall = num_same / len(p), num_same / len(g)
    return (2 * precision * recall) / (precision + recall)


def _squad_em(prediction: str, ground_truth: str) -> float:
    return float(_squad_normalize(prediction) == _squad_normalize(ground_truth))
# ----------------------------------------------------------------------------------------------


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture
def frozen_demo(request, golden_db):
    """The demo with every workflow (two systems' answers, approved references) and its frozen
    version, built once per worker and copied; the version is renamed ans.v1 in the tests' eyes."""
    def build(s, _folder):
        load_demo(s, cli_user(), workflows=True, pool_job=False)
        freeze(s, "ans.v1", actor="eng")

    store, _ = prepared_store(request, "answer-evaluations-demo", build)
    return store


def test_em_and_f1_recorded_equal_the_squad_scripts_on_the_demo(frozen_demo, capsys):
    refs = {r["query_id"]: r["short_answer"] for r in _jsonl(DEMO_DIR / "references.jsonl")}
    for system in ("rag-bm25", "rag-hybrid"):
        rc, out, err = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", system,
                              "--record", f"ans-{system}", "--json")
        assert rc == 0, err
        answers = {a["query_id"]: a["answer"] for a in _jsonl(DEMO_DIR / "answers" / f"{system}.jsonl")}
        scored = [q for q in answers if q in refs]
        em = sum(_squad_em(answers[q], refs[q]) for q in scored) / len(scored)
        f1 = sum(_squad_f1(answers[q], refs[q]) for q in scored) / len(scored)
        got = json.loads(out)
        assert got["means"]["answer_em"] == pytest.approx(em) and got["means"]["answer_f1"] == pytest.approx(f1)
        assert got["n"]["answer_em"] == len(scored)
        rows = frozen_demo.read("SELECT DISTINCT run_level, hit_rule, run_depth FROM eval_results "
                                "WHERE evaluation_id = ?", [f"ans-{system}"])
        assert rows == [("answer", None, None)]
        # a metric that does not apply to a question is no row (a NaN would make every mean NaN)
        values = [v for (v,) in frozen_demo.read("SELECT value FROM eval_results WHERE evaluation_id = ?",
                                                 [f"ans-{system}"])]
        assert values and not [v for v in values if v is None or math.isnan(v)]


def test_two_systems_answers_are_compared_and_gated_like_runs(frozen_demo, capsys):
    for system in ("rag-bm25", "rag-hybrid"):
        assert golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", system, "--record",
                      f"ans-{system}")[0] == 0
    rc, out, err = golden(capsys, "compare", "ans-rag-bm25", "ans-rag-hybrid", "--min-n", "2", "--json")
    assert rc in (0, 1), err
    c = json.loads(out)
    assert {"answer_em", "answer_f1", "nugget_v", "nugget_a"} <= set(c["metrics"])
    assert c["gate"] in ("PASS", "WARN", "FAIL") and not [n for n in c["notes"] if "depth" in n or "hit rule" in n]
    # a typo'd metric is an error, never a pass (the CI gate that passed a typo)
    rc, out, err = golden(capsys, "compare", "ans-rag-bm25", "ans-rag-hybrid", "--min-n", "2", "-m", "answer_f2")
    assert rc == 2 and "answer_f2" in err


def test_an_answer_evaluation_is_never_compared_with_a_run(frozen_demo, capsys):
    """Fails if the comparison went ahead: a run's R@10 and an answer's F1 are different things."""
    dense_run = str(DEMO_DIR / "runs" / "bm25.trec")
    assert golden(capsys, "score", "--version", "ans.v1", "--run", dense_run, "-m", "R@10", "--record", "run-bm25",
                  "--system", "bm25")[0] == 0
    assert golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--record",
                  "ans-bm25")[0] == 0
    rc, out, err = golden(capsys, "compare", "run-bm25", "ans-bm25", "--min-n", "1")
    assert rc == 2 and out == "" and "share no measure" in err
    # and were a metric named alike, the definitions would still refuse it: the hit rule row says
    # "none (answer evaluation)" against "none (document run)" (a refused difference)
    from annotator.evaluation.comparability import differences
    from golden_store.live.results import evaluation_frame

    a, b = evaluation_frame(frozen_demo, "run-bm25"), evaluation_frame(frozen_demo, "ans-bm25")
    said = differences("run-bm25", a, "ans-bm25", b)
    assert said[0] == "hit rule differs: run-bm25 none (document run), ans-bm25 none (answer evaluation)"
    assert differences("ans-bm25", b, "ans-bm25", b) == []  # two answer evaluations: no depth, no hit rule to differ


def test_faithfulness_is_recorded_as_judged_with_the_judges_model_and_prompts(frozen_demo, capsys):
    answers = {a["query_id"]: a["answer"] for a in _jsonl(DEMO_DIR / "answers" / "rag-bm25.jsonl")}

    def tx(cur):
        for i, (qid, text) in enumerate(sorted(answers.items())):
            verdicts = ["supported"] * 4 + ["insufficient"] if i == 0 else ["supported", "supported"]
            faithfulness.record_tx(cur, system="rag-bm25", query_id=qid, answer=text, outcome="ok", model="judge-x",
                                   decompose_sha="d" * 64, check_sha="c" * 64, input_tokens=1, output_tokens=1,
                                   claims=[ClaimRow(f"claim {n}", v, v, None, True, None)
                                           for n, v in enumerate(verdicts)], actor="eng")
    frozen_demo.write(tx)
    rc, out, err = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--record",
                          "ans-f", "--json")
    assert rc == 0, err
    got = json.loads(out)
    n = len(answers)
    assert got["means"]["faithfulness"] == pytest.approx((0.8 + (n - 1) * 1.0) / n)  # first answer 4 of 5
    rows = frozen_demo.read("SELECT DISTINCT metric, judge_model, rubric_sha FROM eval_results WHERE evaluation_id = "
                            "'ans-f' AND judge_model IS NOT NULL")
    # the demo's rubric judge graded some of these answers too: the one evaluation names each metric's judge
    from annotator.demo import DEMO_JUDGE
    from annotator.judge.rubric_judge import PROMPT_SHA

    judges = f"faithfulness=judge-x; rubric_judge={DEMO_JUDGE}"
    shas = f"faithfulness=decompose:{'d' * 64}+check:{'c' * 64}; rubric_judge=rubric:{PROMPT_SHA}"
    assert sorted(rows) == [("faithfulness", judges, shas), ("rubric_judge", judges, shas)]


def test_a_stale_claim_check_is_not_used(frozen_demo, capsys):
    """Fails if a check of an answer's earlier text scored its new text: q001's newest check is
    of another text, so q001 leaves the faithfulness figure (the demo's older check of its real
    text is superseded, not used either)."""
    rc, out, _ = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--json")
    before = json.loads(out)["n"]["faithfulness"]
    assert rc == 0 and before > 0

    def tx(cur):
        faithfulness.record_tx(cur, system="rag-bm25", query_id="q001", answer="an older text", outcome="ok",
                               model="judge-x", decompose_sha="d", check_sha="c", input_tokens=1, output_tokens=1,
                               claims=[ClaimRow("c", "contradicted", "contradicted", None, True, None)], actor="eng")
    frozen_demo.write(tx)
    rc, out, _ = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--json")
    assert rc == 0 and json.loads(out)["n"]["faithfulness"] == before - 1


def test_bad_input_is_one_sentence_and_records_nothing(frozen_demo, capsys):
    before = frozen_demo.read("SELECT count(*) FROM eval_results")
    rc, _, err = golden(capsys, "answers", "evaluate", "--version", "../elsewhere", "--system", "rag-bm25", "--record",
                        "x")
    assert rc == 2 and "not a path or URL" in err
    rc, _, err = golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "nobody", "--record", "x")
    assert rc == 2 and "No answers of system 'nobody'" in err
    assert frozen_demo.read("SELECT count(*) FROM eval_results") == before


def test_sampled_answers_as_trials_give_pass_at_1_and_pass_hat_k(frozen_demo, capsys, tmp_path):
    """§10.8 for answers: each sampled generation imported and recorded as a trial of one
    evaluation. By hand: rag-bm25's first answers match none of the 12 short references; the
    second sample answers q006 "Up to 8 unused days.", q009 "The first 18 weeks." and q010 "No.",
    each equal to its reference once normalised, so trial 1 passes 3 of 12: pass@1 = (0 + 3/12) / 2
    = 0.125 and pass^2 = 0 (no question passes both)."""
    assert golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--record",
                  "ans-k")[0] == 0
    second = {"q006": "Up to 8 unused days.", "q009": "The first 18 weeks.", "q010": "No."}
    rows = _jsonl(DEMO_DIR / "answers" / "rag-bm25.jsonl")
    sample = tmp_path / "sample2.jsonl"
    sample.write_text("".join(json.dumps({**r, "answer": second.get(r["query_id"], r["answer"])}) + "\n"
                              for r in rows), "utf-8")
    assert golden(capsys, "answers", "import", str(sample), "--system", "rag-bm25", "--replace")[0] == 0
    assert golden(capsys, "answers", "evaluate", "--version", "ans.v1", "--system", "rag-bm25", "--record", "ans-k",
                  "--trial", "1")[0] == 0
    rc, out, err = golden(capsys, "results", "trials", "ans-k", "-m", "answer_em", "--json")
    assert rc == 0, err
    em = json.loads(out)["metrics"]["answer_em"]
    assert (em["k"], em["items"], em["pass_at_1"], em["pass_hat_k"]) == (2, 12, 0.125, 0.0)
    assert em["pass_at_1_per_trial"] == {"0": 0.0, "1": 0.25}


def test_the_demo_fills_claim_verdicts_reviews_and_a_judged_faithfulness(frozen_demo):
    from annotator.demo import DEMO_JUDGE
    from annotator.evaluation.judge_corrected import corrected_faithfulness
    from golden_store.live.faithfulness import current_reviews

    claims = _jsonl(DEMO_DIR / "claims.jsonl")
    got = corrected_faithfulness(frozen_demo, cli_user())
    assert set(got) == {"rag-bm25", "rag-hybrid"}
    assert sum(c.claims for c in got.values()) == sum(len(line["claims"]) for line in claims)
    assert len(current_reviews(frozen_demo)) == sum(c.reviewed for c in got.values()) == 10
    rows = frozen_demo.read("SELECT DISTINCT system, judge_model FROM eval_results WHERE metric = 'faithfulness' "
                            "ORDER BY system")
    assert rows == [("rag-bm25", DEMO_JUDGE), ("rag-hybrid", DEMO_JUDGE)]
