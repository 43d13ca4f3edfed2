"""Score a system's answers against a frozen version and record them as an evaluation, so that
answer quality is compared and gated exactly as retrieval is (``golden compare``, the Results
page, ``POST /answers/evaluations``): one number per question and metric, with its provenance.

What comes from where, and why:

* the questions, their strata, whether each is answerable, and the short reference answers
  come from the frozen version: the same reference for every system scored against it, as a
  frozen qrels file is for runs;
* the answers, their outcome marks, nugget assignments, citations and the judge's claim
  verdicts are labels *of the system's answers*, which live in the store beside the answers
  (as a run's judged fraction does): they are read as they stand when the evaluation is
  recorded, and a claim check of an answer whose text changed since is stale and not used.

Faithfulness is the one metric a model decides: it is recorded as judged, with the judge's
model and the shas of the decomposition and check prompts (``rubric_sha``
``decompose:<sha>+check:<sha>``), so two evaluations judged by different prompts are told apart.
A system whose answers were checked by more than one model or prompt pair is refused: one
evaluation is one judge.

Correctness by rubric is two metrics, one per grader: ``rubric_human`` (people's current marks
of each criterion, averaged over the people who marked it) and ``rubric_judge`` (the judge's
current marks), each the frozen version's criteria for the question combined with their fixed
weights; an answer not marked on every criterion, or marked on text since replaced, has no
score. ``rubric_judge`` is judged too, its prompt recorded as ``rubric:<sha>``. One evaluation
row carries one ``judge_model`` and one ``rubric_sha`` for all its judged metrics, so when both
faithfulness and rubric_judge are judged they are recorded together, honestly: the model once
when both used the same one (else ``faithfulness=<model>; rubric_judge=<model>``), and the
shas always named per metric (``faithfulness=decompose:..+check:..; rubric_judge=rubric:..``),
so two evaluations compare as the same judge only when both judges match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from annotator.evidence import nuggets as nugget_service
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from annotator.versions import versioning
from golden_store.core.errors import GoldenError, NotFoundError, ValidationError
from golden_store.db.store import Store
from golden_store.live import answer_citations, answer_grades, faithfulness
from golden_store.live import nuggets as live_nuggets
from golden_store.scoring.answer_metrics import ANSWER_METRICS, Question, SystemAnswer, answer_metrics
from golden_store.scoring.rubric_agreement import answer_score

FAITHFULNESS = "faithfulness"
RUBRIC_JUDGE = "rubric_judge"
JUDGED = (FAITHFULNESS, RUBRIC_JUDGE)


@dataclass(frozen=True)
class AnswerScoring:
    """One system's answers scored against one version, before anything is recorded."""

    system: str
    version: str
    per_query: pd.DataFrame
    strata: dict[str, str]
    corpus_digest: str | None
    judge_model: str | None = None
    rubric_sha: str | None = None
    unanswered: list[str] = field(default_factory=list)  # the version's questions with no answer
    judges: dict[str, tuple[str, str]] = field(default_factory=dict)  # judged metric -> (model, prompt sha)

    @property
    def means(self) -> dict[str, float | None]:
        """Each metric's mean over the questions it applies to (None: it applies to none)."""
        out: dict[str, float | None] = {}
        for m in self.per_query.columns:
            col = self.per_query[m].dropna()
            out[m] = float(col.mean()) if len(col) else None
        return out

    @property
    def counts(self) -> dict[str, int]:
        return {m: int(self.per_query[m].notna().sum()) for m in self.per_query.columns}

    def as_dict(self) -> dict:
        return {"system": self.system, "version": self.version, "questions_answered": len(self.per_query),
                "unanswered": self.unanswered, "means": self.means, "n": self.counts,
                "judge_model": self.judge_model, "rubric_sha": self.rubric_sha,
                "judges": {m: {"model": j[0], "prompt_sha": j[1]} for m, j in self.judges.items()},
                "definitions": ANSWER_METRICS}


def _questions(gs) -> list[Question]:
    q = gs.queries
    answerable = q["answerable"] if "answerable" in q.columns else pd.Series(True, index=q.index)
    return [Question(str(r.query_id), None if pd.isna(r.stratum) else str(r.stratum), bool(a))
            for r, a in zip(q.itertuples(index=False), answerable)]


def _references(gs) -> dict[str, list[str]]:
    refs: dict[str, list[str]] = {}
    for r in gs.reference_answers.itertuples(index=False):
        short = r.short_answer
        if isinstance(short, str) and short.strip():
            refs.setdefault(str(r.query_id), []).append(short)
    return refs


