"""Pooled judging, the SQL side: each annotator's queue over the pool (in an order of their
own, so position effects average out across annotators), grade events, recent judgments.
Nothing here reads pool_sources: which system retrieved an item never reaches a judge."""

from __future__ import annotations

from golden_store.db.cursor import Cursor
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store, utcnow
from golden_store.live import grade_state, judge_labels
from golden_store.live.judgment_imports import IMPORTED_ITEMS

OPS = ("grade", "skip", "unsure")

# An item is done for an annotator once their latest event on it is a grade, skip or unsure
# (judging_state keeps that latest event per annotator and item: no window over the log).
_DONE = "SELECT query_id, doc_id, start, \"end\" FROM judging_state WHERE actor = ? AND op <> 'retract'"


# The items in an annotator's queue: those a round assigned to them, plus those no round
# assigned to anybody (the single-annotator case), less those a calibrated judge labeled
# (judge_item_state route 'judge'; its band, refusals and the standing sample stay with
# people), and less those an imported judgment graded (qrels or Label Studio a team already
# had, issue 28) unless a round gives the item to this annotator. `first_round` orders
# assigned items first, by the round that gave them out. Parameters: actor, actor.
_SCOPE = (
    "SELECT p.query_id, p.doc_id, p.start, p.\"end\", a.first_round FROM pool_items p "
    "LEFT JOIN (SELECT query_id, doc_id, start, \"end\", bool_or(ra.annotator = ?) AS mine, "
    "  min(r.created_at) FILTER (WHERE ra.annotator = ?) AS first_round "
    "  FROM round_assignments ra JOIN rounds r USING (round_id) GROUP BY ALL) a "
    "USING (query_id, doc_id, start, \"end\") "
    f"ANTI JOIN ({judge_labels.JUDGE_ROUTED}) jr USING (query_id, doc_id, start, \"end\") "
    f"LEFT JOIN ({IMPORTED_ITEMS}) im USING (query_id, doc_id, start, \"end\") "
    "WHERE a.mine OR (a.mine IS NULL AND im.query_id IS NULL)"
)


ORDERS = ("random", "by_query")


def next_items(store: Store, actor: str, limit: int = 1, *, order: str = "random") -> list[dict]:
    """The annotator's next items: first what rounds assigned to them (oldest round first),
    then unassigned pool items, each in the annotator's own pseudo-random order (stable, so
    a session resumes where it stopped). ``order="by_query"`` keeps all pooled passages of
    one question together (TREC practice: the judge reads the question once), questions in
    the annotator's own order. Another annotator's assigned items never appear."""
    if order not in ORDERS:
        raise ValidationError(f"Unknown queue order {order!r}: one of {', '.join(ORDERS)}.")
    item_hash = ("hash(? || '\x1f' || p.query_id || '\x1f' || p.doc_id || '\x1f' || p.start || '\x1f' || "
                 "p.\"end\")")
    by = f"hash(? || '\x1f' || p.query_id), p.query_id, {item_hash}" if order == "by_query" else item_hash
    params = [actor, actor, actor] + ([actor] if order == "by_query" else []) + [actor, limit]
    return store.read_dicts(
        "SELECT p.query_id, p.doc_id, p.start, p.\"end\", q.text AS query_text "
        f"FROM ({_SCOPE}) p JOIN queries q USING (query_id) "
        f"ANTI JOIN ({_DONE}) d USING (query_id, doc_id, start, \"end\") "
        f"ORDER BY p.first_round NULLS LAST, {by} LIMIT ?",
        params,
    )


# ---- cursor-level pieces of one label's transaction (annotator/labeling.py composes them) ----


def item_content_tx(cur: Cursor, query_id: str, doc_id: str, start: int,
                    end: int) -> tuple[str, str] | None:
    """(question text, passage text) of a pool item as it stands now, or None if the
    question is gone or the span no longer fits its document."""
    row = cur.execute(
        "SELECT q.text, d.raw_text FROM queries q, documents d WHERE q.query_id = ? AND d.doc_id = ?",
        [query_id, doc_id]).fetchone()
    if row is None or end > len(row[1]) or start < 0 or start > end:
        return None
    return row[0], row[1][start:end]


