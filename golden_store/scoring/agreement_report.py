"""The live agreement report (METHODOLOGY §3.7): pairwise κ, group α, distributions, and the
same figures per stratum, per round, per week, and each annotator against the gold labels.

Pure: it takes the long (unit, actor, grade, ...) frame the store hands out and returns
plain data, so the Agreement page, the freeze manifest and the CLI report the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from golden_store.scoring.agreement import (
    BINARY_THRESHOLD,
    GRADES,
    ALPHA_BAR_ORDINAL,
    KAPPA_BAR_BINARY,
    KAPPA_BAR_GRADED,
    PairAgreement,
    Weights,
    cohens_kappa,
    krippendorff_alpha,
    pairwise_long,
    pooled,
    raw_agreement,
    reading,
    spans_agree,
)

# The weights of the per-annotator κ against the gold (``drift``): linear, a near miss part-agreed.
GRADED_WEIGHTS: Weights = "linear"


def kappa_linear(figures: Mapping[str, Any]) -> Any:
    """The linear-weighted κ of a summary or manifest: ``kappa_linear``, or ``kappa_graded``
    in what was written before issue 36 (manifests and split checks frozen then carry the
    linear κ under that ambiguous name; versions are immutable, so readers take both)."""
    return figures["kappa_linear"] if "kappa_linear" in figures else figures.get("kappa_graded")


@dataclass
class GroupAgreement:
    """Agreement among everyone who labelled the same units."""

    n_units: int  # units labelled by two or more annotators
    annotators: list[str]
    pairs: list[PairAgreement]
    kappa_binary: float
    kappa_linear: float  # graded, linear weights (manifests before issue 36 called it "kappa_graded")
    kappa_quadratic: float
    raw: float
    alpha_ordinal: float
    alpha_nominal_binary: float
    kappa_unweighted: float = math.nan  # on the 0-3 grades, unweighted: the κ §3.7's bar is set on

    def summary(self) -> dict[str, Any]:
        """The figures as plain data. No bar verdict here: which κ the bar reads is a lead's
        choice kept in the store (:class:`AgreementBar`), checked with :meth:`AgreementBar.check`."""
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(float(x), 4)

        return {"n_units": self.n_units, "annotators": self.annotators, "n_annotators": len(self.annotators),
                "kappa_binary": num(self.kappa_binary), "kappa_unweighted": num(self.kappa_unweighted),
                "kappa_linear": num(self.kappa_linear), "kappa_quadratic": num(self.kappa_quadratic),
                "raw_agreement": num(self.raw), "alpha_ordinal": num(self.alpha_ordinal),
                "alpha_nominal_binary": num(self.alpha_nominal_binary),
                "reading_binary": reading(self.kappa_binary), "reading_unweighted": reading(self.kappa_unweighted),
                "reading_linear": reading(self.kappa_linear)}


# The graded measures a lead may put the bar on, with their usual thresholds and their names in
# a summary. §3.7 sets the bar on Cohen's κ as its own code
# computes it: unweighted, 0.6 on 4-grade relevance. Weighted κ forgives near misses (the demo's
# first round: 0.558 unweighted, 0.787 linear), so choosing it is a recorded decision, not a default.
GRADED_MEASURES: dict[str, tuple[str, float, str]] = {
    "kappa_unweighted": ("kappa_unweighted", KAPPA_BAR_GRADED, "κ graded (unweighted, METHODOLOGY §3.7)"),
    "kappa_linear": ("kappa_linear", KAPPA_BAR_GRADED, "κ graded (linear weights)"),
    "kappa_quadratic": ("kappa_quadratic", KAPPA_BAR_GRADED, "κ graded (quadratic weights)"),
    "alpha_ordinal": ("alpha_ordinal", ALPHA_BAR_ORDINAL, "Krippendorff's α (ordinal)"),
}
DEFAULT_GRADED_MEASURE = "kappa_unweighted"


@dataclass(frozen=True)
class BarCheck:
    """A group's figures read against the bar: cleared or not, and in words which figure failed."""

    cleared: bool
    measure: str  # the graded measure actually read (α falls back to κ for two annotators)
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"cleared": self.cleared, "graded_measure": self.measure, "text": self.text}


