"""metric_impl_sha changes whenever a source that can change a score changes (METHODOLOGY §14.3).

It used to hash four files and not ``scoring/formulas.py``, where every measure is computed:
a formula edit kept the sha and ``golden compare`` never said "re-baseline"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import golden_store
from golden_store.scoring.impl_sha import metric_impl_sha, scorer_sources

PACKAGE = Path(golden_store.__file__).parent


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pkg") / "golden_store"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_every_module_of_the_scorers_is_covered_formulas_and_stats_included():
    covered = {p.relative_to(PACKAGE).as_posix() for p in scorer_sources()}
    on_disk = {p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "scoring").rglob("*.py")}
    assert on_disk <= covered
    assert {"scoring/formulas.py", "scoring/stats.py", "scoring/trec.py", "versions/chunk_labels.py",
            "versions/qrels.py", "versions/format.py", "versions/reader.py"} <= covered


@pytest.mark.parametrize("rel", sorted(p.relative_to(PACKAGE).as_posix() for p in scorer_sources()))
def test_editing_any_scorer_source_changes_the_sha(package_copy, rel):
    before = metric_impl_sha(package_copy)
    assert before == metric_impl_sha(PACKAGE)  # the copy hashes as the package does
    f = package_copy / rel
    original = f.read_bytes()
    try:
        f.write_bytes(original.replace(b"1", b"2", 1) if b"1" in original else original + b"\n# edit\n")
        assert metric_impl_sha(package_copy) != before
    finally:
        f.write_bytes(original)
    assert metric_impl_sha(package_copy) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.floats(0, 1, exclude_max=True), byte=st.integers(0, 255))
def test_any_one_byte_change_in_formulas_changes_the_sha(package_copy, at, byte):
    f = package_copy / "scoring" / "formulas.py"
    original = f.read_bytes()
    i = int(at * len(original))
    changed = original[:i] + bytes([byte]) + original[i + 1:]
    before = metric_impl_sha(package_copy)
    try:
        f.write_bytes(changed)
        assert (metric_impl_sha(package_copy) != before) == (changed != original)
    finally:
        f.write_bytes(original)


def test_a_new_scoring_module_or_a_rename_changes_the_sha(package_copy):
    before = metric_impl_sha(package_copy)
    new = package_copy / "scoring" / "new_measure.py"
    new.write_text("X = 1\n")
    try:
        assert metric_impl_sha(package_copy) != before
    finally:
        new.unlink()
    cost = package_copy / "scoring" / "cost.py"
    moved = package_copy / "scoring" / "costs.py"
    cost.rename(moved)
    try:
        assert metric_impl_sha(package_copy) != before
    finally:
        moved.rename(cost)
    assert metric_impl_sha(package_copy) == before


def test_the_recorded_sha_is_the_live_one(store):
    import pandas as pd
    from golden_store.live.results import record_evaluation, evaluation_frame

    record_evaluation(store, "e1", pd.DataFrame({"R@10": {"q1": 1.0}}).rename_axis("query_id"), dataset_version="v1")
    assert set(evaluation_frame(store, "e1")["metric_impl_sha"]) == {metric_impl_sha()}
