"""The math of the deterministic answer checks (golden_store/scoring/answer_checks.py) on worked
examples computed by hand, and the Kolmogorov-Smirnov test against scipy.stats.ks_2samp (and
its limit against scipy's kstwobign) as the independent reference."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.stats import ks_2samp, kstwobign

from golden_store.core.errors import ValidationError
from golden_store.scoring import answer_checks as ac


def test_words_empty_and_the_cap():
    assert ac.word_count("  EUR 58\tfor a\nfull day ") == 6
    assert ac.is_empty("") and ac.is_empty(" \n\t") and ac.is_empty("\u200b\u2060\ufeff ")  # zero-width only
    assert not ac.is_empty("\u200bno")
    st = ac.structure({"q2": "x" * 11, "q1": "\u200b", "q3": "fine", "q0": "y" * 10}, max_chars=10)
    assert (st.answers, st.empty, st.over_cap) == (4, ["q1"], ["q2"])
    with pytest.raises(ValidationError, match="at least 1 character, not 0"):
        ac.structure({}, max_chars=0)


def test_percentiles_by_hand_and_against_numpy():
    # [1, 2, 3, 10]: median between 2 and 3 = 2.5; p90 at position 3 * 0.9 = 2.7: 3 + 0.7 * (10 - 3) = 7.9
    assert ac.percentile([10, 1, 3, 2], 50) == 2.5
    assert ac.percentile([10, 1, 3, 2], 90) == pytest.approx(7.9)
    assert ac.percentile([], 50) is None and ac.percentile([7], 90) == 7.0
    rng = random.Random(3)
    for _ in range(50):
        xs = [rng.randint(0, 300) for _ in range(rng.randint(1, 40))]
        for q in (50, 90):
            assert ac.percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), abs=1e-9)
    ln = ac.lengths([10, 1, 3, 2])
    assert (ln.answers, ln.words_median, ln.words_min, ln.words_max) == (4, 2.5, 1, 10)


def test_ks_worked_examples():
    # fully separated samples of 3: D = 1; of the C(6, 3) = 20 equally likely orderings two are
    # fully separated (either way round): p = 2 / 20
    r = ac.ks_two_sample([1, 2, 3], [4, 5, 6])
    assert (r.statistic, r.method) == (1.0, "exact") and r.p_value == pytest.approx(0.1, rel=1e-12)
    # interleaved samples of 2: D = 1/2, which every ordering reaches: p = 1
    r = ac.ks_two_sample([1, 3], [2, 4])
    assert r.statistic == 0.5 and r.p_value == pytest.approx(1.0)
    # the same values: D = 0, p = 1
    assert ac.ks_two_sample([5, 5, 7], [7, 5, 5]).statistic == 0.0
    # unequal sizes, 1 vs 2, separated: D = 1, reached when the one value is below both others or above
    # both: 2 of the C(3, 1) = 3 orderings, p = 2/3
    assert ac.ks_two_sample([0], [1, 2]).p_value == pytest.approx(2 / 3, rel=1e-12)
    with pytest.raises(ValueError):
        ac.ks_two_sample([], [1])


@pytest.mark.parametrize("equal", [True, False])
def test_ks_equals_scipy_ks_2samp(equal):
    """Statistic and p-value equal to scipy's (its exact method, which 'auto' picks at these
    sizes), on word-count-like data with many ties."""
    rng = random.Random(11 if equal else 12)
    for _ in range(150):
        m = rng.randint(1, 80)
        n = m if equal else rng.randint(1, 80)
        spread = rng.choice([3, 20, 200])
        a = [rng.randint(0, spread) for _ in range(m)]
        b = [rng.randint(0, spread) + rng.choice([0, 2, 10]) for _ in range(n)]
        ref, mine = ks_2samp(a, b), ac.ks_two_sample(a, b)
        assert mine.statistic == pytest.approx(float(ref.statistic), abs=1e-12), (a, b)
        assert mine.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-300), (a, b)


def test_ks_equal_sizes_stays_exact_and_fast_at_a_large_set():
    rng = random.Random(5)
    a = [rng.randint(0, 300) for _ in range(5000)]
    b = [rng.randint(0, 320) for _ in range(5000)]
    ref, mine = ks_2samp(a, b), ac.ks_two_sample(a, b)
    assert mine.method == "exact" and mine.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)


def test_ks_beyond_the_exact_limit_is_kolmogorovs_limit():
    rng = random.Random(9)
    a = [rng.gauss(0, 1) for _ in range(1500)]
    b = [rng.gauss(0.1, 1) for _ in range(1100)]
    mine = ac.ks_two_sample(a, b)
    assert mine.method == "asymptotic"
    assert mine.statistic == pytest.approx(float(ks_2samp(a, b).statistic), abs=1e-12)
    assert mine.p_value == pytest.approx(float(kstwobign.sf(mine.statistic * math.sqrt(1500 * 1100 / 2600))),
                                         rel=1e-9)


def test_length_shift_needs_both_the_test_and_the_median():
    qs = [f"q{i}" for i in range(6)]
    # six questions, every candidate answer twice as long: D = 1, p = 2 / C(12, 6) = 2 / 924; median 10 -> 20
    shift = ac.length_shift("base", dict.fromkeys(qs, 10), "cand", dict.fromkeys(qs, 20))
    assert shift.p_value == pytest.approx(2 / 924, rel=1e-12) and shift.median_change == 1.0
    assert shift.flagged and shift.questions == 6
    assert "p = 0.00216 (< 0.01)" in shift.reason and "median 10 -> 20 words (+100%, >= 25%)" in shift.reason
    # the same separation, 10 -> 11 words: the test alone would flag it; a 10% move is not a shift
    small = ac.length_shift("base", dict.fromkeys(qs, 10), "cand", dict.fromkeys(qs, 11))
    assert small.p_value < 0.01 and not small.flagged and "(+10%, < 25%)" in small.reason
    # four questions only: p = 2 / C(8, 4) = 2 / 70 = 0.0286 >= 0.01, not flagged though the median doubled
    few = ac.length_shift("base", dict.fromkeys(qs[:4], 10), "cand", dict.fromkeys(qs[:4], 20))
    assert few.p_value == pytest.approx(2 / 70) and not few.flagged
    # questions only one system answered are not compared
    extra = {**dict.fromkeys(qs[:4], 10), "only-cand": 500}
    assert ac.length_shift("base", dict.fromkeys(qs[:4], 10), "cand", extra).p_value == 1.0
    none = ac.length_shift("base", {"a": 1}, "cand", {"b": 1})
    assert not none.flagged and none.p_value is None and none.reason == "not checked: no question answered by both"


def test_forbidden_patterns_defaults_named_and_case_insensitive():
    answers = {
        "q1": "Per the <context id=2> passage, 25 days.",
        "q2": "[INST] answer briefly [/INST] 25 days",
        "q3": "<|im_start|>assistant 25 days",
        "q4": "25 days.\nHuman: and sick leave?",
        "q5": "As an AI, I cannot say; the context of the policy is leave.",
        "q6": "<<SYS>> be brief <</SYS>>",
    }
    hits = {h.name: h for h in ac.forbidden_hits(answers, ac.compile_patterns(["as an ai"]))}
    assert {n: h.query_ids for n, h in hits.items()} == {
        "context tag": ["q1"], "[INST] marker": ["q2"], "<<SYS>> marker": ["q6"], "chat-template token": ["q3"],
        "Human:/Assistant: turn": ["q4"], "as an ai": ["q5"]}  # "the context of" is not a tag
    assert hits["as an ai"].first_match == "As an AI" and hits["context tag"].first_match == "<context id=2>"
    many = ac.forbidden_hits({f"q{i:02}": "EUR" for i in range(8)}, ac.compile_patterns(["eur"], defaults=False))
    assert many[0].answers == 8 and many[0].query_ids == ["q00", "q01", "q02", "q03", "q04"]


def test_a_bad_or_empty_pattern_is_one_sentence_naming_it():
    with pytest.raises(ValidationError, match=r"The forbidden pattern 'a\[b' is not a valid regular expression"):
        ac.compile_patterns(["fine", "a[b"])
    with pytest.raises(ValidationError, match="is empty"):
        ac.compile_patterns([""])


def test_refusal_and_abstention_per_stratum_by_hand():
    rows = [("lexical", "answered"), ("lexical", "refused"), ("lexical", "abstained"), ("lexical", "refused"),
            ("lexical", "unknown"), ("negative", "abstained"), ("negative", "unknown")]
    lex, neg = ac.outcomes_by_stratum(rows)
    # lexical: 4 marked (1 answered, 1 abstained, 2 refused), 1 unmarked: refusal 2/4, abstention 1/4
    assert (lex.stratum, lex.answers, lex.marked, lex.unmarked) == ("lexical", 5, 4, 1)
    assert (lex.refusal_rate, lex.abstention_rate) == (0.5, 0.25)
    assert (neg.marked, neg.refusal_rate, neg.abstention_rate) == (1, 0.0, 1.0)
    only_unmarked = ac.outcomes_by_stratum([("temporal", "unknown")])[0]
    assert only_unmarked.as_dict()["refusal_rate"] is None and only_unmarked.unmarked == 1
