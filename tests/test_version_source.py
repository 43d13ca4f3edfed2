"""One version source: pyproject.toml's [project] version is the studio's version
(``golden_store.__version__``, a manifest's ``studio_version``); no module writes it again."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import golden_store

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib; the regex reader is then checked by the other tests
    tomllib = None


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    if tomllib is not None:
        return tomllib.loads(text)["project"]["version"]
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE).group(1)


def test_the_version_is_pyprojects():
    assert golden_store.__version__ == _pyproject_version()
    assert golden_store._studio_version(ROOT) == _pyproject_version()


def test_no_module_writes_the_version_again():
    version = _pyproject_version()
    written = [str(p.relative_to(ROOT)) for folder in ("golden_store", "annotator", "app_pages", "scripts")
               for p in (ROOT / folder).rglob("*.py") if f'"{version}"' in p.read_text("utf-8")]
    assert not written, f"{written} write the version {version}; read golden_store.__version__ instead"


def test_another_projects_pyproject_is_not_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.9.9"\n', "utf-8")
    assert golden_store._studio_version(tmp_path) != "9.9.9"


def test_without_a_checkout_the_installed_metadata_answers(tmp_path, monkeypatch):
    from importlib import metadata

    monkeypatch.setattr(metadata, "version", lambda name: {"golden-studio": "1.2.3"}[name])
    assert golden_store._studio_version(tmp_path) == "1.2.3"

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert golden_store._studio_version(tmp_path) == "unknown"


@pytest.mark.parametrize("layout", ['[project]\nversion = "0.3.0"\nname = "golden-studio"\n',
                                    '[build-system]\nversion = "7"\n\n[project]\nname = "golden-studio"\n'
                                    'version = "0.3.0"  # comment\n\n[tool.x]\nversion = "8"\n'])
def test_the_project_table_is_read_wherever_its_keys_sit(tmp_path, layout):
    (tmp_path / "pyproject.toml").write_text(layout, "utf-8")
    assert golden_store._studio_version(tmp_path) == "0.3.0"


def test_a_frozen_manifest_carries_the_version(demo_store):
    from golden_store.freezing import freeze

    res = freeze(demo_store, "v1", actor="eng")
    manifest = json.loads((res.path / "manifest.json").read_text("utf-8"))
    assert manifest["studio_version"] == golden_store.__version__ == _pyproject_version()
