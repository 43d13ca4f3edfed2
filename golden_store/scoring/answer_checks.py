"""The deterministic checks of systems' answers (METHODOLOGY §10.7), the math: pure functions
over plain data, no store, no model.

Why these and why first: each is cheap, needs no judge, and has a result nobody has to
defend. An empty answer or one past a length cap is a broken output, not a poor one; a
leaked prompt marker (``<context>``, ``[INST]``) says the generation template is broken; a
system whose answers suddenly got much longer or shorter changed behaviour (and cost) even
when its scores did not move; a refusal rate that moves per stratum is a policy change.

Definitions, fixed here so every surface reports the same numbers:

* **words** - whitespace-separated tokens (``len(text.split())``): language-blind, stable,
  and what "verbosity" means to a reader.
* **empty** - nothing left once whitespace and invisible format characters (Unicode category
  Cf: zero-width space, word joiner, BOM...) are removed. The importer refuses ``""`` and
  blanks; an answer of zero-width characters passes it and is still no answer.
* **percentiles** - linear interpolation between order statistics (numpy's default, Hyndman
  and Fan type 7): the median of 1, 2, 3, 10 is 2.5, its p90 7.9.
* **length shift** - a two-sample Kolmogorov-Smirnov test on the word counts of the questions
  both systems answered, flagged only when the distributions differ (p < ``alpha``, 0.01) *and*
  the median moved by at least ``min_change`` (25%) of the baseline's: the test alone flags
  tiny, harmless shifts on a large set; the median alone misses a change in the tails' weight.
  Word counts have ties, which make the KS p-value conservative (too large), never too small.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction

from golden_store.core.errors import ValidationError

DEFAULT_MAX_CHARS = 4000
KS_ALPHA = 0.01
MIN_MEDIAN_CHANGE = 0.25
FIRST_IDS = 5  # query ids kept per forbidden pattern: enough to open a few, not a dump
# exact p-value by counting lattice paths when the samples differ in size and m*n is at most
# this (Python integers, O(m*n)); beyond it Kolmogorov's asymptotic series
EXACT_UNEQUAL_MAX_CELLS = 1_000_000

OUTCOMES = ("answered", "abstained", "refused")

# Prompt scaffolding that should never reach a user: the markers a generation template puts
# around retrieved passages, instructions and chat turns. Named, so a hit says which leaked.
DEFAULT_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("context tag", r"</?\s*(?:context|contexts|documents?|search_results?|retrieved_passages?)\b[^>]*>"),
    ("[INST] marker", r"\[/?INST\]"),
    ("<<SYS>> marker", r"<<\s*/?SYS\s*>>"),
    ("chat-template token", r"<\|[A-Za-z_]+\|>"),
    ("Human:/Assistant: turn", r"(?m)^\s*(?:Human|Assistant):"),
)

DEFINITIONS: dict[str, str] = {
    "words": "whitespace-separated tokens of the answer",
    "empty": "nothing left after removing whitespace and invisible format characters (Unicode Cf)",
    "over_cap": "more characters than max_chars",
    "percentiles": "linear interpolation between order statistics (numpy's default)",
    "length_shift": f"two-sample Kolmogorov-Smirnov on word counts over the questions both systems answered; "
                    f"flagged when p < {KS_ALPHA} and the median moved by >= {MIN_MEDIAN_CHANGE:.0%} of the "
                    "baseline's",
    "forbidden": "a regular expression (case-insensitive) found anywhere in the answer",
    "refusal_rate": "refused / marked answers (answered + abstained + refused); unmarked answers counted apart",
    "abstention_rate": "abstained / marked answers; unmarked answers counted apart",
}


# ---- one answer -------------------------------------------------------------------------------


def word_count(text: str) -> int:
    return len(text.split())


def is_empty(text: str) -> bool:
    """No visible content: only whitespace and invisible format characters."""
    return not any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


@dataclass(frozen=True)
class Structure:
    """The required-field checks of one system's answers: which are empty, which are too long."""

    answers: int
    max_chars: int
    empty: list[str]
    over_cap: list[str]


def structure(answers: Mapping[str, str], max_chars: int = DEFAULT_MAX_CHARS) -> Structure:
    """``answers``: text by query id."""
    if max_chars < 1:
        raise ValidationError(f"The length cap must be at least 1 character, not {max_chars}.")
    ids = sorted(answers)
    return Structure(answers=len(ids), max_chars=max_chars,
                     empty=[q for q in ids if is_empty(answers[q])],
                     over_cap=[q for q in ids if len(answers[q]) > max_chars])


# ---- length distribution ------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


@dataclass(frozen=True)
class Lengths:
    answers: int
    words_median: float | None
    words_p90: float | None
    words_min: int | None
    words_max: int | None


