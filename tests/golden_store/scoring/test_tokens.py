"""Token-level chunking metrics (§5.2) and the report card (§5.4), by hand."""

from __future__ import annotations

import pytest

from golden_store.scoring.tokens import (
    Chunking, DocTokens, chunking_report, precision_omega, retrieve_at_budget, token_metrics,
)


def test_token_metrics_count_redundancy_in_the_denominator():
    excerpt = {1, 2, 3, 4}
    m = token_metrics(excerpt, [3, 4, 5, 3, 4, 6])  # two overlapping chunks repeat 3 and 4
    assert m["recall"] == 0.5
    assert m["precision"] == pytest.approx(2 / 6)
    assert m["iou"] == pytest.approx(2 / 6)  # union {1..6}


def test_positional_identities_not_vocabulary():
    docs = {"a": "the answer is here", "b": "the cat sat"}
    tok = DocTokens(docs)
    ex = set(tok.tokens("a", 0, 18))
    wrong = list(tok.tokens("b", 0, 3))  # "the" of another document
    assert token_metrics(ex, wrong)["recall"] == 0.0
    assert list(tok.tokens("a", 4, 10)) == [tok.offset["a"] + 1]  # "answer"
    assert list(tok.tokens("a", 5, 6)) == [tok.offset["a"] + 1]   # a span inside a token still covers it


def test_precision_omega_and_budget():
    excerpt = {10, 11}
    chunks = [[8, 9, 10], [11, 12, 13, 14], [20, 21]]
    assert precision_omega(excerpt, chunks) == pytest.approx(2 / 7)
    ranked = ["c1", "c2", "c3"]
    sizes = {"c1": 400, "c2": 500, "c3": 300}
    assert retrieve_at_budget(ranked, 1000, sizes.__getitem__) == ["c1", "c2"]
    assert retrieve_at_budget(ranked, 300, sizes.__getitem__) == []


def test_report_card_prefers_the_tighter_chunker_at_equal_recall():
    text = " ".join(f"w{i}" for i in range(400))
    docs = {"d": text}
    s = text.index("w100")
    e = text.index("w110") + len("w110")
    spans = [("q1", "d", s, e)]
    small = [(f"s{i}", "d", i * 100, min(len(text), i * 100 + 100)) for i in range(len(text) // 100 + 1)]
    large = [(f"l{i}", "d", i * 800, min(len(text), i * 800 + 800)) for i in range(len(text) // 800 + 1)]
    rank = lambda chunks: {"q1": [c for c, _, cs, ce in chunks if cs < e and s < ce]}  # noqa: E731
    rows = {r["chunker"]: r for r in chunking_report(
        docs, spans, {"small": Chunking(small, rank(small)), "large": Chunking(large, rank(large))},
        budget_tokens=10_000)}
    assert rows["small"]["recall_at_budget"] == rows["large"]["recall_at_budget"] == 1.0
    assert rows["small"]["precision_omega"] > rows["large"]["precision_omega"]
    assert rows["small"]["tokens_per_answer_at_budget"] < rows["large"]["tokens_per_answer_at_budget"]
    assert rows["small"]["chunks"] > rows["large"]["chunks"]
    assert rows["large"]["p95_chunks_per_answer_span"] >= 1
    no_run = chunking_report(docs, spans, {"small": Chunking(small)})[0]
    assert no_run["recall_at_budget"] is None and no_run["precision_omega"] > 0


def test_report_card_over_a_frozen_version(demo_store):
    from golden_store.freezing import freeze
    from golden_store.scoring.tokens import version_chunking_report
    from golden_store.versions import load_version

    freeze(demo_store, "v1", actor="eng")
    v = load_version("v1")
    docs = dict(zip(v.documents["doc_id"], v.documents["raw_text"]))
    fixed = [(f"{d}#{i}", d, i, min(len(t), i + 500)) for d, t in docs.items() for i in range(0, len(t), 500)]
    rows = version_chunking_report(v, {"fixed-500": Chunking(fixed)}, budget_tokens=400)
    assert rows[0]["dataset_version"] == "v1" and rows[0]["chunks"] == len(fixed)
    assert 0 < rows[0]["precision_omega"] < 1 and rows[0]["p95_chunks_per_answer_span"] >= 1
