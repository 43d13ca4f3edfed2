"""Judgments people already have, the SQL side (issue 28): placing parsed qrels / Label Studio
rows on the store's queries and corpus, writing them as grade events, listing and retracting
imports.

Why grade events and not a table of their own: the pool, the Judge queue, qrels, agreement,
adjudication and freezing all read the grade log and its state tables
(:mod:`golden_store.live.grade_state`); an imported judgment written there is, for all of
them, a grade by one more assessor (the import's actor, ``import:FILE`` or
``assessor:NAME``), with nothing new for each reader to learn. ``judgment_imports`` keeps one
row per import (source, file, format, digest, count); each event's note names its import
(``import ID``) so a list can count what still stands and a retraction finds its events.
``round_id`` stays NULL: no round gave the item out.

Placing: a qrels document id is the whole document, exactly as a TREC run's result for that
docno is (:func:`golden_store.live.runs.parse_run`: ``(doc_id, 0, len(raw_text))``), so a
judgment lands on the item the run pooled. A Label Studio passage is placed on the corpus by
the quote resolver and must match exactly.

Writing: the events go through ``grade_state.append_bulk_tx``, the grade log's batch writer:
one ``INSERT ... SELECT`` for the events and one statement per state table, so a million
judgments cost what the import holds, not a million ``append_tx`` calls (four statements
each) nor a refill of the state from the whole log (``rebuild_tx``). One transaction: all
or nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from golden_store.core.errors import NotFoundError, OptionRequiredError, ValidationError
from golden_store.core.judgment_formats import IMPORTED_ACTOR_SQL, PASSAGE_FORMATS, ParsedJudgments
from golden_store.core.textin import shown
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store, utcnow
from golden_store.live import grade_state

SKIP_ADVICE = "Pass --skip-unknown to leave those judgments out (they are counted in the report)."
# Items (query, passage) with a standing imported grade: out of every person's Judge queue
# unless a round gives the item to them (golden_store.live.judging._SCOPE).
# Restricted to the sources judgment_imports names (a semi join on a few actors, not a LIKE
# over every row): next_items and progress read this on every key press, and with no import
# in the store it costs nothing (1.3 ms against 27 ms for the LIKE scan on 2 M grade_state
# rows, measured 2026-12-06).
IMPORTED_ITEMS = ("SELECT DISTINCT query_id, doc_id, start, \"end\" FROM grade_state "
                  "SEMI JOIN (SELECT DISTINCT source AS actor FROM judgment_imports) src USING (actor) "
                  "WHERE op = 'grade'")


@dataclass
class PlacedJudgments:
    """Judgments placed on the store: one row per item (``query_id, doc_id, start, end,
    grade``), and what was left out on the way."""

    parsed: ParsedJudgments
    rows: pd.DataFrame
    skipped: int = 0                  # judgments left out for unknown ids (skip_unknown)
    skipped_queries: list[str] = field(default_factory=list)
    skipped_docs: list[str] = field(default_factory=list)
    duplicates: int = 0               # identical repeats of one item's judgment, kept once


def _note(import_id: str) -> str:
    """The note on each of an import's grade events: how a list counts what still stands and
    a retraction finds them."""
    return f"import {import_id}"


def place(store: Store, parsed: ParsedJudgments, *, skip_unknown: bool = False,
          resolver: Callable[[], Any] | None = None) -> PlacedJudgments:
    """The parsed rows as items of the store, validated whole: unknown query and document ids
    (refused, or left out and counted with ``skip_unknown``), Label Studio passages that do
    not match the corpus exactly, and one item judged twice with different grades (both
    places named) are listed in one ValidationError. ``resolver``: a factory of the corpus
    quote resolver, called only when a Label Studio file needs it.

    Qrels rows are checked column-wise (pandas): a million-line file is a few arrays, not a
    million Python tuples."""
    queries = {r[0]: r[1] for r in store.read("SELECT query_id, text FROM queries")}
    docs = dict(store.read("SELECT doc_id, length(raw_text) FROM documents"))
    problems: list[str] = []
    if parsed.fmt in PASSAGE_FORMATS:
        df = _place_passages(parsed, queries, set(docs), resolver, problems)
    else:
        df = pd.DataFrame({"query_id": pd.Series(parsed.query_ids, dtype=object),
                           "doc_id": pd.Series(parsed.doc_ids, dtype=object),
                           "grade": pd.Series(parsed.grades, dtype="int64"), "ref": parsed.refs})
        df["start"] = 0
        df["end"] = df["doc_id"].map(docs)
        if parsed.starts:  # the studio's own JSONL: each judgment's span, which must lie inside its document
            df["start"], span_end = parsed.starts, pd.Series(parsed.ends, index=df.index)
            outside = df["end"].notna() & (span_end > df["end"])
            problems += [f"{parsed.at(r.ref)}: the span [{r.start}:{e}] of document {shown(r.doc_id)} runs past its "
                         f"text ({int(r.end)} characters); the corpus is not the one the file was exported with"
                         for r, e in zip(df.loc[outside].head(10).itertuples(), span_end[outside].head(10))]
            df["end"] = span_end.where(df["end"].notna())
    unknown_q = ~df["query_id"].isin(pd.Index(list(queries)))
    unknown_d = df["doc_id"].notna() & ~df["doc_id"].isin(pd.Index(list(docs)))
    unknown = unknown_q | unknown_d
    first_q = df.loc[unknown_q].drop_duplicates("query_id")
    first_d = df.loc[unknown_d].drop_duplicates("doc_id")
    skipped = int(unknown.sum()) if skip_unknown else 0
    unknown_problems: list[str] = []
    if not skip_unknown:
        unknown_problems += [f"{parsed.at(ref)}: unknown query id {shown(q)} (not in the store's queries)"
                             for q, ref in zip(first_q["query_id"][:10], first_q["ref"][:10])]
        unknown_problems += [f"{parsed.at(ref)}: unknown doc id {shown(d)} (not in the corpus)"
                             for d, ref in zip(first_d["doc_id"][:10], first_d["ref"][:10])]
    df = df.loc[~unknown]
    df = df.assign(start=df["start"].astype("int64"), end=df["end"].astype("int64"))
    # one item judged twice: kept once when the grades agree, refused naming both places
    key = ["query_id", "doc_id", "start", "end"]
    repeated = df.loc[df.duplicated(key, keep=False)]
    duplicates = 0
    if len(repeated):
        for _, group in repeated.groupby(key, sort=False):
            first = group.iloc[0]
            other = group.loc[group["grade"] != first["grade"]]
            if other.empty:
                duplicates += len(group) - 1
            elif len(problems) < 50:
                row = other.iloc[0]
                where_first = parsed.at(first["ref"])[len(parsed.name) + 1:]  # 'line 3' / 'task 17': the same file
                problems.append(f"{parsed.at(row['ref'])}: judges query {shown(row['query_id'])}, document "
                                f"{shown(row['doc_id'])} again with grade {int(row['grade'])}, but {where_first} gave "
                                f"{int(first['grade'])}; keep one of the two")
        df = df.drop_duplicates(key, keep="first")
    if problems or unknown_problems:
        n_q, n_d = len(first_q), len(first_d)
        counts = f"{n_q} unknown query id(s), {n_d} unknown doc id(s)" if unknown_problems else ""
        what = ", ".join(x for x in (counts, f"{len(problems)} other problem(s)" if problems else "") if x)
        reason = f"Judgments import refused: {what}; nothing was imported."
        if not problems:
            raise OptionRequiredError(reason, option="--skip-unknown", advice=SKIP_ADVICE, problems=unknown_problems)
        raise ValidationError(reason, unknown_problems + problems)
    if df.empty:
        raise ValidationError(f"{parsed.name}: every judgment names a query or document the store does not know; "
                              "nothing to import.")
    rows = df[["query_id", "doc_id", "start", "end", "grade"]].reset_index(drop=True)
    return PlacedJudgments(parsed, rows, skipped, sorted(first_q["query_id"])[:50] if skip_unknown else [],
                           sorted(first_d["doc_id"])[:50] if skip_unknown else [], duplicates)


def _place_passages(parsed: ParsedJudgments, queries: dict[str, str], docs: set[str],
                    resolver: Callable[[], Any] | None, problems: list[str]) -> pd.DataFrame:
    """Label Studio rows on the store: the query by id, else by its exact text; the passage on
    the corpus by the quote resolver (in its document when the task names one), exact matches
    only. Rows with an unknown query or document id keep that id (the caller sorts them out);
    rows that cannot be placed go to ``problems``."""
    by_text: dict[str, list[str]] = {}
    for known_id, text in queries.items():
        by_text.setdefault(text.strip(), []).append(known_id)
    res = None
    out: list[tuple] = []
    for i in range(len(parsed)):
        where = parsed.where(i)
        qid, did = parsed.query_ids[i], parsed.doc_ids[i]
        if qid is None:
            text = (parsed.query_texts[i] or "").strip()
            hits = by_text.get(text, [])
            if len(hits) != 1:
                problems.append(f"{where}: the query text {shown(text)} matches "
                                f"{'no query' if not hits else f'{len(hits)} queries'} of the store; put the "
                                "query id in the task's data (--query-id-field)")
                continue
            qid = hits[0]
        if qid not in queries or (did is not None and did not in docs):
            out.append((qid, did, 0, 0, parsed.grades[i], parsed.refs[i]))  # unknown: refused or skipped by the caller
            continue
        if res is None:
            if resolver is None:
                raise ValidationError("Placing Label Studio passages needs the corpus resolver.")
            res = resolver()
        r = res.resolve(parsed.passages[i] or "", did)
        if r is None or r.status != "exact" or r.best is None:
            status = r.status if r is not None else "unresolved"
            problems.append(f"{where}: the passage does not match {'document ' + shown(did) if did else 'the corpus'}"
                            f" exactly ({status}); export the passage text as it is in the corpus"
                            f"{'' if did else ', or give its document id (--doc-id-field)'}")
            continue
        out.append((qid, r.best.doc_id, r.best.start, r.best.end, parsed.grades[i], parsed.refs[i]))
    return pd.DataFrame(out, columns=["query_id", "doc_id", "start", "end", "grade", "ref"]).astype(
        {"query_id": object, "doc_id": object, "start": "int64", "end": "int64", "grade": "int64", "ref": object})


def store_import(store: Store, placed: PlacedJudgments, *, actor: str, source: str, file_name: str,
                 file_sha256: str, imported_by: str, again: bool = False) -> str:
    """Write one import in one transaction: its ``judgment_imports`` row and a grade event per
    judgment, actor ``actor`` (the source), note ``import ID``. A file whose digest was
    imported before is refused unless ``again``. Returns the import id."""
    rows = placed.rows

    def tx(cur: Cursor) -> str:
        prior = cur.execute("SELECT import_id, created_at FROM judgment_imports WHERE file_sha256 = ? "
                            "ORDER BY created_at LIMIT 1", [file_sha256]).fetchone()
        if prior and not again:
            raise OptionRequiredError(f"{file_name}: this file was imported already (import {prior[0]}, "
                                      f"{prior[1]:%Y-%m-%d %H:%M}); nothing was imported.", option="--again",
                                      advice="Pass --again to import it once more (its grades become the "
                                             "source's latest word again).")
        n_before = cur.execute("SELECT count(*) FROM judgment_imports").fetchone()[0]
        import_id = f"ji{int(n_before) + 1}"
        while cur.execute("SELECT 1 FROM judgment_imports WHERE import_id = ?", [import_id]).fetchone():
            n_before += 1
            import_id = f"ji{int(n_before) + 1}"
        now = utcnow()
        cur.execute("INSERT INTO judgment_imports (import_id, source, file_name, fmt, file_sha256, n_judgments, "
                    "actor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [import_id, source, file_name, placed.parsed.fmt, file_sha256, len(rows), imported_by, now])
        _write_events(cur, rows, op="grade", actor=actor, note=_note(import_id), now=now)
        return import_id

    return store.write(tx)


def known_ids(store: Store) -> tuple[set[str], set[str]]:
    """The store's query ids and document ids: what a dataset import's qrels may name besides
    the dataset's own."""
    return ({r[0] for r in store.read("SELECT query_id FROM queries")},
            {r[0] for r in store.read("SELECT doc_id FROM documents")})


