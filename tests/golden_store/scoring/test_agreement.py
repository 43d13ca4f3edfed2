"""Agreement math against its references: scikit-learn's cohen_kappa_score and
precision_recall_fscore_support, the ``krippendorff`` package, Krippendorff's textbook
example and METHODOLOGY §3.7's worked κ."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from golden_store.scoring.agreement import (
    Kappa,
    cohens_kappa,
    grade_matrix,
    kappa_bootstrap_ci,
    krippendorff_alpha,
    pairwise,
    pairwise_long,
    per_class,
    pooled,
    raw_agreement,
    reading,
    span_overlap,
    spans_agree,
)

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers x 12 units.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
]


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(12))
def test_kappa_equals_scikit_learn(weights, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    a = rng.integers(0, 4, n)
    # correlated second rater so kappa spans a real range
    b = np.where(rng.random(n) < rng.random(), a, rng.integers(0, 4, n))
    assert cohens_kappa(a, b, weights) == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    # with an explicit label list: one unused grade (positions matter for the weights)...
    labels = [0, 1, 2, 3, 4]
    assert cohens_kappa(a, b, weights, labels=labels) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights, labels=labels), abs=1e-12)
    # ...and a subset (pairs with a label outside it are dropped, as scikit-learn does)
    sub = [0, 2, 3]
    expected = cohen_kappa_score(a, b, weights=weights, labels=sub)
    got = cohens_kappa(a, b, weights, labels=sub)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)


def test_kappa_worked_example_from_methodology():
    # 100 items, agree on 80, each annotator says "yes" on 70: po = 0.8, pe = 0.58 -> 0.524
    a = [1] * 70 + [0] * 30
    b = [1] * 60 + [0] * 10 + [1] * 10 + [0] * 20
    assert raw_agreement(a, b) == pytest.approx(0.80)
    k = cohens_kappa(a, b)
    assert k == pytest.approx((0.80 - 0.58) / (1 - 0.58))
    assert round(k, 2) == 0.52
    assert reading(k) == "moderate"


def test_undefined_kappa_is_nan_with_a_reason():
    k = cohens_kappa([1, 1, 1], [1, 1, 1])
    assert isinstance(k, Kappa) and math.isnan(k) and not k.defined
    assert "same single label" in k.reason
    empty = cohens_kappa([], [])
    assert math.isnan(empty) and "no item" in empty.reason
    assert cohens_kappa([0, 1], [0, 1]).reason is None
    with pytest.raises(ValueError, match="different numbers"):
        cohens_kappa([0, 1], [0])


def test_landis_koch_bands():
    assert [reading(x) for x in (-0.1, 0.0, 0.2, 0.21, 0.4, 0.5, 0.61, 0.8, 0.81, 1.0, math.nan)] == [
        "poor", "slight", "slight", "fair", "fair", "moderate", "substantial", "substantial",
        "almost perfect", "almost perfect", "undefined"]


def test_krippendorff_textbook_example():
    assert krippendorff_alpha(TEXTBOOK, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(TEXTBOOK, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(TEXTBOOK, "interval") == pytest.approx(0.849, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed", range(8))
def test_alpha_equals_the_krippendorff_package(level, seed):
    rng = np.random.default_rng(100 + seed)
    raters, units = int(rng.integers(2, 7)), int(rng.integers(5, 80))
    truth = rng.integers(0, 4, units)
    data = np.where(rng.random((raters, units)) < 0.7, truth, rng.integers(0, 4, (raters, units))).astype(float)
    data[rng.random((raters, units)) < 0.25] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)


def test_undefined_alpha_is_nan_with_a_reason():
    one_each = [[1, np.nan], [np.nan, 2]]
    assert "two or more raters" in krippendorff_alpha(one_each).reason
    same = [[2, 2, 2], [2, 2, 2]]
    assert math.isnan(krippendorff_alpha(same, "ordinal"))


def test_per_class_equals_scikit_learn():
    rng = np.random.default_rng(7)
    ref = rng.integers(0, 4, 200)
    other = np.where(rng.random(200) < 0.6, ref, rng.integers(0, 4, 200))
    got = per_class(ref, other, labels=[0, 1, 2, 3])
    p, r, _, support = precision_recall_fscore_support(ref, other, labels=[0, 1, 2, 3], zero_division=np.nan)
    for i, lab in enumerate([0, 1, 2, 3]):
        assert got[lab]["precision"] == pytest.approx(p[i])
        assert got[lab]["recall"] == pytest.approx(r[i])
        assert got[lab]["n_reference"] == support[i]
    # a class the other rater never used: precision undefined, recall 0
    never = per_class([0, 1, 1], [0, 0, 0])
    assert math.isnan(never[1]["precision"]) and never[1]["recall"] == 0.0


def test_bootstrap_ci_resamples_items_like_a_plain_loop():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 120)
    b = np.where(rng.random(120) < 0.7, a, rng.integers(0, 4, 120))
    n_boot = 300
    lo, hi = kappa_bootstrap_ci(a, b, "quadratic", labels=[0, 1, 2, 3], n_boot=n_boot, seed=11)
    # the same draws, one replicate at a time through scikit-learn
    ref_rng = np.random.default_rng(11)
    vals = []
    for start in range(0, n_boot, 256):
        idx = ref_rng.integers(0, 120, size=(min(256, n_boot - start), 120))
        vals += [cohen_kappa_score(a[i], b[i], weights="quadratic", labels=[0, 1, 2, 3]) for i in idx]
    assert lo == pytest.approx(np.quantile(vals, 0.025))
    assert hi == pytest.approx(np.quantile(vals, 0.975))
    assert lo < cohens_kappa(a, b, "quadratic") < hi
    assert kappa_bootstrap_ci(a, b, n_boot=200, seed=5) == kappa_bootstrap_ci(a, b, n_boot=200, seed=5)


def test_pairwise_table_matches_scikit_learn_on_shared_items():
    rng = np.random.default_rng(21)
    rows = []
    truth = rng.integers(0, 4, 60)
    for r in ("ann", "bob", "cat"):
        for u in range(60):
            if rng.random() < 0.8:
                g = int(truth[u]) if rng.random() < 0.7 else int(rng.integers(0, 4))
                rows.append((f"u{u}", r, g))
    m, raters, units = grade_matrix(*zip(*rows))
    pairs = pairwise(m, raters)
    assert [(p.a, p.b) for p in pairs] == [("ann", "bob"), ("ann", "cat"), ("bob", "cat")]
    lookup = {(u, r): g for u, r, g in rows}
    for p in pairs:
        shared = [u for u in units if (u, p.a) in lookup and (u, p.b) in lookup]
        a = [lookup[(u, p.a)] for u in shared]
        b = [lookup[(u, p.b)] for u in shared]
        assert p.n == len(shared)
        assert p.raw == pytest.approx(np.mean(np.array(a) == np.array(b)))
        assert p.kappa_binary == pytest.approx(cohen_kappa_score(np.array(a) >= 2, np.array(b) >= 2))
        assert p.kappa_linear == pytest.approx(cohen_kappa_score(a, b, weights="linear", labels=[0, 1, 2, 3]))
        assert p.kappa_quadratic == pytest.approx(
            cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3]))
    total = sum(p.n for p in pairs)
    assert pooled(pairs, "kappa_binary") == pytest.approx(sum(p.kappa_binary * p.n for p in pairs) / total)


def test_span_agreement():
    assert span_overlap(("d", 0, 10), ("d", 5, 30)) == 0.5
    assert span_overlap(("d", 0, 10), ("e", 0, 10)) == 0.0
    assert span_overlap(("d", 2, 4), ("d", 0, 100)) == 1.0  # a quote inside a longer one
    assert spans_agree([], [])  # both: unanswerable
    assert not spans_agree([("d", 0, 10)], [])
    assert spans_agree([("d", 0, 10)], [("d", 4, 12)], threshold=0.5)
    assert not spans_agree([("d", 0, 10)], [("d", 7, 20)], threshold=0.5)  # 3 of 10
    # every span of each side must be matched
    assert not spans_agree([("d", 0, 10), ("e", 0, 5)], [("d", 0, 10)])


@pytest.mark.parametrize("seed", range(6))
def test_pairwise_from_long_labels_equals_the_matrix_version(seed):
    rng = np.random.default_rng(seed)
    raters = [f"r{i}" for i in range(int(rng.integers(2, 8)))]
    rows = []
    for u in range(int(rng.integers(1, 120))):
        who = rng.choice(len(raters), size=int(rng.integers(1, len(raters) + 1)), replace=False)
        truth = int(rng.integers(0, 4))
        rows += [(f"u{u}", raters[w], truth if rng.random() < 0.7 else int(rng.integers(0, 4))) for w in who]
    m, names, _ = grade_matrix(*zip(*rows))
    expected = pairwise(m, names)
    codes_u = np.array([int(u[1:]) for u, _, _ in rows])
    codes_r = np.array([names.index(r) for _, r, _ in rows])
    got = pairwise_long(codes_u, codes_r, np.array([g for _, _, g in rows]), names)
    assert [(p.a, p.b, p.n) for p in got] == [(p.a, p.b, p.n) for p in expected]
    for x, y in zip(got, expected):
        for f in ("raw", "kappa_binary", "kappa_linear", "kappa_quadratic"):
            vx, vy = getattr(x, f), getattr(y, f)
            assert (math.isnan(vx) and math.isnan(vy)) or vx == pytest.approx(vy, abs=1e-12), f
        if math.isnan(x.kappa_binary):
            assert x.kappa_binary.reason
