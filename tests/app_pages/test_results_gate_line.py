"""Issue 36 re-check, items 2 and 3, on the Results page: one gate line (PASS / WARN / FAIL, the
word `golden compare` exits on and the API returns as `gate`) above the per-metric boxes; the
refusal across hit rules names the page's checkbox, not the CLI's flag; a cell with no value
shows "—", not "None".

The expected verdicts are worked by hand from the recorded values (the ``recorded`` fixture):
cand against base loses R@10 (1 -> 0) on 10 of 40 questions, a credible drop of 0.25 >= 0.02:
FAIL; base against cand loses 0.01 of nDCG@10 on every question, credible but under 0.02: WARN,
and wins R@10: so the gate is WARN; base against old (the same values) moves nothing: PASS."""

from __future__ import annotations

import numpy as np
import pandas as pd

from golden_store.live.results import record_evaluation
from tests.app_pages.test_results_page import PAGE, QIDS, STRATA, _compare, app_as, app_as_local, recorded  # noqa: F401
from tests.conftest import plain


def _gate_boxes(at) -> list[tuple[str, str]]:
    return [(kind, plain(x.value)) for kind, xs in (("error", at.error), ("warning", at.warning),
                                                    ("success", at.success))
            for x in xs if plain(x.value).startswith("**Gate: ")]


def test_one_gate_line_above_the_metric_boxes(recorded, golden_db):  # noqa: F811  (golden_db: a store test)
    at = _compare(app_as("engineer").switch_page(PAGE).run(), "base", "cand")
    assert _gate_boxes(at) == [("error", plain(at.error[0].value))]  # one gate, red, before every metric box
    gate = plain(at.error[0].value)
    assert gate.startswith("**Gate: FAIL** - a credible drop of at least 0.02 in R@10;")
    assert "golden compare exits 1" in gate and "nDCG@10" not in gate
    assert plain(at.error[1].value).startswith("**FAIL** · R@10")  # the metric's own box comes after

    at = _compare(at, "cand", "base")
    assert [(k, v.split(" - ")[0]) for k, v in _gate_boxes(at)] == [("warning", "**Gate: WARN**")]
    assert "smaller than 0.02 in nDCG@10, none failing; golden compare exits 0" in _gate_boxes(at)[0][1]

    at = _compare(at, "old", "base")
    assert [(k, v.split(" - ")[0]) for k, v in _gate_boxes(at)] == [("success", "**Gate: PASS**")]


def test_the_hit_rule_refusal_names_the_pages_checkbox(recorded, golden_db):  # noqa: F811
    frame = pd.DataFrame({"R@10": np.linspace(0, 1, len(QIDS))}, index=pd.Index(QIDS, name="query_id"))
    record_evaluation(recorded, "d-any", frame, dataset_version="v1", strata=STRATA, hit_rule="any_overlap",
                      run_level="passage", run_depth=10)
    record_evaluation(recorded, "d-cs", frame, dataset_version="v1", strata=STRATA, hit_rule="contains_span",
                      run_level="passage", run_depth=10)
    at = _compare(app_as("engineer").switch_page(PAGE).run(), "d-any", "d-cs")
    refusal = next(plain(e.value) for e in at.error if "different definitions" in plain(e.value))
    assert "hit rule differs: d-any any_overlap, d-cs contains_span" in refusal
    assert refusal.endswith('or tick "Compare even across different hit rules" above to compare anyway.'), refusal
    assert "--allow-different-definitions" not in refusal
    at.checkbox(key="res_across_definitions").check().run()
    assert not at.exception and _gate_boxes(at)  # the box the refusal names compares them


def test_empty_cells_show_a_dash_not_none(store):
    """A one-question stratum has no interval, p or test: those cells are empty in the data
    and the table draws them as "—" (Streamlit draws "None" unless told)."""
    qids = [f"q{i:02d}" for i in range(31)]
    strata = {q: ("lone" if i == 0 else "many") for i, q in enumerate(qids)}
    base = pd.DataFrame({"R@10": 1.0}, index=pd.Index(qids, name="query_id"))
    record_evaluation(store, "base", base, dataset_version="v1", strata=strata)
    record_evaluation(store, "cand", base, dataset_version="v1", strata=strata)
    at = _compare(app_as_local(), "base", "cand")
    listed, per_stratum = at.dataframe[0], at.dataframe[-1]
    lone = per_stratum.value.set_index("stratum").loc["lone"]
    assert lone[["ci95 low", "ci95 high", "p", "test"]].isna().all()  # empty in the data...
    assert per_stratum.proto.placeholder == "—"  # ...and drawn as a dash
    assert listed.value["judged@10"].isna().all() and listed.proto.placeholder == "—"  # not recorded
