"""A Python client of the studio's HTTP API (issue 28): what a CI job or a RAG system uses
instead of the store's database credentials or a copy of the versions folder.

    from golden_store.client import Studio

    studio = Studio("https://studio.example.com", token)   # or $GOLDEN_SERVER / $GOLDEN_TOKEN
    studio.import_run("run.trec", system="bm25")
    studio.freeze("golden.v3", note="nightly")
    gs = studio.load_version("golden.v3")                   # a FrozenVersion, as load_version gives

Methods are named for the API's nouns and return its JSON. A refused request raises
:class:`StudioError` with the server's one-sentence ``detail`` and HTTP ``status``.
Files go up and come down streamed, never whole in memory; a downloaded version is checked
against its manifest's sha256 digests before it is used."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from golden_store.core.errors import GoldenError

API_PREFIX = "/api/v1"
SIGNATURE_FILE = "signature.json"
_CHUNK = 1 << 20


class StudioError(GoldenError):
    """The API refused a request (``status``: its HTTP status; ``problem``: the whole problem
    document) or could not be reached (``status`` None). ``str()`` is the server's sentence."""

    def __init__(self, detail: str, status: int | None = None, problem: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.problem = problem or {}
        self.problems: list[str] = list(self.problem.get("problems") or [])


def api_base(url: str) -> str:
    """``https://host[/prefix]`` -> ``https://host[/prefix]/api/v1`` (given with or without it)."""
    base = url.strip().rstrip("/")
    return base if base.endswith(API_PREFIX) else base + API_PREFIX


class Studio:
    """A studio's API. ``url``: the server (default ``$GOLDEN_SERVER``); ``token``: an API
    token (default ``$GOLDEN_TOKEN``; an admin makes one with ``golden tokens create``)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 600.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        url = url or os.environ.get("GOLDEN_SERVER", "").strip()
        if not url:
            raise GoldenError("No studio to talk to: pass its URL, or set GOLDEN_SERVER (e.g. http://studio:8502).")
        self.url = api_base(url)
        token = token if token is not None else os.environ.get("GOLDEN_TOKEN", "").strip()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Studio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- plumbing -------------------------------------------------------------------------------

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            r = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StudioError(f"Cannot reach the studio at {self.url}: {exc}.") from None
        _raise_for_problem(r)
        return r

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, **kwargs).json()

    def _upload(self, path: str | Path, endpoint: str, data: dict[str, Any]) -> Any:
        p = Path(path)
        if not p.is_file():
            raise GoldenError(f"{p}: no such file to upload.")
        form = {k: _form_value(v) for k, v in data.items() if v is not None}
        with p.open("rb") as fh:  # httpx streams the file in chunks
            return self._json("POST", endpoint, files={"file": (p.name, fh)}, data=form)

    # ---- the API's nouns ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return dict(self._json("GET", "/health"))

    def me(self) -> dict[str, Any]:
        return dict(self._json("GET", "/me"))

    def import_run(self, path: str | Path, system: str, fmt: str | None = None, replace: bool = False,
                   skip_unknown: bool = False, skip_unknown_docs: bool = False) -> dict[str, Any]:
        return dict(self._upload(path, "/runs", {"system": system, "fmt": fmt, "replace": replace,
                                                 "skip_unknown": skip_unknown,
                                                 "skip_unknown_docs": skip_unknown_docs}))

    def import_transcripts(self, path: str | Path) -> dict[str, Any]:
        return dict(self._upload(path, "/transcripts", {}))

    def import_answers(self, path: str | Path, system: str, replace: bool = False) -> dict[str, Any]:
        return dict(self._upload(path, "/answers", {"system": system, "replace": replace}))

    def import_queries(self, path: str | Path, update: bool = False, unhold_reason: str | None = None) -> dict[str, Any]:
        return dict(self._upload(path, "/queries", {"update": update, "unhold_reason": unhold_reason}))

    def versions(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/versions"))

    def manifest(self, name: str) -> dict[str, Any]:
        return dict(self._json("GET", f"/versions/{_seg(name)}"))

    def freeze(self, name: str, note: str = "", hit_rule: str | None = None) -> dict[str, Any]:
        return dict(self._json("POST", "/versions", json={"name": name, "note": note, "hit_rule": hit_rule}))

    def verify(self, name: str) -> dict[str, Any]:
        return dict(self._json("GET", f"/versions/{_seg(name)}/verify"))

    def download_version(self, name: str, dest_dir: str | Path) -> Path:
        """Every file of version ``name`` into ``dest_dir/name`` (created whole or not at all),
        each checked against the manifest's sha256; returns the version's folder. A folder
        already there with the same manifest is kept as it is."""
        from golden_store.versions import validate_name

        dest = Path(dest_dir) / validate_name(name)
        raw_manifest = self._send("GET", f"/versions/{_seg(name)}/files/manifest.json").content
        if dest.exists():
            if (dest / "manifest.json").is_file() and (dest / "manifest.json").read_bytes() == raw_manifest:
                return dest
            raise GoldenError(f"{dest} exists and holds another version's files; remove it or pick another folder.")
        files = json.loads(raw_manifest).get("files") or {}
        odd = [f for f in files if not _plain_file_name(f)]
        if odd:  # a server's manifest names files, never paths: nothing is written outside the folder
            raise StudioError(f"Version {name!r}: the manifest names files that are not plain file names "
                              f"({', '.join(map(repr, odd[:3]))}); nothing was downloaded.")
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=dest.parent))
        try:
            (part / "manifest.json").write_bytes(raw_manifest)
            for fname, meta in files.items():
                self._download(name, fname, part / fname, expected=str(meta["sha256"]))
            try:
                self._download(name, SIGNATURE_FILE, part / SIGNATURE_FILE, expected=None)
            except StudioError as exc:
                if exc.status != 404:
                    raise
            part.rename(dest)  # nothing at dest until every file is there and checked
        finally:
            shutil.rmtree(part, ignore_errors=True)
        return dest

    def _download(self, name: str, fname: str, out: Path, *, expected: str | None) -> None:
        h = hashlib.sha256()
        try:
            with self._http.stream("GET", f"/versions/{_seg(name)}/files/{_seg(fname)}") as r:
                if r.status_code >= 400:
                    r.read()
                    _raise_for_problem(r)
                with out.open("wb") as fh:
                    for chunk in r.iter_bytes(_CHUNK):
                        h.update(chunk)
                        fh.write(chunk)
        except httpx.HTTPError as exc:
            raise StudioError(f"Cannot reach the studio at {self.url}: {exc}.") from None
        if expected is not None and h.hexdigest() != expected.removeprefix("sha256:"):
            raise StudioError(f"Version {name!r}: {fname} arrived with sha256 {h.hexdigest()}, not the manifest's "
                              f"{expected}; nothing was kept. Try again, or run golden verify {name} on the server.")

    def load_version(self, name: str, cache_dir: str | Path | None = None) -> Any:
        """Download version ``name`` (into ``cache_dir``, default a new temporary folder) and
        open it with :func:`golden_store.load_version` (which checks it again)."""
        from golden_store.versions import load_version

        folder = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="golden-version-"))
        self.download_version(name, folder)
        return load_version(name, folder)

    def pool_status(self, k: int = 10) -> dict[str, Any]:
        return dict(self._json("GET", "/pool", params={"k": k}))

    def agreement(self, round_id: str | None = None) -> dict[str, Any]:
        return dict(self._json("GET", "/agreement", params={"round_id": round_id} if round_id else None))

    def evaluations(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/evaluations"))

    def record_evaluation(self, evaluation_id: str, version: str, run: str | Path, measures: Iterable[str], *,
                          system: str | None = None, git_sha: str | None = None, config_sha: str | None = None,
                          trial: int = 0, replace: bool = False, labels: str = "human", fmt: str | None = None,
                          hit_rule: str | None = None) -> dict[str, Any]:
        """Score ``run`` against ``version`` on the server and record it (``golden score --record``)."""
        return dict(self._upload(run, "/evaluations", {
            "evaluation_id": evaluation_id, "version": version, "measure": list(measures), "system": system,
            "git_sha": git_sha, "config_sha": config_sha, "trial": trial, "replace": replace, "labels": labels,
            "fmt": fmt, "hit_rule": hit_rule}))

    def compare(self, baseline: str, candidate: str, measures: Iterable[str] | None = None,
                min_meaningful: float = 0.02, correction: str = "bh", min_n: int | None = None,
                allow_different_definitions: bool = False) -> dict[str, Any]:
        """The paired comparison with the gate verdict (``gate``: PASS, WARN or FAIL), as
        ``golden compare``. A comparison that compares nothing (a measure not recorded by both
        evaluations, no question in common, too few questions) raises :class:`StudioError`
        (HTTP 422): it is never a PASS. ``min_n``: paired questions a cell needs for a verdict
        (the server's default when None). Two evaluations scored under different hit rules are
        refused too, unless ``allow_different_definitions``."""
        params: dict[str, Any] = {"baseline": baseline, "candidate": candidate, "min_meaningful": min_meaningful,
                                  "correction": correction}
        if allow_different_definitions:
            params["allow_different_definitions"] = True
        if min_n is not None:
            params["min_n"] = min_n
        if measures:
            params["measure"] = list(measures)
        return dict(self._json("GET", "/evaluations/compare", params=params))

    def run_command(self, argv: list[str], uploads: Iterable[str | Path] = (), stdin: str = "") -> dict[str, Any]:
        """Run a ``golden`` command that uses the store on the studio, as the token's account
        (what ``golden --server`` does for a command with no route of its own). ``argv`` names
        the Nth of ``uploads`` as ``@upload:N`` and each file the command writes as
        ``@output:N``; the answer has ``exit_code``, ``stdout``, ``stderr`` and ``outputs``
        (the written files, base64, by placeholder)."""
        import contextlib
        import json as _json

        paths = [Path(u) for u in uploads]
        for p in paths:
            if not p.is_file():
                raise GoldenError(f"{p}: no such file to upload.")
        with contextlib.ExitStack() as stack:
            files = [("files", (p.name, stack.enter_context(p.open("rb")))) for p in paths]
            return dict(self._json("POST", "/commands", data={"argv": _json.dumps(argv), "stdin": stdin},
                                   files=files or None))

    # ---- judge calibration (golden calibration ...) ------------------------------------------------

    def calibration_set(self, path: str | Path) -> dict[str, Any]:
        """What a calibration set holds (size, scale, judge outputs); nothing is stored."""
        return dict(self._upload(path, "/calibrations/sets", {}))

    def analyse_calibration(self, path: str | Path, **options: Any) -> dict[str, Any]:
        """The judge against people on a calibration set with every check (``passed``);
        ``options``: seed, fit_share, recalibrate, max_missed_bad, max_false_fail, cut, flip."""
        return dict(self._upload(path, "/calibrations/analysis", options))

    def save_calibration(self, path: str | Path, judge_model: str, *, rubric: str | None = None,
                         note: str | None = None, acknowledge_failed_checks: bool = False,
                         **options: Any) -> dict[str, Any]:
        """Analyse and save a calibration pinned to its judge; its ``calibration_id`` is what
        pool grading takes. A failing one is refused unless ``acknowledge_failed_checks``."""
        return dict(self._upload(path, "/calibrations", {
            "judge_model": judge_model, "rubric": rubric, "note": note,
            "acknowledge_failed_checks": acknowledge_failed_checks, **options}))

    def calibrations(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/calibrations"))

    def compare_calibrations(self, old: str, new: str) -> dict[str, Any]:
        return dict(self._json("GET", "/calibrations/compare", params={"old": old, "new": new}))


def _seg(name: str) -> str:
    """One path segment: a name with '/' or '..' is sent escaped (the server refuses it)."""
    from urllib.parse import quote

    return quote(name, safe="")


def _plain_file_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\x00")


def _form_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return [str(x) for x in v]
    return str(v)


def _raise_for_problem(r: httpx.Response) -> None:
    if r.status_code < 400:
        return
    try:
        body = r.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = body.get("detail") or f"The studio answered {r.status_code} {r.reason_phrase} to {r.request.url.path}."
    raise StudioError(str(detail), r.status_code, body)
