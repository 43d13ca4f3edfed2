"""The rows agreement is computed from (METHODOLOGY §3.7): every annotator's current grade
with its stratum, round and time; the derived gold labels; each person's current evidence
spans. Only reads; the math is in ``golden_store.scoring.agreement``."""

from __future__ import annotations

import pandas as pd

from golden_store.store import Store

# An item's key in the agreement frames: a 64-bit hash of (query, doc, start, end), much
# cheaper to build, group and pivot than the concatenated string; a collision among even
# millions of items has probability ~1e-7 and would only merge two items' agreement counts.
UNIT = "hash({t}.query_id, {t}.doc_id, {t}.start, {t}.\"end\")"


def grade_rows(store: Store) -> pd.DataFrame:
    """One row per (item, annotator): unit key, actor, grade, stratum, round_id, created_at."""
    return store.df(
        f"SELECT {UNIT.format(t='g')} AS unit, g.query_id, "
        "g.actor, g.grade, q.stratum, g.round_id, g.created_at "
        "FROM current_grades g JOIN queries q USING (query_id) ORDER BY unit, g.actor")


def gold_rows(store: Store) -> pd.DataFrame:
    """The derived gold label per item (adjudicated, else unanimous) with its basis."""
    return store.df(
        f"SELECT {UNIT.format(t='f')} AS unit, f.grade, f.basis "
        "FROM final_grades f SEMI JOIN queries USING (query_id)")


def evidence_rows(store: Store) -> pd.DataFrame:
    """Current evidence spans with who placed them, and each question's answerable flag."""
    return store.df(
        "SELECT e.query_id, e.actor, e.doc_id, e.start, e.\"end\", q.answerable, q.stratum "
        "FROM current_evidence e JOIN queries q USING (query_id) ORDER BY e.query_id, e.actor")
