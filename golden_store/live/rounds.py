"""Annotation rounds, the SQL side (METHODOLOGY §3.7): which pool items are free to assign,
writing a round and its assignments in one transaction, and reading rounds back.

Which items go to whom is decided by the pure planner in ``annotator.assignment``; this
module only checks that what it is handed is a real pool item and stores it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from golden_store.db.cursor import Cursor
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store, utcnow

KINDS = ("calibration", "split")
Item = tuple[str, str, int, int]  # (query_id, doc_id, start, end)

_KEY = 'query_id, doc_id, start, "end"'


_FREE = (f"FROM pool_items p JOIN queries q USING (query_id) "
         f"ANTI JOIN (SELECT DISTINCT {_KEY} FROM round_assignments) a USING ({_KEY}) "
         f"ANTI JOIN (SELECT DISTINCT {_KEY} FROM grade_events WHERE op = 'grade') g USING ({_KEY}) ")


def free_items(store: Store) -> list[dict]:
    """Pool items nobody has graded and no round has assigned, with the query's stratum:
    what a new round can draw from."""
    return store.read_dicts(
        f"SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.stratum {_FREE}ORDER BY p.query_id, p.doc_id, p.start")


def free_item_count(store: Store) -> int:
    """``len(free_items(store))`` counted in SQL (a fresh pool holds ~300 k free items)."""
    return int(store.read_row(f"SELECT count(*) {_FREE}")[0])


def create_round(store: Store, kind: str, assignments: Mapping[str, Sequence[Item]], *, actor: str,
                 overlap: float | None = None, seed: int | None = None, note: str | None = None,
                 bar_check: str | None = None, bar_override: str | None = None) -> str:
    """Store a round and its assignments atomically; returns the new round id (r1, r2, ...).
    Every item must be in the pool; a round gives out at least one item. A split records the
    bar check it was made under (``bar_check``, JSON) and, when it went ahead below the bar,
    the lead's reason (``bar_override``)."""
    if kind not in KINDS:
        raise ValidationError(f"Unknown round kind {kind!r}: use one of {', '.join(KINDS)}.")
    annotators = sorted(assignments)
    if kind == "calibration" and len(annotators) < 2:
        raise ValidationError("A calibration round needs at least two annotators.")
    rows = [(a, *item) for a in annotators for item in assignments[a]]
    if not rows:
        raise ValidationError("The round has no items: build or extend the pool first "
                              "(`golden pool build --depth K`), or all pool items are already assigned.")
    items = {r[1:] for r in rows}

    def tx(cur: Cursor) -> str:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _round_items (query_id VARCHAR, doc_id VARCHAR, "
                    "start INTEGER, \"end\" INTEGER)")
        cur.execute("DELETE FROM _round_items")
        cur.executemany("INSERT INTO _round_items VALUES (?, ?, ?, ?)", sorted(items))
        missing = cur.execute(f"SELECT {_KEY} FROM _round_items ANTI JOIN pool_items USING ({_KEY}) "
                              f"ORDER BY 1, 2, 3 LIMIT 5").fetchall()
        if missing:
            raise ValidationError("Some round items are not in the pool.",
                                  [f"{q} {d} [{s}:{e}]" for q, d, s, e in missing])
        n = cur.execute("SELECT count(*) FROM rounds").fetchone()[0]
        round_id = f"r{n + 1}"
        cur.execute("INSERT INTO rounds (round_id, kind, annotators, overlap, seed, n_items, note, created_by, "
                    "created_at, item_kind, bar_check, bar_override) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'grade', ?, ?)",
                    [round_id, kind, annotators, overlap, seed, len(items), note or None, actor, utcnow(),
                     bar_check, bar_override or None])
        cur.executemany("INSERT INTO round_assignments VALUES (?, ?, ?, ?, ?, ?)",
                        [(round_id, *r) for r in rows])
        return round_id

    return store.write(tx)


def list_rounds(store: Store) -> list[dict]:
    """Every round, oldest first: what it gives out (grades or evidence), and how many of its
    assignments are done (a current grade; for evidence, a quote or a "no answer")."""
    return store.read_dicts(
        "SELECT r.round_id, r.kind, r.item_kind, r.annotators, r.overlap, r.seed, r.n_items, r.note, r.created_by, "
        "r.created_at, r.bar_check, r.bar_override, coalesce(g.n, 0) + coalesce(e.n, 0) AS n_assignments, "
        "coalesce(g.done, 0) + coalesce(e.done, 0) AS n_done "
        "FROM rounds r "
        "LEFT JOIN (SELECT a.round_id, count(*) AS n, count(c.grade) AS done FROM round_assignments a "
        "  LEFT JOIN current_grades c ON c.query_id = a.query_id AND c.doc_id = a.doc_id AND c.start = a.start "
        "  AND c.\"end\" = a.\"end\" AND c.actor = a.annotator GROUP BY a.round_id) g USING (round_id) "
        "LEFT JOIN (SELECT a.round_id, count(*) AS n, count(*) FILTER (WHERE EXISTS (SELECT 1 FROM evidence_events "
        "  x WHERE x.query_id = a.query_id AND x.actor = a.annotator AND x.op = 'set') OR EXISTS (SELECT 1 FROM "
        "  evidence_no_answer_events v WHERE v.query_id = a.query_id AND v.actor = a.annotator)) "
        "  AS done FROM evidence_assignments a GROUP BY a.round_id) e USING (round_id) "
        "ORDER BY r.created_at, r.round_id")