def scope_problem_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int,
                     end: int) -> str | None:
    """Why ``actor`` may not grade this item now (None when they may): it left the pool,
    or a round gave it to other annotators only."""
    key = [query_id, doc_id, start, end]
    # one statement (each costs ~0.5 ms of DuckDB's CPU on a label's path, issue 41)
    in_pool, n_assigned, n_mine = cur.execute(
        "SELECT EXISTS (SELECT 1 FROM pool_items WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?), "
        "count(*), count(*) FILTER (WHERE annotator = ?) FROM round_assignments "
        "WHERE query_id = ? AND doc_id = ? AND start = ? AND \"end\" = ?", [*key, actor, *key]).fetchone()
    if not in_pool:
        return "it is no longer in the pool"
    if n_assigned and not n_mine:
        return "a round now gives it to other annotators"
    return None


def latest_own_event_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int,
                        end: int) -> int | None:
    """The event id of the actor's latest grade / skip / unsure / retract on this item."""
    row = cur.execute(
        "SELECT event_id FROM judging_state WHERE actor = ? AND query_id = ? AND doc_id = ? AND start = ? "
        "AND \"end\" = ?", [actor, query_id, doc_id, start, end]).fetchone()
    return row[0] if row else None


def insert_tx(cur: Cursor, actor: str, query_id: str, doc_id: str, start: int, end: int, *,
              op: str, grade: int | None = None, note: str | None = None,
              rubric_version: int | None = None) -> int:
    """Append one judging event inside the caller's transaction; returns its event id."""
    if op not in OPS + ("retract",):
        raise ValidationError(f"Unknown judging action {op!r}.")
    if op == "grade" and grade not in (0, 1, 2, 3):
        raise ValidationError("A grade is 0, 1, 2 or 3.")
    # the document's digest, and the round that gave this item to this annotator (the latest,
    # if several did), in one statement
    row = cur.execute(
        "SELECT d.canonical_sha256, (SELECT ra.round_id FROM round_assignments ra JOIN rounds r USING (round_id) "
        "WHERE ra.annotator = ? AND ra.query_id = ? AND ra.doc_id = ? AND ra.start = ? AND ra.\"end\" = ? "
        "ORDER BY r.created_at DESC LIMIT 1) FROM documents d WHERE d.doc_id = ?",
        [actor, query_id, doc_id, start, end, doc_id]).fetchone()
    if row is None:
        raise ValidationError(f"Document {doc_id!r} is not in the corpus.")
    return grade_state.append_tx(
        cur, query_id=query_id, doc_id=doc_id, start=start, end=end, op=op, grade=grade if op == "grade" else None,
        actor=actor, created_at=utcnow(), doc_sha256=row[0], rubric_version=rubric_version,
        round_id=row[1], note=note or None)


def progress(store: Store, actor: str) -> tuple[int, int]:
    """(done, total) over the annotator's own queue, in one pass over it (the Judge page
    asks on every key press)."""
    total, done = store.read_row(
        f"SELECT count(*), count(d.query_id) FROM ({_SCOPE}) s SEMI JOIN queries USING (query_id) "
        f"LEFT JOIN ({_DONE}) d USING (query_id, doc_id, start, \"end\")", [actor, actor, actor])
    return int(done), int(total)


def record(store: Store, actor: str, query_id: str, doc_id: str, start: int, end: int, *, op: str,
           grade: int | None = None, note: str | None = None, rubric_version: int | None = None) -> None:
    """Append one judging event (a correction is just a later event)."""
    if op not in OPS:
        raise ValidationError(f"Unknown judging action {op!r}.")
    store.write(lambda cur: insert_tx(cur, actor, query_id, doc_id, start, end, op=op, grade=grade, note=note,
                                      rubric_version=rubric_version))


def recent(store: Store, actor: str, n: int = 10) -> list[dict]:
    return store.read_dicts(
        "SELECT e.event_id, e.query_id, e.doc_id, e.start, e.\"end\", e.op, e.grade, e.note, e.created_at "
        "FROM grade_events e WHERE actor = ? AND op IN ('grade', 'skip', 'unsure') "
        "ORDER BY event_id DESC LIMIT ?", [actor, n])


def pool_counts(store: Store) -> dict[str, int]:
    """Workflow counts for the home page (numbers only, nobody's labels): pool size, items
    with at least one grade, items graded by two or more, disagreements waiting, rounds."""
    # grade_item_state: each item's number of current grades, kept with every grade event
    row = store.read_row(
        "WITH g AS (SELECT query_id, doc_id, start, \"end\", n_graded AS n FROM grade_item_state WHERE n_graded > 0) "
        "SELECT (SELECT count(*) FROM pool_items SEMI JOIN queries USING (query_id)), "
        "(SELECT count(*) FROM pool_items p SEMI JOIN g USING (query_id, doc_id, start, \"end\")), "
        "(SELECT count(*) FROM g WHERE n >= 2), "
        "(SELECT count(*) FROM pending_grades SEMI JOIN queries USING (query_id)), "
        "(SELECT count(*) FROM rounds)")
    keys = ("pool_items", "pool_graded", "double_graded", "pending", "rounds")
    return {k: int(v) for k, v in zip(keys, row)}


