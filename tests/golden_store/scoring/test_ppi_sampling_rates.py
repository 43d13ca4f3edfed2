"""Why the retrieval and rubric corrections stratify where the people's sample was drawn at
different rates (issue 40 item 7): items of pool-grading jobs that sampled different shares, or
answers of question strata sampled round the strata. Simulated with a judge whose bias differs
between the two groups: pooling the rectifier weighs the over-sampled group's bias too much and
its interval misses what people would say; correcting each group on its own and weighting by
size covers it at the nominal 95% (within 2 points over 1,000 sets)."""

from __future__ import annotations

import numpy as np
import pytest

from golden_store.scoring.ppi import Stratum, ppi_mean, stratified_ppi_mean

pytestmark = pytest.mark.slow  # 1,000 simulated sets: ~3 s


def test_unequal_sampling_rates_need_strata_and_get_them():
    rng = np.random.default_rng(20261207)
    sets = 1000
    # (items, share sampled, people's relevant rate, judge passes irrelevant, judge fails relevant)
    groups = {"job-a": (1500, 0.05, 0.3, 0.30, 0.05), "job-b": (500, 0.40, 0.6, 0.02, 0.05)}
    covered = covered_pooled = 0
    for _ in range(sets):
        strata = {}
        truth_all = []
        for name, (n, share, rate, lenient, strict) in groups.items():
            truth = rng.binomial(1, rate, n)
            judge = np.where(truth == 1, 1 - rng.binomial(1, strict, n), rng.binomial(1, lenient, n))
            idx = rng.permutation(n)
            on, off = idx[:round(share * n)], idx[round(share * n):]
            strata[name] = Stratum(truth[on], judge[on], judge[off])
            truth_all.append(truth)
        target = np.concatenate(truth_all).mean()  # what people would say over every item of the set
        est = stratified_ppi_mean(strata)
        pooled = ppi_mean(np.concatenate([np.asarray(s.people) for s in strata.values()]),
                          np.concatenate([np.asarray(s.judge_on_sample) for s in strata.values()]),
                          np.concatenate([np.asarray(s.judge_elsewhere) for s in strata.values()]))
        covered += est.ppi.low <= target <= est.ppi.high
        covered_pooled += pooled.ppi.low <= target <= pooled.ppi.high
    assert abs(covered / sets - 0.95) <= 0.02, covered / sets
    assert covered_pooled / sets < 0.80, covered_pooled / sets