def lengths(word_counts: Sequence[int]) -> Lengths:
    return Lengths(answers=len(word_counts), words_median=percentile(word_counts, 50),
                   words_p90=percentile(word_counts, 90), words_min=min(word_counts, default=None),
                   words_max=max(word_counts, default=None))


@dataclass(frozen=True)
class KS:
    """A two-sample Kolmogorov-Smirnov test: ``statistic`` D = the largest gap between the two
    empirical distribution functions, ``p_value`` two-sided, ``method`` exact or asymptotic."""

    statistic: float
    p_value: float
    method: str
    n_a: int
    n_b: int


def _gap(a: Sequence[float], b: Sequence[float]) -> tuple[int, int]:
    """D as a fraction of the lattice unit: (h, lcm) with D = h / lcm(m, n), exact. At every
    distinct value, i of ``a`` and j of ``b`` are at or below it; D*lcm = |i*n/g - j*m/g|."""
    m, n = len(a), len(b)
    g = math.gcd(m, n)
    mg, ng = m // g, n // g
    xs, ys = sorted(a), sorted(b)
    i = j = h = 0
    for v in sorted(set(xs) | set(ys)):
        while i < m and xs[i] <= v:
            i += 1
        while j < n and ys[j] <= v:
            j += 1
        h = max(h, abs(i * ng - j * mg))
    return h, m * ng