def _judge_of(checks: list[dict]) -> tuple[str | None, str | None]:
    judges = {(c["model"], f"decompose:{c['decompose_sha']}+check:{c['check_sha']}") for c in checks}
    if len(judges) > 1:
        models = ", ".join(sorted({m for m, _ in judges}))
        raise ValidationError(f"This system's claim checks were made by more than one judge or prompt ({models}): "
                              f"one evaluation is one judge. Check its answers again with one judge "
                              f"(golden answers check-claims --system ... --yes), then record.")
    return next(iter(judges), (None, None))


def combined_judge(judges: dict[str, tuple[str, str]]) -> tuple[str | None, str | None]:
    """The one (judge_model, rubric_sha) an evaluation records for its judged metrics (see the
    module docstring): a single judge as it is, two named per metric."""
    if not judges:
        return None, None
    if len(judges) == 1:
        return next(iter(judges.values()))
    models = {m for m, _ in judges.values()}
    model = next(iter(models)) if len(models) == 1 else "; ".join(f"{k}={m}" for k, (m, _) in sorted(judges.items()))
    return model, "; ".join(f"{k}={sha}" for k, (_, sha) in sorted(judges.items()))


def _frozen_criteria(gs) -> dict[str, list[dict]]:
    """query id -> the version's criteria for its answers (its own, else its stratum's)."""
    crit = gs.answer_criteria
    if crit.empty:
        return {}
    own: dict[str, list[dict]] = {}
    of_stratum: dict[str, list[dict]] = {}
    for r in crit.sort_values(["scope", "scope_id", "position", "criterion_id"]).itertuples(index=False):
        c = {"criterion_id": str(r.criterion_id), "weight": float(r.weight), "scale_max": int(r.scale_max)}
        (own if r.scope == "query" else of_stratum).setdefault(str(r.scope_id), []).append(c)
    out: dict[str, list[dict]] = {}
    for r in gs.queries.itertuples(index=False):
        stratum = None if pd.isna(r.stratum) else str(r.stratum)
        found = own.get(str(r.query_id)) or (of_stratum.get(stratum) if stratum else None)
        if found:
            out[str(r.query_id)] = found
    return out


def _rubric_scores(store: Store, system: str, criteria: dict[str, list[dict]]
                   ) -> tuple[dict[str, float], dict[str, float], tuple[str, str] | None]:
    """(query -> people's rubric score, query -> the judge's, the judge as (model, sha)) from the
    current grades that are not stale; an answer scores only when every criterion is marked.
    Grades by more than one judge or prompt are refused, as for faithfulness."""
    human: dict[str, dict[str, list[int]]] = {}
    judge: dict[str, dict[str, dict]] = {}
    for g in answer_grades.current_grades(store, system):
        if g["stale"] or g["query_id"] not in criteria:
            continue
        if g["kind"] == "human":
            human.setdefault(g["query_id"], {}).setdefault(g["criterion_id"], []).append(g["mark"])
        else:
            held = judge.setdefault(g["query_id"], {})
            if g["criterion_id"] not in held or g["grade_id"] > held[g["criterion_id"]]["grade_id"]:
                held[g["criterion_id"]] = g
    people = {q: answer_score(criteria[q], {c: sum(m) / len(m) for c, m in marks.items()})
              for q, marks in human.items()}
    by_judge = {q: answer_score(criteria[q], {c: g["mark"] for c, g in marks.items()}) for q, marks in judge.items()}
    used = {(g["grader"], f"rubric:{g['prompt_sha']}") for q, marks in judge.items() if by_judge[q] is not None
            for g in marks.values() if g["criterion_id"] in {c["criterion_id"] for c in criteria[q]}}
    if len(used) > 1:
        models = ", ".join(sorted({m for m, _ in used}))
        raise ValidationError(f"This system's answers were rubric-graded by more than one judge or prompt ({models}): "
                              f"one evaluation is one judge. Grade its answers again with one judge "
                              f"(golden answers judge-rubric --system {system} --yes), then record.")
    return ({q: v for q, v in people.items() if v is not None}, {q: v for q, v in by_judge.items() if v is not None},
            next(iter(used), None))


def _current_checks(store: Store, system: str) -> dict[str, dict]:
    """Each answer's current claim check that still matches its text and is not a refusal."""
    return {c["query_id"]: c for c in faithfulness.current_checks(store, system)
            if c["outcome"] == "ok" and c["answer"] is not None
            and c["answer_sha"] == faithfulness.answer_sha(c["answer"])}


def _citations(store: Store, system: str) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for c in answer_citations.citations(store, system):
        valid, total = out.get(c["query_id"], (0, 0))
        out[c["query_id"]] = (valid + bool(c["valid"]), total + 1)
    return out


