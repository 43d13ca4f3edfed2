"""The live agreement figures for leads (METHODOLOGY §3.7, §11.1): who agrees with whom, by
how much, per stratum, per round, over time, and against the adjudicated gold. Annotators
never get here: the figures name everyone's labels."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import agreement_bar, agreement_data, evidence_rounds
from golden_store.live import rounds as live_rounds
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.scoring import agreement_report as report
from golden_store.scoring import agreement_counts as counts
from golden_store.scoring.agreement import (BINARY_THRESHOLD, GRADES, kappa_bootstrap_ci_counts,
                                           per_class_from_confusion, reading)
from golden_store.db.store import Store


@dataclass
class Agreement:
    group: report.GroupAgreement
    distributions: pd.DataFrame
    per_stratum: pd.DataFrame
    per_round: pd.DataFrame
    over_time: pd.DataFrame
    drift: pd.DataFrame
    evidence: report.EvidenceAgreement
    cells: np.ndarray  # per-pair confusion counts, i * r + j for names[i] < names[j]
    names: list[str]
    store: Store
    round_id: str | None = None

    @cached_property
    def rows(self) -> pd.DataFrame:
        """Every current label (unit, query_id, actor, grade, stratum, round_id, created_at):
        millions of rows at team scale, so read only when asked (reference checks, scripts);
        the figures above come from SQL counts."""
        rows = agreement_data.grade_rows(self.store)
        return rows[rows["round_id"] == self.round_id] if self.round_id else rows

    def pair_table(self) -> pd.DataFrame:
        """One row per pair. Each reading names the κ it reads: unweighted (the methodology's
        bar), linear and quadratic (near misses weigh less; usually higher)."""
        return pd.DataFrame([p.as_row() for p in self.group.pairs])

    def _cm(self, a: str, b: str) -> np.ndarray:
        """a's grades (rows) against b's (columns) on the items both graded."""
        if a not in self.names or b not in self.names:
            return np.zeros((len(GRADES), len(GRADES)), dtype=np.int64)
        i, j, r = self.names.index(a), self.names.index(b), len(self.names)
        return self.cells[i * r + j] if i < j else self.cells[j * r + i].T

    def pair_confusion(self, a: str, b: str) -> pd.DataFrame:
        """Confusion matrix of two annotators' grades on the items both graded."""
        return pd.DataFrame(self._cm(a, b), index=[f"{a}: {g}" for g in GRADES], columns=[f"{b}: {g}" for g in GRADES])

    def pair_intervals(self, a: str, b: str, n_boot: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
        """95% bootstrap intervals (items resampled, as multinomial draws over the pair's
        confusion cells: O(n_boot·k²), not O(n_boot·n)) for the pair's binary and linear κ."""
        cm = self._cm(a, b)
        t = BINARY_THRESHOLD
        bcm = np.array([[cm[:t, :t].sum(), cm[:t, t:].sum()], [cm[t:, :t].sum(), cm[t:, t:].sum()]])
        return {"kappa_binary": kappa_bootstrap_ci_counts(bcm, n_boot=n_boot, seed=seed),
                "kappa_linear": kappa_bootstrap_ci_counts(cm, "linear", n_boot=n_boot, seed=seed)}

    def pair_per_class(self, a: str, b: str) -> dict:
        return per_class_from_confusion(self._cm(a, b), list(GRADES))


def compute(store: Store, user: User, round_id: str | None = None) -> Agreement:
    """Everything the Agreement page shows, from the current labels (``round_id`` narrows
    to one round's labels). Aggregated in SQL and cached per store generation: a rerun with
    no new label reads the cache (issue 19: 25 s at 5 M grade events when recomputed)."""
    require(user, Permission.RUN_ROUNDS)
    return cache.cached(store, "agreement", (round_id,), lambda: _compute(store, round_id))


def _compute(store: Store, round_id: str | None) -> Agreement:
    agg = agreement_data.aggregates(store, round_id)
    cms, names = counts.cells(agg.pairs)
    group = counts.group_of_cells(cms, names, agg.units, agg.actors)  # counts.group, its cells read once
    return Agreement(
        group=group, distributions=counts.distributions(agg.grades),
        per_stratum=counts.by(agg.pairs, agg.units, "stratum"),
        per_round=counts.by(agg.round_pairs, agg.round_units, "round_id"),
        over_time=counts.by(agg.pairs, agg.units, "period"), drift=counts.drift(agg.gold),
        evidence=report.evidence(agreement_data.evidence_rows(store), rounds=evidence_rounds.round_spans(store)),
        cells=cms, names=names, store=store, round_id=round_id,
    )


# ---- which labels the Agreement tab reads -------------------------------------------------------

POOLED = "all rounds pooled"  # the scope of every current label: every round and grades outside rounds


@dataclass(frozen=True)
class Scopes:
    """The Agreement tab's choices: each round newest first, then :data:`POOLED`. It opens on
    the newest round of graded items (issue 36, 7c: it opened pooled, κ 0.489 "moderate", while
    the newest round's pair stood at -0.235); pooled when there is none."""

    options: list[str]
    default: str
    newest: str | None  # the newest round of graded items
    kinds: dict[str, str]  # round id -> "grade" | "evidence"

    def name(self, scope: str) -> str:
        """How the page names a scope: "Round r3 (newest)", "Round r2", "Round r4 (evidence)",
        "All rounds pooled"."""
        if scope == POOLED:
            return "All rounds pooled"
        tag = " (newest)" if scope == self.newest else " (evidence)" if self.kinds.get(scope) == "evidence" else ""
        return f"Round {scope}{tag}"


def scopes(store: Store, user: User) -> Scopes:
    """The scopes the Agreement tab offers, and the one it opens on (see :class:`Scopes`)."""
    require(user, Permission.RUN_ROUNDS)
    existing = _rounds(store)  # oldest first
    kinds = {r["round_id"]: r.get("item_kind") or "grade" for r in existing}
    ids = [r["round_id"] for r in reversed(existing)]
    newest = next((rid for rid in ids if kinds[rid] == "grade"), None)
    return Scopes([*ids, POOLED], newest if newest is not None else POOLED, newest, kinds)


def _rounds(store: Store) -> list[dict]:
    """Every round, oldest first, from the same per-generation cache entry as
    ``annotator.labeling.rounds.list_rounds`` (callers here have checked the role already). Read here
    rather than through the rounds flow because that flow decides splits on this module's
    figures: agreement sits below rounds, never beside it in a circle."""
    return [dict(r) for r in cache.cached(store, "list_rounds", (), lambda: live_rounds.list_rounds(store))]


def round_of(scope: str) -> str | None:
    """The ``round_id`` :func:`compute` takes for a scope (None: every label)."""
    return None if scope == POOLED else scope


ALL = "all"  # what ``golden agreement --round`` and the API's ``round_id`` take for :data:`POOLED`


@dataclass(frozen=True)
class Scope:
    """The labels one reading of the figures is on, as the Agreement tab chooses them (issue 36:
    ``golden agreement`` reported every round pooled without saying so). ``round`` is what
    ``--round`` / ``round_id`` take to read it again (:data:`ALL` for pooled); ``name`` is the
    tab's name for it ("Round r2 (newest)", "All rounds pooled")."""

    round: str
    name: str

    @property
    def round_id(self) -> str | None:
        """The ``round_id`` :func:`compute` takes (None: every label)."""
        return None if self.round == ALL else self.round

    def as_dict(self) -> dict[str, str]:
        return {"round": self.round, "name": self.name}


def scope_of(store: Store, user: User, requested: str | None) -> Scope:
    """The scope a command or an API call reads: the newest round of graded items when none is
    asked for (what the Agreement tab opens on; pooled when there is no round), every label for
    :data:`ALL`, else the round named. A round that does not exist is an error naming those that
    do, not a silent "no item graded"."""
    choices = scopes(store, user)
    if requested is None:
        chosen = choices.default
    elif requested.strip().lower() in (ALL, POOLED):
        chosen = POOLED
    elif requested in choices.options:
        chosen = requested
    else:
        rounds_ = ", ".join(o for o in choices.options if o != POOLED) or "none yet"
        raise NotFoundError(f"No round {requested!r} (rounds: {rounds_}); {ALL!r} reads every label, every round pooled.")
    return Scope(ALL if chosen == POOLED else chosen, choices.name(chosen))


def count_line(scope: dict[str, str], n_units: int, n_annotators: int) -> str:
    """The first line ``golden agreement`` prints, locally and with ``--server``: the scope
    first, as the tab's headline names it, then how many items the figures are on."""
    if n_units:
        return f"{scope['name']}: {n_units} items graded by 2+ of {n_annotators} annotators"
    if scope["round"] == ALL:
        return f"{scope['name']}: no item has been graded by two annotators yet."
    return (f"{scope['name']}: no item has been graded by two annotators in this round yet; --round {ALL} reads "
            f"every label so far.")


def headline(group: report.GroupAgreement, check: report.BarCheck, scope_name: str) -> str:
    """The Agreement tab's one sentence: the scope first ("Round r3 (newest): ..."), its κ,
    how many items, and the bar's verdict on them. Plain text (the page escapes it)."""
    def fmt(x: float) -> str:
        return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"

    return (f"{scope_name}: binary κ {fmt(group.kappa_binary)}: {reading(group.kappa_binary)}; graded κ "
            f"unweighted {fmt(group.kappa_unweighted)}: {reading(group.kappa_unweighted)}, linear "
            f"{fmt(group.kappa_linear)}: {reading(group.kappa_linear)}. {group.n_units} items graded by two or "
            f"more of {len(group.annotators)} annotators. Against the bar: {check.text}")


# ---- the bar (§3.7) ----------------------------------------------------------------------------


def bar(store: Store, user: User) -> tuple[report.AgreementBar, dict]:
    """The bar in force and who chose it (the methodology's unless a lead chose another)."""
    require(user, Permission.RUN_ROUNDS)
    return agreement_bar.current(store)


def choose_bar(store: Store, user: User, graded_measure: str, graded_threshold: float | None = None,
               note: str | None = None) -> report.AgreementBar:
    """A lead puts the graded bar on another figure (a weighted κ, or ordinal α ≥ 0.667 for
    three or more annotators) or back on the methodology's unweighted κ. Recorded as an event
    with who and when; it goes into the next frozen version's manifest. Moving off the
    methodology's bar needs a note saying why."""
    require(user, Permission.RUN_ROUNDS)
    try:
        chosen = report.AgreementBar.choose(graded_measure, graded_threshold)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    if not chosen.is_methodology_default and not (note and note.strip()):
        raise ValidationError(f"Say why the bar moves off the methodology's (unweighted κ ≥ 0.6) to "
                              f"{chosen.describe()}: the note goes into every manifest frozen under it.")
    agreement_bar.choose(store, chosen, actor=user.username, note=note.strip() if note else None)
    return chosen


def latest_calibration_check(store: Store, user: User) -> tuple[str | None, report.BarCheck | None, dict]:
    """The most recently created calibration round of graded items that has figures (two or
    more labels on some item), read against the bar in force: (round id, check, figures).
    (None, None, {}) when no calibration round has figures yet. What a split is decided on."""
    require(user, Permission.RUN_ROUNDS)
    everything = compute(store, user)
    existing = [r for r in _rounds(store)
                if r["kind"] == "calibration" and r.get("item_kind", "grade") == "grade"]
    per_round = everything.per_round
    if not existing or not len(per_round):
        return None, None, {}
    figures = {r["round_id"]: r for r in per_round.to_dict("records")}
    for r in reversed(existing):  # newest first
        fig = figures.get(r["round_id"])
        if fig and fig.get("n_units"):
            in_force, _ = agreement_bar.current(store)
            return r["round_id"], in_force.check(fig), fig
    return None, None, {}