@dataclass(frozen=True)
class AgreementBar:
    """The bar before work is split (§3.7): binary κ ≥ 0.7 and a graded figure ≥ its threshold.

    By default the graded figure is the methodology's unweighted κ ≥ 0.6. A lead may choose a
    weighted κ, or ordinal α ≥ 0.667 for rounds of three or more annotators (α is the figure
    for more than two raters; a two-annotator group is then read on the unweighted κ, and the
    check says so)."""

    graded_measure: str = DEFAULT_GRADED_MEASURE
    graded_threshold: float = KAPPA_BAR_GRADED
    binary_threshold: float = KAPPA_BAR_BINARY

    def __post_init__(self) -> None:
        if self.graded_measure not in GRADED_MEASURES:
            raise ValueError(f"Unknown graded measure {self.graded_measure!r}: choose one of "
                             f"{', '.join(GRADED_MEASURES)}.")
        for name, value in (("graded threshold", self.graded_threshold), ("binary threshold", self.binary_threshold)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and -1.0 < value <= 1.0):
                raise ValueError(f"The {name} must be a number in (-1, 1], not {value!r}.")

    @classmethod
    def choose(cls, graded_measure: str, graded_threshold: float | None = None) -> AgreementBar:
        """The bar on ``graded_measure``, at its usual threshold unless one is given."""
        if graded_measure not in GRADED_MEASURES:
            raise ValueError(f"Unknown graded measure {graded_measure!r}: choose one of {', '.join(GRADED_MEASURES)}.")
        default = GRADED_MEASURES[graded_measure][1]
        return cls(graded_measure, default if graded_threshold is None else float(graded_threshold))

    @property
    def is_methodology_default(self) -> bool:
        return self == AgreementBar()

    def describe(self) -> str:
        label = GRADED_MEASURES[self.graded_measure][2]
        return f"κ binary ≥ {self.binary_threshold:g} and {label} ≥ {self.graded_threshold:g}"

    def as_dict(self) -> dict[str, Any]:
        return {"binary_measure": "kappa_binary", "binary_threshold": self.binary_threshold,
                "graded_measure": self.graded_measure, "graded_threshold": self.graded_threshold,
                "methodology_default": self.is_methodology_default}

    def check(self, figures: Mapping[str, Any]) -> BarCheck:
        """Read a summary (``GroupAgreement.summary()`` or one row of the per-round table)
        against the bar. An undefined figure never clears it."""
        measure, threshold = self.graded_measure, self.graded_threshold
        fallback = ""
        n_annotators = figures.get("n_annotators")
        if measure == "alpha_ordinal" and n_annotators is not None and n_annotators < 3:
            measure, threshold = DEFAULT_GRADED_MEASURE, KAPPA_BAR_GRADED
            fallback = " (α is the bar for three or more annotators; two are read on the unweighted κ)"
        key, _, label = GRADED_MEASURES[measure]

        def value(k: str) -> float | None:
            v = kappa_linear(figures) if k == "kappa_linear" else figures.get(k)
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

        kb, kg = value("kappa_binary"), value(key)
        parts, ok = [], True
        for name, v, bar in (("κ binary", kb, self.binary_threshold), (label, kg, threshold)):
            if v is None:
                parts.append(f"{name} undefined")
                ok = False
            else:
                passed = v >= bar
                ok = ok and passed
                parts.append(f"{name} {v:.3f} {'≥' if passed else '<'} {bar:g}")
        text = "; ".join(parts) + fallback + (": bar cleared." if ok else ": below the bar.")
        return BarCheck(ok, measure, text)


def clears_bar(figures: Mapping[str, Any], bar: AgreementBar | None = None) -> bool:
    """Whether a summary clears ``bar`` (the methodology's by default: binary κ ≥ 0.7 and
    unweighted graded κ ≥ 0.6)."""
    return (bar or AgreementBar()).check(figures).cleared


def group(rows: pd.DataFrame) -> GroupAgreement:
    """Agreement over the units two or more annotators labelled (``rows``: unit, actor, grade)."""
    multi = rows[rows.groupby("unit")["actor"].transform("nunique") >= 2] if len(rows) else rows
    if not len(multi):
        nan = math.nan
        return GroupAgreement(0, sorted(rows["actor"].unique()) if len(rows) else [], [], nan, nan, nan, nan,
                              nan, nan, nan)
    u_codes, units = pd.factorize(multi["unit"])
    r_codes, raters = pd.factorize(multi["actor"], sort=True)
    raters = list(raters)
    grades = multi["grade"].to_numpy(dtype=np.int64)
    m = np.full((len(raters), len(units)), np.nan)
    m[r_codes, u_codes] = grades
    pairs = pairwise_long(u_codes, r_codes, grades, raters)
    binary = np.where(np.isnan(m), np.nan, (m >= BINARY_THRESHOLD).astype(float))
    raw_n = sum(p.raw * p.n for p in pairs)
    return GroupAgreement(
        n_units=len(units), annotators=raters, pairs=pairs,
        kappa_binary=pooled(pairs, "kappa_binary"), kappa_linear=pooled(pairs, "kappa_linear"),
        kappa_quadratic=pooled(pairs, "kappa_quadratic"), kappa_unweighted=pooled(pairs, "kappa_unweighted"),
        raw=raw_n / sum(p.n for p in pairs),
        alpha_ordinal=float(krippendorff_alpha(m, "ordinal", value_domain=GRADES)),
        alpha_nominal_binary=float(krippendorff_alpha(binary, "nominal", value_domain=(0, 1))),
    )