def prior_import(store: Store, file_sha256: str) -> str | None:
    """The first import of a file with this digest, or None: how a dataset import tells that
    its qrels are in already (re-importing a dataset changes nothing)."""
    row = store.read_one("SELECT import_id FROM judgment_imports WHERE file_sha256 = ? ORDER BY created_at LIMIT 1",
                         [file_sha256])
    return None if row is None else str(row[0])


def _write_events(cur: Cursor, rows: pd.DataFrame, *, op: str, actor: str, note: str, now: Any) -> None:
    """Grade (or retract) events for ``rows`` (query_id, doc_id, start, end[, grade]; one item
    each) by ``actor``, through the grade log's batch writer (``grade_state.append_bulk_tx``)."""
    shas = dict(cur.execute("SELECT doc_id, canonical_sha256 FROM documents WHERE doc_id IN "
                            "(SELECT unnest(?::VARCHAR[]))", [sorted(set(rows["doc_id"]))]).fetchall())
    frame = rows.assign(doc_sha256=rows["doc_id"].map(shas),
                        grade=rows["grade"] if op == "grade" else pd.Series([None] * len(rows), dtype="Int64"))
    grade_state.append_bulk_tx(cur, frame, op=op, actor=actor, created_at=now, note=note)


def list_imports(store: Store) -> pd.DataFrame:
    """Every import, oldest first: its id, source actor, file, format, judgments written, how
    many of them still stand (the source's latest word on the item is this import's grade),
    who imported it and when."""
    return store.df(
        "SELECT i.import_id, i.source, i.file_name, i.fmt AS format, i.n_judgments, "
        "coalesce(s.n, 0) AS standing, i.actor AS imported_by, i.created_at "
        "FROM judgment_imports i LEFT JOIN (SELECT note, count(*) AS n FROM grade_state WHERE op = 'grade' "
        f"AND {IMPORTED_ACTOR_SQL} GROUP BY note) s ON s.note = 'import ' || i.import_id "
        "ORDER BY i.created_at, i.import_id")


