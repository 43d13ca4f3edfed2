"""Issue 25 item 10: the Results page. The recorded evaluations with their means and judged@10
health (a warning on the page below 0.8, METHODOLOGY §3.6), and the comparison of two whose
verdicts and intervals are compare_runs' own (the function `golden compare` uses too); a role
without VIEW_RESULTS is refused by the annotator layer, not only by the navigation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from annotator.evaluation import evaluations
from annotator.people import identity
from annotator.process import context
from annotator.people.roles import PermissionDenied
from golden_store.live.results import evaluation_frame, record_evaluation
from golden_store.scoring.compare import compare_runs
from tests.app_pages.test_app_roles import APP, PASSWORD, app_as, signed_in
from tests.conftest import plain, prepared_store

PAGE = "app_pages/results.py"
QIDS = [f"q{i:02d}" for i in range(40)]
STRATA = {q: ("lexical" if i < 20 else "multi_hop") for i, q in enumerate(QIDS)}


@pytest.fixture
def recorded(request, golden_db):
    """Accounts for four roles and three recorded evaluations: ``base``, ``cand`` (R@10 lost on
    10 lexical queries: a credible, large drop; judged@10 0.5) and ``old`` (no judged fraction).
    Made once, copied; the store the app opens (``context.get_store()``)."""
    prepared_store(request, "results-recorded", _accounts_and_evaluations)
    return context.get_store()


def _accounts_and_evaluations(store, _folder) -> None:
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("annotator", "reviewer", "lead", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    ndcg = np.linspace(0.2, 0.9, len(QIDS))
    base = pd.DataFrame({"R@10": 1.0, "nDCG@10": ndcg}, index=pd.Index(QIDS, name="query_id"))
    cand = base.copy()
    cand.loc[QIDS[:10], "R@10"] = 0.0
    cand["nDCG@10"] = ndcg + 0.01
    record_evaluation(store, "old", base, dataset_version="v1", strata=STRATA, system="bm25")
    record_evaluation(store, "base", base, dataset_version="v1", strata=STRATA, system="bm25",
                      judged_fraction=pd.Series(0.95, index=QIDS))
    record_evaluation(store, "cand", cand, dataset_version="v1", strata=STRATA, system="<b>hybrid</b>",
                      judged_fraction=pd.Series(0.5, index=QIDS))


def _compare(at: AppTest, baseline: str, candidate: str) -> AppTest:
    at.selectbox(key="res_baseline").set_value(baseline).run()
    at.selectbox(key="res_candidate").set_value(candidate).run()
    assert not at.exception
    return at


def test_the_list_shows_each_evaluation_its_means_and_judged_health(recorded):
    at = app_as("engineer")
    at.switch_page(PAGE).run()
    assert not at.exception
    # the default comparison's gate and verdict only
    assert all(plain(e.value).startswith(("**Gate: FAIL**", "**FAIL**")) for e in at.error)
    listed = at.dataframe[0].value.set_index("evaluation")
    assert set(listed.index) == {"old", "base", "cand"}
    assert listed.loc["cand", "system"] == "<b>hybrid</b>"  # a table cell: shown as text
    assert listed.loc["base", "dataset version"] == "v1" and listed.loc["base", "queries"] == 40
    assert listed.loc["base", "R@10"] == 1.0 and listed.loc["cand", "R@10"] == pytest.approx(0.75)
    assert listed.loc["cand", "nDCG@10"] == pytest.approx(np.linspace(0.2, 0.9, 40).mean() + 0.01)
    assert listed.loc["base", "judged@10"] == pytest.approx(0.95) and listed.loc["cand", "judged@10"] == 0.5
    assert pd.isna(listed.loc["old", "judged@10"]) and listed.loc["old", "judged health"] == "not recorded"
    assert list(listed["judged health"].loc[["base", "cand"]]) == ["ok", "suspect"]
    assert len({sha for sha in listed["metric_impl_sha"]}) == 1 and len(listed.loc["base", "metric_impl_sha"]) == 12
    # the health flag on the page, not in a footnote: one warning, for the under-judged evaluation only
    warned = [plain(w.value) for w in at.warning]
    health = next(w for w in warned if "below 0.8" in w)
    assert health.startswith("1 evaluation(s) with judged@10 below 0.8: cand 0.500. Their numbers are suspect"), health
    assert any("judged@10 not recorded for 1 evaluation(s)" in c.value for c in at.caption)


def test_the_comparison_is_compare_runs_own_verdict_and_intervals(recorded):
    at = _compare(app_as("lead").switch_page(PAGE).run(), "base", "cand")
    expected = compare_runs(evaluation_frame(recorded, "base"), evaluation_frame(recorded, "cand"),
                            min_meaningful=0.02)
    assert expected["metrics"]["R@10"]["verdict"] == "FAIL" and expected["metrics"]["nDCG@10"]["verdict"] == "PASS"
    # the verdict per metric, prominent: a red box for FAIL, a green one for PASS, each with its interval
    boxes = {"FAIL": [plain(e.value) for e in at.error], "PASS": [plain(s.value) for s in at.success]}
    for metric, e in expected["metrics"].items():
        shown = next(b for b in boxes[e["verdict"]] if f"· {metric}" in b)
        assert shown.startswith(f"**{e['verdict']}**")
        assert f"delta {e['delta']:+.4f}, 95% CI [{e['ci95'][0]:+.4f}, {e['ci95'][1]:+.4f}]" in shown
    # per stratum: every row equals compare_runs' figures
    table = at.dataframe[1].value
    for metric, e in expected["metrics"].items():
        for stratum, f in [("(all)", e), *e["strata"].items()]:
            row = table[(table["metric"] == metric) & (table["stratum"] == stratum)].iloc[0]
            assert row["verdict"] == f["verdict"] and row["delta"] == pytest.approx(f["delta"], abs=1e-12)
            assert (row["ci95 low"], row["ci95 high"]) == pytest.approx(tuple(f["ci95"]), abs=1e-12)
            assert (row["wins"], row["losses"], row["ties"], row["n"]) == (f["wins"], f["losses"], f["ties"], f["n"])
    assert set(table["stratum"]) == {"(all)", "lexical", "multi_hop"}
    # the under-judged candidate is named again beside the comparison
    assert any("Under-judged: cand (judged@10 0.500)" in plain(w.value) for w in at.warning)
    # the CSV download holds the same table
    csv = evaluations.comparison_csv(evaluations.compare(recorded, identity.get_user(recorded, "lead"), "base", "cand"),
                                     "base", "cand").decode()
    assert csv.splitlines()[0].startswith("baseline,candidate,metric,stratum,verdict,delta,ci95 low,ci95 high")
    assert len(csv.splitlines()) == 1 + len(table)
    downloads = at.get("download_button")
    assert len(downloads) == 1 and "Download the comparison (CSV)" in downloads[0].proto.label


def test_the_page_and_the_cli_share_one_comparison(recorded, capsys):
    """`golden compare` calls annotator.evaluation.evaluations.compare: the same verdicts and notes."""
    import json
    import os

    from annotator import cli

    lead = identity.get_user(recorded, "lead")
    page = evaluations.compare(recorded, lead, "cand", "base")
    context.close_all()  # the CLI opens the store itself (DuckDB: one handle per process)
    assert cli.main(["--db", os.environ["GOLDEN_DB"], "compare", "cand", "base", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["notes"] == page["notes"] and any("cand: judged@10 is 0.500" in n for n in printed["notes"])
    assert {m: e["verdict"] for m, e in printed["metrics"].items()} == evaluations.verdicts(page)
    assert printed["metrics"]["R@10"]["ci95"] == pytest.approx(page["metrics"]["R@10"]["ci95"])


def test_different_versions_and_a_changed_scorer_are_said_on_the_page(recorded, monkeypatch):
    import golden_store.live.results as results

    other = pd.DataFrame({"R@10": 1.0}, index=pd.Index(QIDS[:30], name="query_id"))
    monkeypatch.setattr(results, "metric_impl_sha", lambda: "f" * 64)
    record_evaluation(recorded, "later", other, dataset_version="v2", strata=STRATA)
    at = _compare(app_as("admin").switch_page(PAGE).run(), "base", "later")
    warned = "\n".join(plain(w.value) for w in at.warning)
    assert "different dataset versions" in warned and "re-baseline" in warned
    assert any("not paired: 10 queries only in the baseline" in c.value for c in at.caption)


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_a_role_without_results_is_refused_by_the_annotator_layer(recorded, role):
    user = identity.get_user(recorded, role)
    with pytest.raises(PermissionDenied, match="may not see and compare recorded evaluations"):
        evaluations.recorded(recorded, user)
    with pytest.raises(PermissionDenied):
        evaluations.compare(recorded, user, "base", "cand")
    # not in the navigation, and the page reached directly shows nothing
    at = app_as(role)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(PAGE)
    at = signed_in(AppTest.from_file(str(Path(APP).parent / PAGE), default_timeout=60), role).run()
    assert any("do not have access" in e.value for e in at.error)
    assert not at.dataframe and not at.selectbox


def test_an_empty_store_says_how_to_record_one():
    at = app_as(None).switch_page(PAGE).run()  # single-user local mode: admin
    assert not at.exception
    assert any("--record EVALUATION_ID" in i.value for i in at.info)
    assert not at.dataframe


def test_who_may_see_results():
    from annotator.people.roles import ROLE_PERMISSIONS, Permission, Role

    allowed = {r for r, perms in ROLE_PERMISSIONS.items() if Permission.VIEW_RESULTS in perms}
    assert allowed == {Role.ENGINEER, Role.LEAD, Role.ADMIN}


def test_ids_from_the_store_are_escaped_in_markdown(recorded):
    from app_pages._shared import md_escape

    hostile = ":red[boom] **x** <img src=x onerror=alert(1)>"
    frame = pd.DataFrame({"R@10": 0.0}, index=pd.Index(QIDS, name="query_id"))
    record_evaluation(recorded, hostile, frame, dataset_version="v1", strata=STRATA,
                      judged_fraction=pd.Series(0.1, index=QIDS))
    at = _compare(app_as("engineer").switch_page(PAGE).run(), "base", hostile)
    sources = "\n".join(e.value for e in [*at.markdown, *at.warning, *at.error, *at.success, *at.caption])
    assert md_escape(hostile) in sources and hostile not in sources


def test_the_labels_an_evaluation_was_scored_on_are_listed_and_a_mix_is_warned(recorded):
    """Issue 27: the list says which labels each evaluation is on (human, or human+judge; old
    rows human), and comparing evaluations scored on different label sets warns on the page."""
    judged = pd.DataFrame({"R@10": 1.0, "nDCG@10": np.linspace(0.2, 0.9, len(QIDS))},
                          index=pd.Index(QIDS, name="query_id"))
    record_evaluation(recorded, "judged", judged, dataset_version="v1", strata=STRATA, system="bm25",
                      judged_fraction=pd.Series(0.95, index=QIDS), labels="human+judge")
    at = app_as("engineer").switch_page(PAGE).run()
    assert not at.exception
    listed = at.dataframe[0].value.set_index("evaluation")
    assert listed.loc["judged", "labels"] == "human+judge"
    assert set(listed.loc[["old", "base", "cand"], "labels"]) == {"human"}
    at = _compare(at, "base", "judged")
    warned = "\n".join(plain(w.value) for w in at.warning)
    assert "scored on different label sets (base: human, judged: human+judge)" in warned
    assert any("Labels: base scored on human labels; judged scored on human+judge labels." in plain(c.value)
               for c in at.caption)
    csv = evaluations.comparison_csv(evaluations.compare(recorded, identity.get_user(recorded, "lead"), "base",
                                                         "judged"), "base", "judged").decode()
    assert "baseline labels,candidate labels" in csv.splitlines()[0] and ",human,human+judge," in csv


def test_a_tiny_stratum_says_too_few_on_the_page_as_in_the_cli(store):
    """Issue 36, item 2: a one-question stratum that lost got "FAIL p 0.0000" in the page's
    per-stratum table; now it says "too few (n = 1)" with no p, and a 5-of-5 losing stratum
    (with the minimum lowered) would get the exact sign-flip p 2/32 - here the default hides it."""
    qids = [f"q{i:02d}" for i in range(31)]
    strata = {q: ("lone" if i == 0 else "many") for i, q in enumerate(qids)}
    base = pd.DataFrame({"R@10": 1.0}, index=pd.Index(qids, name="query_id"))
    cand = base.copy()
    cand.loc["q00", "R@10"] = 0.0  # the one question of stratum 'lone' loses everything
    record_evaluation(store, "base", base, dataset_version="v1", strata=strata)
    record_evaluation(store, "cand", cand, dataset_version="v1", strata=strata)
    at = _compare(app_as_local(), "base", "cand")
    table = at.dataframe[-1].value.set_index("stratum")
    lone = table.loc["lone"]
    assert lone["verdict"] == "too few (n = 1)" and pd.isna(lone["p"]) and pd.isna(lone["ci95 low"])
    assert table.loc["many", "test"] == "paired bootstrap" and table.loc["many", "n"] == 30
    assert not [e for e in at.error if "FAIL" in plain(e.value)]
    assert "too few" in " ".join(c.value for c in at.caption)


def app_as_local() -> AppTest:
    """The page in single-user local mode (no accounts: the local user is admin)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at
