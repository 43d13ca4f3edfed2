"""A client generated with openapi-python-client from the schema the running API serves, used as
an engineer would use it: upload a run, freeze a version, read its manifest and download its
files, then open the download with ``load_version`` (hashes and counts checked) — over real
HTTP on loopback, against the real store.

Why: the schema is what a team generates its client from. FastAPI's own description of an
upload made openapi-python-client send every file as a string (each upload answered 422), and
nothing in the suite noticed; a client generated at test time notices any such drift. The
generator runs without its ruff post-hooks (``post_hooks: []``): formatting the generated code
is not what is tested, and it keeps generation to a few seconds."""

from __future__ import annotations

import hashlib
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from annotator.people import api_tokens
from annotator.people.identity import LOCAL_USER
from golden_store.versions import load_version
from tests.http_api.conftest import run_file

PACKAGE = "golden_api_client"


def generate(api: str, tmp: Path) -> ModuleType:
    """Generate the client from the served schema into ``tmp`` and import it."""
    (tmp / "openapi.json").write_bytes(httpx.get(f"{api}/openapi.json", timeout=30).content)
    (tmp / "generator.yaml").write_text("post_hooks: []\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", "openapi.json",
                           "--meta", "none", "--output-path", PACKAGE, "--config", "generator.yaml"],
                          cwd=tmp, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr  # every part of the schema understood
    return importlib.import_module(PACKAGE)


@pytest.fixture
def generated(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The generated package, importable for this test only."""
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield generate(api, tmp_path)
    finally:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_a_generated_client_uploads_a_run_freezes_and_loads_the_version(demo_store, api, generated, tmp_path):
    from golden_api_client import AuthenticatedClient  # type: ignore[import-not-found]
    from golden_api_client.api.imports import import_run  # type: ignore[import-not-found]
    from golden_api_client.api.versions import freeze_version, get_manifest, get_version_file  # type: ignore[import-not-found]
    from golden_api_client.models import BodyImportRun, FreezeRequest, Problem  # type: ignore[import-not-found]
    from golden_api_client.types import File  # type: ignore[import-not-found]

    _, secret = api_tokens.create_token(demo_store, LOCAL_USER, "generated", ["admin"])
    client = AuthenticatedClient(base_url=api.removesuffix("/api/v1"), token=secret)
    run = run_file(tmp_path, ["q001", "q002"], name="gen.trec")

    with run.open("rb") as f:
        imported = import_run.sync_detailed(client=client, body=BodyImportRun(
            file=File(payload=f, file_name="gen.trec"), system="generated"))
    assert imported.status_code == 201, imported.content
    assert imported.parsed["n_results"] == 6 and imported.parsed["system"] == "generated"

    # the schema's constraints reach the client: an empty system is a typed problem, not a crash
    with run.open("rb") as f:
        refused = import_run.sync_detailed(client=client, body=BodyImportRun(
            file=File(payload=f, file_name="gen.trec"), system=""))
    assert refused.status_code == 422 and isinstance(refused.parsed, Problem)
    assert refused.parsed.detail == "The request's system: required, and may not be empty."

    frozen = freeze_version.sync_detailed(client=client, body=FreezeRequest(name="gen.v1", note="from a client"))
    assert frozen.status_code == 201, frozen.content

    manifest = get_manifest.sync_detailed("gen.v1", client=client)
    assert manifest.status_code == 200
    files = manifest.parsed["files"]
    assert "qrels.parquet" in files

    folder = tmp_path / "downloaded" / "gen.v1"
    folder.mkdir(parents=True)
    for name in [*files, "manifest.json"]:
        got = get_version_file.sync_detailed("gen.v1", name, client=client)
        assert got.status_code == 200, (name, got.content)
        data = got.parsed.payload.read()  # a typed File: the schema says the 200 is the file's bytes
        if name in files:
            assert hashlib.sha256(data).hexdigest() == files[name]["sha256"] == got.headers["x-golden-sha256"]
        (folder / name).write_bytes(data)

    loaded = load_version("gen.v1", folder.parent)  # hashes, names and counts checked
    assert loaded.manifest["data_digest"] == manifest.parsed["data_digest"]
    assert len(loaded.queries) == manifest.parsed["n_queries"] > 0