def retract(store: Store, import_id: str) -> int:
    """Retract an import's grades that still stand (a ``retract`` event by the import's
    source on each: the source's word on the item is withdrawn, history kept); returns how
    many. An import with nothing standing is refused."""

    def tx(cur: Cursor) -> int:
        row = cur.execute("SELECT source FROM judgment_imports WHERE import_id = ?", [import_id]).fetchone()
        if row is None:
            known = [r[0] for r in cur.execute("SELECT import_id FROM judgment_imports ORDER BY created_at").fetchall()]
            raise NotFoundError(f"No judgments import {shown(import_id)}; known: {', '.join(known[-10:]) or 'none'} "
                                "(golden judgments list).")
        standing = cur.execute(
            "SELECT query_id, doc_id, start, \"end\" FROM grade_state WHERE actor = ? AND op = 'grade' AND note = ? "
            "ORDER BY query_id, doc_id, start, \"end\"", [row[0], _note(import_id)]).df()
        if standing.empty:
            raise ValidationError(f"Import {import_id}: none of its grades stands (retracted already, or graded again "
                                  "by a later import of the same source); nothing to retract.")
        _write_events(cur, standing, op="retract", actor=row[0], note=f"retract {_note(import_id)}", now=utcnow())
        return len(standing)

    return store.write(tx)


def pool_judged_counts(store: Store) -> dict[str, int]:
    """The pool's items by who graded them: ``pool_items``, ``by_people`` (a standing grade by
    a person), ``by_import`` (a standing imported grade), ``import_only`` (imported and no
    person's), ``unjudged``."""
    row = store.read_one(
        "WITH g AS (SELECT query_id, doc_id, start, \"end\", "
        f"bool_or({IMPORTED_ACTOR_SQL}) AS imp, bool_or(NOT {IMPORTED_ACTOR_SQL}) AS ppl "
        "FROM grade_state WHERE op = 'grade' GROUP BY query_id, doc_id, start, \"end\") "
        "SELECT count(*), count(*) FILTER (WHERE g.ppl), count(*) FILTER (WHERE g.imp), "
        "count(*) FILTER (WHERE g.imp AND NOT g.ppl), count(*) FILTER (WHERE g.query_id IS NULL) "
        "FROM pool_items p LEFT JOIN g USING (query_id, doc_id, start, \"end\")") or (0, 0, 0, 0, 0)
    keys = ("pool_items", "by_people", "by_import", "import_only", "unjudged")
    return {k: int(v or 0) for k, v in zip(keys, row)}
