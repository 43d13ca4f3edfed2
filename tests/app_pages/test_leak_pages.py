"""Issue 18 in the real app (AppTest): a second annotator's Home, Corpus and Evidence pages show
neither a colleague's unsettled quote (broken-label notice) nor the pending-disagreement count,
and no page an annotator can reach shows per-run coverage."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotator import demo
from annotator.evaluation import runs_import
from annotator.evidence import evidence_authoring as ea
from annotator.integration import corpus_import
from annotator.labeling import evidence_rounds
from annotator.people import identity
from annotator.process import context
from golden_store.live import judging, queries
from tests.app_pages.test_app_roles import signed_in, APP, _everything_rendered, app_as

PASSWORD = "0123456789"
QUOTE = "VPN-ERR-0417 means the device certificate on your laptop has expired"


@pytest.fixture
def team(tmp_path):
    """Demo, accounts (admin, lead, ann, bob), a one-run pool, and an evidence round on e1 where
    ann quoted a sentence that a re-import of the document then removed; ann and bob disagree
    on one pooled passage."""
    s = context.get_store()
    admin = identity.create_user(s, None, "admin", ["admin"], password=PASSWORD)
    lead = identity.create_user(s, admin, "lead", ["lead"], password=PASSWORD)
    ann = identity.create_user(s, admin, "ann", ["annotator"], password=PASSWORD)
    identity.create_user(s, admin, "bob", ["annotator"], password=PASSWORD)
    demo.load_demo(s, admin)
    queries.save_query(s, queries.QueryRecord("e1", "What does VPN error 0417 mean?", "paraphrase", True, "expert",
                                              date(2026, 3, 1)), actor="t", must_exist=False)
    run = tmp_path / "run.txt"
    run.write_text("q002 Q0 sick-leave 1 1 x\n")
    runs_import.import_run(s, admin, run, "sys-hidden")
    runs_import.build_pool(s, admin, 5)
    start, end = s.read_one("SELECT start, \"end\" FROM pool_items WHERE query_id = 'q002'")
    judging.record(s, "ann", "q002", "sick-leave", start, end, op="grade", grade=3)
    judging.record(s, "bob", "q002", "sick-leave", start, end, op="grade", grade=0)
    evidence_rounds.start(s, lead, ["ann", "bob"], n=1)
    res = ea.resolve(s, ann, QUOTE)
    ea.save_quote(s, ann, "e1", QUOTE, res, res.best)
    raw = s.read_one("SELECT raw_text FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    f = tmp_path / "vpn-troubleshooting.md"
    f.write_text("Rewritten.\n\n" + raw.replace("VPN-ERR-0417 means", "An unrelated sentence about printers, and"))
    corpus_import.import_paths(s, admin, [f], replace=True)
    return s


def _shown(at: AppTest) -> str:
    return _everything_rendered(at) + "\n" + "\n".join(c.value for c in at.code)


def test_second_annotator_sees_no_colleagues_quote_pending_count_or_coverage(team):
    for page in ("home", "corpus", "evidence"):
        bob = app_as("bob")
        bob.switch_page(f"app_pages/{page}.py").run()
        assert not bob.exception, page
        shown = _shown(bob)
        assert "VPN-ERR-0417 means" not in shown and "query e1" not in shown, page
        assert "disagreement" not in shown and "graded@10" not in shown and "sys-hidden" not in shown, page
    lead = app_as("lead")
    assert "query e1 evidence" in _shown(lead) and "1 disagreement(s) waiting for a lead" in _shown(lead)
    lead.switch_page("app_pages/pool.py").run()
    assert not lead.exception and "graded@10" in _shown(lead)
    # the Runs & pool page is neither listed for an annotator nor usable when reached directly
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        app_as("bob").switch_page("app_pages/pool.py")
    direct = AppTest.from_file(str(Path(APP).parent / "app_pages/pool.py"), default_timeout=60)
    signed_in(direct, "bob").run()
    assert not direct.exception and not direct.dataframe and "graded@10" not in _shown(direct)
