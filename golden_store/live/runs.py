"""System runs: importing a run file, storing it, retiring and restoring it.

Runs come as TREC files (document ids: the passage is the whole document) or JSONL passage
runs whose texts are placed on the corpus with the quote resolver, so every result is a
span ``(doc_id, start, end)`` and a judgment survives any re-chunking. An import is
validated whole before anything is written, and a refusal lists every problem of the file
at once (bad lines, unknown query and doc ids named with their lines); results for query ids
the store does not know, or doc ids the corpus does not have, are refused, or left out and
counted when asked (``skip_unknown``, ``skip_unknown_docs``). The format is told from the
file's content when not given. The judging pool built from the runs is
:mod:`golden_store.live.pool`.

A run can be retired (an event, undone by restoring it): it leaves new pools and the
coverage lists, while its results and the pool items it contributed stay recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from golden_store.db.cursor import Cursor
import numpy as np
import pandas as pd

from golden_store.core import textin
from golden_store.core.errors import NotFoundError, OptionRequiredError, ValidationError
from golden_store.core.system_names import check_system_name
from golden_store.core.textin import shown
from golden_store.corpus.passage_runs import SKIP_ADVICE, SKIP_BOTH_ADVICE, SKIP_DOCS_ADVICE, read_passages
from golden_store.corpus.resolver import CorpusIndex, IndexedResolver, SpanResolver
from golden_store.db.store import Store, utcnow
from golden_store.scoring.trec import RunLines, read_run_lines

FORMATS = ("trec", "jsonl")


@dataclass
class ParsedRun:
    system: str
    fmt: str
    source_name: str
    source_sha256: str
    rows: pd.DataFrame  # query_id, rank, score, doc_id, start, end, match_kind
    unplaced: list[str] = field(default_factory=list)
    skipped_lines: int = 0  # results left out for unknown query ids (skip_unknown)
    skipped_queries: list[str] = field(default_factory=list)
    skipped_doc_lines: int = 0  # results left out for unknown doc ids (skip_unknown_docs)
    skipped_docs: list[str] = field(default_factory=list)


def detect_format(name: str, data: bytes) -> str:
    """``trec`` or ``jsonl``, told from the first line that is not blank or a comment: a JSON
    object is a passage run, six or more fields a TREC run line. Anything else is refused,
    naming the file and the line."""
    if not data.strip():
        raise ValidationError(f"{name}: the file is empty.")
    head = data[:65536]
    if len(data) > len(head) and b"\n" in head:
        head = head[:head.rfind(b"\n") + 1]  # whole lines only: no character cut in two
    text = textin.decode(name, head)  # the importers' one text rule: a UTF-16 file or a bad byte is named
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            return "jsonl"
        if len(line.split()) >= 6:
            return "trec"
        raise ValidationError(f"{name} line {lineno}: cannot tell the run's format: expected a JSON object (a JSONL "
                              f"passage run) or a TREC run line 'qid Q0 docid rank score tag', got {shown(line)}.")
    raise ValidationError(f"{name}: cannot tell the run's format: no data line in the first 64 KiB.")


def _renamed(exc: ValidationError, path: str, label: str) -> ValidationError:
    """``exc`` with the file's path replaced by the name a person knows it by (an upload's
    name, not the temporary copy's path)."""
    if path == label:
        return exc
    return ValidationError(exc.summary.replace(path, label), [x.replace(path, label) for x in exc.problems])


def _known(store: Store) -> tuple[set[str], dict[str, int]]:
    queries = {r[0] for r in store.read("SELECT query_id FROM queries")}
    docs = dict(store.read("SELECT doc_id, length(raw_text) FROM documents"))
    return queries, docs


