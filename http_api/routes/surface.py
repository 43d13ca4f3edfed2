"""The labeling surface's direct channel (``POST /surface/v1/batch``): a browser's batch of
labels written without a Streamlit rerun (:mod:`annotator.labeling.label_channel` says why and how).

Not under ``/api/v1`` and not in the schema: it is the app's own browser path, authenticated
by the label pass the page gave (in the body), not by an API token. The browser sends the
batch as ``text/plain`` JSON, a CORS "simple request" (no preflight round trip per batch), and
reads the answer because it allows any origin: the pass, not a cookie, is the credential, so
another origin's page has nothing to send."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from annotator.people import identity
from annotator.labeling.label_channel import CHANNEL, ChannelRefused
from http_api.store import store_of

PATH = "/surface/v1/batch"
MAX_BODY = 4 * 1024 * 1024  # 200 labels with notes fit many times over
TOO_LARGE = f"A batch is at most {MAX_BODY // (1024 * 1024)} MB; send fewer labels at a time."
_CORS = {"Access-Control-Allow-Origin": "*", "Cache-Control": "no-store"}

router = APIRouter(include_in_schema=False)


@router.post(PATH)
async def batch(request: Request) -> JSONResponse:
    raw = await _body_within_limit(request)
    if raw is None:
        return JSONResponse({"refused": TOO_LARGE}, status_code=413, headers=_CORS)
    try:
        body = json.loads(raw)
    except ValueError:
        return JSONResponse({"refused": "A batch is JSON."}, status_code=400, headers=_CORS)
    client = request.client.host if request.client else None
    local = identity.is_loopback_client(client, dict(request.headers)) if client else False
    try:
        answer = await run_in_threadpool(CHANNEL.batch, store_of(request.app), body, local_client=local)
    except ChannelRefused as exc:
        return JSONResponse({"refused": str(exc)}, status_code=401, headers=_CORS)
    return JSONResponse(answer, headers=_CORS)


async def _body_within_limit(request: Request) -> bytes | None:
    """The body, or None once it is known to be over ``MAX_BODY``: at once from a Content-Length
    over it (nothing read), else while the chunks arrive (a chunked body is read only until it
    passes the cap). No pass is needed to reach this route, so the body is never read whole
    before the check (issue 37, probe L8: three 500 MB bodies took the server to 2.2 GB)."""
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > MAX_BODY:
        return None
    chunks: list[bytes] = []
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > MAX_BODY:
            return None  # the server closes the connection: the rest is never read
        chunks.append(chunk)
    return b"".join(chunks)
