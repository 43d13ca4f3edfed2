"""Issue 36 item 7a: a manifest names each κ for what it is. Versions frozen before carried the
linear-weighted κ as ``kappa_graded`` (demo: 0.787 beside the unweighted 0.558), so a pipeline
reading "kappa_graded" against §3.7's 0.6 bar passed a round the studio said was below it.
New manifests write ``kappa_unweighted``, ``kappa_linear`` and ``kappa_quadratic`` and no
``kappa_graded``; old manifests, which are immutable, still load, verify and read.

The reference: scikit-learn's ``cohen_kappa_score`` on the two demo annotators' grades, read
from the ``grade_events`` table itself (each annotator's latest act per passage, kept when it
is a grade), not through the studio's agreement code."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from annotator.demo import load_demo
from annotator.people.identity import cli_user
from golden_store.freezing import freeze
from golden_store.scoring.agreement_report import AgreementBar, kappa_linear
from golden_store import versions
from tests.conftest import prepared_store

LABELS = [0, 1, 2, 3]


@pytest.fixture
def full_demo(request, golden_db):
    """The demo with every workflow (``golden demo``): its calibration round r1 graded by two
    (loaded once, copied)."""
    return prepared_store(request, "full-demo-cli", lambda s, _: load_demo(s, cli_user(), workflows=True))[0]


def _pair_from_events(store, round_id: str | None = None) -> tuple[list[int], list[int]]:
    """The two annotators' current grades on the passages both graded, from the event table:
    per (annotator, passage) the last event (by event id) of the acts that replace a grade."""
    ev = pd.DataFrame(store.read(
        "SELECT event_id, actor, query_id, doc_id, start, \"end\", op, grade, round_id FROM grade_events "
        "WHERE op IN ('grade', 'retract', 'skip', 'unsure') AND actor IN ('demo-anna', 'demo-ben')"),
        columns=["event_id", "actor", "query_id", "doc_id", "start", "end", "op", "grade", "round_id"])
    key = ["actor", "query_id", "doc_id", "start", "end"]
    last = ev.sort_values("event_id").groupby(key, as_index=False).tail(1)
    last = last[last["op"] == "grade"]
    if round_id is not None:
        last = last[last["round_id"] == round_id]
    item = ["query_id", "doc_id", "start", "end"]
    both = last[last["actor"] == "demo-anna"].merge(last[last["actor"] == "demo-ben"], on=item, suffixes=("_a", "_b"))
    return [int(g) for g in both["grade_a"]], [int(g) for g in both["grade_b"]]


def _references(a: list[int], b: list[int]) -> dict[str, float]:
    return {"kappa_binary": cohen_kappa_score([x >= 2 for x in a], [x >= 2 for x in b]),
            "kappa_unweighted": cohen_kappa_score(a, b, labels=LABELS),
            "kappa_linear": cohen_kappa_score(a, b, weights="linear", labels=LABELS),
            "kappa_quadratic": cohen_kappa_score(a, b, weights="quadratic", labels=LABELS)}


def test_a_new_manifest_names_each_kappa_and_each_equals_scikit_learn(full_demo, tmp_path):
    a, b = _pair_from_events(full_demo)
    assert len(a) == 17  # the demo's calibration round r1: both annotators grade the same 17 passages
    ref = _references(a, b)
    # the case the issue saw: the linear κ clears 0.6, the unweighted κ (§3.7's) does not
    assert round(ref["kappa_unweighted"], 3) == 0.558 and round(ref["kappa_linear"], 3) == 0.787

    freeze(full_demo, "k.v1", actor="eng", versions_dir=tmp_path)
    on_disk = json.loads((tmp_path / "k.v1" / "manifest.json").read_text())
    for key, want in ref.items():
        assert on_disk[key] == pytest.approx(want, abs=5e-5), key  # written to 4 decimals
    assert on_disk["n_items_double_annotated"] == 17
    (r1,) = on_disk["rounds"]
    ra, rb = _pair_from_events(full_demo, "r1")
    for key, want in _references(ra, rb).items():
        assert r1[key] == pytest.approx(want, abs=5e-5), key
    # nothing anywhere in the new manifest is called kappa_graded (nor its "weights" note)
    assert "kappa_graded" not in json.dumps(on_disk)
    # the bar reads the unweighted κ by default: below it, as the manifest's own check says
    assert on_disk["agreement_bar"]["graded_measure"] == "kappa_unweighted"
    assert on_disk["agreement_bar"]["cleared"] is False and "0.558 < 0.6" in on_disk["agreement_bar"]["check"]


def _as_frozen_before_issue_36(path: Path) -> dict:
    """Rewrite a fresh version's manifest as the freezer wrote it before issue 36 (the linear κ
    under ``kappa_graded``, ``kappa_graded_weights``, no ``kappa_quadratic``; the same in each
    round), with its content digest recomputed as that freezer did: what an old version is."""
    m = json.loads((path / "manifest.json").read_text())

    def old(d: dict) -> dict:
        out = {}
        for k, v in d.items():
            if k == "kappa_linear":
                out["kappa_graded"] = v
            elif k != "kappa_quadratic":
                out[k] = v
        return out

    m = old(m)
    m["kappa_graded_weights"] = "linear"
    m["rounds"] = [old(r) for r in m["rounds"]]
    m["content_digest"] = versions.manifest_digest(m)
    versions.write_manifest(path, m)
    return m


def test_a_version_frozen_before_the_rename_still_loads_verifies_and_reads(full_demo, tmp_path):
    a, b = _pair_from_events(full_demo)
    linear = cohen_kappa_score(a, b, weights="linear", labels=LABELS)
    freeze(full_demo, "old.v1", actor="eng", versions_dir=tmp_path)
    old = _as_frozen_before_issue_36(tmp_path / "old.v1")
    assert "kappa_linear" not in old and old["kappa_graded"] == pytest.approx(linear, abs=5e-5)

    report = versions.verify("old.v1", tmp_path)
    assert report.ok, report.problems
    loaded = versions.load_version("old.v1", tmp_path).manifest
    # one reader for both spellings: the old name is the linear κ, never taken for the unweighted one
    assert kappa_linear(loaded) == pytest.approx(linear, abs=5e-5)
    assert kappa_linear(loaded["rounds"][0]) == pytest.approx(linear, abs=5e-5)
    assert AgreementBar.choose("kappa_linear").check(loaded).text.startswith("κ binary 1.000 ≥ 0.7; κ graded (linear "
                                                                             "weights) 0.787 ≥ 0.6")
    assert not AgreementBar().check(loaded).cleared  # the methodology's bar: 0.558 unweighted, below
