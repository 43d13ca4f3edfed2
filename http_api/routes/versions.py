"""Frozen versions: list, manifest, the manifest's files (streamed), freeze, verify.

A file is served only when the version's manifest lists it (or it is the manifest or the
signature): a name is never joined onto a path before that check, so no ``..`` or link
leads out of the version's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field
from pydantic.json_schema import JsonDict
from starlette.concurrency import run_in_threadpool

from annotator.versions import versioning
from annotator.people.identity import User
from golden_store.core.errors import NotFoundError
from golden_store.db.store import Store
from golden_store.versions import thaw
from golden_store.versions.format import NAME_PATTERN
from http_api.auth import caller
from http_api.shapes import jsonable
from http_api.store import store, versions_dir

router = APIRouter(tags=["versions"])

Caller = Annotated[User, Depends(caller)]
TheStore = Annotated[Store, Depends(store)]
VersionsDir = Annotated[Path | str, Depends(versions_dir)]
# a version's name, never a path: checked before anything is opened (a folder path would open
# a folder outside the versions location: probe A6), and stated in the schema
VersionName = Annotated[str, PathParam(pattern=NAME_PATTERN, description="a version's name, e.g. golden.v3")]
# the hit rules golden_store.versions.chunk_labels.parse_hit_rule reads, as a pattern a client can
# check before sending (a fraction in (0, 1]; tests/http_api/test_schema_constraints.py holds the two together)
HIT_RULE_PATTERN = r"^\s*(any_overlap|contains_span|min_overlap\(\s*(0?\.\d*[1-9]\d*|1(\.0+)?)\s*\))?\s*$"
HIT_RULE: JsonDict = {"pattern": HIT_RULE_PATTERN,
                      "description": "any_overlap (the default, also when empty), contains_span, or min_overlap(F) "
                                     "with 0 < F <= 1, e.g. min_overlap(0.5)"}


def hit_rule_given(text: str | None) -> str | None:
    """The hit rule a request names, None for the default (left out, empty or blank, as the
    schema's pattern allows)."""
    return (text or "").strip() or None


SIGNATURE_FILE = "signature.json"  # golden_store.versions.signing.SIGNATURE_FILE (checked by a test)


class FreezeRequest(BaseModel):
    # the pattern is stated for clients; the studio checks it (validate_name) in its own sentence
    name: str = Field(description="the version's name, e.g. golden.v3", json_schema_extra={"pattern": NAME_PATTERN})
    note: str = ""
    hit_rule: str | None = Field(None, json_schema_extra=HIT_RULE)


@router.get("/versions", summary="Frozen versions, newest first")
def list_versions(user: Caller, vdir: VersionsDir) -> list[dict[str, Any]]:
    return jsonable(versioning.list_versions(user, vdir))  # type: ignore[no-any-return]


@router.get("/versions/{name}", summary="A version's manifest (files with their sha256, digests, counts)")
def get_manifest(name: VersionName, user: Caller, vdir: VersionsDir) -> dict[str, Any]:
    return jsonable(versioning.manifest(user, vdir, name))  # type: ignore[no-any-return]


# what the 200 carries, for a generated client: the file's bytes as frozen (Parquet, or the
# manifest's and signature's JSON), its sha256 in X-Golden-SHA256 for a file the manifest lists
VERSION_FILE = {"description": "The file's bytes as frozen",
                "headers": {"X-Golden-SHA256": {"description": "the file's sha256 as the manifest lists it "
                                                                "(not sent for manifest.json and signature.json)",
                                                 "schema": {"type": "string"}}},
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                            "application/json": {"schema": {"type": "object"}}}}


@router.get("/versions/{name}/files/{file}", response_class=FileResponse, responses={200: VERSION_FILE},
            summary="One file of a version, as frozen (only files its manifest lists)")
def get_version_file(name: VersionName, file: str, user: Caller, vdir: VersionsDir) -> FileResponse:
    folder, m = versioning.version_folder(user, vdir, name)  # object storage: the checked local copy
    listed = dict(m.get("files") or {})
    allowed = {*listed, "manifest.json"} | ({SIGNATURE_FILE} if (folder / SIGNATURE_FILE).is_file() else set())
    if file not in allowed:
        raise NotFoundError(f"Version {name!r} has no file {file!r}; its files are "
                            f"{', '.join(sorted(allowed))}.")
    path = folder / file
    headers = {"X-Golden-SHA256": str(listed[file]["sha256"])} if file in listed else {}
    return FileResponse(path, filename=file, headers=headers,
                        media_type="application/json" if file.endswith(".json") else "application/octet-stream")


@router.post("/versions", status_code=201, summary="Freeze the live store into a new immutable version")
async def freeze_version(body: FreezeRequest, s: TheStore, user: Caller) -> dict[str, Any]:
    def run() -> dict[str, Any]:
        res = versioning.freeze(s, user, body.name, note=body.note, hit_rule=hit_rule_given(body.hit_rule))
        m = res.manifest
        return {"name": res.name, "manifest": jsonable(thaw(m)),
                "notes": [*versioning.left_out(m), *versioning.judge_label_lines(m)]}

    return await run_in_threadpool(run)


@router.get("/versions/{name}/verify", summary="Re-hash a version and re-check it against its corpus")
async def verify_version(name: VersionName, s: TheStore, user: Caller, vdir: VersionsDir) -> dict[str, Any]:
    from golden_store.live.documents import store_corpus_digest

    def run() -> dict[str, Any]:
        rep = versioning.verify(user, vdir, name, live_corpus_digest=store_corpus_digest(s))
        return {"name": rep.name, "ok": rep.ok, "problems": rep.problems, "warnings": rep.warnings,
                "checked": rep.checked}

    return await run_in_threadpool(run)
