"""Issue 29: corpus search honours phrases (M5) and a fuzzy span keeps the punctuation that
ends its sentence (M1), on the demo corpus and a 566k-character document."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from golden_store.core.canonical import canonical_text
from golden_store.corpus import index as corpus_index
from golden_store.corpus.resolver import CorpusIndex, SpanResolver
from golden_store.corpus.search import search_indexed

CORPUS = Path(__file__).resolve().parents[2] / "annotator" / "demo" / "data" / "corpus"
PHRASE = "Bicycle parking in the Lisbon basement is free for staff with a badge; see Clause 4711."
FILLER = "staff policy office team review budget meeting travel desk room floor access card request form".split()


def _demo() -> dict[str, str]:
    return {p.stem: p.read_text("utf-8") for p in sorted(CORPUS.glob("*.md"))}


def _handbook(n_chars: int = 566_000) -> str:
    """A long document of filler sentences with :data:`PHRASE` near its end."""
    rng = random.Random(7)
    parts, n = [], 0
    while n < n_chars - 10_000:
        s = " ".join(rng.choice(FILLER) for _ in range(rng.randint(8, 20))).capitalize() + ". "
        parts.append(s)
        n += len(s)
    body = "".join(parts)
    tail = "".join(parts[:2000])  # more than enough to reach n_chars
    return (body + PHRASE + " " + tail)[:n_chars]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = _demo()
    docs["facilities-handbook"] = _handbook()
    assert len(docs["facilities-handbook"]) == 566_000 and PHRASE in docs["facilities-handbook"]
    path = tmp_path_factory.mktemp("ix") / "ix"
    return corpus_index.build(path, ((d, canonical_text(t), t) for d, t in docs.items()), 0)


def test_the_document_with_the_exact_phrase_ranks_first(index):
    hits = search_indexed(index, "manager before 10:00", limit=8)
    assert hits[0].doc_id == "sick-leave" and hits[0].match == "phrase"
    assert "manager before 10:00" in canonical_text(_demo()["sick-leave"])
    # the others only share words ("10", "00", "manager"...): none holds the phrase
    assert all(h.match != "phrase" for h in hits[1:])


@pytest.mark.parametrize("query, match", [("Bicycle parking", "phrase"),
                                          ("bicycle parking Lisbon basement", "near")])
def test_a_long_document_holding_the_phrase_is_found_first(index, query, match):
    hits = search_indexed(index, query, limit=8)
    assert hits[0].doc_id == "facilities-handbook" and hits[0].match == match
    shown = "".join(t for t, _ in hits[0].snippet)
    assert "Bicycle parking in the Lisbon basement" in shown  # the snippet is where the phrase is


def test_words_far_apart_are_not_a_near_match(index):
    far = {h.doc_id: h for h in search_indexed(index, "bicycle badge", limit=20)}
    assert far["facilities-handbook"].match == "words"  # 10 words apart: more than the slop allows


def test_a_search_restricted_to_one_document_keeps_the_tiers(index):
    hits = search_indexed(index, "Bicycle parking", only_doc="facilities-handbook")
    assert [(h.doc_id, h.match) for h in hits] == [("facilities-handbook", "phrase")]


def test_a_fuzzy_span_ends_with_the_sentence_period():
    docs = _demo()
    r = SpanResolver(CorpusIndex.from_raw(docs))
    typed = ("A mesage in the team channel alone is not enough, because you manager may be on leave and the "
             "absence would go unrecorded.")
    sentence = ("A message in the team channel alone is not enough, because your manager may be on leave and the "
                "absence would go unrecorded.")
    res = r.resolve(typed)
    start = docs["sick-leave"].index(sentence)
    assert res.status == "fuzzy" and (res.best.doc_id, res.best.start, res.best.end) == (
        "sick-leave", start, start + len(sentence))
    # without the period typed, the span stops at the word as before
    res = r.resolve(typed[:-1])
    assert (res.best.start, res.best.end) == (start, start + len(sentence) - 1)
