"""Issue 36 re-check, item 4: `golden compare`'s `correction:` line said "p = paired bootstrap p"
of every cell although cells under 30 questions take the exact sign-flip test's p (the `cells:`
line below it said so). The line now names the test each p came from, with how many cells.

References: scipy's exact permutation test (``permutation_test``, one sample, every sign
pattern) for the small stratum's p; the cell counts by hand from the strata the test makes."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from scipy.stats import permutation_test

from annotator import cli
from golden_store.live.results import record_evaluation

BIG, SMALL = 30, 10  # a stratum at the bootstrap's size, one under it
SMALL_DELTAS = [-0.5, -0.5, -0.4, -0.5, -0.3, -0.5, -0.5, 0.2, 0.1, 0.0]  # most of the small stratum loses


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _record(store, name: str, values: list[float], strata: dict[str, str]) -> None:
    frame = pd.DataFrame({"R@10": values}, index=pd.Index(list(strata), name="query_id"))
    record_evaluation(store, name, frame, dataset_version="v1", strata=strata)


def _correction_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("correction: "))


def test_the_correction_line_names_the_test_each_p_came_from(store, capsys):
    qids = [f"q{i:02d}" for i in range(BIG + SMALL)]
    strata = {q: ("big" if i < BIG else "small") for i, q in enumerate(qids)}
    base = [0.5 + 0.01 * (i % 7) for i in range(len(qids))]
    cand = [b + (0.002 * ((i % 5) - 2) if i < BIG else SMALL_DELTAS[i - BIG]) for i, b in enumerate(base)]
    _record(store, "base", base, strata)
    _record(store, "cand", cand, strata)
    rc, out, err = golden(capsys, "compare", "base", "cand")
    assert rc in (0, 1), err
    line = _correction_line(out)
    # R@10 overall (40 questions) and stratum big (30): bootstrap; stratum small (10): sign-flip
    assert ("p = paired bootstrap p (two-sided, 10000 resamples) in 2 cell(s) of 30+ questions and sign-flip "
            "test's p (two-sided, exact: every sign pattern) in 1 cell(s) under 30 questions, p_adj = p after the "
            "correction") in line, line
    exact = permutation_test((np.array(SMALL_DELTAS),), np.mean, permutation_type="samples",
                             n_resamples=np.inf, alternative="two-sided").pvalue
    small = next(row for row in out.splitlines() if row.strip().startswith("small "))
    assert f"p {exact:.4f} " in small and "(sign-flip (exact))" in small


def test_a_comparison_of_small_cells_only_says_sign_flip_not_bootstrap(store, capsys):
    qids = [f"q{i:02d}" for i in range(SMALL)]
    strata = {q: "small" for q in qids}
    _record(store, "base", [1.0] * SMALL, strata)
    _record(store, "cand", [1.0 + d for d in SMALL_DELTAS], strata)
    rc, out, err = golden(capsys, "compare", "base", "cand")
    assert rc in (0, 1), err
    line = _correction_line(out)
    assert "p = sign-flip test's p (two-sided, exact: every sign pattern), p_adj" in line, line
    assert "bootstrap p" not in line
    exact = permutation_test((np.array(SMALL_DELTAS),), np.mean, permutation_type="samples",
                             n_resamples=np.inf, alternative="two-sided").pvalue
    overall = next(row for row in out.splitlines() if row.startswith("R@10: "))
    assert f"p {exact:.4f} " in overall
    assert exact > 0  # not the degenerate bootstrap p of 0