def parse_run(store: Store, path: str | Path, system: str, fmt: str | None,
              index: CorpusIndex | IndexedResolver | None = None,
              progress: Callable[[int, int], None] | None = None, *, name: str | None = None,
              skip_unknown: bool = False, skip_unknown_docs: bool = False) -> ParsedRun:
    """Read and validate a run file against the store; raise one ValidationError listing
    every unknown query, unknown document and passage that cannot be placed.

    ``fmt`` None: told from the content (:func:`detect_format`). ``name``: what messages call
    the file (an upload's own name; default the path). ``skip_unknown``: results for query
    ids the store does not know are left out and counted (``skipped_lines``,
    ``skipped_queries``) instead of refusing the run; ``skip_unknown_docs`` the same for doc
    ids the corpus does not have (``skipped_doc_lines``, ``skipped_docs``).

    The file's text follows the importers' one rule (golden_store.core.textin). A JSONL run is
    checked whole in a first, cheap pass (syntax, fields, numbers, known ids) before any
    passage is placed on the corpus, so a bad last line is refused at once."""
    p = Path(path)
    label = name or str(p)
    if fmt is not None and fmt not in FORMATS:
        raise ValidationError(f"Unknown run format {shown(fmt)}; use trec or jsonl.")
    check_system_name(system)
    data = textin.read_file(p, label)
    if fmt is None:
        fmt = detect_format(label, data)
    sha = hashlib.sha256(data).hexdigest()
    text = textin.decode(label, data)
    queries, docs = _known(store)
    if fmt == "trec":
        return _parse_trec(p, label, system, sha, queries, docs, skip_unknown=skip_unknown,
                           skip_unknown_docs=skip_unknown_docs)
    # JSONL passage run: the one reader and placer (golden_store.corpus.passage_runs), shared with scoring
    resolver = None if index is None else index if isinstance(index, IndexedResolver) else SpanResolver(index)
    def raw_of(doc_id: str) -> str:  # a line with both offsets and text: the text must be what they cut
        row = store.read_one("SELECT raw_text FROM documents WHERE doc_id = ?", [doc_id])
        if row is None:  # a document removed since the run's ids were checked
            raise ValidationError(f"{label}: document {doc_id!r} is not in the corpus (any more); import it, or "
                                  f"leave its lines out of the run.")
        return str(row[0])

    got = read_passages(label, text, queries, docs, lambda: resolver, raw_of=raw_of, progress=progress,
                        skip_unknown=skip_unknown, skip_unknown_docs=skip_unknown_docs)
    return ParsedRun(system, fmt, Path(label).name, sha, got.rows, skipped_lines=got.skipped_lines,
                     skipped_queries=got.skipped_queries, skipped_doc_lines=got.skipped_doc_lines,
                     skipped_docs=got.skipped_docs)


# How many unknown ids of each kind a refused import names (with their lines); the rest are counted.
NAMED_IDS = 10


def _named_unknown(df: pd.DataFrame, col: str, ids: list[str], lines: RunLines, label: str, what: str,
                   where: str) -> list[str]:
    """One problem per unknown id (the first :data:`NAMED_IDS`), at the first line that
    names it (and how many more do), then a count of the rest."""
    out = []
    for v in ids[:NAMED_IDS]:
        rows = np.flatnonzero((df[col] == v).to_numpy())
        at = sorted(lines.line_of([int(df["_row"].iloc[r]) for r in rows[:4]]).values())
        also = ""
        if len(rows) > 1:
            more = f", ... ({len(rows)} lines in all)" if len(rows) > 4 else ""
            also = f"; also on line {', '.join(map(str, at[1:]))}{more}"
        out.append(f"{label} line {at[0]}: unknown {what} {shown(v)} (not in {where}{also})")
    if len(ids) > NAMED_IDS:
        out.append(f"{label}: ... and {len(ids) - NAMED_IDS} more unknown {what}(s)")
    return out


