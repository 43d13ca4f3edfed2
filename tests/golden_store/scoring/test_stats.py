"""Statistics against METHODOLOGY's worked numbers and reference implementations."""

from __future__ import annotations

import numpy as np
import pytest

from golden_store.scoring import stats


def _wins_losses(wins: int, losses: int, ties: int):
    a = np.zeros(wins + losses + ties)
    b = np.concatenate([np.ones(wins), -np.ones(losses), np.zeros(ties)])
    return a, b


def test_start_here_example_real_win():
    a, b = _wins_losses(34, 14, 152)
    r = stats.paired_bootstrap(a, b, seed=0)
    assert r.delta == pytest.approx(0.10)
    assert (r.wins, r.losses, r.ties, r.n) == (34, 14, 152, 200)
    assert r.ci95[0] == pytest.approx(0.04, abs=0.01) and r.ci95[1] == pytest.approx(0.17, abs=0.01)
    assert r.ci95[0] > 0 and r.p < 0.05


def test_start_here_example_maybe_zero():
    a, b = _wins_losses(30, 18, 152)
    r = stats.paired_bootstrap(a, b, seed=0)
    assert r.delta == pytest.approx(0.06)
    assert r.ci95[0] == pytest.approx(-0.01, abs=0.01) and r.ci95[1] == pytest.approx(0.13, abs=0.01)
    assert r.ci95[0] < 0 < r.ci95[1]


def test_bootstrap_is_reproducible_and_chunked(monkeypatch):
    rng = np.random.default_rng(3)
    a, b = rng.random(5000), rng.random(5000)
    r1 = stats.paired_bootstrap(a, b, n_boot=2000, seed=7)
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 10_000_000_000)  # one big chunk
    r2 = stats.paired_bootstrap(a, b, n_boot=2000, seed=7)
    assert r1.delta == r2.delta and r1.n == r2.n
    assert r1.ci95 == pytest.approx(r2.ci95, abs=0.003)  # same distribution, chunking aside


def test_bootstrap_ci_matches_the_normal_approximation():
    rng = np.random.default_rng(1)
    v = rng.normal(0.5, 0.2, 4000)
    lo, hi = stats.bootstrap_ci(v, seed=2)
    se = v.std(ddof=1) / np.sqrt(v.size)
    assert lo == pytest.approx(v.mean() - 1.96 * se, abs=0.002)
    assert hi == pytest.approx(v.mean() + 1.96 * se, abs=0.002)


@pytest.mark.parametrize("sd,mde60,mde250,n03", [(0.15, 0.054, 0.027, 197), (0.25, 0.090, 0.044, 546),
                                                 (0.40, 0.145, 0.071, 1396)])
def test_mde_table_of_section_3_3(sd, mde60, mde250, n03):
    assert round(stats.mde_paired(60, sd), 3) == mde60
    assert round(stats.mde_paired(250, sd), 3) == mde250
    assert stats.n_for_mde(0.03, sd) == n03


def test_gate_fail_warn_pass():
    rng = np.random.default_rng(0)
    base = rng.random(400)
    verdict, r = stats.gate(base, base - 0.03 + rng.normal(0, 0.01, 400))
    assert verdict == "FAIL" and r.ci95[1] < 0
    verdict, _ = stats.gate(base, base - 0.01 + rng.normal(0, 0.005, 400))
    assert verdict == "WARN"
    verdict, _ = stats.gate(base, base + rng.normal(0, 0.05, 400))
    assert verdict == "PASS"


def test_benjamini_hochberg_matches_statsmodels_definition():
    p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.5]
    rejected, adjusted = stats.benjamini_hochberg(p, q=0.05)
    # by hand: sorted 0.005, 0.01, 0.03, 0.04, 0.2, 0.5 -> p*m/i = .03, .03, .06, .06, .24, .5
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.03, 0.24, 0.5])
    assert rejected == [True, False, False, True, False, False]
