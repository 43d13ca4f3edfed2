"""System runs and the judging pool (METHODOLOGY §3.6: pool across systems, not one).

Runs come as TREC files (document ids: the passage is the whole document) or JSONL passage
runs whose texts are placed on the corpus with the quote resolver, so every result is a
span ``(doc_id, start, end)`` and a judgment survives any re-chunking. An import is
validated whole before anything is written. A pool is the union of every chosen run's
top-k per query, de-duplicated by span; extending it with a new run adds only what is
not there yet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from golden_store import textin
from golden_store.errors import NotFoundError, ValidationError
from golden_store.jsonl import iter_objects
from golden_store.resolver import CorpusIndex, SpanResolver
from golden_store.scoring.trec import _line_number, read_run
from golden_store.store import Store, utcnow
from golden_store.system_names import check_system_name
from golden_store.textin import shown

FORMATS = ("trec", "jsonl")
_MAX_PROBLEMS = 50


@dataclass
class ParsedRun:
    system: str
    fmt: str
    source_name: str
    source_sha256: str
    rows: pd.DataFrame  # query_id, rank, score, doc_id, start, end, match_kind
    unplaced: list[str] = field(default_factory=list)


def _known(store: Store) -> tuple[set[str], dict[str, int]]:
    queries = {r[0] for r in store.read("SELECT query_id FROM queries")}
    docs = dict(store.read("SELECT doc_id, length(raw_text) FROM documents"))
    return queries, docs


def parse_run(store: Store, path: str | Path, system: str, fmt: str, index: CorpusIndex | None = None,
              progress: Callable[[int, int], None] | None = None) -> ParsedRun:
    """Read and validate a run file against the store; raise one ValidationError listing
    every unknown query, unknown document and passage that cannot be placed.

    The file's text follows the importers' one rule (golden_store.textin). A JSONL run is
    checked whole in a first, cheap pass (syntax, fields, numbers, known ids) before any
    passage is placed on the corpus, so a bad last line is refused at once."""
    p = Path(path)
    if fmt not in FORMATS:
        raise ValidationError(f"Unknown run format {shown(fmt)}; use trec or jsonl.")
    check_system_name(system)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ValidationError(f"{p}: no such file.") from None
    except OSError as exc:
        raise ValidationError(f"{p}: cannot be read ({exc.strerror or exc.__class__.__name__}).") from None
    sha = hashlib.sha256(data).hexdigest()
    text = textin.decode(p, data)
    queries, docs = _known(store)
    problems: list[str] = []
    if fmt == "trec":
        df = read_run(p)
        df = df.assign(_line=range(len(df)))
        unknown_q = sorted(set(df["query_id"]) - queries)
        unknown_d = sorted(set(df["doc_id"]) - set(docs))
        first_row = lambda col, v: int(df.loc[df[col] == v, "_line"].iloc[0])  # noqa: E731
        problems += [f"{p} line {_line_number(p, first_row('query_id', q))}: unknown query id {shown(q)} "
                     f"(not in the store's queries)" for q in unknown_q[:20]]
        problems += [f"{p} line {_line_number(p, first_row('doc_id', d))}: unknown doc id {shown(d)} "
                     "(not in the corpus)" for d in unknown_d[:20]]
        if problems:
            raise ValidationError(f"Run import refused: {len(unknown_q)} unknown query id(s), {len(unknown_d)} "
                                  f"unknown doc id(s); nothing was imported.", problems)
        df = df.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
        df["rank"] = df.groupby("query_id").cumcount() + 1
        rows = pd.DataFrame({"query_id": df["query_id"], "rank": df["rank"], "score": df["score"],
                             "doc_id": df["doc_id"], "start": 0, "end": df["doc_id"].map(docs),
                             "match_kind": "document"})
        return ParsedRun(system, fmt, p.name, sha, rows.reset_index(drop=True))
    # JSONL passage run. First pass: everything but placing passages (cheap, streaming).
    items = []
    for lineno, obj in iter_objects(str(p), text, problems):
        where = f"{p} line {lineno}"
        qid, doc, passage = obj.get("query_id"), obj.get("doc_id"), obj.get("text")
        score, rank = obj.get("score"), obj.get("rank")
        if not isinstance(qid, str) or qid not in queries:
            problems.append(f"{where}: unknown query id {shown(qid)}")
        elif not isinstance(doc, str) or doc not in docs:
            problems.append(f"{where}: unknown doc id {shown(doc)}")
        elif not isinstance(passage, str) or not passage.strip():
            problems.append(f"{where}: field 'text' is missing or empty")
        elif score is not None and not textin.finite(score):
            problems.append(f"{where}: 'score' must be a finite number, got {shown(score)}")
        elif rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            problems.append(f"{where}: 'rank' must be a positive integer, got {shown(rank)}")
        elif score is None and rank is None:
            problems.append(f"{where}: give a numeric 'score' or an integer 'rank'")
        else:
            items.append((lineno, qid, doc, passage, score, rank))
    if not items and not problems:
        problems.append(f"{p}: the file has no results (a run needs at least one line)")
    if problems:
        raise ValidationError(f"Run import refused: {len(problems)} problem(s); nothing was imported.",
                              problems[:_MAX_PROBLEMS])
    if index is None:
        raise ValidationError("A passage run needs the corpus index.")
    # Second pass: place each passage on its document.
    resolver = SpanResolver(index)
    out = []
    for i, (lineno, qid, doc, passage, score, rank) in enumerate(items):
        if progress and i % 200 == 0:
            progress(i, len(items))
        res = resolver.resolve(passage, doc_id=doc)
        if not res.located:
            problems.append(f"{p} line {lineno}: the passage could not be placed in {shown(doc)} ({res.status}); "
                            f"is it from another version of the document?")
            continue
        b = res.best
        out.append((qid, rank, float(score) if score is not None else None, doc, b.start, b.end, res.status,
                    lineno))
    if progress:
        progress(len(items), len(items))
    if problems:
        raise ValidationError(f"Run import refused: {len(problems)} problem(s); nothing was imported.",
                              problems[:_MAX_PROBLEMS])
    df = pd.DataFrame(out, columns=["query_id", "rank", "score", "doc_id", "start", "end", "match_kind", "_line"])
    if df["rank"].notna().all():
        df = df.sort_values(["query_id", "rank"], kind="stable")
    else:
        df = df.sort_values(["query_id", "score", "_line"], ascending=[True, False, True], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return ParsedRun(system, fmt, p.name, sha, df.drop(columns="_line").reset_index(drop=True))


def store_run(store: Store, run: ParsedRun, *, actor: str, replace: bool = False) -> int:
    """Write a parsed run in one transaction. An existing system name is refused unless
    ``replace`` (its old results are then removed; pool items stay, with their judgments)."""

    def tx(cur: duckdb.DuckDBPyConnection) -> int:
        if cur.execute("SELECT 1 FROM runs WHERE system = ?", [run.system]).fetchone():
            if not replace:
                raise ValidationError(f"A run named {run.system!r} exists; pick another --system or pass --replace.")
            cur.execute("DELETE FROM run_results WHERE system = ?", [run.system])
            cur.execute("DELETE FROM runs WHERE system = ?", [run.system])
        cur.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [run.system, run.fmt, run.source_name, run.source_sha256, len(run.rows), utcnow(), actor])
        frame = run.rows.assign(system=run.system)[["system", "query_id", "rank", "score", "doc_id", "start", "end",
                                                    "match_kind"]]
        cur.register("_rr", frame)
        cur.execute("INSERT INTO run_results SELECT * FROM _rr")
        cur.unregister("_rr")
        return len(frame)

    return store.write(tx)


def list_runs(store: Store) -> pd.DataFrame:
    return store.df("SELECT system, format, source_name, n_results, imported_at, imported_by FROM runs ORDER BY system")


@dataclass
class PoolReport:
    queries: int
    pool_size: int
    new_items: int
    new_unjudged: int
    per_run: dict[str, dict[str, float]]

    def as_dict(self) -> dict:
        return {"queries": self.queries, "pool_size": self.pool_size, "new_items": self.new_items,
                "new_unjudged": self.new_unjudged, "per_run": self.per_run}


def build_pool(store: Store, depth: int, *, systems: Sequence[str] | None = None, actor: str) -> PoolReport:
    """Add the union of the chosen runs' top-``depth`` per query to the pool (one
    transaction); report the pool and, per run, judged@depth (mean over its queries of
    the share of its top-``depth`` that carries at least one grade)."""
    if depth < 1:
        raise ValidationError("--depth must be at least 1.")
    known = [r[0] for r in store.read("SELECT system FROM runs ORDER BY system")]
    chosen = list(systems) if systems else known
    missing = sorted(set(chosen) - set(known))
    if missing:
        raise NotFoundError(f"No imported run named {', '.join(map(repr, missing))}; known: {', '.join(known) or 'none'}.")
    if not chosen:
        raise ValidationError("No runs imported yet: golden runs import FILE --system NAME first.")
    now = utcnow()

    def tx(cur: duckdb.DuckDBPyConnection) -> PoolReport:
        cur.execute("CREATE TEMP TABLE _top AS SELECT system, query_id, doc_id, start, \"end\", rank "
                    "FROM run_results WHERE rank <= ? AND system IN (SELECT unnest(?))", [depth, chosen])
        try:
            new_items = cur.execute(
                "INSERT INTO pool_items SELECT DISTINCT t.query_id, t.doc_id, t.start, t.\"end\", ?, ?, ? FROM _top t "
                "ANTI JOIN pool_items p USING (query_id, doc_id, start, \"end\") RETURNING query_id, doc_id, start, \"end\"",
                [depth, now, actor]).fetchall()
            cur.execute("INSERT INTO pool_sources SELECT query_id, doc_id, start, \"end\", system, min(rank) FROM _top "
                        "GROUP BY ALL ON CONFLICT DO NOTHING")
            judged = {tuple(r) for r in cur.execute(
                "SELECT DISTINCT query_id, doc_id, start, \"end\" FROM current_grades").fetchall()}
            new_unjudged = sum(1 for it in new_items if tuple(it) not in judged)
            per_run = {}
            for system, value in cur.execute(
                "SELECT t.system, avg(j) FROM (SELECT system, query_id, avg(CASE WHEN g.query_id IS NULL THEN 0.0 "
                "ELSE 1.0 END) AS j FROM _top t LEFT JOIN (SELECT DISTINCT query_id, doc_id, start, \"end\" "
                "FROM current_grades) g USING (query_id, doc_id, start, \"end\") GROUP BY system, query_id) t "
                "GROUP BY t.system ORDER BY 1").fetchall():
                per_run[system] = {"judged_at_k": float(value), "k": depth}
            queries, size = cur.execute("SELECT count(DISTINCT query_id), count(*) FROM pool_items").fetchone()
        finally:
            cur.execute("DROP TABLE _top")
        return PoolReport(int(queries), int(size), len(new_items), new_unjudged, per_run)

    return store.write(tx)


def pool_status(store: Store, *, k: int = 10, threshold: float = 0.8) -> dict:
    """Coverage of every imported run by the judgments (METHODOLOGY §3.6): judged@10 and
    judged@k per run, the queries below ``threshold`` flagged, and Bpref beside AP (both
    grade >= 2): when AP sits far below Bpref, unjudged passages are dragging the run down
    (pooling bias), not bad retrieval."""
    from golden_store.scoring.trec import evaluate_trec

    grades = store.df("SELECT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, grade FROM final_grades")
    judged_any = store.df("SELECT DISTINCT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, 0 AS grade "
                          "FROM current_grades")
    out: dict = {"k": k, "threshold": threshold, "runs": {}}
    systems = [r[0] for r in store.read("SELECT system FROM runs ORDER BY system")]
    for system in systems:
        run = store.df("SELECT query_id, doc_id || ':' || start || '-' || \"end\" AS doc_id, -rank AS score "
                       "FROM run_results WHERE system = ?", [system])
        queries = sorted(set(run["query_id"]))
        # judged@ uses "has any grade"; every query of the run is evaluated (a dummy 0 keeps unjudged ones in)
        anyq = pd.concat([judged_any, pd.DataFrame({"query_id": queries, "doc_id": "__none__", "grade": 0})])
        cov = evaluate_trec(anyq, run, ["Judged@10", f"Judged@{k}"] if k != 10 else ["Judged@10"])
        low = sorted(cov.per_query.index[cov.per_query["Judged@10"] < threshold])
        entry = {"queries": len(queries), "judged_at_10": cov.mean["Judged@10"],
                 f"judged_at_{k}": cov.mean[f"Judged@{k}"], "queries_below_threshold": len(low),
                 "below_threshold": low[:50]}
        if len(grades):
            rel = evaluate_trec(grades, run, ["AP(rel=2)", "Bpref(rel=2)"])
            entry["ap"] = rel.mean["AP(rel=2)"]
            entry["bpref"] = rel.mean["Bpref(rel=2)"]
        out["runs"][system] = entry
    return out
