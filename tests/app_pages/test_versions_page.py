"""Issue 17 item 3: the Versions page says what a freeze left out (with the Adjudication page
to go to) and shows the digest that identifies content (data_digest), not the one that
changes on every freeze."""

from __future__ import annotations

import json
import os

from annotator import context
from golden_store.paths import versions_dir_for
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
