"""The Results page with answers (issue 40, items 6 and 7): answer evaluations listed beside
runs, and the faithfulness figure corrected by people's claim reviews beside the judge's own."""

from __future__ import annotations

import pandas as pd
import pytest

from golden_store.live.results import ANSWER_LEVEL, record_evaluation
from tests.annotator.test_judge_corrected import _checked_and_reviewed
from tests.app_pages.test_app_roles import app_as
from tests.conftest import prepared_store

PAGE = "app_pages/results.py"


def _build(store, _folder) -> None:
    _checked_and_reviewed(store)
    qids = [f"q{i:03d}" for i in range(1, 9)]
    for name, f1, rubric in (("ans-a", 0.4, 0.9), ("ans-b", 0.6, 0.2)):
        frame = pd.DataFrame({"answer_f1": f1}, index=pd.Index(qids, name="query_id"))
        frame["rubric_human"] = [rubric] * 3 + [float("nan")] * (len(qids) - 3)  # a human sample of 3
        record_evaluation(store, name, frame, dataset_version="v1", system=name, run_level=ANSWER_LEVEL)


@pytest.fixture
def reviewed(request, golden_db):
    prepared_store(request, "results-answers-reviewed", _build, demo=True)


def test_the_corrected_faithfulness_sits_beside_the_judges(reviewed):
    at = app_as(None).switch_page(PAGE).run()  # single-user local mode: admin
    assert not at.exception
    (exp,) = [e for e in at.expander if e.label.startswith("Faithfulness as people would judge it")]
    table = next(d.value for d in at.dataframe if "corrected by reviews" in d.value.columns)
    row = table.set_index("system").loc["rag-bm25"]
    assert (row["claims"], row["reviewed"]) == (10, 6)
    assert row["judge alone"].startswith("0.800 [") and row["corrected by reviews"].startswith("0.700 [")
    # the two answer evaluations are listed and compared like runs
    listed = at.dataframe[0].value.set_index("evaluation")
    assert {"ans-a", "ans-b"} <= set(listed.index) and listed.loc["ans-b", "answer_f1"] == pytest.approx(0.6)
    # answers have no ranking: no judged@10 to miss, and no "score the run again" advice for them
    assert listed.loc["ans-a", "judged health"] == "n/a (answers)"
    assert not [c.value for c in at.caption if "not recorded for" in c.value]


def test_a_metric_a_small_human_sample_carries_reads_too_few_and_the_rest_is_compared(reviewed):
    """Fails on the page that refused the whole comparison (rubric_human shares 3 questions)
    or that crashed unpacking a missing interval."""
    from tests.conftest import plain

    at = app_as(None).switch_page(PAGE).run()
    at.selectbox(key="res_baseline").set_value("ans-a").run()
    at.selectbox(key="res_candidate").set_value("ans-b").run()
    assert not at.exception and not at.error
    shown = [plain(i.value) for i in at.info]
    assert any(t.startswith("**too few (n = 3)** · rubric_human") and "no verdict" in t for t in shown), shown
    assert any(plain(x.value).startswith("**PASS** · answer_f1") for x in at.success)
    assert any("rubric_human: too few shared questions for a verdict" in plain(x.value) for x in at.success)
