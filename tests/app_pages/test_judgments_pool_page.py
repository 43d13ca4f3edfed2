"""The Runs & pool page tells leads and engineers how many pool items imported judgments graded
(issue 28: judgments people already have, counted by the pool, not queued for people)."""

from __future__ import annotations

from annotator import demo
from annotator.evaluation import runs_import
from annotator.integration import judgments_import
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import app_as

PASSWORD = "0123456789"


def test_the_pool_page_counts_items_judged_by_import(tmp_path):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "engineer", ["engineer"], password=PASSWORD)
    demo.load_demo(store, admin)
    run = tmp_path / "run.trec"
    run.write_text("q001 Q0 pension 1 2.0 x\nq001 Q0 sick-leave 2 1.0 x\n")
    runs_import.import_run_file(store, identity.cli_user(), run, "bm25", "trec")
    runs_import.build_pool(store, identity.cli_user(), 2)
    at = app_as("engineer")
    at.switch_page("app_pages/pool.py").run()
    assert not at.exception
    assert not any("imported judgments" in c.value for c in at.caption)  # nothing imported: no line
    qrels = tmp_path / "team.qrels"
    qrels.write_text("q001 0 pension 3\n")
    judgments_import.import_judgments(store, admin, qrels)
    counts = judgments_import.pool_judged_counts(store, admin)
    at.run()
    assert not at.exception
    line = next(c.value for c in at.caption if "imported judgments" in c.value)
    assert (f"by imported judgments: {counts['by_import']} ({counts['import_only']} by an import only, not queued "
            f"for people); unjudged: {counts['unjudged']}") in line
    assert counts["by_import"] == 1
