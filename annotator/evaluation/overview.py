"""The home page's numbers: the store's state at a glance and each workflow's progress."""

from __future__ import annotations

import copy
from typing import Any

from annotator.process import cache
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import calibrations, evidence, judging, nuggets, queries, transcripts
from golden_store.live import documents
from golden_store import versions
from golden_store.live.rubric import current_rubric
from golden_store.db.store import Store, versions_dir_for


def store_overview(store: Store, user: User) -> dict[str, Any]:
    """The home page's figures as ``user`` may see them. ``judging["pending"]`` (disagreements
    waiting for a lead) is left out for anyone who may neither adjudicate nor run rounds: an
    annotator who re-grades a shared item and re-reads it learns when and how a colleague
    graded it, which breaks blind double annotation (issue 18)."""
    require(user, Permission.VIEW_STORE)
    settled_only = not user.can(Permission.ADJUDICATE)
    out = copy.deepcopy(cache.cached(store, "store_overview", (settled_only,),
                                     lambda: _store_facts(store, settled_only)))
    if not (user.can(Permission.ADJUDICATE) or user.can(Permission.RUN_ROUNDS)):
        del out["judging"]["pending"]
    if user.can(Permission.VIEW_VERSIONS):
        out["versions"] = versions.list_versions(versions_dir_for(store.path))
    return out


def _store_facts(store: Store, settled_only: bool) -> dict[str, Any]:
    """The figures that depend on the store only (and on whether unsettled evidence counts),
    so one computation per store generation serves every visitor of the same kind."""
    qdf = queries.list_queries(store)
    n_q = len(qdf)
    answerable = int(qdf["answerable"].sum()) if n_q else 0
    ev = evidence.evidence_counts(store, settled_only=settled_only)
    rubric = current_rubric(store)
    return {
        "db_path": str(store.path),
        "corpus": documents.corpus_stats(store),
        "queries": n_q,
        "answerable": answerable,
        "held_out": int(qdf["held_out"].sum()) if n_q else 0,
        "strata": queries.strata_counts(store),
        "evidence": ev,
        "evidence_progress": (ev["queries_with_evidence"] / answerable) if answerable else None,
        "rubric_version": rubric["version"] if rubric else None,
        "judging": judging.pool_counts(store),
        "nuggets": nuggets.counts(store),
        "transcripts": transcripts.counts(store),
        "calibrations": len(calibrations.list_all(store)),
        "versions": [],
    }