def _p_equal(n: int, h: int) -> float:
    """P(D >= h/n) for two samples of n each (no ties): 2 * sum_k (-1)^(k+1) C(2n, n-kh) / C(2n, n).
    Summed from the innermost term outwards as P_k = r_k (1 - P_(k+1)), where r_k = C(2n, n-(k+1)h)
    / C(2n, n-kh) is a product of h ratios, so nothing overflows and nothing cancels."""
    p = 0.0
    for k in range(n // h, -1, -1):
        r = 1.0
        for t in range(h):
            r *= (n - k * h - t) / (n + k * h + t + 1)
        p = r * (1.0 - p)
    return min(1.0, 2 * p)


def _p_unequal_exact(m: int, n: int, h: int) -> float:
    """P(D >= h/lcm) by counting the monotone lattice paths from (0, 0) to (m, n) that stay
    strictly inside the band |i*n/g - j*m/g| < h (Hodges 1958); exact integers."""
    g = math.gcd(m, n)
    mg, ng = m // g, n // g
    row = [0] * (n + 1)
    for i in range(m + 1):
        for j in range(n + 1):
            if abs(i * ng - j * mg) >= h:
                row[j] = 0
            elif i == 0 and j == 0:
                row[j] = 1
            else:
                row[j] = (row[j] if i > 0 else 0) + (row[j - 1] if j > 0 else 0)
    total = math.comb(m + n, m)
    return float(Fraction(total - row[n], total))


def _p_asymptotic(m: int, n: int, d: float) -> float:
    """Kolmogorov's limit: P(sqrt(mn/(m+n)) D > x) = 2 sum_k (-1)^(k-1) exp(-2 k^2 x^2)."""
    x = math.sqrt(m * n / (m + n)) * d
    if x < 0.2:  # the series converges slowly here and the limit is 1 to 15 digits
        return 1.0
    s = sum((-1) ** (k - 1) * math.exp(-2 * k * k * x * x) for k in range(1, 101))
    return min(1.0, max(0.0, 2 * s))


def ks_two_sample(a: Sequence[float], b: Sequence[float]) -> KS:
    """Two-sided two-sample KS test. Exact p-value for equal sizes (any n) and for unequal sizes
    up to EXACT_UNEQUAL_MAX_CELLS; Kolmogorov's asymptotic distribution beyond."""
    m, n = len(a), len(b)
    if not m or not n:
        raise ValueError("the Kolmogorov-Smirnov test needs at least one value in each sample")
    h, lcm = _gap(a, b)
    d = h / lcm
    if h == 0:
        return KS(0.0, 1.0, "exact", m, n)
    if m == n:
        return KS(d, _p_equal(n, h), "exact", m, n)
    if m * n <= EXACT_UNEQUAL_MAX_CELLS:
        return KS(d, _p_unequal_exact(m, n, h), "exact", m, n)
    return KS(d, _p_asymptotic(m, n, d), "asymptotic", m, n)


@dataclass(frozen=True)
class LengthShift:
    """Whether the candidate's answer lengths moved against the baseline's, on the questions
    both answered; ``reason`` gives both numbers (the KS p-value and the median's move), or says
    why the check could not run."""

    baseline: str
    candidate: str
    questions: int
    median_baseline: float | None
    median_candidate: float | None
    median_change: float | None  # (candidate - baseline) / baseline; None when the baseline's is 0
    ks_statistic: float | None
    p_value: float | None
    method: str | None
    flagged: bool
    reason: str
    alpha: float = KS_ALPHA
    min_change: float = MIN_MEDIAN_CHANGE

    def as_dict(self) -> dict:
        return asdict(self)


def length_shift(baseline: str, base_words: Mapping[str, int], candidate: str, cand_words: Mapping[str, int], *,
                 alpha: float = KS_ALPHA, min_change: float = MIN_MEDIAN_CHANGE) -> LengthShift:
    """``*_words``: word count by query id. Only the questions in both are compared, so a
    system answering other questions is not read as a shift."""
    common = sorted(set(base_words) & set(cand_words))
    if not common:
        return LengthShift(baseline, candidate, 0, None, None, None, None, None, None, False,
                           "not checked: no question answered by both", alpha, min_change)
    xs = [base_words[q] for q in common]
    ys = [cand_words[q] for q in common]
    mb, mc = percentile(xs, 50), percentile(ys, 50)
    assert mb is not None and mc is not None
    change = (mc - mb) / mb if mb else None
    moved = abs(change) >= min_change if change is not None else mc != mb
    ks = ks_two_sample(xs, ys)
    flagged = ks.p_value < alpha and moved
    shown = f"{change:+.0%}" if change is not None else "from 0"
    reason = (f"KS D = {ks.statistic:.3f}, p = {ks.p_value:.3g} ({'<' if ks.p_value < alpha else '>='} "
              f"{alpha}); median {mb:g} -> {mc:g} words ({shown}, {'>=' if moved else '<'} {min_change:.0%}) over "
              f"{len(common)} question(s)")
    return LengthShift(baseline, candidate, len(common), mb, mc, change, ks.statistic, ks.p_value, ks.method,
                       flagged, reason, alpha, min_change)


# ---- forbidden patterns ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    name: str
    regex: re.Pattern[str]


def compile_patterns(given: Iterable[str], *, defaults: bool = True) -> list[Pattern]:
    """The default scaffolding markers (when ``defaults``) and the given regular expressions,
    each case-insensitive; a given one is named by its own text. A pattern that does not
    compile is refused, naming it, before anything is read."""
    out = [Pattern(name, re.compile(rx, re.IGNORECASE)) for name, rx in DEFAULT_FORBIDDEN] if defaults else []
    for rx in given:
        if not rx:
            raise ValidationError("A forbidden pattern is empty (it would match every answer); give a regular "
                                  "expression such as 'as an AI'.")
        try:
            out.append(Pattern(rx, re.compile(rx, re.IGNORECASE)))
        except re.error as exc:
            raise ValidationError(f"The forbidden pattern {rx!r} is not a valid regular expression ({exc}); fix it "
                                  "(escape a literal bracket or parenthesis with a backslash) and run again.") from exc
    return out


@dataclass(frozen=True)
class PatternHits:
    name: str
    pattern: str
    answers: int
    query_ids: list[str] = field(default_factory=list)  # the first FIRST_IDS, in query id order
    first_match: str | None = None  # what the first hit matched (at most 80 characters)


def forbidden_hits(answers: Mapping[str, str], patterns: Sequence[Pattern]) -> list[PatternHits]:
    """For each pattern, how many answers contain it and the first few query ids."""
    out = []
    for p in patterns:
        hits: list[str] = []
        first: str | None = None
        for q in sorted(answers):
            m = p.regex.search(answers[q])
            if m:
                hits.append(q)
                first = first if first is not None else m.group(0)[:80]
        out.append(PatternHits(p.name, p.regex.pattern, len(hits), hits[:FIRST_IDS], first))
    return out


# ---- refusal and abstention per stratum -------------------------------------------------------------


@dataclass(frozen=True)
class StratumOutcomes:
    """One stratum's answers by outcome. Rates are over the marked answers (answered,
    abstained, refused); unmarked ones are counted apart, in no rate; None when none is marked."""

    stratum: str
    answers: int
    marked: int
    unmarked: int
    answered: int
    abstained: int
    refused: int

    @property
    def refusal_rate(self) -> float | None:
        return self.refused / self.marked if self.marked else None

    @property
    def abstention_rate(self) -> float | None:
        return self.abstained / self.marked if self.marked else None

    def as_dict(self) -> dict:
        return {**asdict(self), "refusal_rate": self.refusal_rate, "abstention_rate": self.abstention_rate}


def outcomes_by_stratum(rows: Iterable[tuple[str, str]]) -> list[StratumOutcomes]:
    """``rows``: (stratum, outcome) per answer; an outcome outside OUTCOMES is unmarked."""
    counts: dict[str, dict[str, int]] = {}
    for stratum, outcome in rows:
        c = counts.setdefault(stratum, dict.fromkeys((*OUTCOMES, "unmarked"), 0))
        c[outcome if outcome in OUTCOMES else "unmarked"] += 1
    return [StratumOutcomes(stratum=s, answers=sum(c.values()), marked=sum(c[o] for o in OUTCOMES),
                            unmarked=c["unmarked"], answered=c["answered"], abstained=c["abstained"],
                            refused=c["refused"]) for s, c in sorted(counts.items())]
