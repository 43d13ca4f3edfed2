"""Issue 17 item 1: the home page's demo button loads the demo with every workflow filled,
and the workflow pages then show data rather than "empty"."""

from __future__ import annotations

import os

from annotator.process import context
from golden_store.live import judging
from tests.app_pages.test_app_roles import app_as


def test_demo_button_fills_the_workflows():
    at = app_as(None)
    at.button(key="load_demo").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Documents"] == "20" and metrics["Queries"] == "40"
    s = context.get_store()
    assert judging.pool_counts(s)["pool_items"] > 0 and judging.pool_counts(s)["pending"] == 3
    assert (s.path.parent / "versions" / "demo.v0" / "manifest.json").exists()
    for page in ("judge", "adjudication", "agreement", "nuggets", "transcripts", "power", "results", "calibration",
                 "versions"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert not at.exception, page
    at.switch_page("app_pages/power.py").run()
    assert not any("Record two runs first" in i.value for i in at.info)


def test_cli_demo_full(tmp_path, capsys):
    from annotator import cli

    assert cli.main(["--db", os.environ["GOLDEN_DB"], "demo", "--full"]) == 0
    out = capsys.readouterr().out
    assert "version demo.v0" in out and "pool items" in out
