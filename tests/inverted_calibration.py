"""The calibration file of the 2026-12-04 walkthrough's H2, rebuilt: 120 items with a human
pass/fail label, an LLM judge's label (right 9 times in 10) and a ``judge_p`` that is the
decision model's probability of PASS, the usual convention elsewhere and the wrong way round
for this studio (which reads judge_p as P(FAIL))."""

from __future__ import annotations

import numpy as np
import pandas as pd


def review_frame(seed: int = 7, n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    bad = rng.random(n) < 0.4
    p_fail = np.clip(np.where(bad, 0.7, 0.3) + rng.normal(0, 0.22, n), 0.01, 0.99)
    judge_bad = np.where(rng.random(n) < 0.1, ~bad, bad)
    return pd.DataFrame({"item_id": [f"i{i:03d}" for i in range(n)], "human_label": np.where(bad, "fail", "pass"),
                         "judge_label": np.where(judge_bad, "fail", "pass"), "judge_p": (1 - p_fail).round(3)})


def review_csv(seed: int = 7, n: int = 120) -> bytes:
    return review_frame(seed, n).to_csv(index=False).encode()
