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
from golden_store.live import answer_citations, faithfulness
from golden_store.live import nuggets as live_nuggets
from golden_store.scoring.answer_metrics import ANSWER_METRICS, Question, SystemAnswer, answer_metrics

FAITHFULNESS = "faithfulness"


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
                "judge_model": self.judge_model, "rubric_sha": self.rubric_sha, "definitions": ANSWER_METRICS}


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
    answers = {}
    for qid, text in texts.items():
        c = checks.get(qid)
        valid, total = cites.get(qid, (0, 0))
        v, a = nug.get(qid, (None, None))
        answers[qid] = SystemAnswer(
            text=text or "", outcome=outcomes.get(qid, "unknown"),
            claims_supported=None if c is None else int(c["supported"]), claims=None if c is None else int(c["claims"]),
            citations_valid=valid, citations=total, nugget_v=v, nugget_a=a)
    questions = _questions(gs)
    per_query = answer_metrics(questions, answers, _references(gs))
    unanswered = sorted(q.query_id for q in questions if q.query_id not in answers)
    return AnswerScoring(system=system, version=version, per_query=per_query, strata=gs.strata,
                         corpus_digest=gs.manifest.get("corpus_digest"), judge_model=model, rubric_sha=rubric,
                         unanswered=unanswered)


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
    judged = [FAITHFULNESS] if sc.judge_model is not None and sc.per_query[FAITHFULNESS].notna().any() else []
    per_query = sc.per_query if judged else sc.per_query.drop(columns=[FAITHFULNESS])
    per_query = per_query.loc[:, per_query.notna().any()]  # a metric that applies to no question is not recorded
    n = record_evaluation(store, evaluation_id, per_query, dataset_version=version, strata=sc.strata,
                          corpus_digest=sc.corpus_digest, config_sha=config_sha, system=system, git_sha=git_sha,
                          trial=trial, judge_model=sc.judge_model if judged else None,
                          rubric_sha=sc.rubric_sha if judged else None, judged_metrics=judged, replace=replace,
                          run_level=ANSWER_LEVEL)
    return RecordedAnswers(evaluation_id, trial, n, sc)
