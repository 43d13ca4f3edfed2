"""Power planning (METHODOLOGY §3.3): how small a difference can this set detect?"""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import results
from golden_store.core.errors import ValidationError
from golden_store.scoring.stats import mde_paired, n_for_mde
from golden_store.db.store import Store


def recorded_evaluations(store: Store, user: User) -> pd.DataFrame:
    require(user, Permission.VIEW_VERSIONS)
    return results.list_evaluations(store)


def sigma_from_evaluations(store: Store, user: User, eval_a: str, eval_b: str, metric: str) -> tuple[float, int]:
    """σ_d = standard deviation of the per-query differences of two recorded evaluations on the
    queries both scored, and how many queries that is."""
    require(user, Permission.VIEW_VERSIONS)
    a = results.evaluation_frame(store, eval_a)
    b = results.evaluation_frame(store, eval_b)
    a = a[a["metric"] == metric].set_index("query_id")["value"]
    b = b[b["metric"] == metric].set_index("query_id")["value"]
    common = a.index.intersection(b.index)
    if len(common) < 2:
        raise ValidationError(f"Evaluations {eval_a!r} and {eval_b!r} share fewer than 2 queries scored on {metric}.")
    d = (b[common] - a[common]).to_numpy()
    return float(np.std(d, ddof=1)), int(len(common))


def mde_curve(sigma_d: float, alpha: float, power: float, ns: list[int]) -> pd.DataFrame:
    return pd.DataFrame({"queries": ns, "MDE": [mde_paired(n, sigma_d, alpha, power) for n in ns]}).set_index("queries")


def queries_needed(sigma_d: float, alpha: float, power: float, deltas: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"detectable difference": deltas,
                         "queries needed": [n_for_mde(d, sigma_d, alpha, power) for d in deltas]})
