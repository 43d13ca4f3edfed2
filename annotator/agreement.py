"""The live agreement figures for leads (METHODOLOGY §3.7, §11.1): who agrees with whom, by
how much, per stratum, per round, over time, and against the adjudicated gold. Annotators
never get here: the figures name everyone's labels."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import agreement_data, evidence_rounds
from golden_store.scoring import agreement_report as report
from golden_store.scoring.agreement import BINARY_THRESHOLD, GRADES, confusion, kappa_bootstrap_ci, per_class, reading
from golden_store.store import Store


@dataclass
class Agreement:
    rows: pd.DataFrame  # unit, query_id, actor, grade, stratum, round_id, created_at
    group: report.GroupAgreement
    distributions: pd.DataFrame
    per_stratum: pd.DataFrame
    per_round: pd.DataFrame
    over_time: pd.DataFrame
    drift: pd.DataFrame
    evidence: report.EvidenceAgreement

    def pair_table(self) -> pd.DataFrame:
        """One row per pair. Each reading names the κ it reads: the graded bar and the page's
        headline use the linear κ, so the graded reading here is the linear κ's too (the
        quadratic κ, usually higher, has its own)."""
        rows = []
        for p in self.group.pairs:
            row = p.as_row()
            row.pop("reading_graded", None)
            row["reading_linear"] = reading(p.kappa_linear)
            row["reading_quadratic"] = reading(p.kappa_quadratic)
            rows.append(row)
        return pd.DataFrame(rows)

    def pair_confusion(self, a: str, b: str) -> pd.DataFrame:
        """Confusion matrix of two annotators' grades on the items both graded."""
        wide = self.rows.pivot_table(index="unit", columns="actor", values="grade", aggfunc="first")
        both = wide[[a, b]].dropna()
        cm, labs = confusion(list(both[a].astype(int)), list(both[b].astype(int)), labels=list(GRADES))
        return pd.DataFrame(cm, index=[f"{a}: {g}" for g in labs], columns=[f"{b}: {g}" for g in labs])

    def _pair(self, a: str, b: str) -> tuple[list[int], list[int]]:
        wide = self.rows.pivot_table(index="unit", columns="actor", values="grade", aggfunc="first")
        both = wide[[a, b]].dropna()
        return list(both[a].astype(int)), list(both[b].astype(int))

    def pair_intervals(self, a: str, b: str, n_boot: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
        """95% bootstrap intervals (items resampled) for the pair's binary and linear κ."""
        ga, gb = self._pair(a, b)
        return {
            "kappa_binary": kappa_bootstrap_ci([g >= BINARY_THRESHOLD for g in ga], [g >= BINARY_THRESHOLD for g in gb],
                                               labels=[False, True], n_boot=n_boot, seed=seed),
            "kappa_graded": kappa_bootstrap_ci(ga, gb, "linear", labels=list(GRADES), n_boot=n_boot, seed=seed),
        }

    def pair_per_class(self, a: str, b: str) -> dict:
        wide = self.rows.pivot_table(index="unit", columns="actor", values="grade", aggfunc="first")
        both = wide[[a, b]].dropna()
        return per_class(list(both[a].astype(int)), list(both[b].astype(int)), labels=list(GRADES))


def compute(store: Store, user: User, round_id: str | None = None) -> Agreement:
    """Everything the Agreement page shows, from the current labels (``round_id`` narrows
    to one round's labels)."""
    require(user, Permission.RUN_ROUNDS)
    rows = agreement_data.grade_rows(store)
    if round_id:
        rows = rows[rows["round_id"] == round_id]
    return Agreement(
        rows=rows, group=report.group(rows), distributions=report.distributions(rows),
        per_stratum=report.by(rows, "stratum"), per_round=report.by(rows, "round_id"),
        over_time=report.over_time(rows), drift=report.drift(rows, agreement_data.gold_rows(store)),
        evidence=report.evidence(agreement_data.evidence_rows(store), rounds=evidence_rounds.round_spans(store)),
    )
