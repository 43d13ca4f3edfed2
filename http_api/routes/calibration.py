"""Judge calibration over HTTP: read a calibration set, analyse it, save it pinned to its judge,
list the saved ones and compare two, the same figures as ``golden calibration ... --json``
and the Judge calibration page (:mod:`annotator.judge.calibration` does the work). A pipeline
re-validates its judge here on every change of model, prompt or rubric, then starts pool
grading with the saved calibration's id. A failed check is an answer (``passed: false``),
not an error; saving a failing calibration without acknowledging it is refused (422) and
stores nothing."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from starlette.concurrency import run_in_threadpool

from annotator.people.identity import User
from golden_store.db.store import Store
from http_api.auth import caller
from http_api.shapes import jsonable
from http_api.store import store
from http_api.uploads import saved

router = APIRouter(tags=["calibration"])

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]
SetFile = Annotated[UploadFile, File(description="calibration set: CSV with a header row, or JSONL; item_id, "
                                                 "human_label and judge_label and/or judge_p (P(FAIL))")]
CalibrationId = Annotated[str, Query(min_length=1, description="a saved calibration's id, e.g. c1")]


def _options(seed: int, fit_share: float, recalibrate: bool, max_missed_bad: float, max_false_fail: float,
             cut: int | None, flip: bool) -> dict[str, Any]:
    return {"seed": seed, "fit_share": fit_share, "recalibrate": recalibrate, "max_missed_bad": max_missed_bad,
            "max_false_fail": max_false_fail, "cut": cut, "flip": flip}


Seed = Annotated[int, Form(description="seed of the fit/report split")]
FitShare = Annotated[float, Form(gt=0, lt=1, description="share of items the band is fitted on")]
Recalibrate = Annotated[bool, Form(description="fit an isotonic map on the fit split before the band")]
MaxMissedBad = Annotated[float, Form(ge=0, le=1, description="target share of bad items the band may auto-pass")]
MaxFalseFail = Annotated[float, Form(ge=0, le=1, description="target share of good items the band may auto-fail")]
Cut = Annotated[int | None, Form(ge=1, le=3, description="pass/fail cut on a graded scale: pass = grade ≥ cut")]
Flip = Annotated[bool, Form(description="judge_p is P(pass): use 1 − judge_p")]


def _bytes(file: UploadFile) -> tuple[str, bytes]:
    with saved(file, "calibration.csv") as (path, name):
        return name, path.read_bytes()


@router.post("/calibrations/sets", summary="Read a calibration set and say what it holds (nothing is stored)")
async def upload_calibration_set(user: Caller, file: SetFile) -> dict[str, Any]:
    from annotator.judge import calibration

    def run() -> dict[str, Any]:
        name, data = _bytes(file)
        return jsonable(calibration.check_file(user, name, data))  # type: ignore[no-any-return]

    return await run_in_threadpool(run)


@router.post("/calibrations/analysis", summary="The judge against people on a calibration set, with every check")
async def analyse_calibration(user: Caller, file: SetFile, seed: Seed = 0, fit_share: FitShare = 0.5,
                              recalibrate: Recalibrate = True, max_missed_bad: MaxMissedBad = 0.02,
                              max_false_fail: MaxFalseFail = 0.02, cut: Cut = None,
                              flip: Flip = False) -> dict[str, Any]:
    from annotator.judge import calibration

    def run() -> dict[str, Any]:
        name, data = _bytes(file)
        opts = _options(seed, fit_share, recalibrate, max_missed_bad, max_false_fail, cut, flip)
        return jsonable(calibration.analyse_file(user, name, data, **opts))  # type: ignore[no-any-return]

    return await run_in_threadpool(run)


@router.post("/calibrations", status_code=201, summary="Analyse a calibration set and save it pinned to its judge")
async def save_calibration(s: TheStore, user: Caller, file: SetFile,
                           judge_model: Annotated[str, Form(min_length=1, description="the judge's model id")],
                           rubric: Annotated[str | None, Form(description="the judge's rubric text (default: the "
                                                                          "studio's judge rubric)")] = None,
                           note: Annotated[str | None, Form()] = None,
                           acknowledge_failed_checks: Annotated[bool, Form(description="save even though a check "
                                                                                       "fails, marked as failing")] = False,
                           seed: Seed = 0, fit_share: FitShare = 0.5, recalibrate: Recalibrate = True,
                           max_missed_bad: MaxMissedBad = 0.02, max_false_fail: MaxFalseFail = 0.02, cut: Cut = None,
                           flip: Flip = False) -> dict[str, Any]:
    from annotator.judge import calibration

    def run() -> dict[str, Any]:
        name, data = _bytes(file)
        opts = _options(seed, fit_share, recalibrate, max_missed_bad, max_false_fail, cut, flip)
        return jsonable(calibration.save_file(  # type: ignore[no-any-return]
            s, user, name, data, judge_model=judge_model, rubric=rubric, note=note,
            acknowledge_failed_checks=acknowledge_failed_checks, **opts))

    return await run_in_threadpool(run)


@router.get("/calibrations", summary="Saved calibrations: judge, κ, FAIL recall, band, failed checks")
def list_calibrations(s: TheStore, user: Caller) -> list[dict[str, Any]]:
    from annotator.judge import calibration

    return jsonable(calibration.list_saved(s, user))  # type: ignore[no-any-return]


@router.get("/calibrations/compare", summary="Two saved calibrations side by side, and the new judge against the old")
def compare_calibrations(s: TheStore, user: Caller, old: CalibrationId, new: CalibrationId) -> dict[str, Any]:
    from annotator.judge import calibration

    return jsonable(calibration.compare(s, user, old, new))  # type: ignore[no-any-return]
