"""Uploads: size-limited while they arrive, copied to a temporary file under their own name
(the importers tell a format by its suffix and name the file in their messages), removed
afterwards. Never read whole into memory: Starlette spools a part past 1 MB to disk, and the
copy goes in chunks."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import UploadFile
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from golden_store.core.errors import GoldenError

DEFAULT_MAX_UPLOAD_MB = 512
ENV = "GOLDEN_API_MAX_UPLOAD_MB"
_CHUNK = 1 << 20
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def max_upload_mb() -> float:
    """``GOLDEN_API_MAX_UPLOAD_MB`` (read per request, so an operator's change needs no code)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return float(DEFAULT_MAX_UPLOAD_MB)
    try:
        mb = float(raw)
    except ValueError:
        raise GoldenError(f"{ENV}={raw!r} is not a number of megabytes (e.g. 512).") from None
    if mb <= 0:
        raise GoldenError(f"{ENV}={raw!r}: give a positive number of megabytes (e.g. 512).")
    return mb


def too_large_message(mb: float) -> str:
    return (f"The upload is larger than the server's limit of {mb:g} MB; split the file, or ask "
            f"the operator to raise {ENV}.")


class UploadLimit:
    """ASGI middleware: a request body past the limit is refused with 413 — at once when its
    Content-Length says so, else as soon as the bytes received pass it (chunked uploads)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        mb = max_upload_mb()
        limit = int(mb * (1 << 20))
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            from http_api.problems import problem

            await problem(413, too_large_message(mb), instance=scope["path"], kind="upload-too-large")(
                scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # a Starlette HTTPException passes FastAPI's body parsing as it is
                    raise HTTPException(413, too_large_message(mb))
            return message

        await self.app(scope, counted, send)


def _safe_name(filename: str | None, fallback: str) -> str:
    """The upload's base name, reduced to safe characters (it names a file in a temp folder)."""
    base = Path((filename or "").replace("\\", "/")).name
    base = _SAFE.sub("_", base).strip("._")
    return base[:120] or fallback


@contextmanager
def saved(upload: UploadFile, fallback: str) -> Iterator[tuple[Path, str]]:
    """(the upload copied to a temporary file, the name messages call it), removed afterwards."""
    name = _safe_name(upload.filename, fallback)
    folder = Path(tempfile.mkdtemp(prefix="golden-upload-"))
    try:
        path = folder / name
        upload.file.seek(0)
        with path.open("wb") as out:
            shutil.copyfileobj(upload.file, out, _CHUNK)
        try:
            yield path, name
        except GoldenError as exc:
            _name_the_upload(exc, {str(path): name, str(folder): "the upload"})
            raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _name_the_upload(exc: GoldenError, names: dict[str, str]) -> None:
    """Say the upload's own name where an importer's sentence named its temporary copy
    ("/tmp/golden-upload-x1/run.trec line 1: ..."): the caller never saw that path, and it
    is the server's (the folder is gone when the answer is made, so the problem handler's
    redaction cannot recognise it)."""
    def renamed(text: str) -> str:
        for temp, shown in names.items():
            text = text.replace(temp, shown)
        return text

    exc.args = tuple(renamed(a) if isinstance(a, str) else a for a in exc.args)
    for attr in ("summary", "reason"):
        if isinstance(getattr(exc, attr, None), str):
            setattr(exc, attr, renamed(getattr(exc, attr)))
    if isinstance(getattr(exc, "problems", None), list):
        exc.problems = [renamed(p) if isinstance(p, str) else p for p in exc.problems]  # type: ignore[attr-defined]