def _facts_select(n: int) -> str:
    """The statement of :func:`label_facts_tx` for ``n`` keys (parameters: i, actor, query_id,
    doc_id, start, end per key): one row per key whose question and document exist."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?)"] * n)
    on = "query_id = k.query_id AND {0}.doc_id = k.doc_id AND {0}.start = k.start AND {0}.\"end\" = k.\"end\""
    # joins and one GROUP BY, not correlated subqueries: half the CPU on DuckDB
    return (
        f"WITH k (i, actor, query_id, doc_id, start, \"end\") AS (VALUES {values}) "
        "SELECT k.i, any_value(q.text), any_value(d.raw_text), any_value(d.canonical_sha256), "
        "bool_or(p.query_id IS NOT NULL), count(ra.annotator), count(ra.annotator) FILTER (WHERE ra.annotator = k.actor), "
        "arg_max(ra.round_id, r.created_at) FILTER (WHERE ra.annotator = k.actor) "
        "FROM k JOIN queries q ON q.query_id = k.query_id JOIN documents d ON d.doc_id = k.doc_id "
        f"LEFT JOIN pool_items p ON p.{on.format('p')} LEFT JOIN round_assignments ra ON ra.{on.format('ra')} "
        "LEFT JOIN rounds r ON r.round_id = ra.round_id GROUP BY k.i")


def _facts(keys: list[tuple[str, str, str, int, int]], rows: list) -> list[dict | None]:
    out: list[dict | None] = [None] * len(keys)
    for i, text, raw, sha, in_pool, n_assigned, n_mine, round_id in rows:
        start, end = keys[i][3], keys[i][4]
        content = None if end > len(raw) or start < 0 or start > end else (text, raw[start:end])
        problem = ("it is no longer in the pool" if not in_pool else
                   "a round now gives it to other annotators" if n_assigned and not n_mine else None)
        out[i] = {"content": content, "problem": problem, "doc_sha256": sha, "round_id": round_id}
    return out


def label_facts_tx(cur: Cursor, keys: list[tuple[str, str, str, int, int]]) -> list[dict | None]:
    """What :func:`item_content_tx`, :func:`scope_problem_tx` and :func:`insert_tx` read for a
    label, for several ``(actor, query_id, doc_id, start, end)`` in one statement (issue 41: on
    DuckDB each statement costs ~1 ms of CPU, and a label read five times): per key, None when
    the question or the document is gone, else ``content`` (as item_content_tx: None when the
    span no longer fits), ``problem`` (as scope_problem_tx), ``doc_sha256`` and ``round_id``
    (as insert_tx records them)."""
    if not keys:
        return []
    rows = cur.execute(_facts_select(len(keys)), [v for i, key in enumerate(keys) for v in (i, *key)]).fetchall()
    return _facts(keys, rows)


def group_facts_tx(cur: Cursor, keys: list[tuple[str, str, str, int, int]],
                   label_ids: list[str]) -> tuple[list[dict | None], dict[str, str], int | None]:
    """A group of labels' reads in one statement (issue 41: each statement costs DuckDB
    ~0.5-1 ms of CPU however small): :func:`label_facts_tx` of ``keys``, the actor of each
    receipt already written for one of ``label_ids`` (``label_receipts.find_many``), and the
    rubric version in force (``rubric.current_version_tx``)."""
    ids = list(dict.fromkeys(label_ids))
    parts, params = [], []
    if keys:
        parts.append(f"SELECT 0 AS kind, * FROM ({_facts_select(len(keys))})")
        params += [v for i, key in enumerate(keys) for v in (i, *key)]
    if ids:
        parts.append("SELECT 1, NULL, label_id, actor, NULL, NULL, NULL, NULL, NULL FROM label_receipts "
                     f"WHERE label_id IN ({', '.join('?' * len(ids))})")
        params += ids
    parts.append("SELECT 2, max(version), NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM rubric_versions")
    rows = cur.execute(" UNION ALL ".join(parts), params).fetchall()
    facts = _facts(keys, [r[1:] for r in rows if r[0] == 0])
    actors = {r[2]: r[3] for r in rows if r[0] == 1}
    version = next(r[1] for r in rows if r[0] == 2)
    return facts, actors, version
