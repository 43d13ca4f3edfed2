"""A problem document's ``type`` is a reference the API resolves (RFC 9457 §3.1.1): every kind
the API can answer with is documented at ``GET /api/v1/problems/{kind}``, without a token."""

from __future__ import annotations

import importlib
import pkgutil

import httpx

import annotator
import golden_store
from golden_store.core.errors import GoldenError
from http_api.problems import KINDS, TYPE_BASE, _kind
from tests.http_api.conftest import auth


def _all_subclasses(cls: type) -> set[type]:
    out = set(cls.__subclasses__())
    for sub in list(out):
        out |= _all_subclasses(sub)
    return out


def test_every_error_class_of_the_studio_reads_as_a_documented_kind():
    for pkg in (golden_store, annotator):  # load every error class there is
        for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not mod.name.startswith("annotator.cli"):
                importlib.import_module(mod.name)
    classes = _all_subclasses(GoldenError) | {GoldenError}
    assert len(classes) > 10
    for cls in classes:
        exc = cls.__new__(cls)  # no __init__: some take keyword-only arguments
        assert _kind(exc) in KINDS, cls


def test_a_problems_type_resolves_to_its_description_without_a_token(api):
    r = httpx.get(f"{api}/versions", timeout=60)  # no token: a problem document
    assert r.status_code == 401
    kind_url = httpx.URL(api).join(r.json()["type"])  # relative: resolved against the API's URL
    assert r.json()["type"] == TYPE_BASE + "token-refused"
    d = httpx.get(kind_url, timeout=60)
    assert d.status_code == 200 and d.json() == {"type": r.json()["type"], "kind": "token-refused",
                                                 "description": KINDS["token-refused"]}
    missing = httpx.get(f"{api}/problems/no-such-kind", headers=auth(None), timeout=60)
    assert missing.status_code == 404 and missing.json()["type"] == TYPE_BASE + "not-found"
