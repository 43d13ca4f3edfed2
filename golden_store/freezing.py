"""Freezing: the live store's current state, read in one transaction, written out as a frozen version.

This is the database side of the frozen-version contract: the SELECTs that make each file,
the refusal while labels no longer sit on the corpus (:func:`broken_labels`), and the
manifest facts only the store knows (counts, annotators, agreement, rubric, provenance).
The on-disk format it writes (layout, manifest, digests, the temporary folder renamed into
place: :mod:`golden_store.versions.writer`) and everything that reads a version (load, verify,
diff) live in :mod:`golden_store.versions`, which never imports the database; scorers need only
that side.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import duckdb

from golden_store.db.cursor import Cursor
from golden_store.live import agreement_bar, calibrations
from golden_store.versions.chunk_labels import parse_hit_rule
from golden_store.core.digests import corpus_digest
from golden_store.core import disk
from golden_store.core.errors import DiskFullError, ValidationError, VersionExistsError
from golden_store.versions.qrels import EVIDENCE_GRADE
from golden_store.core.judgment_formats import IMPORTED_ACTOR_SQL
from golden_store.db.schema import SCHEMA_VERSION
from golden_store.live.agreement_data import aggregates_tx
from golden_store.scoring import agreement_counts
from golden_store.core.paths import local_versions_dir
from golden_store.db.store import Store, utcnow, versions_dir_for
from golden_store.versions import writer
from golden_store.versions.folders import new_temp_folder, sweep_temp_folders
from golden_store.versions.format import (
    ANSWER_CRITERIA_FILE,
    DATA_FILES,
    DEFAULT_HIT_RULE,
    JUDGE_LABELS_FILE,
    QRELS_FILE,
    REFERENCE_ANSWERS_FILE,
    deep_freeze,
    short_repr,
    span_problem,
    validate_name,
)

DOCUMENTS_FILE = "documents.parquet"
POOL_GRADED_DEFINITION = ("per active run: the share of its top 10 results (pooled passages) that carry a human "
                          "grade, mean over its queries; evidence spans do not count (a scoring's Judged@10 does)")

# Each frozen table: file name (golden_store.versions.DATA_FILES) -> SELECT over the live store
# (ORDER BY makes files reproducible).
_TABLE_SQL: dict[str, str] = {
    "documents.parquet": (
        "SELECT doc_id, title, source_format, raw_text, canonical_text, raw_sha256, canonical_sha256 "
        "FROM documents ORDER BY doc_id"
    ),
    "queries.parquet": (
        "SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, "
        "generator_model, generator_prompt_sha, revision, tier FROM queries ORDER BY query_id"
    ),
    "spans.parquet": (
        "SELECT e.query_id, evidence_id, quote, doc_id, start, \"end\", canonical_start, canonical_end, "
        "match_kind, score, actor, created_at, rubric_version "
        "FROM frozen_evidence e SEMI JOIN queries q USING (query_id) "
        "ORDER BY e.query_id, evidence_id"
    ),
    "judgments.parquet": (
        "SELECT j.query_id, doc_id, start, \"end\", CAST(grade AS INTEGER) AS grade, basis, decided_by, "
        "rubric_version FROM final_grades j SEMI JOIN queries q USING (query_id) "
        "ORDER BY j.query_id, doc_id, start, \"end\""
    ),
    "nuggets.parquet": (
        "SELECT n.query_id, nugget_id, text, importance, position, quote, doc_id, start, \"end\", "
        "actor, model, prompt_sha FROM current_nuggets n SEMI JOIN queries q USING (query_id) "
        "WHERE approved ORDER BY n.query_id, position, nugget_id"
    ),
}
assert tuple(_TABLE_SQL) == DATA_FILES, "every data file of the format needs its SELECT"

# The judge's labels (issue 27): each pool passage whose latest judge decision is ``labeled``
# (route judge or sample), of the questions frozen, on the document text the judge read (a
# label on an earlier text of its document, or off its document, is left out and counted in
# the manifest: ``judge_labels.left_out_stale``). Never a person's grade: qrels.parquet and
# judgments.parquet do not see these rows.
_JUDGE_LABELS_FROM = (
    "FROM judge_item_state s JOIN judge_label_events e ON e.event_id = s.event_id "
    "WHERE s.outcome = 'labeled' AND s.query_id IN (SELECT query_id FROM queries)"
)
_JUDGE_LABEL_ON_TEXT = (
    "EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = s.doc_id AND (e.doc_sha256 IS NULL OR "
    "e.doc_sha256 = d.canonical_sha256) AND 0 <= s.start AND s.start < s.\"end\" AND s.\"end\" <= length(d.raw_text))"
)
_JUDGE_LABELS_SQL = (
    "SELECT s.query_id, s.doc_id, s.start, s.\"end\", CAST(s.grade AS INTEGER) AS grade, e.p_fail, s.route, "
    "e.model, e.rubric_sha, s.calibration_id, s.job_id, e.created_at "
    f"{_JUDGE_LABELS_FROM} AND {_JUDGE_LABEL_ON_TEXT} "
    "ORDER BY s.query_id, s.doc_id, s.start, s.\"end\""
)

# The answer layer's labels (issue 40): a live question's reference answer when its latest
# revision is approved (an unapproved edit leaves the question without one, counted in the
# manifest), and the current criteria of live questions and of strata.
_REFERENCE_ANSWERS_SQL = (
    "SELECT r.query_id, r.revision, r.short_answer, r.full_answer, r.evidence, r.source, r.actor AS author, "
    "r.created_at AS written_at FROM current_reference_answers r SEMI JOIN queries q USING (query_id) "
    "WHERE r.approved ORDER BY r.query_id"
)
_ANSWER_CRITERIA_SQL = (
    "SELECT scope, scope_id, criterion_id, text, example, weight, CAST(scale_max AS INTEGER) AS scale_max, "
    "CAST(position AS INTEGER) AS position FROM current_answer_criteria c "
    "WHERE scope = 'stratum' OR scope_id IN (SELECT query_id FROM queries) "
    "ORDER BY scope, scope_id, position, criterion_id"
)


def write_parquet(cur: Any, sql: str, params: list[Any], path: Path, options: str) -> None:
    """Write ``sql``'s rows to the Parquet file ``path`` through an in-process DuckDB that
    reads them as an Arrow stream, whatever engine holds the store.

    Why not ``COPY (sql) TO`` on the store: a version's files are hashed byte for byte
    (``data_digest``), and DuckDB's writer marks a column REQUIRED when the statistics of the
    tables under the query say it holds no NULL, so the bytes of identical content depended
    on unrelated rows (a nugget's ``text`` is NULL in its approval events) and on the engine.
    From an Arrow stream every column is OPTIONAL and the writer sees the same rows and
    types from DuckDB and from PostgreSQL (``golden_store.db.postgres``), so equal content
    gives equal bytes on both. One thread: the row groups do not depend on the machine."""
    if hasattr(cur, "copy_arrow"):  # PostgreSQL: the rows as CSV parsed by pyarrow, not Python tuples
        import pyarrow as pa

        table = cur.copy_arrow(sql, params)
        _copy_stream(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), path, options)
        return
    with warnings.catch_warnings():  # DuckDB notes the reader of a DB-API result copies the rows
        warnings.simplefilter("ignore", UserWarning)
        reader = cur.execute(sql, params).to_arrow_reader()
    _copy_stream(reader, path, options)


def _copy_stream(reader: Any, path: Path, options: str) -> None:
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("_rows", reader)
        target = str(path).replace("'", "''")
        con.execute(f"COPY (SELECT * FROM _rows) TO '{target}' {options}")
    finally:
        con.close()


# documents.parquet is read in doc_id ranges of about this many characters of text ...
_DOCUMENT_CHUNK_CHARS = 64_000_000
# ... and written in row groups of this many documents (the writer holds one row group).
_DOCUMENT_ROW_GROUP = 4_096


def write_documents(cur: Any, path: Path) -> None:
    """documents.parquet: every document in doc_id order, read a range of ids at a time.

    Why not one ``SELECT ... ORDER BY doc_id``: DuckDB sorts whole documents in memory and
    cannot spill them (1 GiB of corpus: a 7 GB freeze, and out of memory under a 1.5 GB
    limit). The ids and lengths alone sort in a few MB; each range of ids holding about
    ``_DOCUMENT_CHUNK_CHARS`` of text is then fetched with ``BETWEEN`` (a scan of the id
    column, the text read only where it matches), and the in-process writer keeps one row
    group of ``_DOCUMENT_ROW_GROUP`` documents instead of DuckDB's default 122,880."""
    import pyarrow as pa

    sql = _TABLE_SQL[DOCUMENTS_FILE].replace("FROM documents ORDER BY doc_id",
                                              "FROM documents WHERE doc_id BETWEEN ? AND ? ORDER BY doc_id")
    sizes = cur.execute("SELECT doc_id, length(raw_text) + length(canonical_text) FROM documents "
                        "ORDER BY doc_id").fetchall()
    ranges: list[tuple[str, str]] = []
    start, chars = 0, 0
    for k, (_, n) in enumerate(sizes):
        chars += int(n)
        if chars >= _DOCUMENT_CHUNK_CHARS or k == len(sizes) - 1:
            ranges.append((sizes[start][0], sizes[k][0]))
            start, chars = k + 1, 0
    del sizes

    def chunk(lo: str, hi: str) -> list[Any]:
        with warnings.catch_warnings():  # DuckDB notes the reader of a DB-API result copies the rows
            warnings.simplefilter("ignore", UserWarning)
            return list(cur.execute(sql, [lo, hi]).to_arrow_reader())

    first = chunk(*ranges[0]) if ranges else []
    schema = first[0].schema if first else _empty_schema(cur, sql)

    def batches():
        yield from first
        for lo, hi in ranges[1:]:
            yield from chunk(lo, hi)

    _copy_stream(pa.RecordBatchReader.from_batches(schema, batches()), path,
                 f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {_DOCUMENT_ROW_GROUP})")


def _empty_schema(cur: Any, sql: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return cur.execute(sql, ["", ""]).to_arrow_reader().schema


def whole_table_plans(store: Store, cur: Any) -> None:
    """On PostgreSQL, no nested-loop joins for the rest of this transaction (``SET LOCAL``).

    Why: the latest-row views (``queries``, ``current_evidence``, ...) filter on
    ``row_number() ... = 1``, a column PostgreSQL has no statistics for, so it estimates 0.5%
    of the rows (53 live queries out of 10,000) and joins whole tables with nested loops over
    hash aggregates: the freeze's label check at 10,000 queries ran for minutes instead of a
    second (scripts/bench_team_store.py). Freezing reads every table whole, where hash and
    merge joins are the right plans whatever the estimates. DuckDB plans without this."""
    if store.engine == "postgresql":
        cur.execute_native("SET LOCAL enable_nestloop = off")


# Where a person fixes what refuses a freeze: the app's page listing every conflict with its
# fixes (app_pages/freeze_conflicts.py, in the Review menu), named in each refusal so the CLI,
# the API and the Versions page all point to it (issue 37 item 9).
CONFLICTS_PAGE = "Freeze conflicts page (Review → Freeze conflicts in the app)"

# The kinds of :class:`Blocker`, in the order a freeze checks them.
BROKEN_QUOTE = "broken_quote"              # a quote no longer on the corpus
GRADE_OFF_DOCUMENT = "grade_off_document"  # a final grade on a passage its document no longer holds
STALE_GRADE = "stale_grade"                # a grade or a lead's decision made on an earlier text
ANSWERED_UNANSWERABLE = "answered_unanswerable"  # an unanswerable question with a final grade of 2+
QUOTED_UNANSWERABLE = "quoted_unanswerable"      # an unanswerable question with an evidence quote
NO_QUERIES = "no_queries"
NO_DOCUMENTS = "no_documents"
BROKEN_KINDS = (BROKEN_QUOTE, GRADE_OFF_DOCUMENT, STALE_GRADE)
UNANSWERABLE_KINDS = (ANSWERED_UNANSWERABLE, QUOTED_UNANSWERABLE)


@dataclass(frozen=True)
class Blocker:
    """One thing that refuses a freeze now, with what names it: the question, the passage or
    the quote, and (for a grade) who it is by. ``sentence`` is the problem as the refusal words
    it. Made by :func:`freeze_blockers`, which is the freeze's own check."""

    kind: str
    sentence: str
    query_id: str | None = None
    query_text: str | None = None
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    evidence_id: str | None = None
    quote: str | None = None
    grade: int | None = None  # the final grade (answered_unanswerable; qrels' evidence grade for a quote)
    who: str | None = None    # the grade's author(s) or decider, the quote's author
    adjudication: bool = False  # stale_grade: the grade is a lead's decision


def broken_label_blockers(cur: Cursor, evidence_view: str = "frozen_evidence", *,
                          viewer: str | None = None) -> list[Blocker]:
    """:func:`broken_labels` as :class:`Blocker` records (same order, same sentences)."""
    if evidence_view not in ("frozen_evidence", "current_evidence"):
        raise ValueError(evidence_view)
    if viewer is not None and evidence_view != "current_evidence":
        raise ValueError("viewer applies to the live check (current_evidence) only")
    from golden_store.live.drift import stale_grades_tx

    problems: list[Blocker] = []
    blind = ("" if viewer is None else
             " AND (e.author = $viewer OR e.query_id NOT IN (SELECT query_id FROM unsettled_evidence_questions))")
    # Only the quotes that may have a problem come back (with their document's text): a quote
    # whose document is there, unchanged, holding the span, with the quote verbatim at its
    # offsets (most exact spans) is fine whatever Python would say, and shipping every
    # document's text to Python for it was most of Home's first render at team scale
    # (issue 19). ``length``/``substring`` count code points on both engines, as Python does.
    sure_fine = ("coalesce(d.raw_text IS NOT NULL AND NOT (e.doc_sha256 IS NOT NULL AND e.doc_sha256 <> "
                 "d.canonical_sha256) AND 0 <= e.start AND e.start < e.\"end\" AND e.\"end\" <= length(d.raw_text) "
                 "AND (e.match_kind IS NULL OR e.match_kind <> 'exact' "
                 "OR substring(d.raw_text, e.start + 1, e.\"end\" - e.start) = e.quote), FALSE)")
    ev = cur.execute(
        "SELECT e.query_id, e.evidence_id, e.doc_id, e.start, e.\"end\", e.quote, e.match_kind, "
        "e.doc_sha256 IS NOT NULL AND e.doc_sha256 <> d.canonical_sha256 AS stale, d.raw_text, q.text, e.author "
        f"FROM {evidence_view} e JOIN queries q USING (query_id) LEFT JOIN documents d USING (doc_id) "
        f"WHERE NOT {sure_fine}{blind}",
        {"viewer": viewer} if viewer is not None else None,
    ).fetchall()
    for qid, eid, doc, start, end, quote, kind, stale, raw, qtext, author in ev:
        where = f"query {qid} evidence {eid} ({short_repr(quote)})"
        if raw is None:
            sentence = f"{where}: document {doc!r} is not in the corpus"
        elif stale:
            sentence = (f"{where}: was placed on an earlier text of {doc!r} and could not be re-placed; "
                        f"edit or retract the quote")
        elif why := span_problem(raw, start, end, quote, kind):
            sentence = f"{where}: {why} in {doc!r}"
        else:
            continue
        problems.append(Blocker(BROKEN_QUOTE, sentence, qid, qtext, doc, start, end, eid, quote, EVIDENCE_GRADE,
                                author))
    own = ("" if viewer is None else
           " SEMI JOIN (SELECT query_id, doc_id, start, \"end\" FROM current_grades WHERE actor = $viewer) m "
           "USING (query_id, doc_id, start, \"end\")")
    # only the judgments off their document come back; each document's length is taken once
    rows = cur.execute(
        "SELECT j.query_id, j.doc_id, j.start, j.\"end\", d.n, q.text, CAST(j.grade AS INTEGER), j.decided_by "
        f"FROM final_grades j JOIN queries q USING (query_id){own} "
        "LEFT JOIN (SELECT doc_id, length(raw_text) AS n FROM documents) d USING (doc_id) "
        "WHERE d.n IS NULL OR NOT (0 <= j.start AND j.start < j.\"end\" AND j.\"end\" <= d.n)",
        {"viewer": viewer} if viewer is not None else None,
    ).fetchall()
    for qid, doc, start, end, n, qtext, grade, who in rows:
        if n is None:
            sentence = f"query {qid} judgment: document {doc!r} is not in the corpus"
        elif not 0 <= start < end <= n:
            sentence = f"query {qid} judgment: passage [{start}, {end}) is outside document {doc!r}"
        else:
            continue
        problems.append(Blocker(GRADE_OFF_DOCUMENT, sentence, qid, qtext, doc, start, end, grade=grade, who=who))
    for qid, doc, start, end, actor, qtext, decision in stale_grades_tx(cur):
        if viewer is not None and actor != viewer:
            continue
        problems.append(Blocker(
            STALE_GRADE, f"query {qid} judgment by {actor} of {doc}[{start}:{end}]: made on an earlier text of the "
                         f"document; re-judge the passage", qid, qtext, doc, start, end, who=actor,
            adjudication=bool(decision)))
    return problems


def broken_labels(cur: Cursor, evidence_view: str = "frozen_evidence", *,
                  viewer: str | None = None) -> list[str]:
    """Labels that no longer sit on the current corpus, one sentence each naming the query
    and the quote. Freezing refuses while any exist (among the quotes it would freeze); the
    live check looks at every current quote, unsettled evidence-round ones included.

    With ``viewer`` (an annotator's username) only problems about labels that person may see
    are listed: on an unsettled evidence-round question only their own quotes, and only
    grades they gave themselves; a colleague's quote text or grade is blind until a lead
    settles (issue 18). ``None`` lists everything (leads, engineers, freezing)."""
    return [b.sentence for b in broken_label_blockers(cur, evidence_view, viewer=viewer)]


# The lowest grade that says a passage answers its question (0-3: irrelevant / related but not
# answering / partly answers / fully answers; METHODOLOGY §3). A question marked unanswerable
# ("the corpus genuinely does not contain the answer", §3.4) may have related passages (grade
# 1: a near-miss negative discusses the topic but not the fact) but none that answers it.
ANSWERING_GRADE = 2
_NAMED_CONFLICTS = 10


def unanswerable_blockers(cur: Cursor) -> list[Blocker]:
    """Each answer an unanswerable question carries (a final human grade of
    :data:`ANSWERING_GRADE` or more, or an evidence quote), one :class:`Blocker` per passage
    or quote, by question then place."""
    rows = cur.execute(
        "SELECT q.query_id, q.text, x.doc_id, x.start, x.\"end\", x.grade, x.who, x.evidence_id, x.quote "
        "FROM queries q JOIN ("
        " SELECT query_id, doc_id, start, \"end\", CAST(grade AS INTEGER) AS grade, decided_by AS who,"
        " CAST(NULL AS VARCHAR) AS evidence_id, CAST(NULL AS VARCHAR) AS quote"
        " FROM final_grades WHERE grade >= ?"
        " UNION ALL SELECT query_id, doc_id, start, \"end\", CAST(? AS INTEGER) AS grade, actor AS who, evidence_id,"
        " quote FROM frozen_evidence) x USING (query_id) "
        "WHERE NOT q.answerable ORDER BY q.query_id, x.doc_id, x.start, x.\"end\", x.evidence_id NULLS FIRST",
        [ANSWERING_GRADE, EVIDENCE_GRADE]).fetchall()
    out = []
    for qid, text, doc, start, end, grade, who, eid, quote in rows:
        if eid is None:
            sentence = (f"query {qid} is marked unanswerable but passage {doc} [{start}, {end}) is graded {grade} "
                        f"(answers it) by {who}")
            out.append(Blocker(ANSWERED_UNANSWERABLE, sentence, qid, text, doc, start, end, grade=grade, who=who))
        else:
            sentence = (f"query {qid} is marked unanswerable but evidence {eid} ({short_repr(quote)}) in {doc} "
                        f"[{start}, {end}) quotes an answer, by {who}")
            out.append(Blocker(QUOTED_UNANSWERABLE, sentence, qid, text, doc, start, end, eid, quote, grade, who))
    return out


def unanswerable_sentences(blockers: list[Blocker]) -> list[str]:
    """One sentence per unanswerable question among ``blockers``, naming its passages and
    where to fix them."""
    by_q: dict[str, list[Blocker]] = {}
    for b in blockers:
        if b.kind in UNANSWERABLE_KINDS:
            by_q.setdefault(str(b.query_id), []).append(b)
    out = []
    for qid, hits in by_q.items():
        named = "; ".join(f"{b.doc_id} [{b.start}, {b.end}) grade {b.grade} by {b.who}"
                          for b in hits[:_NAMED_CONFLICTS])
        more = f"; and {len(hits) - _NAMED_CONFLICTS} more" if len(hits) > _NAMED_CONFLICTS else ""
        out.append(f"query {qid} ({short_repr(hits[0].query_text)}) is marked unanswerable but {len(hits)} passage(s) "
                   f"answer it: {named}{more}. Fix it on the {CONFLICTS_PAGE}: a lead re-grades each passage (1 = "
                   "related, not answering) or retracts it, or, if the corpus does answer the question, marks it "
                   "answerable with a reason")
    return out


def unanswerable_conflicts(cur: Cursor) -> list[str]:
    """Questions marked unanswerable (answerable = false) that carry an answer all the same:
    a final human grade of :data:`ANSWERING_GRADE` or more, or an evidence quote (qrels
    grade 3). One sentence per question naming the passages and what to do. Such a question
    would be scored in the negative stratum with relevant qrels, and abstention counted
    wrong for declining it (issue 29, M11); freezing refuses while any exist."""
    return unanswerable_sentences(unanswerable_blockers(cur))


def freeze_blockers(cur: Cursor) -> list[Blocker]:
    """Everything that refuses a freeze of the live store now, in the order the freeze checks
    it: labels off the corpus (:func:`broken_label_blockers` over the quotes a freeze would
    keep), answers to unanswerable questions (:func:`unanswerable_blockers`), then an empty
    store. :func:`freeze` refuses on exactly this list (:func:`refuse_on`), and the app's
    Freeze conflicts page lists it with each fix, so the two cannot disagree."""
    out = broken_label_blockers(cur) + unanswerable_blockers(cur)
    if cur.execute("SELECT count(*) FROM queries").fetchone()[0] == 0:
        out.append(Blocker(NO_QUERIES, "the store has no queries; import queries first (Queries page, or "
                                       "golden queries import)"))
    if cur.execute("SELECT count(*) FROM documents").fetchone()[0] == 0:
        out.append(Blocker(NO_DOCUMENTS, "the store has no corpus; import documents first (Corpus page, or "
                                         "golden corpus import)"))
    return out


def refuse_on(blockers: list[Blocker]) -> None:
    """Raise the freeze's refusal for the first kind of problem among ``blockers`` (labels off
    the corpus, then answered unanswerable questions, then an empty store), every problem of
    that kind listed and the place to fix them named; nothing when the list is empty."""
    broken = [b.sentence for b in blockers if b.kind in BROKEN_KINDS]
    if broken:
        raise ValidationError(
            f"Freeze refused: {len(broken)} label(s) no longer resolve on the corpus. Fix or retract them first: "
            f"the {CONFLICTS_PAGE} lists each with its fixes.",
            broken,
        )
    conflicts = unanswerable_sentences(blockers)
    if conflicts:
        raise ValidationError(
            f"Freeze refused: {len(conflicts)} question(s) marked unanswerable have passages graded as "
            f"answering them (grade {ANSWERING_GRADE} or more, or evidence). Fix them first: the {CONFLICTS_PAGE} "
            f"lists each with its fixes.",
            conflicts,
        )
    kinds = {b.kind for b in blockers}
    if NO_QUERIES in kinds:
        raise ValidationError("Freeze refused: the store has no queries. Import queries first.")
    if NO_DOCUMENTS in kinds:
        raise ValidationError("Freeze refused: the store has no corpus. Import documents first.")


def live_blockers(store: Store) -> list[Blocker]:
    """:func:`freeze_blockers` in one read transaction (one snapshot, planned as the freeze
    plans it): what a freeze would refuse now."""
    with store.cursor() as cur:
        if store.engine != "postgresql":
            return freeze_blockers(cur)
        from golden_store.db.postgres import PgCursor

        pg = cast(PgCursor, cur)
        pg.begin()  # SET LOCAL (whole_table_plans) lasts for this transaction only
        try:
            whole_table_plans(store, pg)
            return freeze_blockers(pg)
        finally:
            pg.rollback()


def live_label_problems(store: Store, viewer: str | None = None) -> list[str]:
    """:func:`broken_labels` for the live store, in a read transaction (``viewer``: see there)."""
    with store.cursor() as cur:
        return broken_labels(cur, "current_evidence", viewer=viewer)



@dataclass(frozen=True)
class FreezeResult:
    name: str
    path: Path | str  # the version's folder, or its URL in object storage
    manifest: Mapping[str, Any]


def freeze(
    store: Store,
    name: str,
    *,
    actor: str,
    note: str = "",
    hit_rule: str = DEFAULT_HIT_RULE,
    versions_dir: Path | str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    signing_key: Any = None,
) -> FreezeResult:
    """Write the live store's current state as version ``name``. Refuses an existing name,
    an empty store, labels that no longer resolve on the corpus, and questions marked
    unanswerable that carry answering grades (:func:`unanswerable_conflicts`): exactly
    :func:`freeze_blockers`, the list the app's Freeze conflicts page shows. ``hit_rule`` is the
    default rule for deriving chunk labels from this version's spans (manifest field).
    ``signing_key`` (an Ed25519 private key, :func:`golden_store.versions.signing.load_private_key`)
    adds ``signature.json``, written before the version appears.

    ``versions_dir`` (default ``GOLDEN_VERSIONS``) may be a URL (``s3://bucket/prefix``): the
    version is then written and checked in a local temporary folder exactly as for a folder,
    and published by :meth:`golden_store.versions.storage.RemoteVersions.publish` (data files
    first under a prefix of this freeze's own, ``manifest.json`` last and create-only: the
    commit point; a freeze that loses the name to another at that moment is refused)."""
    validate_name(name)
    rule = parse_hit_rule(hit_rule)
    where = versions_dir if versions_dir else versions_dir_for(store.path)
    remote = None
    if local_versions_dir(where) is None:
        from golden_store.versions import storage

        remote = storage.open_location(str(where))
        remote.check_free(name)  # before the work; publish checks again
        vdir = Path(tempfile.mkdtemp(prefix="golden-freeze-"))
        target: Path | str = remote.where(name)
    else:
        vdir = local_versions_dir(where) or Path(where)
        target = vdir / name
        if target.exists():
            raise VersionExistsError(
                f"Version {name!r} already exists at {target}; a frozen version never changes. "
                f"Pick a new name (e.g. {name}-2)."
            )
        vdir.mkdir(parents=True, exist_ok=True)
        sweep_temp_folders(vdir)
    try:
        tmp = new_temp_folder(vdir, name)
    except OSError as exc:
        full = _out_of_room(exc, name, vdir, remote is not None)
        if full is None:
            raise
        raise full from exc
    steps = len(_TABLE_SQL) + 3
    try:
        def snapshot(cur: Cursor) -> dict[str, Any]:
            # One transaction: every file sees the same snapshot of the store. On PostgreSQL
            # two processes freezing one name take turns (the folder rename decides who wins).
            store.lock(cur, f"golden_store.freeze:{name}")
            whole_table_plans(store, cur)
            refuse_on(freeze_blockers(cur))
            for i, (fname, sql) in enumerate(_TABLE_SQL.items()):
                if progress:
                    progress(i, steps, f"writing {fname}")
                if fname == DOCUMENTS_FILE:
                    write_documents(cur, tmp / fname)
                else:
                    write_parquet(cur, sql, [], tmp / fname, "(FORMAT parquet, COMPRESSION zstd)")
            if progress:
                progress(len(_TABLE_SQL), steps, "deriving qrels")
            # Qrels in SQL here; verify() re-derives them with the pure Python rule
            # (golden_store.versions.qrels) and compares, so the two implementations check each other.
            write_parquet(
                cur,
                f"SELECT query_id, doc_id, CAST(max(grade) AS INTEGER) AS grade FROM ("
                f" SELECT DISTINCT e.query_id, e.doc_id, CAST(? AS INTEGER) AS grade"
                f" FROM frozen_evidence e SEMI JOIN queries q USING (query_id)"
                f" UNION ALL SELECT j.query_id, j.doc_id, j.grade FROM final_grades j"
                f" SEMI JOIN queries q USING (query_id)"
                f") GROUP BY query_id, doc_id ORDER BY query_id, doc_id",
                [EVIDENCE_GRADE], tmp / QRELS_FILE, "(FORMAT parquet)",
            )
            write_parquet(cur, _JUDGE_LABELS_SQL, [], tmp / JUDGE_LABELS_FILE, "(FORMAT parquet, COMPRESSION zstd)")
            write_parquet(cur, _REFERENCE_ANSWERS_SQL, [], tmp / REFERENCE_ANSWERS_FILE,
                          "(FORMAT parquet, COMPRESSION zstd)")
            write_parquet(cur, _ANSWER_CRITERIA_SQL, [], tmp / ANSWER_CRITERIA_FILE, "(FORMAT parquet, COMPRESSION zstd)")
            return _manifest_facts(cur, store.engine)

        facts = store.write(snapshot)
        if progress:
            progress(len(_TABLE_SQL) + 1, steps, "hashing files")
        files = writer.file_entries(tmp, [*_TABLE_SQL, QRELS_FILE, JUDGE_LABELS_FILE, REFERENCE_ANSWERS_FILE,
                                          ANSWER_CRITERIA_FILE])
        from golden_store import __version__

        manifest = writer.build_manifest(
            name=name, note=note, built_at=utcnow().replace(microsecond=0).isoformat() + "Z", actor=actor,
            studio_version=__version__, store_schema_version=SCHEMA_VERSION, facts=facts, hit_rule=rule.name,
            files=files)
        if progress:
            progress(len(_TABLE_SQL) + 2, steps, "writing manifest")
        published = writer.seal(tmp, manifest, name, signing_key)
        if remote is not None:
            remote.publish(name, tmp, published)
            if progress:
                progress(steps, steps, "done")
            return FreezeResult(name, target, deep_freeze(manifest))
        writer.put_in_place(tmp, target, name)
        if progress:
            progress(steps, steps, "done")
        return FreezeResult(name, target, deep_freeze(manifest))
    except Exception as exc:
        full = _out_of_room(exc, name, vdir, remote is not None)
        if full is None:
            raise
        raise full from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if remote is not None:
            shutil.rmtree(vdir, ignore_errors=True)


def _out_of_room(exc: BaseException, name: str, vdir: Path, remote: bool) -> DiskFullError | None:
    """A freeze's write that found no room in the folder it builds the version in, as one
    sentence (probe F2: a raw ``OSError: [Errno 28]`` traceback): the versions folder, or for
    object storage the local temporary folder the version is built in before its upload. The
    partial files are removed by the caller. None for any other error, and for the store's own
    disk (``Store`` has said that in its words)."""
    if isinstance(exc, DiskFullError) and exc.path is not None and not Path(exc.path).is_relative_to(vdir):
        return None
    code = disk.no_room_errno(exc)
    if code is None:
        return None
    outcome = f"no version {name!r} was written and its partial files were removed"
    if remote:
        return disk.no_room(code, what="the temporary folder a version is built in before its upload",
                            path=vdir.parent, outcome=outcome,
                            elsewhere="point TMPDIR at a folder on a disk with room")
    return disk.no_room(code, what="the versions folder", path=vdir, outcome=outcome,
                        elsewhere="point GOLDEN_VERSIONS at a folder on a disk with room")


def _manifest_facts(cur: Cursor, engine: str) -> dict[str, Any]:
    """The manifest fields that describe content. Only facts the store holds; never invented."""
    docs = cur.execute("SELECT doc_id, canonical_sha256 FROM documents").fetchall()
    raw_docs = cur.execute("SELECT doc_id, raw_sha256 FROM documents").fetchall()
    strata = dict(cur.execute("SELECT stratum, count(*) FROM queries GROUP BY 1 ORDER BY 1").fetchall())
    n_q, n_ans, n_held = cur.execute(
        "SELECT count(*), count(*) FILTER (answerable), count(*) FILTER (held_out) FROM queries"
    ).fetchone()
    n_spans = cur.execute("SELECT count(*) FROM frozen_evidence SEMI JOIN queries USING (query_id)").fetchone()[0]
    n_judg = cur.execute("SELECT count(*) FROM final_grades SEMI JOIN queries USING (query_id)").fetchone()[0]
    n_pending = cur.execute("SELECT count(*) FROM pending_grades SEMI JOIN queries USING (query_id)").fetchone()[0]
    n_ev_pending = cur.execute(
        "SELECT count(*) FROM unsettled_evidence_questions SEMI JOIN queries USING (query_id)").fetchone()[0]
    annotators = [
        r[0]
        for r in cur.execute(
            "SELECT DISTINCT actor FROM ("
            " SELECT actor FROM frozen_evidence SEMI JOIN queries USING (query_id)"
            " UNION SELECT actor FROM current_grades SEMI JOIN queries USING (query_id)"
            " UNION SELECT actor FROM current_nuggets SEMI JOIN queries USING (query_id) WHERE approved"
            ") WHERE actor NOT LIKE 'system:%' ORDER BY 1"
        ).fetchall()
    ]
    rubric = cur.execute("SELECT version, sha256 FROM rubric_versions ORDER BY version DESC LIMIT 1").fetchone()
    models = cur.execute(
        "SELECT DISTINCT model, prompt_sha FROM ("
        " SELECT model, prompt_sha FROM current_nuggets SEMI JOIN queries USING (query_id)"
        " WHERE approved AND model IS NOT NULL"
        " UNION SELECT generator_model, generator_prompt_sha FROM queries WHERE generator_model IS NOT NULL"
        ") ORDER BY 1, 2"
    ).fetchall()
    if n_judg:
        label_type = "graded_0_3"
    elif n_spans:
        label_type = "evidence_spans"
    else:
        label_type = None
    if models:
        generator = {
            "kind": "human+llm",
            "model": models[0][0] if len({m for m, _ in models}) == 1 else [m for m, _ in models],
            "prompt_sha": sorted({p for _, p in models if p}),
        }
    elif n_spans or n_judg:
        generator = {"kind": "human", "model": None, "prompt_sha": None}
    else:
        generator = None
    per_run = dict(cur.execute(
        "SELECT system, avg(jq) FROM (SELECT r.system, r.query_id, avg(CASE WHEN g.query_id IS NULL THEN 0.0 ELSE 1.0 "
        "END) AS jq FROM run_results r SEMI JOIN queries q USING (query_id) ANTI JOIN retired_runs x USING (system) "
        "LEFT JOIN (SELECT DISTINCT query_id, "
        "doc_id, start, \"end\" FROM current_grades) g USING (query_id, doc_id, start, \"end\") WHERE r.rank <= 10 "
        "GROUP BY r.system, r.query_id) GROUP BY system ORDER BY system").fetchall())
    return {
        # the pool's grading progress at the freeze (pool.pool_status's graded@10), named apart from
        # the scorer's Judged@10 of a scoring, which also counts evidence (scoring/health.py); the
        # key was judged_fraction_at_10 until issue 25 (two "judged@10" for one run)
        "pool_graded_at_10": (sum(per_run.values()) / len(per_run)) if per_run else None,
        "pool_graded_at_10_per_run": {k: float(v) for k, v in per_run.items()} or None,
        "pool_graded_at_10_definition": POOL_GRADED_DEFINITION,
        "corpus_digest": corpus_digest(docs),
        # spans index the raw text: a re-encoded corpus (CRLF, say) keeps the canonical
        # digest but moves every offset, so the raw text is pinned too
        "raw_corpus_digest": corpus_digest(raw_docs),
        "corpus_commit": None,
        "n_documents": len(docs),
        "n_queries": int(n_q),
        "n_answerable": int(n_ans),
        "n_held_out": int(n_held),
        "strata": {k: int(v) for k, v in strata.items()},
        "label_type": label_type,
        "n_spans": int(n_spans),
        "n_judgments": int(n_judg),
        "n_pending_judgments": int(n_pending),
        "pending_reason": (f"{n_pending} graded item(s) where annotators disagree and no lead has adjudicated "
                           "yet are left out; adjudicate them (Adjudication page) and freeze again")
        if n_pending else None,
        "n_evidence_questions_pending": int(n_ev_pending),
        "evidence_pending_reason": (f"the quotes of {n_ev_pending} question(s) in an evidence round no lead has "
                                    "settled yet are left out; settle them (Adjudication page) and freeze again")
        if n_ev_pending else None,
        "annotators": annotators,
        **_label_facts(cur),
        "reference_answers": _reference_facts(cur),
        **_agreement_facts(cur, engine),
        "rubric": {"version": rubric[0], "sha256": rubric[1]} if rubric else None,
        "generator": generator,
    }


def _reference_facts(cur: Cursor) -> dict[str, int]:
    """How many live questions have an approved reference answer (frozen), how many have only
    an unapproved revision (left out: approve it and freeze again), and how many criteria."""
    approved, unapproved = cur.execute(
        "SELECT count(*) FILTER (approved), count(*) FILTER (NOT approved) FROM current_reference_answers "
        "SEMI JOIN queries USING (query_id)").fetchone() or (0, 0)
    row = cur.execute(f"SELECT count(*) FROM ({_ANSWER_CRITERIA_SQL}) AS c").fetchone()
    return {"approved": int(approved), "unapproved_left_out": int(unapproved), "criteria": int(row[0]) if row else 0}


def _label_facts(cur: Cursor) -> dict[str, Any]:
    """Who labeled what (issue 27): ``label_counts`` (passages with a final human grade, by
    basis; judge labels on passages no person graded, all judge labels, those in the standing
    sample) and ``judge_labels`` (the calibrations, models, rubric shas and jobs the frozen
    judge labels came from; empty lists when none), counted in SQL here and re-derived from
    the files by :func:`golden_store.versions.format.label_counts` in ``verify``."""
    counts: dict[str, int] = {"human": 0, "adjudicated": 0, "agreed": 0}
    for basis, n in cur.execute("SELECT basis, count(*) FROM final_grades SEMI JOIN queries USING (query_id) "
                                "GROUP BY basis ORDER BY basis").fetchall():
        counts[str(basis)] = int(n)
        counts["human"] += int(n)
    imported = cur.execute(  # of them, passages only imports graded (golden judgments import; issue 28)
        "SELECT count(*) FROM final_grades f SEMI JOIN queries USING (query_id) WHERE f.basis = 'agreed' AND NOT "
        "EXISTS (SELECT 1 FROM grade_state g WHERE g.query_id = f.query_id AND g.doc_id = f.doc_id AND g.start = "
        f"f.start AND g.\"end\" = f.\"end\" AND g.op = 'grade' AND NOT {IMPORTED_ACTOR_SQL})").fetchone()[0]
    if imported:  # only when there are some: versions frozen before imports verify as they did
        counts["imported"] = int(imported)
    judge_only, total, sample = cur.execute(
        "SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM final_grades f WHERE f.query_id = s.query_id "
        "AND f.doc_id = s.doc_id AND f.start = s.start AND f.\"end\" = s.\"end\")), count(*), "
        f"count(*) FILTER (WHERE s.route = 'sample') {_JUDGE_LABELS_FROM} AND {_JUDGE_LABEL_ON_TEXT}").fetchone()
    counts.update(judge=int(judge_only), judge_total=int(total), standing_sample=int(sample))
    stale = cur.execute(f"SELECT count(*) {_JUDGE_LABELS_FROM} AND NOT {_JUDGE_LABEL_ON_TEXT}").fetchone()[0]
    provenance: dict[str, Any] = {}
    for key, col in (("calibration_ids", "s.calibration_id"), ("models", "e.model"),
                     ("rubric_shas", "e.rubric_sha"), ("jobs", "s.job_id")):
        provenance[key] = sorted(str(r[0]) for r in cur.execute(  # Python's order on every engine
            f"SELECT DISTINCT {col} {_JUDGE_LABELS_FROM} AND {_JUDGE_LABEL_ON_TEXT}").fetchall() if r[0] is not None)
    return {"label_counts": counts,
            "judge_labels": {**provenance, **({"left_out_stale": int(stale)} if stale else {})}}


def _agreement_facts(cur: Cursor, engine: str) -> dict[str, Any]:
    """κ and α over the items two or more annotators graded (before adjudication: agreement
    measures the instrument, not the gold), and every round with its own figures. Null
    when nothing was labelled twice - never invented.

    Each κ is named for what it is: ``kappa_unweighted`` (the one METHODOLOGY §3.7's 0.6 bar
    is set on), ``kappa_linear``, ``kappa_quadratic``. Versions frozen before issue 36 carry
    the linear κ as ``kappa_graded``: a pipeline reading that name against the 0.6 bar passed
    rounds the studio said were below it, so new manifests no longer write it
    (``agreement_report.kappa_linear`` reads either).

    From the confusion and per-unit grade counts aggregated in SQL, as the Agreement page
    does (``agreement_counts``: the same figures as the per-label report): reading every
    current grade into a frame was 3.6 s and 840 MB of a freeze at 5.7 M grade events."""
    agg = aggregates_tx(cur, engine)
    whole = agreement_counts.group(agg.pairs, agg.units, agg.actors).summary()
    per_round = agreement_counts.by(agg.round_pairs, agg.round_units, "round_id")
    # NaN (an undefined κ in one round next to a number in another) becomes null: manifest.json
    # is strict JSON, and a missing figure is never invented
    by_round = {r["round_id"]: {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in per_round.to_dict("records")} if len(per_round) else {}
    history = []
    for rid, kind, item_kind, annotators, overlap, seed, n_items, created_at, bar_check, bar_override in cur.execute(
            "SELECT round_id, kind, item_kind, annotators, overlap, seed, n_items, created_at, bar_check, "
            "bar_override FROM rounds ORDER BY created_at, round_id").fetchall():
        fig = by_round.get(rid, {})
        history.append({"round_id": rid, "kind": kind, "items": item_kind, "annotators": list(annotators),
                        "overlap": overlap,
                        "seed": seed, "n_items": n_items, "created_at": created_at.isoformat() + "Z",
                        "n_units_double": fig.get("n_units", 0), "kappa_binary": fig.get("kappa_binary"),
                        "kappa_unweighted": fig.get("kappa_unweighted"), "kappa_linear": fig.get("kappa_linear"),
                        "kappa_quadratic": fig.get("kappa_quadratic"), "alpha_ordinal": fig.get("alpha_ordinal"),
                        **({"bar_check_at_split": json.loads(bar_check)} if bar_check else {}),
                        **({"bar_override": bar_override} if bar_override else {})})
    bar, chosen = agreement_bar.current_tx(cur)
    check = bar.check(whole) if whole["n_units"] else None
    return {
        "kappa_binary": whole["kappa_binary"],
        "kappa_unweighted": whole["kappa_unweighted"],
        "kappa_linear": whole["kappa_linear"],
        "kappa_quadratic": whole["kappa_quadratic"],
        "alpha_ordinal": whole["alpha_ordinal"],
        "agreement_bar": {**bar.as_dict(), **chosen,
                          "cleared": check.cleared if check else None,
                          "check": check.text if check else "nothing was labelled twice"},
        "n_items_double_annotated": whole["n_units"],
        "rounds": history,
        "judge_calibrations": calibrations.manifest_entries(cur),
    }