def _repeated_documents(df: pd.DataFrame, lines: RunLines, label: str) -> list[str]:
    """One problem per line that lists a document its query already listed (the first
    :data:`NAMED_IDS`, then a count): a run ranks each document once per query, ``golden
    score`` and trec_eval refuse such a run, and stored it would put one document at two
    ranks in the pool and its coverage (probe U4)."""
    again = df.duplicated(["query_id", "doc_id"], keep=False).to_numpy()
    if not again.any():
        return []
    out: list[str] = []
    dup = df[again]
    for (q, d), g in dup.groupby(["query_id", "doc_id"], sort=True):
        at = sorted(lines.line_of([int(r) for r in g["_row"]]).values())
        out.append(f"{label} line {at[1]}: query {shown(q)} lists document {shown(d)} again (first on line {at[0]}); "
                   f"a run ranks each document once per query (golden score and trec_eval refuse it too)")
        if len(out) == NAMED_IDS:
            break
    n_pairs = int(dup.groupby(["query_id", "doc_id"]).ngroups)
    if n_pairs > NAMED_IDS:
        out.append(f"{label}: ... and {n_pairs - NAMED_IDS} more repeated (query, document) pair(s)")
    return out


def _some(ids: list[str]) -> str:
    """A few ids for a one-line summary."""
    return ", ".join(shown(i) for i in ids[:5]) + (", ..." if len(ids) > 5 else "")


def _parse_trec(p: Path, label: str, system: str, sha: str, queries: set[str], docs: dict[str, int], *,
                skip_unknown: bool, skip_unknown_docs: bool) -> ParsedRun:
    """A TREC run checked whole (issue 29, M9): every bad line, every unknown query id and
    every unknown doc id of the file is reported in one refusal (the ids named, with their
    lines), as the corpus importer does; the options leave unknown ids' results out instead."""
    try:
        lines = read_run_lines(p, label)
    except ValidationError as exc:
        raise _renamed(exc, str(p), label) from None
    df = lines.frame.assign(_row=range(len(lines.frame)))
    unknown_q = sorted(set(df["query_id"]) - queries)
    unknown_d = sorted(set(df["doc_id"]) - set(docs))
    skipped_lines = skipped_doc_lines = 0
    skipped_q: list[str] = []
    skipped_d: list[str] = []
    if skip_unknown and unknown_q:
        drop = df["query_id"].isin(unknown_q).to_numpy()
        skipped_lines, skipped_q, unknown_q = int(drop.sum()), unknown_q, []
        df = df[~drop]
    if skip_unknown_docs and unknown_d:
        drop = (~df["doc_id"].isin(docs.keys())).to_numpy()
        skipped_d = sorted(set(df.loc[drop, "doc_id"]))
        skipped_doc_lines, unknown_d = int(drop.sum()), []
        df = df[~drop]
    problems = list(lines.bad_lines)
    problems += _named_unknown(df, "query_id", unknown_q, lines, label, "query id", "the store's queries")
    problems += _named_unknown(df, "doc_id", unknown_d, lines, label, "doc id", "the corpus")
    repeats = _repeated_documents(df, lines, label)
    problems += repeats
    if problems:
        parts = ([f"{len(lines.bad_lines)} bad line(s)"] if lines.bad_lines else []) + \
                ([f"{len(unknown_q)} unknown query id(s) ({_some(unknown_q)})"] if unknown_q else []) + \
                ([f"{len(unknown_d)} unknown doc id(s) ({_some(unknown_d)})"] if unknown_d else []) + \
                ([f"a document listed twice for one query ({len(repeats)} line(s) named)"] if repeats else [])
        reason = f"Run import refused: {'; '.join(parts)}; nothing was imported."
        if not lines.bad_lines and not repeats:  # only unknown ids: the options would let the rest through
            opts = (["--skip-unknown"] if unknown_q else []) + (["--skip-unknown-docs"] if unknown_d else [])
            advices: dict[tuple[str, ...], str] = {("--skip-unknown",): SKIP_ADVICE,
                                                  ("--skip-unknown-docs",): SKIP_DOCS_ADVICE}
            advice = advices.get(tuple(opts), SKIP_BOTH_ADVICE)
            raise OptionRequiredError(reason, option=" ".join(opts), advice=advice, problems=problems)
        raise ValidationError(reason, problems)
    if df.empty:
        what = " or ".join((["a query id the store does not know"] if skipped_lines else []) +
                           (["a doc id the corpus does not have"] if skipped_doc_lines else []))
        raise ValidationError(f"{label}: every result names {what} ({skipped_lines + skipped_doc_lines} line(s) "
                              "left out); nothing to import.")
    df = df.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    rows = pd.DataFrame({"query_id": df["query_id"], "rank": df["rank"], "score": df["score"],
                         "doc_id": df["doc_id"], "start": 0, "end": df["doc_id"].map(docs),
                         "match_kind": "document"})
    return ParsedRun(system, "trec", Path(label).name, sha, rows.reset_index(drop=True),
                     skipped_lines=skipped_lines, skipped_queries=skipped_q, skipped_doc_lines=skipped_doc_lines,
                     skipped_docs=skipped_d)