def _nuggets(store: Store, user: User, system: str) -> dict[str, tuple[float | None, float | None]]:
    per_answer, _ = nugget_service.scores(store, user)
    if per_answer.empty or "v" not in per_answer.columns:
        return {}
    rows = per_answer[(per_answer["system"] == system) & per_answer["complete"]]
    return {str(r.query_id): (r.v, r.a) for r in rows.itertuples(index=False)}


def score_answers(store: Store, user: User, version: str, system: str, *,
                  versions_dir: Path | str | None = None) -> AnswerScoring:
    """The per-question answer metrics of ``system`` against frozen ``version``."""
    require(user, Permission.VIEW_RESULTS)
    from golden_store.versions import load_version

    gs = load_version(version, versions_dir or versioning.versions_dir(store))
    texts = {a["query_id"]: a["answer"] for a in live_nuggets.answers(store, system)}
    if not texts:
        raise NotFoundError(f"No answers of system {system!r}: import them first (golden answers import FILE "
                            f"--system {system}).")
    outcomes = {o["query_id"]: o["outcome"] for o in live_nuggets.answer_outcomes(store, system)}
    checks = _current_checks(store, system)
    model, rubric = _judge_of(list(checks.values()))
    cites = _citations(store, system)
    nug = _nuggets(store, user, system)
    rubric_human, rubric_judge, rubric_of = _rubric_scores(store, system, _frozen_criteria(gs))
    answers = {}
    for qid, text in texts.items():
        c = checks.get(qid)
        valid, total = cites.get(qid, (0, 0))
        v, a = nug.get(qid, (None, None))
        answers[qid] = SystemAnswer(
            text=text or "", outcome=outcomes.get(qid, "unknown"),
            claims_supported=None if c is None else int(c["supported"]), claims=None if c is None else int(c["claims"]),
            citations_valid=valid, citations=total, nugget_v=v, nugget_a=a,
            rubric_human=rubric_human.get(qid), rubric_judge=rubric_judge.get(qid))
    questions = _questions(gs)
    per_query = answer_metrics(questions, answers, _references(gs))
    unanswered = sorted(q.query_id for q in questions if q.query_id not in answers)
    candidates = {FAITHFULNESS: None if model is None or rubric is None else (model, rubric), RUBRIC_JUDGE: rubric_of}
    judges = {m: j for m, j in candidates.items() if j is not None and per_query[m].notna().any()}
    judge_model, rubric_sha = combined_judge(judges)
    return AnswerScoring(system=system, version=version, per_query=per_query, strata=gs.strata,
                         corpus_digest=gs.manifest.get("corpus_digest"), judge_model=judge_model,
                         rubric_sha=rubric_sha, unanswered=unanswered, judges=judges)


@dataclass(frozen=True)
class RecordedAnswers:
    evaluation_id: str
    trial: int
    rows: int
    scoring: AnswerScoring


def record_answers(store: Store, user: User, *, evaluation_id: str, version: str, system: str,
                   trial: int = 0, replace: bool = False, git_sha: str | None = None,
                   config_sha: str | None = None, versions_dir: Path | str | None = None) -> RecordedAnswers:
    """Score and record, all or nothing: an engineer's act, as recording a run's scores is
    (IMPORT_RUNS). The evaluation's rows say ``run_level`` ``answer``, so it is compared only
    with other answer evaluations."""
    require(user, Permission.IMPORT_RUNS)
    from golden_store.live.results import ANSWER_LEVEL, record_evaluation
    from golden_store.versions.format import validate_name

    try:  # a name of this studio's versions only, never a path or URL (as golden score --record)
        validate_name(version)
    except GoldenError:
        raise ValidationError(f"version {version!r}: give the name of one of this studio's frozen versions (as "
                              f"golden versions lists it, e.g. golden.v3), not a path or URL.") from None
    sc = score_answers(store, user, version, system, versions_dir=versions_dir)
    if sc.per_query.empty:
        raise ValidationError(f"System {system!r} answered none of {version}'s questions: nothing to record.")
    judged = [m for m in JUDGED if m in sc.judges]
    per_query = sc.per_query.drop(columns=[m for m in JUDGED if m not in judged])
    per_query = per_query.loc[:, per_query.notna().any()]  # a metric that applies to no question is not recorded
    n = record_evaluation(store, evaluation_id, per_query, dataset_version=version, strata=sc.strata,
                          corpus_digest=sc.corpus_digest, config_sha=config_sha, system=system, git_sha=git_sha,
                          trial=trial, judge_model=sc.judge_model if judged else None,
                          rubric_sha=sc.rubric_sha if judged else None, judged_metrics=judged, replace=replace,
                          run_level=ANSWER_LEVEL)
    return RecordedAnswers(evaluation_id, trial, n, sc)
