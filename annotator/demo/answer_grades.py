"""The demo's graded answer sample: criteria for the temporal and paraphrase strata beside the
tabular one's, people's marks of both systems' answers to those strata's questions, and the rubric judge's
marks replayed from ``data/answer_grades.jsonl`` through the judge job (no model is called),
so the Answer grading page, ``golden answers rubric-report`` and the answer evaluations'
``rubric_human`` / ``rubric_judge`` have data on a fresh demo.

The judge agrees with people on most marks and misses on four: a lenient "condition" on an
answer that names no city, a lenient "since_when" on a date that is not the rule's, an
outdated rate it lets through, and a vague "as early as you can" taken for the deadline. q009
is held out: people grade its answers, the judge never sees them (the job skips them) - so the calibration report shows a judge below the bar on the
criteria a gate would rest on, which is what it is for."""

from __future__ import annotations

import json
from pathlib import Path

from annotator.judge import llm, rubric_grading
from annotator.judge.rubric_judge import RubricGrades
from annotator.labeling import answer_grading
from annotator.people.identity import User
from golden_store.db.store import Store

GRADES_FILE = "answer_grades.jsonl"
CRITERIA_FILE = "grading_criteria.json"  # the temporal and paraphrase strata's criteria


class _ReplayedRubricJudge(llm.LLMClient):
    """The demo's rubric judge: its grades of each answer from the data file, returned through
    the job as an API answer would be (no request, no token; calls logged at no cost)."""

    def __init__(self, model: str, answers: dict[str, list[dict]]) -> None:  # no key, no HTTP client
        self.model = model
        self._answers = answers

    def structured(self, *, item: str, instructions: str, content: str, output: type[llm.T],
                   max_tokens: int = 4096) -> llm.CallResult[llm.T]:
        parsed = output.model_validate({"grades": self._answers[item]})
        sha = llm.prompt_sha(instructions, repr(sorted(output.model_json_schema().items())))
        return llm.CallResult(item, "ok", parsed, llm.Usage(), self.model, sha)


def load_answer_grades(store: Store, data_dir: Path, *, lead: User, graders: dict[str, User],
                       judge_model: str) -> dict[str, int]:
    """Set the temporal criteria, record people's marks and replay the judge's; counts."""
    from annotator.evidence import reference_answers

    for rubric in json.loads((data_dir / CRITERIA_FILE).read_text("utf-8")):
        reference_answers.set_criteria(store, lead, scope="stratum", scope_id=rubric["stratum"],
                                       criteria=reference_answers.criteria_drafts(rubric["criteria"], CRITERIA_FILE))
    lines = [json.loads(s) for s in (data_dir / GRADES_FILE).read_text("utf-8").splitlines() if s.strip()]
    human = 0
    for line in (x for x in lines if "grader" in x):
        human += len(answer_grading.grade(store, graders[line["grader"]], system=line["system"],
                                          query_id=line["query_id"], marks=line["marks"]))
    judged = {f"{x['system']}|{x['query_id']}": RubricGrades.model_validate({"grades": x["judge"]}).model_dump()["grades"]
              for x in lines if "judge" in x}
    marks = 0
    for system in sorted({x["system"] for x in lines if "judge" in x}):
        client = _ReplayedRubricJudge(judge_model, judged)
        marks += rubric_grading.run(store, lead, system, client=client).marks
    return {"human_answer_grades": human, "judge_answer_grades": marks}
