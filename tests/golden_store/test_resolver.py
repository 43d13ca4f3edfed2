"""Quote -> span resolution: every match kind, ambiguity, Unicode, hyphenation, long quotes."""

from __future__ import annotations

import random

import pytest

from golden_store.core.errors import ValidationError
from golden_store.corpus.resolver import CorpusIndex, IndexedResolver, SpanResolver

DOCS = {
    "leave": (
        "Annual leave\n\nFrom 1 April 2025 you may carry over up to 8 unused days into the next\n"
        "leave year, provided your manager approves the carry-over in Pulse.\n\n"
        "Claims are reim-\nbursed within 30 days of the \u201cexpense report\u201d \u2013 no exceptions.\n"
    ),
    "vpn": "Error VPN-ERR-0417 means the device certificate has expired. Renew it in Company Portal.\n",
    "twice-a": "Badges are collected at reception on the first day.\n",
    "twice-b": "Visitors sign in. Badges are collected at reception on the first day.\n",
    "unicode": (
        "Caf\u00e9 policy: coffee is free \u2615 for all staff.\n"
        "Die Stra\u00dfe hei\u00dft Hauptstra\u00dfe und das Caf\u0065\u0301 ist dort.\n"
        "\u4f11\u6687\u306f\u5e74\u306b\u4e8c\u5341\u65e5\u3067\u3059\u3002 The office is closed on public holidays.\n"
    ),
}


@pytest.fixture(scope="module", params=["in_memory", "persisted"])
def resolver(request, tmp_path_factory):
    """Both resolvers answer every case the same: the in-memory one (a folder, a version)
    and the one over the persisted index (a store)."""
    if request.param == "in_memory":
        return SpanResolver(CorpusIndex.from_raw(DOCS))
    from golden_store.corpus import index as corpus_index
    from golden_store.core.canonical import canonical_text

    ix = corpus_index.build(tmp_path_factory.mktemp("index") / "ix", ((d, canonical_text(t), t) for d, t in DOCS.items()), 0)
    return IndexedResolver(ix)


def located(res):
    return DOCS[res.best.doc_id][res.best.start:res.best.end]


def test_exact_returns_raw_offsets_of_the_passage(resolver):
    res = resolver.resolve("you may carry over up to 8 unused days into the next leave year")
    assert res.status == "exact" and res.best.doc_id == "leave" and res.best.score == 100
    assert located(res) == "you may carry over up to 8 unused days into the next\nleave year"


def test_exact_across_line_break_hyphenation_and_typography(resolver):
    res = resolver.resolve('Claims are reimbursed within 30 days of the "expense report" - no exceptions.')
    assert res.status == "exact"
    assert located(res) == "Claims are reim-\nbursed within 30 days of the \u201cexpense report\u201d \u2013 no exceptions."


def test_fuzzy_with_typos_case_and_a_dropped_word(resolver):
    res = resolver.resolve("error vpn-err-0417 means the device certifcate has expird. renew in Company Portal")
    assert res.status == "fuzzy" and 90 <= res.best.score < 100
    assert located(res).startswith("Error VPN-ERR-0417") and located(res).rstrip(".").endswith("Company Portal")


def test_unresolved_when_nothing_is_close(resolver):
    res = resolver.resolve("The canteen serves vegan lunches every Thursday afternoon")
    assert res.status == "unresolved" and res.best is None
    assert res.as_dict()["doc_id"] is None


def test_ambiguous_lists_every_place(resolver):
    res = resolver.resolve("Badges are collected at reception on the first day")
    assert res.status == "ambiguous" and res.best is None
    assert sorted(c.doc_id for c in res.candidates) == ["twice-a", "twice-b"]
    for c in res.candidates:
        assert DOCS[c.doc_id][c.start:c.end] == "Badges are collected at reception on the first day"


def test_doc_hint_restricts_the_search(resolver):
    res = resolver.resolve("Badges are collected at reception on the first day", doc_id="twice-b")
    assert res.status == "exact" and res.best.doc_id == "twice-b"
    with pytest.raises(ValidationError, match="Unknown doc_id hint"):
        resolver.resolve("Badges", doc_id="nope")


def test_threshold_is_configurable():
    strict = SpanResolver(CorpusIndex.from_raw(DOCS), threshold=99)
    assert strict.resolve("error vpn-err-0417 means the device certifcate has expird").status == "unresolved"
    with pytest.raises(ValidationError):
        SpanResolver(CorpusIndex.from_raw(DOCS), threshold=0)


@pytest.mark.parametrize("quote,expected", [
    ("coffee is free \u2615 for all staff", "coffee is free \u2615 for all staff"),
    ("das Caf\u00e9 ist dort", "das Caf\u0065\u0301 ist dort"),  # composed quote, decomposed corpus
    ("\u5e74\u306b\u4e8c\u5341\u65e5", "\u5e74\u306b\u4e8c\u5341\u65e5"),  # CJK inside a run, no spaces
    ("Die Stra\u00dfe hei\u00dft Hauptstra\u00dfe", "Die Stra\u00dfe hei\u00dft Hauptstra\u00dfe"),
])
def test_unicode(resolver, quote, expected):
    res = resolver.resolve(quote)
    assert res.located, res
    assert located(res) == expected


def test_single_word_and_partial_word_quotes(resolver):
    res = resolver.resolve("reimbursed")
    assert res.status == "exact" and located(res) == "reim-\nbursed"
    assert resolver.resolve("ertificat").status == "exact"


def test_very_long_quote():
    rng = random.Random(7)
    words = [f"w{rng.randrange(5000)}" for _ in range(3000)]
    doc = " ".join(words)
    r = SpanResolver(CorpusIndex.from_raw({"long": doc, "other": "unrelated text here"}))
    quote = " ".join(words[100:1600])
    res = r.resolve(quote)
    assert res.status == "exact" and doc[res.best.start:res.best.end] == quote
    typo = quote.replace(words[800], words[800] + "x", 1).replace(words[1200], "", 1)
    res = r.resolve(typo)
    assert res.status == "fuzzy" and res.best.start == doc.index(quote)
    assert abs(res.best.end - (res.best.start + len(quote))) <= 10


@pytest.mark.parametrize("quote", ["", "   \n", "\u200b\u00ad"])
def test_empty_quote_is_a_clear_error(resolver, quote):
    with pytest.raises(ValidationError, match="quote is empty"):
        resolver.resolve(quote)
