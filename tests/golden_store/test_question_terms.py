"""Issue 29, L8: a question's terms light in a passage as whole tokens only ("12" from
"LIS-0.12" never inside "12:30"), on the demo's question q007 and passages."""

from __future__ import annotations

from annotator.labeling.judging import marked_segments
from golden_store.corpus.search import question_terms, term_spans

Q007 = "What is room LIS-0.12 used for?"
LAPTOP = "In Dublin, collect new devices from the IT bench in room DUB-2.07, open Tuesday and Thursday from 09:30 to 12:30."
PARENTAL = "In Lisbon, the quiet room LIS-0.12 on the ground floor is reserved for nursing parents."


def test_question_terms_are_whole_tokens_without_stopwords():
    assert question_terms(Q007) == {"room", "lis-0.12", "used"}
    assert question_terms("What's the per-diem in Berlin?") == {"per-diem", "berlin"}


def test_only_whole_tokens_light():
    terms = question_terms(Q007)
    lit = [LAPTOP[a:b] for a, b in term_spans(LAPTOP, terms)]
    assert lit == ["room"]  # not the "12" of "12:30"
    lit = [PARENTAL[a:b] for a, b in term_spans(PARENTAL, terms)]
    assert lit == ["room", "LIS-0.12"]


def test_the_judge_passage_marks_whole_tokens():
    segs = marked_segments(LAPTOP, 0, Q007, [])
    assert [t for t, kind in segs if kind == "term"] == ["room"]
    assert "".join(t for t, _ in segs) == LAPTOP
    segs = marked_segments("(LIS-0.12), then LIS-0.120.", 0, Q007, [])
    assert [t for t, kind in segs if kind == "term"] == ["LIS-0.12"]
