"""The home page's numbers: the store's state at a glance and each workflow's progress."""

from __future__ import annotations

from typing import Any

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import calibrations, corpus, evidence, judging, nuggets, queries, transcripts, versions
from golden_store.rubric import current_rubric
from golden_store.store import Store, versions_dir_for


def store_overview(store: Store, user: User) -> dict[str, Any]:
    """The home page's figures as ``user`` may see them. ``judging["pending"]`` (disagreements
    waiting for a lead) is left out for anyone who may neither adjudicate nor run rounds: an
    annotator who re-grades a shared item and re-reads it learns when and how a colleague
    graded it, which breaks blind double annotation (issue 18)."""
    require(user, Permission.VIEW_STORE)
    qdf = queries.list_queries(store)
    n_q = len(qdf)
    answerable = int(qdf["answerable"].sum()) if n_q else 0
    ev = evidence.evidence_counts(store, settled_only=not user.can(Permission.ADJUDICATE))
    rubric = current_rubric(store)
    out: dict[str, Any] = {
        "db_path": str(store.path),
        "corpus": corpus.corpus_stats(store),
        "queries": n_q,
        "answerable": answerable,
        "held_out": int(qdf["held_out"].sum()) if n_q else 0,
        "strata": queries.strata_counts(store),
        "evidence": ev,
        "evidence_progress": (ev["queries_with_evidence"] / answerable) if answerable else None,
        "rubric_version": rubric["version"] if rubric else None,
        "judging": _judging_counts(store, user),
        "nuggets": nuggets.counts(store),
        "transcripts": transcripts.counts(store),
        "calibrations": len(calibrations.list_all(store)),
        "versions": [],
    }
    if user.can(Permission.VIEW_VERSIONS):
        out["versions"] = versions.list_versions(versions_dir_for(store.path))
    return out


def _judging_counts(store: Store, user: User) -> dict[str, int]:
    """Pool counts; the pending-disagreement count only for those who may adjudicate or run rounds."""
    counts = judging.pool_counts(store)
    if not (user.can(Permission.ADJUDICATE) or user.can(Permission.RUN_ROUNDS)):
        del counts["pending"]
    return counts