def distributions(rows: pd.DataFrame) -> pd.DataFrame:
    """Share of each grade per annotator (rows: annotators, columns: grades 0-3)."""
    if not len(rows):
        return pd.DataFrame(columns=list(GRADES))
    counts = pd.crosstab(rows["actor"], rows["grade"]).reindex(columns=list(GRADES), fill_value=0)
    return counts.div(counts.sum(axis=1), axis=0)


def by(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """Group figures per value of ``column`` (stratum, round_id, week): one row each."""
    out: list[dict[str, Any]] = []
    if not len(rows) or column not in rows:
        return pd.DataFrame(out)
    for key, part in rows.dropna(subset=[column]).groupby(column, sort=True):
        g = group(part)
        if g.n_units:
            out.append({column: key, **{k: v for k, v in g.summary().items() if k != "annotators"}})
    return pd.DataFrame(out)


def over_time(rows: pd.DataFrame, freq: str = "W") -> pd.DataFrame:
    """Figures per period of the unit's latest label (a unit counts once both labels exist)."""
    if not len(rows):
        return pd.DataFrame()
    latest = rows.groupby("unit")["created_at"].transform("max")
    with_period = rows.assign(period=pd.to_datetime(latest).dt.to_period(freq).dt.start_time)
    return by(with_period, "period")


def drift(rows: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """Each annotator against the gold labels on the units they graded: raw agreement and κ.
    Adjudicated units are the informative ones (a unanimous gold includes the annotator's own
    label), so they are counted separately."""
    if not len(rows) or not len(gold):
        return pd.DataFrame()
    joined = rows.merge(gold.rename(columns={"grade": "gold"}), on="unit")
    out = []
    for actor, part in joined.groupby("actor", sort=True):
        adj = part[part["basis"] == "adjudicated"]
        out.append({
            "annotator": actor, "n_units": len(part), "n_adjudicated": len(adj),
            "raw_vs_gold": raw_agreement(list(part["grade"]), list(part["gold"])),
            "kappa_binary_vs_gold": float(cohens_kappa(list(part["grade"] >= BINARY_THRESHOLD),
                                                       list(part["gold"] >= BINARY_THRESHOLD), labels=[False, True])),
            "kappa_linear_vs_gold": float(cohens_kappa(list(part["grade"]), list(part["gold"]), GRADED_WEIGHTS,
                                                       labels=list(GRADES))),
            "raw_on_adjudicated": raw_agreement(list(adj["grade"]), list(adj["gold"])) if len(adj) else math.nan,
        })
    return pd.DataFrame(out)


@dataclass
class EvidenceAgreement:
    n_questions: int
    raw_answerable: float
    kappa_answerable: float
    raw_spans: float
    per_question: list[dict] = field(default_factory=list)


def evidence(rows: pd.DataFrame, threshold: float = 0.5,
             rounds: dict[str, dict[str, list]] | None = None) -> EvidenceAgreement:
    """Agreement on evidence for questions two or more people quoted (``rows``: current
    quotes with their author) and, overriding those, evidence-round questions (``rounds``:
    question -> annotator -> spans, [] for "no answer")."""
    spans: dict[str, dict[str, list]] = {}
    if len(rows):  # one pass into plain dicts: pandas per-question masks cost ~1 ms each
        for qid, actor, doc, s, e in zip(rows["query_id"], rows["actor"], rows["doc_id"], rows["start"], rows["end"]):
            spans.setdefault(qid, {}).setdefault(actor, []).append((doc, int(s), int(e)))
    spans.update(rounds or {})
    return evidence_pairs(spans, threshold)


def evidence_pairs(spans: dict[str, dict[str, list]], threshold: float = 0.5) -> EvidenceAgreement:
    """Every pair of people on every question: answerable (has spans) and span agreement."""
    per_q, ans_a, ans_b, agree = [], [], [], []
    for qid in sorted(spans):
        people = sorted(spans[qid])
        for i, a in enumerate(people):
            for b in people[i + 1:]:
                ok = spans_agree(spans[qid][a], spans[qid][b], threshold)
                agree.append(ok)
                ans_a.append(bool(spans[qid][a]))
                ans_b.append(bool(spans[qid][b]))
                per_q.append({"query_id": qid, "annotator_a": a, "annotator_b": b,
                              "a_answerable": bool(spans[qid][a]), "b_answerable": bool(spans[qid][b]),
                              "spans_agree": ok})
    return EvidenceAgreement(
        n_questions=len({r["query_id"] for r in per_q}),
        raw_answerable=raw_agreement(ans_a, ans_b),
        kappa_answerable=float(cohens_kappa(ans_a, ans_b, labels=[False, True])),
        raw_spans=float(np.mean(agree)) if agree else math.nan,
        per_question=per_q,
    )
