"""Pool status, agreement, recorded evaluations (list, record, compare with the gate verdict):
the same figures as ``golden pool status``, ``golden agreement``, the Results page and
``golden compare``, in their ``--json`` shapes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
import pydantic
from pydantic import StringConstraints
from pydantic.json_schema import JsonDict
from starlette.concurrency import run_in_threadpool

from annotator.people.identity import User
from golden_store.db.store import Store
from golden_store.scoring.cells import MIN_CELL_N
from golden_store.versions.format import NAME_PATTERN
from http_api.auth import caller
from http_api.routes.versions import HIT_RULE, hit_rule_given
from http_api.shapes import jsonable
from http_api.store import store
from http_api.uploads import saved

router = APIRouter(tags=["results"])

# the version-name rule in the schema; the studio checks it (validate_name), in its own sentence
VERSION_NAME: JsonDict = {"pattern": NAME_PATTERN, "description": "a frozen version's name, e.g. golden.v3"}

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]


@router.get("/pool", summary="Grading coverage per run (graded@10, graded@k, AP vs Bpref)")
def get_pool_status(s: TheStore, user: Caller, k: Annotated[int, Query(ge=1, le=1000)] = 10) -> dict[str, Any]:
    from annotator.evaluation import runs_import

    return jsonable(runs_import.pool_status(s, user, k))  # type: ignore[no-any-return]


@router.get("/agreement", summary="Inter-annotator agreement on the grades, with the bar in force")
def get_agreement(s: TheStore, user: Caller,
                  round_id: Annotated[str | None, Query(description="a round id; 'all': every label, every round "
                                                                     "pooled; absent: the newest round of graded "
                                                                     "items, as the Agreement page opens")] = None,
                  ) -> dict[str, Any]:
    """``scope`` names the labels the figures are on (``round``: what ``round_id`` takes to read
    them again; ``name``: as the Agreement page's headline names them)."""
    from annotator.labeling import agreement as agreement_

    scope = agreement_.scope_of(s, user, round_id)
    rep = agreement_.compute(s, user, scope.round_id)
    summary = rep.group.summary()
    bar, chosen = agreement_.bar(s, user)
    check = bar.check(summary)
    summary["bar"] = {**bar.as_dict(), **chosen, **check.as_dict(), "describe": bar.describe()}
    return jsonable({"scope": scope.as_dict(), **summary, "pairs": rep.pair_table(),  # type: ignore[no-any-return]
                     "per_round": rep.per_round, "per_stratum": rep.per_stratum})


@router.get("/evaluations", summary="Recorded evaluations, newest first, with each metric's mean")
def list_evaluations(s: TheStore, user: Caller) -> list[dict[str, Any]]:
    from annotator.evaluation import evaluations as evaluations_

    return jsonable(evaluations_.recorded(s, user))  # type: ignore[no-any-return]


@router.post("/evaluations", status_code=201,
             summary="Score a run against a frozen version and record it (golden score --record)")
async def record_evaluation(s: TheStore, user: Caller, file: Annotated[UploadFile, File()],
                            evaluation_id: Annotated[str, Form(min_length=1)],
                            version: Annotated[str, Form(min_length=1, json_schema_extra=VERSION_NAME)],
                            measure: Annotated[list[Annotated[str, StringConstraints(min_length=1)]],
                                               Form(min_length=1)],
                            fmt: Annotated[Literal["trec", "jsonl"] | None, Form()] = None,
                            system: Annotated[str | None, Form()] = None,
                            git_sha: Annotated[str | None, Form()] = None,
                            config_sha: Annotated[str | None, Form()] = None,
                            trial: Annotated[int, Form(ge=0)] = 0,
                            replace: Annotated[bool, Form()] = False,
                            labels: Annotated[Literal["human", "human+judge"], Form()] = "human",
                            hit_rule: Annotated[str | None, Form(json_schema_extra=HIT_RULE)] = None) -> dict[str, Any]:
    from annotator.evaluation.evaluation_record import score_and_record

    def run() -> dict[str, Any]:
        with saved(file, "run.txt") as (path, name):
            rec = score_and_record(s, user, evaluation_id=evaluation_id, version=version, run_path=path,
                                   measures=measure, fmt=fmt, name=name, system=system, git_sha=git_sha,
                                   config_sha=config_sha, trial=trial, replace=replace, labels=labels,
                                   hit_rule=hit_rule_given(hit_rule))
        return {**jsonable(rec.__dict__),
                "summary": f"recorded {rec.rows} rows as evaluation {rec.evaluation_id!r} trial {rec.trial}"
                           f"{' (replacing the trial)' if replace else ''}; labels {rec.labels}"}

    return await run_in_threadpool(run)


@router.get("/evaluations/compare",
            summary="Paired comparison of two recorded evaluations with the gate verdict (golden compare)")
def compare_evaluations(s: TheStore, user: Caller, baseline: str, candidate: str,
            measure: Annotated[list[str] | None, Query()] = None, min_meaningful: float = 0.02,
            correction: Literal["bh", "bonferroni", "none"] = "bh",
            min_n: Annotated[int, Query(ge=1, description="paired questions a cell needs for a verdict; smaller "
                                                           "cells say 'too few'")] = MIN_CELL_N,
            allow_different_definitions: bool = False) -> dict[str, Any]:
    """``gate`` is PASS, WARN or FAIL (the overall verdicts). A comparison that compares
    nothing (a measure not recorded by both, no question in common, fewer than ``min_n``
    paired questions) is a 422 problem, never a PASS; so are two evaluations scored under
    different hit rules unless ``allow_different_definitions``."""
    from annotator.evaluation import evaluations as evaluations_
    from golden_store.scoring.compare import format_comparison

    c = evaluations_.compare(s, user, baseline, candidate, metrics=measure, min_meaningful=min_meaningful,
                             correction=correction, min_n=min_n,
                             allow_different_definitions=allow_different_definitions)
    return {**jsonable(c), "text": format_comparison(dict(c), baseline, candidate)}


class AnswerEvaluationIn(pydantic.BaseModel):
    """What ``golden answers evaluate --record`` takes: the system's answers are the ones imported
    (``POST /answers`` or ``golden answers import``), scored against ``version``."""

    evaluation_id: Annotated[str, StringConstraints(min_length=1)]
    version: Annotated[str, pydantic.Field(min_length=1, json_schema_extra=VERSION_NAME)]
    system: Annotated[str, StringConstraints(min_length=1)]
    trial: Annotated[int, pydantic.Field(ge=0)] = 0
    replace: bool = False
    git_sha: str | None = None


@router.get("/answers/evaluate", summary="A system's answers scored against a frozen version, not recorded "
                                         "(golden answers evaluate)")
def score_answers(s: TheStore, user: Caller, version: Annotated[str, Query(json_schema_extra=VERSION_NAME)],
                  system: str) -> dict[str, Any]:
    """Per metric: the mean over the questions it applies to and how many (``n``); a metric that
    applies to none has mean null, never 0."""
    from annotator.evaluation import answer_evaluation
    from annotator.versions import versioning

    sc = answer_evaluation.score_answers(s, user, version, system, versions_dir=versioning.versions_dir(s))
    return jsonable(sc.as_dict())  # type: ignore[no-any-return]


@router.post("/answers/evaluations", status_code=201,
             summary="Score a system's answers against a frozen version and record them as an evaluation, compared "
                     "and gated by /evaluations/compare like a run's")
def record_answer_evaluation(body: AnswerEvaluationIn, s: TheStore, user: Caller) -> dict[str, Any]:
    from annotator.evaluation import answer_evaluation
    from annotator.versions import versioning

    rec = answer_evaluation.record_answers(s, user, evaluation_id=body.evaluation_id, version=body.version,
                                           system=body.system, trial=body.trial, replace=body.replace,
                                           git_sha=body.git_sha, versions_dir=versioning.versions_dir(s))
    return {**jsonable(rec.scoring.as_dict()), "evaluation_id": rec.evaluation_id, "trial": rec.trial,
            "rows": rec.rows, "summary": f"recorded {rec.rows} rows as answer evaluation {rec.evaluation_id!r} "
                                         f"trial {rec.trial}{' (replacing the trial)' if body.replace else ''}"}


@router.get("/answers/faithfulness/corrected",
            summary="Claim-level faithfulness per system: the judge's share of supported claims and the same "
                    "corrected by people's claim reviews (prediction-powered, per judge verdict), with intervals")
def corrected_faithfulness(s: TheStore, user: Caller, system: str | None = None) -> dict[str, Any]:
    """``corrected`` is null with a ``reason`` while a judge verdict that holds claims has fewer
    than two reviewed ones; ``judge_only`` is the judge's figure as if it were right."""
    from annotator.evaluation.judge_corrected import corrected_faithfulness as corrected

    return jsonable({name: c.as_dict() for name, c in corrected(s, user, system).items()})  # type: ignore[no-any-return]


@router.get("/pool/judge-corrected",
            summary="Each system's relevant share of its judge-labeled top k: the relevance judge's, and the same "
                    "corrected by the pool's standing human sample (prediction-powered), with intervals "
                    "(golden pool judge-corrected)")
def corrected_retrieval(s: TheStore, user: Caller, system: str | None = None,
                        k: Annotated[int, Query(ge=1, le=1000)] = 10,
                        cut: Annotated[int, Query(ge=1, le=3, description="relevant = grade >= cut")] = 2,
                        ) -> dict[str, Any]:
    """``systems``: per active run, ``judge_only`` (the judge's share as if it were right) and
    ``corrected`` (null with ``note`` while people have graded none of its sampled items; a
    null ``mean`` with a ``reason`` when too few); ``not_offered`` says why nDCG@10 is not
    corrected."""
    from annotator.evaluation import judge_corrected_retrieval as jcr

    got = jcr.corrected_retrieval(s, user, system=system, k=k, cut=cut)
    return jsonable({"systems": {name: c.as_dict() for name, c in got.items()},  # type: ignore[no-any-return]
                     "not_offered": jcr.NOT_OFFERED})


@router.get("/answers/rubric/corrected",
            summary="Each system's mean rubric score: the rubric judge's, and the same corrected by people's grades "
                    "of the answer sample (prediction-powered, per question stratum), with intervals "
                    "(golden answers rubric-corrected)")
def corrected_rubric(s: TheStore, user: Caller, system: str | None = None) -> dict[str, Any]:
    """``corrected`` is null with ``note`` while people have graded none of the system's
    judge-scored answers, and has a null ``mean`` with a ``reason`` while a question stratum
    holding judge-scored answers has fewer than two people-graded ones."""
    from annotator.evaluation.judge_corrected_rubric import corrected_rubric as corrected

    return jsonable({name: c.as_dict() for name, c in corrected(s, user, system).items()})  # type: ignore[no-any-return]
