"""The Results page's expanders for judge figures corrected by people (issue 40 item 7): the
relevance judge's top-k share beside the one corrected by the standing sample, the rubric
judge's score beside the one corrected by people's grades, and the plain figure alone, said
so, while people have graded nothing."""

from __future__ import annotations

import pandas as pd
import pytest

from golden_store.live.results import record_evaluation
from tests.annotator.test_judge_corrected_retrieval import _toy
from tests.annotator.test_judge_corrected_rubric import _graded
from tests.app_pages.test_app_roles import app_as
from tests.conftest import prepared_store

PAGE = "app_pages/results.py"
NO_SAMPLE = "no people's sample yet: plain figure only"

pytestmark = pytest.mark.slow  # AppTest runs of the page on a demo store: ~1-2 s each


def _build(people: bool):
    def build(store, folder) -> None:
        _toy(store, people=people)
        _graded(store, folder, people=people)
        frame = pd.DataFrame({"nDCG@10": [0.5, 0.7]}, index=pd.Index(["q001", "q002"], name="query_id"))
        record_evaluation(store, "ev-toy", frame, dataset_version="v1", system="toy")
    return build


@pytest.fixture
def sampled(request, golden_db):
    prepared_store(request, "results-corrected-sampled", _build(True), demo=True)


@pytest.fixture
def unsampled(request, golden_db):
    prepared_store(request, "results-corrected-unsampled", _build(False), demo=True)


def _table(at, column: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if column in d.value.columns).set_index("system")


def test_both_corrected_figures_sit_beside_the_judges(sampled):
    at = app_as(None).switch_page(PAGE).run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert any(x.startswith("Retrieval on the relevance judge's labels, corrected by people") for x in labels)
    assert any(x.startswith("Rubric scores as people would grade them") for x in labels)
    toy = _table(at, "corrected by people's sample").loc["toy"]
    assert toy["judge-labeled in top 10"] == 10 and toy["sampled (graded by people)"] == 4
    # top 10 of toy: 4 sampled (judge 1 1 1 0, people 1 0 1 0), 6 standing (1 0 1 0 1 1): the
    # judge's 7/10 corrected by the difference on the sample, -1/4: 0.45
    assert toy["judge alone"].startswith("0.700 [") and toy["corrected by people's sample"].startswith("0.450 [")
    rubric = _table(at, "corrected by people's grades").loc["rag-toy"]
    assert (rubric["judge-scored answers"], rubric["graded by people"]) == (7, 6)
    assert rubric["corrected by people's grades"].startswith(f"{(3 * (2.5 / 3 - 0.0625) + 2 * 0.6875 + 2 * 0.5625) / 7:.3f} [")
    assert any("nDCG@10 is not corrected" in c.value for c in at.caption)
    assert not [i for i in at.info if NO_SAMPLE in i.value]


def test_without_people_grades_the_page_says_plain_figure_only(unsampled):
    at = app_as(None).switch_page(PAGE).run()
    assert not at.exception
    assert len([i for i in at.info if i.value == NO_SAMPLE]) == 2
    assert _table(at, "corrected by people's sample").loc["toy", "corrected by people's sample"] == NO_SAMPLE
    assert _table(at, "corrected by people's grades").loc["rag-toy", "corrected by people's grades"] == NO_SAMPLE
