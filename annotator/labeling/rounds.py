"""Calibration rounds and the work split, for leads (METHODOLOGY §3.7): start a round on a
stratified sample of free pool items that every chosen annotator labels blind; once κ
clears the bar, split the remaining items with a permanent overlap share."""

from __future__ import annotations

import json

from annotator.events import webhooks
from annotator.process import cache
from annotator.labeling.assignment import pick_calibration, plan_split
from annotator.people.identity import User, get_user, require
from annotator.people.roles import Permission, Role
from golden_store.live import rounds
from golden_store.live import users
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store

DEFAULT_CALIBRATION_ITEMS = 50
DEFAULT_OVERLAP = 0.10


def _check_annotators(store: Store, annotators: list[str]) -> list[str]:
    names = sorted({a.strip() for a in annotators if a and a.strip()})
    if not names:
        raise ValidationError("Name the annotators of the round.")
    if users.count_users(store):  # accounts mode: every name must be an account that labels
        problems = []
        for name in names:
            u = get_user(store, name)
            if u is None:
                problems.append(f"{name}: no such enabled account (see `golden users list`)")
            elif not u.can(Permission.LABEL):
                problems.append(f"{name}: their roles do not allow labelling")
        if problems:
            raise ValidationError("Some annotators cannot take part in the round.", problems)
    return names


def labellers(store: Store, user: User) -> list[str]:
    """Accounts with the annotator role (for the round form's picker); empty in single-user
    local mode. Leads and admins may label too, but a round is work given to annotators:
    offering them made the picker invite a lead or an admin by a slip (issue 29, L7). Cached
    per store generation, as the figures beside it on the Agreement page are (one account
    read per user on every rerun before)."""
    require(user, Permission.RUN_ROUNDS)
    return list(cache.cached(store, "labellers", (), lambda: _labellers(store)))


def _labellers(store: Store) -> list[str]:
    out = []
    for row in users.list_user_rows(store):
        u = get_user(store, row["username"])
        if u is not None and Role.ANNOTATOR in u.roles and u.can(Permission.LABEL):
            out.append(u.username)
    return out


def free_item_count(store: Store, user: User) -> int:
    """Pool items a new round can draw from; counted in SQL and cached per store generation
    (it anti-joins every grade event: seconds at team scale, on every Agreement rerun)."""
    require(user, Permission.RUN_ROUNDS)
    return cache.cached(store, "free_item_count", (), lambda: rounds.free_item_count(store))


def _free(store: Store) -> tuple[list[tuple], dict]:
    rows = rounds.free_items(store)
    items = [(r["query_id"], r["doc_id"], r["start"], r["end"]) for r in rows]
    return items, {it: r["stratum"] for it, r in zip(items, rows)}


def start_calibration(store: Store, user: User, annotators: list[str], n: int = DEFAULT_CALIBRATION_ITEMS,
                      seed: int = 0, note: str | None = None) -> str:
    """Every annotator labels the same ``n`` free pool items (stratified); returns the round id."""
    require(user, Permission.RUN_ROUNDS)
    names = _check_annotators(store, annotators)
    if len(names) < 2:
        raise ValidationError("A calibration round needs at least two annotators.")
    items, strata = _free(store)
    picked = pick_calibration(items, strata, n, seed) if items else []
    return rounds.create_round(store, "calibration", {a: picked for a in names}, actor=user.username,
                                     seed=seed, note=note)


def split_work(store: Store, user: User, annotators: list[str], overlap: float = DEFAULT_OVERLAP, seed: int = 0,
               note: str | None = None, override: str | None = None) -> str:
    """Give every free pool item to one annotator, and an ``overlap`` share (in every
    stratum) to two; returns the round id.

    §3.7: only once κ clears the bar. The latest calibration round is read against the bar in
    force; below it (or with no calibration round measured yet) the split is refused unless the
    lead gives an ``override`` reason, which is stored with the round beside the check."""
    require(user, Permission.RUN_ROUNDS)
    names = _check_annotators(store, annotators)
    check = split_check(store, user)
    webhooks.emit_split_check(store, check, user.username)  # agreement.below_bar, once per round and measure
    reason = override.strip() if override and override.strip() else None
    if not check["cleared"] and reason is None:
        first = ("Adjudicate the disagreements, clarify the rubric and run a fresh calibration round"
                 if check["round_id"] else "Run a calibration round and have it graded first")
        raise ValidationError(f"The work is not split below the agreement bar: {check['text']} {first}, or split "
                              "anyway with a reason (CLI: --override \"...\"; it is recorded with the round).")
    items, strata = _free(store)
    try:
        plan = plan_split(items, strata, names, overlap, seed)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    return rounds.create_round(store, "split", plan, actor=user.username, overlap=overlap, seed=seed,
                                     note=note, bar_check=json.dumps(check, sort_keys=True),
                                     bar_override=reason if not check["cleared"] else None)


def split_check(store: Store, user: User) -> dict:
    """The check a split is decided on: the latest calibration round against the bar in force,
    as plain data (round id, bar, figures read, cleared, text)."""
    from annotator.labeling import agreement

    in_force, chosen = agreement.bar(store, user)
    round_id, check, figures = agreement.latest_calibration_check(store, user)
    if check is None:
        return {"round_id": None, "bar": in_force.as_dict(), "cleared": False, "graded_measure": None,
                "text": "no calibration round has two annotators' grades on the same items yet."}
    keys = ("n_units", "n_annotators", "kappa_binary", "kappa_unweighted", "kappa_linear", "kappa_quadratic",
            "alpha_ordinal")
    return {"round_id": round_id, "bar": in_force.as_dict(), **check.as_dict(),
            "text": f"round {round_id}: {check.text}",
            "figures": {k: (None if isinstance(figures.get(k), float) and figures[k] != figures[k] else figures.get(k))
                        for k in keys}}


def list_rounds(store: Store, user: User) -> list[dict]:
    """Every round with its progress; cached per store generation (a copy: callers may edit)."""
    require(user, Permission.RUN_ROUNDS)
    return [dict(r) for r in cache.cached(store, "list_rounds", (), lambda: rounds.list_rounds(store))]
