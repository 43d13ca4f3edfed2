"""What ``golden compare`` pairs and splits by (issue 25, item 9; METHODOLOGY §13.3, §14.1,
§15.4): only the held-out questions (confirm a winner on the slice the sweep never saw), only
one tier (smoke / regression / release), and cohorts by the question's source (flywheel items
measured apart from the original set) or creation date (month buckets, or before / since a
date). The questions' attributes come from the frozen version(s) the evaluations were scored
on, never from the live store (which may have changed since); scoring stays pure: this module
hands ``compare_runs`` plain query ids and a query -> cohort mapping."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.live.results import evaluation_queries
from golden_store.db.store import Store

QUESTION_ATTRIBUTES = ("query_id", "stratum", "source", "created_date", "held_out", "tier")
TIERS = ("smoke", "regression", "release")


def question_attributes(dataset_versions, versions_dir: Path | str | None = None) -> pd.DataFrame:
    """query_id, stratum, source, created_date, held_out and tier of the questions of the frozen
    versions named (a question in several takes its attributes from the first named). A
    version frozen before questions had a tier gives tier None."""
    from golden_store.versions import load_version

    frames = []
    for name in dict.fromkeys(v for v in dataset_versions if v is not None and not pd.isna(v)):
        try:
            q = load_version(name, versions_dir).queries
        except NotFoundError as exc:
            raise NotFoundError(f"The questions' attributes come from the frozen version the evaluation was scored "
                                f"on ({name!r}): {exc}") from None
        if "tier" not in q.columns:
            q = q.assign(tier=None)
        frames.append(q[list(QUESTION_ATTRIBUTES)])
    if not frames:
        return pd.DataFrame(columns=list(QUESTION_ATTRIBUTES))
    return pd.concat(frames, ignore_index=True).drop_duplicates("query_id", keep="first").reset_index(drop=True)


def scope_options(store: Store, baseline: str, candidate: str, *, versions_dir: Path | str | None,
                  held_out_only: bool = False, tier: str | None = None, by: str | None = None,
                  since: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``compare_runs`` keyword options (``query_ids``, ``cohorts``, ``cohort_by``) for the
    restrictions and cohorts asked for, and one sentence per restriction saying what it kept
    and left out (for the output). Nothing asked: ({}, [])."""
    if since and by not in (None, "date"):
        raise ValidationError("--since splits by creation date: use it with --by date (or alone).")
    if since:
        by = "date"
    if tier is not None and tier not in TIERS:
        raise ValidationError(f"Unknown tier {tier!r}; one of {', '.join(TIERS)}.")
    if by not in (None, "source", "date"):
        raise ValidationError(f"Cohorts are by source or by date, not {by!r}.")
    if not (held_out_only or tier or by):
        return {}, []
    va, qa = evaluation_queries(store, baseline)
    vb, qb = evaluation_queries(store, candidate)
    versions = list(dict.fromkeys(va + vb))
    named = ", ".join(versions) or "(none)"
    attrs = question_attributes(versions, versions_dir)
    options: dict[str, Any] = {}
    notes: list[str] = []
    keep = qa | qb
    if held_out_only:
        held = set(attrs.loc[attrs["held_out"].fillna(False).astype(bool), "query_id"])
        notes.append(f"held-out questions only: {len(keep & held)} of the evaluations' {len(keep)} questions are held "
                     f"out in {named}; the other {len(keep - held)} are left out")
        keep &= held
    if tier:
        tiered = set(attrs.loc[attrs["tier"] == tier, "query_id"])
        notes.append(f"tier {tier} only: {len(keep & tiered)} of {len(keep)} questions are tier {tier} in {named}; "
                     f"the other {len(keep - tiered)} are left out")
        keep &= tiered
    if held_out_only or tier:
        if not keep & qa & qb:
            raise ValidationError("No question left to pair: " + "; ".join(notes) + ".")
        options["query_ids"] = sorted(keep)
    if by == "source":
        options["cohorts"] = {q: str(s) for q, s in zip(attrs["query_id"], attrs["source"])}
        notes.append(f"cohorts by source (the question's source in {named})")
    elif by == "date":
        dates = {q: pd.Timestamp(d).date() for q, d in zip(attrs["query_id"], attrs["created_date"])
                 if d is not None and not pd.isna(d)}
        if since:
            try:
                cut = date.fromisoformat(since)
            except ValueError:
                raise ValidationError(f"--since {since!r}: give a date as YYYY-MM-DD.") from None
            options["cohorts"] = {q: (f"since {cut}" if d >= cut else f"before {cut}") for q, d in dates.items()}
            notes.append(f"cohorts by creation date: created before {cut} vs since {cut} (dates in {named})")
        else:
            options["cohorts"] = {q: f"{d:%Y-%m}" for q, d in dates.items()}
            notes.append(f"cohorts by creation month (dates in {named})")
    if by:
        options["cohort_by"] = by
        notes[-1] += "; a question the version does not know is in cohort '?'"
    return options, notes


def tier_options(version, tier: str | None) -> dict[str, Any]:
    """``evaluate`` keyword options scoring only the questions of ``tier`` in the frozen
    ``version`` (``golden score --tier``): query_ids and the sentence saying so. None: {}."""
    if tier is None:
        return {}
    if tier not in TIERS:
        raise ValidationError(f"Unknown tier {tier!r}; one of {', '.join(TIERS)}.")
    q = version.queries
    name = version.manifest.get("dataset_version") or version.path.name
    if "tier" not in q.columns:
        raise ValidationError(f"Version {name!r} was frozen before questions had a tier: freeze a new version "
                              f"to score by tier.")
    ids = sorted(q.loc[q["tier"] == tier, "query_id"])
    if not ids:
        raise ValidationError(f"No question of tier {tier} in version {name!r} (tag questions with a tier column "
                              f"in the queries file, then freeze again).")
    return {"query_ids": ids, "scope": f"tier {tier} only: {len(ids)} of the version's {len(q)} questions are tier "
                                      f"{tier}; the others are not scored"}
