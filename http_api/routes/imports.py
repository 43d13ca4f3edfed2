"""Imports: runs, transcripts, answers, queries. Each upload is size-limited as it arrives
(:mod:`http_api.uploads`), then handed to the annotator importer the CLI uses, which is all
or nothing (one transaction): a refused file leaves the store as it was."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, UploadFile
from starlette.concurrency import run_in_threadpool

from annotator.people.identity import User
from golden_store.db.store import Store
from http_api.auth import caller
from http_api.store import store
from http_api.uploads import saved

router = APIRouter(tags=["imports"])

# a system's name as a form field: required and not empty (a form sends an empty field as no
# field, refused as missing); the schema says minLength 1 so a generated client knows
SystemName = Annotated[str, Form(min_length=1, description="the system's name, e.g. bm25")]

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]


@router.post("/runs", status_code=201, summary="Import a system's TREC or JSONL passage run (all or nothing)")
async def import_run(s: TheStore, user: Caller, file: Annotated[UploadFile, File()],
                     system: SystemName,
                     fmt: Annotated[Literal["trec", "jsonl"] | None, Form()] = None,
                     replace: Annotated[bool, Form()] = False,
                     skip_unknown: Annotated[bool, Form()] = False,
                     skip_unknown_docs: Annotated[bool, Form()] = False) -> dict[str, Any]:
    from annotator.evaluation import runs_import

    def run() -> dict[str, Any]:
        with saved(file, "run.txt") as (path, name):
            rep = runs_import.import_run_file(s, user, path, system, fmt, replace=replace,
                                              skip_unknown=skip_unknown, skip_unknown_docs=skip_unknown_docs,
                                              name=name)
        return {"system": rep.system, "n_results": rep.n_results, "fmt": rep.fmt,
                "skipped_lines": rep.skipped_lines, "skipped_queries": list(rep.skipped_queries),
                "skipped_doc_lines": rep.skipped_doc_lines, "skipped_docs": list(rep.skipped_docs),
                "summary": rep.summary()}

    return await run_in_threadpool(run)


@router.post("/transcripts", status_code=201, summary="Import evaluation transcripts (JSONL, all or nothing)")
async def import_transcripts(s: TheStore, user: Caller, file: Annotated[UploadFile, File()]) -> dict[str, Any]:
    from annotator.evaluation import transcripts

    def run() -> dict[str, Any]:
        with saved(file, "transcripts.jsonl") as (path, name):
            n = transcripts.import_file(s, user, path, name=name)
        return {"imported": n, "summary": f"Imported {n} transcript(s)."}

    return await run_in_threadpool(run)


@router.post("/answers", status_code=201, summary="Import a system's answers (JSONL, all or nothing)")
async def import_answers(s: TheStore, user: Caller, file: Annotated[UploadFile, File()],
                         system: SystemName,
                         replace: Annotated[bool, Form()] = False) -> dict[str, Any]:
    from annotator.evidence import nuggets

    def run() -> dict[str, Any]:
        with saved(file, "answers.jsonl") as (path, name):
            n = nuggets.import_answers(s, user, str(path), system, replace=replace, name=name)
        return {"imported": n, "system": system, "summary": f"Imported {n} answer(s) of {system!r}."}

    return await run_in_threadpool(run)


@router.post("/queries", status_code=201, summary="Import queries from CSV or JSONL (all or nothing)")
async def import_queries(s: TheStore, user: Caller, file: Annotated[UploadFile, File()],
                         update: Annotated[bool, Form()] = False,
                         unhold_reason: Annotated[str | None, Form()] = None) -> dict[str, Any]:
    """An import that would clear a question's held_out flag is refused (422), naming each such
    question, unless unhold_reason is given by a lead or admin token (an engineer's is refused,
    403); the reason is recorded with each such revision. Un-holding is a lead's decision: a
    pipeline re-importing from a source without the flag must not open test questions to a
    hosted model unnoticed."""
    from annotator.evidence import query_editing
    from golden_store.core import textin
    from golden_store.core.errors import ValidationError

    def run() -> dict[str, Any]:
        with saved(file, "queries.jsonl") as (path, name):
            try:
                data = textin.read_file(path, name)
            except ValidationError as exc:
                raise ValidationError(f"Query import refused: {exc}") from None
            res = query_editing.import_file(s, user, name, data, update=update, unhold_reason=unhold_reason)
        return {**res, "summary": f"Queries: {res['added']} added, {res['updated']} updated, "
                                  f"{res['unchanged']} unchanged."
                                  + (f" Taken out of the held-out set: {', '.join(res['unheld'])}."
                                     if res.get("unheld") else "")}

    return await run_in_threadpool(run)