def store_run(store: Store, run: ParsedRun, *, actor: str, replace: bool = False) -> int:
    """Write a parsed run in one transaction. An existing system name is refused unless
    ``replace`` (its old results are then removed; pool items stay, with their judgments)."""

    def tx(cur: Cursor) -> int:
        if cur.execute("SELECT 1 FROM runs WHERE system = ?", [run.system]).fetchone():
            if cur.execute("SELECT 1 FROM retired_runs WHERE system = ?", [run.system]).fetchone():
                raise ValidationError(f"A run named {run.system!r} was retired and is kept in the history; import "
                                      "under another system name, or restore the retired run first.")
            if not replace:
                raise OptionRequiredError(f"A run named {run.system!r} exists; pick another system name or "
                                          "replace it.", option="--replace", advice="Pass --replace to replace it.")
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
    """Every imported run, retired ones included (status, and who retired it, when, why)."""
    return store.df(
        "SELECT r.system, CASE WHEN x.system IS NULL THEN 'active' ELSE 'retired' END AS status, r.format, "
        "r.source_name, r.n_results, r.imported_at, r.imported_by, x.retired_at, x.retired_by, x.reason "
        "FROM runs r LEFT JOIN retired_runs x USING (system) ORDER BY r.system")


def active_systems(store: Store) -> list[str]:
    """Imported runs that are not retired, by name."""
    return [r[0] for r in store.read("SELECT system FROM runs ANTI JOIN retired_runs USING (system) ORDER BY system")]


def set_retired(store: Store, system: str, retired: bool, *, actor: str, reason: str | None = None) -> None:
    """Retire a run (``retired``) or restore it: an appended event; its results, the pool
    items it contributed and their grades stay. Retiring a retired run (or restoring an
    active one) is refused, so the history holds only real changes."""
    reason = (reason or "").strip() or None

    def tx(cur: Cursor) -> None:
        known = [r[0] for r in cur.execute("SELECT system FROM runs ORDER BY system").fetchall()]
        if system not in known:
            raise NotFoundError(f"No imported run named {shown(system)}; known: {', '.join(known) or 'none'}.")
        is_retired = cur.execute("SELECT 1 FROM retired_runs WHERE system = ?", [system]).fetchone() is not None
        if retired and is_retired:
            raise ValidationError(f"Run {system!r} is already retired.")
        if not retired and not is_retired:
            raise ValidationError(f"Run {system!r} is not retired: nothing to restore.")
        if retired and not reason:
            raise ValidationError("Say why the run is retired (the reason is kept in the history).")
        cur.execute("INSERT INTO run_events (system, op, reason, actor, created_at) VALUES (?, ?, ?, ?, ?)",
                    [system, "retire" if retired else "restore", reason, actor, utcnow()])

    store.write(tx)


def run_history(store: Store) -> pd.DataFrame:
    """Every retire and restore, oldest first."""
    return store.df("SELECT system, op, reason, actor, created_at FROM run_events ORDER BY event_id")
