"""Pool items paged and filtered in SQL (issue 19): every filter's count and pages equal the
same filter applied in pandas to the whole pool, on a generated store, on both engines; the
Versions list paged reads only the shown page's manifests."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from golden_store import versions
from golden_store.live import pool
from golden_store.versions import folders
from tests.golden_store import pool_gen

KEY = ["query_id", "doc_id", "start", "end"]


def _whole_pool(store) -> pd.DataFrame:
    """Every pool item with its graders, final grade and pooling runs, read whole (the reference)."""
    items = store.df("SELECT query_id, doc_id, start, \"end\", depth, added_by FROM pool_items")
    state = store.df("SELECT query_id, doc_id, start, \"end\", n_graded, n_distinct FROM grade_item_state")
    final = store.df("SELECT query_id, doc_id, start, \"end\", grade AS final_grade FROM final_grades")
    src = store.df("SELECT query_id, doc_id, start, \"end\", system, rank FROM pool_sources ORDER BY system")
    df = items.merge(state, on=KEY, how="left").merge(final, on=KEY, how="left")
    df["graders"] = df["n_graded"].fillna(0).astype(int)
    src["tag"] = src["system"] + "@" + src["rank"].astype(str)
    tags = src.groupby(KEY, sort=False)["tag"].agg(", ".join).rename("runs").reset_index()
    systems = src.groupby(KEY, sort=False)["system"].agg(set).rename("systems").reset_index()
    df = df.merge(tags, on=KEY, how="left").merge(systems, on=KEY, how="left")
    df["runs"] = df["runs"].fillna("")
    return df.sort_values(KEY, kind="stable").reset_index(drop=True)


def _expected(df: pd.DataFrame, prefix: str, system: str | None, status: str) -> pd.DataFrame:
    keep = df["query_id"].str.startswith(prefix)
    if system:
        keep &= df["systems"].map(lambda s: isinstance(s, set) and system in s)
    keep &= {"any": pd.Series(True, index=df.index), "unjudged": df["graders"] == 0, "graded": df["graders"] > 0,
             "disputed": df["n_distinct"].fillna(0) > 1, "final": df["final_grade"].notna()}[status]
    return df[keep]


@pytest.mark.parametrize("prefix,system", [("", None), ("q01", None), ("", "sys3"), ("q0", "sys1"), ("zz", None)])
def test_pool_items_pages_equal_the_filter_on_the_whole_pool(any_store, tmp_path, prefix, system):
    pool_gen.fill(any_store, tmp_path, seed=4)
    pool.build_pool(any_store, 8, actor="eng")  # sys3 joins the pool at depth 8
    whole = _whole_pool(any_store)
    for status in pool.POOL_ITEM_STATUSES:
        exp = _expected(whole, prefix, system, status)
        total, first = pool.pool_items_page(any_store, query_prefix=prefix, system=system, status=status, limit=7)
        assert total == len(exp), status
        got = [first] + [pool.pool_items_page(any_store, query_prefix=prefix, system=system, status=status,
                                              limit=7, offset=o)[1] for o in range(7, total + 7, 7)]
        got = pd.concat(got, ignore_index=True)
        assert len(got) == total
        cols = KEY + ["depth", "added_by", "graders", "runs"]
        assert got[cols].astype(str).values.tolist() == exp[cols].astype(str).values.tolist(), status
        assert got["final_grade"].fillna(-1).astype(int).tolist() == exp["final_grade"].fillna(-1).astype(int).tolist()
    assert pool.pool_items_page(any_store, limit=0)[0] == len(whole) and len(whole) > 60


def test_an_unknown_status_is_refused(store):
    from golden_store.core.errors import ValidationError

    with pytest.raises(ValidationError, match="Unknown pool item status"):
        pool.pool_items_page(store, status="judged?")


def _fake_version(vdir, name: str, mtime: int, damaged: bool = False) -> None:
    folder = vdir / name
    folder.mkdir(parents=True)
    text = "{not json" if damaged else json.dumps({"files": {}, "built_at": f"2026-01-{mtime:02d}T00:00:00Z",
                                                  "n_queries": mtime, "note": name})
    (folder / "manifest.json").write_text(text, encoding="utf-8")
    os.utime(folder / "manifest.json", (mtime * 86400, mtime * 86400))


def test_versions_are_paged_newest_first_reading_only_the_page(tmp_path, monkeypatch):
    vdir = tmp_path / "versions"
    for i in range(1, 26):
        _fake_version(vdir, f"golden.v{i}", i, damaged=(i == 3))
    (vdir / "no-manifest").mkdir()
    names = versions.version_names(vdir)
    assert names[:3] == ["golden.v25", "golden.v24", "golden.v23"] and names[-1] == "no-manifest"
    # the same order as the whole list's (built_at) for the readable ones
    assert [n for n in names if n not in ("golden.v3", "no-manifest")] == \
        [r["name"] for r in versions.list_versions(vdir) if r.get("built_at")]
    read = []
    real = folders._read_manifest
    monkeypatch.setattr(folders, "_read_manifest", lambda p: read.append(p.name) or real(p))
    total, rows = versions.version_page(vdir, offset=10, limit=10)
    assert total == 26 and read == names[10:20] == [r["name"] for r in rows]
    assert rows[0]["n_queries"] == 15 and rows[0]["error"] is None
    read.clear()
    total, rows = versions.version_page(vdir, offset=20, limit=10)
    assert read == names[20:] and [r["name"] for r in rows] == names[20:]
    assert rows[2]["name"] == "golden.v3" and "not valid JSON" in rows[2]["error"]
    assert "missing" in rows[-1]["error"]
    assert versions.version_page(tmp_path / "none") == (0, [])
