"""Chunk labels derived from spans under each hit rule (METHODOLOGY §3.1)."""

from __future__ import annotations

import pytest

from golden_store.versions.chunk_labels import chunk_qrels, parse_hit_rule
from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from golden_store.versions import load_version

LABELS = [("q1", "d", 100, 200, 3), ("q1", "d", 500, 520, 1), ("q2", "e", 0, 10, 2)]
CHUNKS = [
    ("c0", "d", 0, 120),     # covers 20 of the 100 chars of span 1
    ("c1", "d", 120, 260),   # covers 80 of them
    ("c2", "d", 90, 210),    # contains span 1 entirely
    ("c3", "d", 200, 500),   # touches neither (half-open ranges)
    ("c4", "d", 510, 600),   # half of span 2
    ("c5", "e", 0, 10),
]


@pytest.mark.parametrize("rule,expected", [
    ("any_overlap", {"q1": {"c0": 3, "c1": 3, "c2": 3, "c4": 1}, "q2": {"c5": 2}}),
    ("min_overlap(0.5)", {"q1": {"c1": 3, "c2": 3, "c4": 1}, "q2": {"c5": 2}}),
    ("min_overlap(0.8)", {"q1": {"c1": 3, "c2": 3}, "q2": {"c5": 2}}),
    ("contains_span", {"q1": {"c2": 3}, "q2": {"c5": 2}}),
])
def test_hit_rules(rule, expected):
    got = chunk_qrels(LABELS, CHUNKS, parse_hit_rule(rule))
    assert got == expected and got.hit_rule == parse_hit_rule(rule).name


def test_bad_rules_and_chunks():
    for bad in ("overlap", "min_overlap(0)", "min_overlap(1.5)", ""):
        with pytest.raises(ValidationError, match="hit rule"):
            parse_hit_rule(bad)
    with pytest.raises(ValidationError, match="chunk 'x'"):
        chunk_qrels(LABELS, [("x", "d", 5, 5)], parse_hit_rule("any_overlap"))


def test_frozen_version_records_the_rule_and_derives_chunk_labels(demo_store):
    freeze(demo_store, "v1", actor="eng", hit_rule="min_overlap(0.5)")
    v = load_version("v1")
    assert v.manifest["hit_rule"] == "min_overlap(0.5)"
    s = v.spans.query("query_id == 'q001'").iloc[0]
    cut = s.start + (s.end - s.start) // 4  # "a" covers a quarter of the span, "b" the rest
    chunks = [("a", s.doc_id, 0, cut), ("b", s.doc_id, cut, s.end + 500), ("c", s.doc_id, s.start, s.end)]
    got = v.chunk_qrels(chunks)
    assert got.hit_rule == "min_overlap(0.5)"
    assert got["q001"] == {"b": 3, "c": 3}
    assert v.chunk_qrels(chunks, hit_rule="any_overlap")["q001"] == {"a": 3, "b": 3, "c": 3}
    assert v.chunk_qrels(chunks, hit_rule="contains_span")["q001"] == {"c": 3}
    with pytest.raises(ValidationError):
        freeze(demo_store, "v2", actor="eng", hit_rule="nearby")
