"""Issue 17 item 3: the Versions page says what a freeze left out (with the Adjudication page
to go to) and shows the digest that identifies content (data_digest), not the one that
changes on every freeze."""

from __future__ import annotations

import json
import os

from annotator.process import context
from golden_store.core.paths import versions_dir_for
from tests.annotator.test_everyday_ux import _store_with_a_disagreement
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain


def _freeze(at, name: str):
    next(w for w in at.text_input if w.label == "Version name").input(name)
    next(b for b in at.button if b.label == "Freeze").click().run()
    assert not at.exception
    return at


def test_freeze_on_the_page_says_what_it_left_out_and_shows_data_digest(tmp_path):
    db = os.environ["GOLDEN_DB"]  # the store the app opens
    context.close_all()
    _store_with_a_disagreement(db, tmp_path)
    at = _freeze(app_as(None).switch_page("app_pages/versions.py").run(), "ui.v1")
    manifest = json.loads((versions_dir_for(db) / "ui.v1" / "manifest.json").read_text())
    shown = "\n".join(plain(s.value) for s in at.success)
    assert "Frozen ui.v1" in shown and manifest["data_digest"] in shown
    assert manifest["content_digest"] not in shown
    warned = "\n".join(plain(w.value) for w in at.warning)
    assert "1 graded item(s) where annotators disagree" in warned and "Adjudication page" in warned
    # the same content frozen again: the digest shown is the same
    at = _freeze(at, "ui.v2")
    assert manifest["data_digest"] in "\n".join(plain(s.value) for s in at.success)


def test_the_versions_list_is_paged_newest_first(tmp_path):
    """Issue 19: 25 versions on disk, 20 a page, newest first; page 2 holds the 5 oldest."""
    import os

    vdir = context.get_store().path.parent / "versions"
    for i in range(1, 26):
        folder = vdir / f"golden.v{i}"
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps({"files": {}, "built_at": f"2026-01-{i:02d}T00:00:00Z"}))
        os.utime(folder / "manifest.json", (i * 86400, i * 86400))
    at = app_as(None).switch_page("app_pages/versions.py").run()
    assert not at.exception
    listed = at.dataframe[0].value
    assert list(listed["name"]) == [f"golden.v{i}" for i in range(25, 5, -1)]
    at.number_input(key="v_list_page").set_value(2).run()
    assert not at.exception
    assert list(at.dataframe[0].value["name"]) == [f"golden.v{i}" for i in range(5, 0, -1)]
    assert at.selectbox(key="v_manifest").options[:2] == ["golden.v25", "golden.v24"]
