"""The app's warm-up (issue 19): the pages' heavy imports and the whole-store figures they
cache per generation, computed in the background so the first visitor after a start reads
them; the figures are left alone under AppTest (tests own their stores)."""

from __future__ import annotations

import sys

from streamlit.testing.v1 import AppTest

from annotator.evaluation import overview
from annotator.labeling import agreement
from annotator.process import cache
from annotator.versions import versioning
from annotator.people.identity import cli_user, create_user
from app_pages import warm


def test_warm_up_imports_the_pages_modules_and_caches_the_first_pages_figures(demo_store):
    s = demo_store
    admin = create_user(s, None, "admin", ["admin"], password="0123456789ab")
    lead = create_user(s, admin, "lead", ["lead"], password="0123456789ab")
    cache.clear()
    warm._warm(s)
    assert all(m in sys.modules for m in warm.MODULES) and "altair" in sys.modules
    names = {k[2] for k in cache._values if k[0] == str(s.path)}
    assert {"store_overview", "live_problems", "agreement", "pool_status", "nuggets_status"} <= names
    gen = s.generation()
    # what a lead's visit reads is what was warmed: the same cached objects, nothing recomputed
    assert agreement.compute(s, lead) is cache.cached(s, "agreement", (None,), lambda: None)
    assert overview.store_overview(s, lead)["judging"] == overview.store_overview(s, cli_user())["judging"]
    assert versioning.live_problems(s, lead) == []
    assert s.generation() == gen  # the warm-up only reads
    cache.clear()


def test_figures_are_not_warmed_under_apptest():
    at = AppTest.from_string("import streamlit as st\nfrom app_pages import warm\nst.write(f'served={warm.served()}')")
    at.run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["served=False"]


def test_a_warm_up_step_waits_while_a_page_renders(monkeypatch):
    import threading

    monkeypatch.setattr(warm, "IDLE_WAIT_S", 600.0)  # the step goes because it is woken, not by timing out
    done = threading.Event()
    with warm.page_running():
        t = threading.Thread(target=lambda: (warm._when_idle(), done.set()))
        t.start()
        assert not done.wait(0.3)  # a page is rendering: the step waits
    assert done.wait(60)  # the page is done: the step goes (a generous bound, far below IDLE_WAIT_S)
    t.join()
