"""Queries: validation, import from CSV/JSONL, and edits as appended revisions."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from golden_store.db.cursor import Cursor
from golden_store.core import textin
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.core.textin import shown
from golden_store.db.store import Store, utcnow

QUERY_FIELDS = ("id", "text", "stratum", "answerable", "source", "date", "held_out", "notes", "tier")
# A question's CI tier (METHODOLOGY §14.1); empty: not tagged.
TIERS = ("smoke", "regression", "release")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_STRATUM_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# Limits (README "Limits"): a query is a question, notes a remark, neither a document.
MAX_QUERY_TEXT_CHARS = 2000
MAX_QUERY_NOTES_CHARS = 2000
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f", ""}


@dataclass(frozen=True)
class QueryRecord:
    query_id: str
    text: str
    stratum: str
    answerable: bool
    source: str
    created_date: date
    held_out: bool = False
    notes: str = ""
    # Which optional input fields the source actually gave (None: all). On re-import, a
    # field the file leaves out keeps the stored value instead of resetting to a default.
    given: frozenset[str] | None = field(default=None, compare=False, repr=False)
    generator_model: str | None = field(default=None, compare=False)
    generator_prompt_sha: str | None = field(default=None, compare=False)
    tier: str | None = None  # smoke / regression / release (METHODOLOGY §14.1); None: not tagged


def record_of_row(row: Sequence[Any]) -> QueryRecord:
    """The QueryRecord of a ``queries`` row read as (query_id, text, stratum, answerable,
    source, created_date, held_out, notes, generator_model, generator_prompt_sha, tier)."""
    (query_id, text, stratum, answerable, source, created_date, held_out, notes,
     generator_model, generator_prompt_sha, tier) = row
    return QueryRecord(query_id, text, stratum, answerable, source, created_date, held_out, notes,
                       generator_model=generator_model, generator_prompt_sha=generator_prompt_sha, tier=tier)


_OPTIONAL = {"answerable": "answerable", "source": "source", "date": "created_date",
             "held_out": "held_out", "notes": "notes", "tier": "tier"}


def _parse_bool(value: object, field: str, where: str, problems: list[str], default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return default if s == "" else False
    problems.append(f"{where}: field '{field}' must be true or false, got {shown(value)}")
    return default


def validate_record(obj: dict, where: str, strata: set[str], problems: list[str], today: date) -> QueryRecord | None:
    """Check one input row; append every problem (with ``where``) and return None if any."""
    n_before = len(problems)
    qid = obj.get("id", obj.get("query_id", obj.get("_id")))  # _id: BEIR's queries.jsonl
    qid = str(qid).strip() if qid is not None else ""
    if not qid:
        problems.append(f"{where}: field 'id' is missing")
    elif not _ID_RE.match(qid):
        problems.append(
            f"{where}: id {shown(qid)} must be 1-128 characters of letters, digits, '_', '.', ':' or '-'"
        )
    text = str(obj.get("text") or "").strip()
    if not text:
        problems.append(f"{where}: field 'text' is missing or empty")
    elif len(text) > MAX_QUERY_TEXT_CHARS:
        problems.append(f"{where}: field 'text' is {len(text):,} characters; a query is at most "
                        f"{MAX_QUERY_TEXT_CHARS:,} (a question, not a document)")
    stratum = str(obj.get("stratum") or "").strip()
    if not stratum:
        problems.append(f"{where}: field 'stratum' is missing (one of {', '.join(sorted(strata))})")
    elif stratum not in strata:
        problems.append(
            f"{where}: unknown stratum {shown(stratum)}; known: {', '.join(sorted(strata))}. "
            f"Add a new one with `golden strata add NAME` or on the Queries page."
        )
    answerable = _parse_bool(obj.get("answerable"), "answerable", where, problems, default=True)
    if stratum == "negative" and answerable and obj.get("answerable") not in (None, ""):
        problems.append(f"{where}: stratum 'negative' means unanswerable; set answerable to false")
    if stratum == "negative":
        answerable = False
    held_out = _parse_bool(obj.get("held_out"), "held_out", where, problems, default=False)
    source = str(obj.get("source") or "expert").strip()
    raw_date = obj.get("date", obj.get("created_date"))
    created = today
    if raw_date not in (None, ""):
        try:
            created = date.fromisoformat(str(raw_date).strip()[:10])
        except ValueError:
            problems.append(f"{where}: field 'date' must be YYYY-MM-DD, got {shown(raw_date)}")
    notes = str(obj.get("notes") or "")
    if len(notes) > MAX_QUERY_NOTES_CHARS:
        problems.append(f"{where}: field 'notes' is {len(notes):,} characters; at most {MAX_QUERY_NOTES_CHARS:,}")
    raw_tier = obj.get("tier")
    tier = str(raw_tier).strip() if raw_tier is not None else ""
    if tier and tier not in TIERS:
        problems.append(f"{where}: field 'tier' must be one of {', '.join(TIERS)} (or empty), got {shown(raw_tier)}")
    if len(problems) > n_before:
        return None
    given = frozenset(
        k for k in _OPTIONAL if obj.get(k, obj.get("created_date") if k == "date" else None) not in (None, "")
    )
    return QueryRecord(qid, text, stratum, answerable, source, created, held_out, notes, given, tier=tier or None)


def with_metadata(obj: dict) -> dict:
    """A JSONL query with its ``metadata`` object's flags read as fields (the form BEIR's
    ``queries.jsonl`` keeps them in, and ``golden export --format beir`` writes): a field the
    line itself gives wins."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    extra = {k: meta[k] for k in ("stratum", "answerable", "held_out", "tier", "source", "notes")
             if k in meta and obj.get(k) is None}
    return {**obj, **extra} if extra else obj


def _json_types_ok(obj: dict, where: str, problems: list[str]) -> bool:
    """A JSONL query's fields are text (an id may be an integer; flags may be true/false):
    a number or list where text belongs is refused, never turned into text like "nan"."""
    ok = True
    for key in ("id", "query_id", "_id", "text", "stratum", "source", "date", "created_date", "notes", "tier",
                "answerable", "held_out"):
        value = obj.get(key)
        if value is None or isinstance(value, str):
            continue
        if key in ("id", "query_id", "_id") and isinstance(value, int) and not isinstance(value, bool):
            continue
        if key in ("answerable", "held_out") and (isinstance(value, bool) or value in (0, 1)):
            continue
        problems.append(f"{where}: field {key!r} must be {'true or false' if key in ('answerable', 'held_out') else 'a string'}, "
                        f"got {type(value).__name__} {shown(value)}")
        ok = False
    return ok


def _tsv_rows(name: str, text: str, problems: list[str], meta: dict[str, dict[str, str]]) -> list[tuple[str, dict]]:
    """A TREC topics file, ``id<TAB>text`` per line (a header line ``query_id<TAB>text`` is
    skipped), as ``golden export --format trec`` writes ``queries.tsv``; ``meta`` (its
    ``queries.meta.tsv``: answerable, held_out, stratum by id) fills in the flags."""
    rows: list[tuple[str, dict]] = []
    first = True
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        qid, tab, body = line.partition("\t")
        if first and qid.strip().lower() in ("id", "qid", "query_id", "query-id") and \
                body.strip().lower() in ("text", "query", "title"):
            first = False
            continue
        first = False
        where = f"{name} line {lineno}"
        if not tab:
            problems.append(f"{where}: expected 'id<TAB>text' (a TREC topics line), got {shown(line)}")
            continue
        rows.append((where, {**meta.get(qid.strip(), {}), "id": qid, "text": body}))
    return rows


def read_meta_tsv(name: str, data: bytes) -> dict[str, dict[str, str]]:
    """``queries.meta.tsv`` (a header naming ``query_id`` and any of answerable, held_out,
    stratum, tier): each question's flags by id."""
    text = textin.decode(name, data)
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    if "query_id" not in (reader.fieldnames or []):
        raise ValidationError(f"Query import refused: {name} line 1: a queries meta file starts with a header naming "
                              "query_id (query_id<TAB>answerable<TAB>held_out<TAB>stratum).")
    keep = ("answerable", "held_out", "stratum", "tier")
    return {str(r["query_id"]).strip(): {k: r[k] for k in keep if r.get(k) not in (None, "")} for r in reader}


def parse_query_file(name: str, data: bytes, strata: set[str], today: date | None = None, *,
                     default_stratum: str | None = None, meta: dict[str, dict[str, str]] | None = None,
                     ) -> list[QueryRecord]:
    """Parse a CSV (header row), JSONL or TSV (TREC topics, ``id<TAB>text``) query file.
    Raises ValidationError naming every bad line. ``default_stratum``: for rows that name
    none (TREC topics and BEIR queries carry no stratum); ``meta``: flags by id for a TSV
    file (its ``queries.meta.tsv``)."""
    today = today or utcnow().date()
    problems: list[str] = []
    try:
        text = textin.decode(name, data)
    except ValidationError as exc:
        raise ValidationError(f"Query import refused: {exc}") from None
    rows: list[tuple[str, dict]] = []
    suffix = Path(name).suffix.lower()
    if suffix == ".jsonl":
        for lineno, obj in iter_objects(name, text, problems):
            obj = with_metadata(obj)
            if _json_types_ok(obj, f"{name} line {lineno}", problems):
                rows.append((f"{name} line {lineno}", obj))
    elif suffix == ".tsv":
        rows = _tsv_rows(name, text, problems, meta or {})
    elif suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        try:
            header = reader.fieldnames
        except csv.Error as exc:
            raise ValidationError(f"Query import refused: {name} line 1: not readable CSV ({exc}).") from None
        given = set(header or [])
        if given & {"query_id", "_id"}:  # the id's other names, as JSONL takes them
            given.add("id")
        if default_stratum:
            given.add("stratum")
        missing = [f for f in ("id", "text", "stratum") if f not in given]
        if missing:
            raise ValidationError(
                f"Query import refused: {name} header lacks column(s) {', '.join(missing)}; "
                f"expected columns {', '.join(QUERY_FIELDS)}."
            )
        end = reader.line_num  # the line the last row read ends on
        try:
            for row in reader:
                rows.append((f"{name} line {reader.line_num}", row))  # where the row ends
                end = reader.line_num
        except csv.Error as exc:
            # the failing row starts on the first non-blank line after the last good row
            lines = text.split("\n")
            start = end
            while start < len(lines) and not lines[start].strip():
                start += 1
            raise ValidationError(f"Query import refused: {name} line {start + 1}: not readable CSV ({exc}).") \
                from None
    else:
        raise ValidationError(f"Query import refused: {name}: use a .csv or .jsonl file (or .tsv: TREC topics, id<TAB>text).")
    records: list[QueryRecord] = []
    seen: dict[str, str] = {}
    for where, obj in rows:
        if default_stratum and not obj.get("stratum"):
            obj = {**obj, "stratum": default_stratum}
        rec = validate_record(obj, where, strata, problems, today)
        if rec is None:
            continue
        if rec.query_id in seen:
            problems.append(f"{where}: id {shown(rec.query_id)} already used at {seen[rec.query_id]}")
            continue
        seen[rec.query_id] = where
        records.append(rec)
    if not rows and not problems:
        problems.append(f"{name}: the file has no queries")
    if problems:
        raise ValidationError(f"Query import refused: {len(problems)} problem(s); nothing was imported.", problems)
    return records


def stored_strata(store: Store) -> dict[str, str]:
    """Each current question's stratum, by id."""
    return dict(store.read("SELECT query_id, stratum FROM queries"))


def known_strata(store: Store) -> set[str]:
    return {r[0] for r in store.read("SELECT name FROM strata")}


def list_strata(store: Store) -> list[dict]:
    return store.read_dicts("SELECT name, description, builtin FROM strata ORDER BY builtin DESC, name")


def add_stratum(store: Store, name: str, description: str, *, actor: str) -> None:
    name = name.strip()
    if not _STRATUM_RE.match(name):
        raise ValidationError(
            f"Stratum name {name!r} must be lowercase letters, digits and '_' (max 40), starting with a letter."
        )
    if not description.strip():
        raise ValidationError("A stratum needs a one-line definition, so annotators assign it consistently.")

    def run(cur: Cursor) -> None:
        if cur.execute("SELECT 1 FROM strata WHERE name = ?", [name]).fetchone():
            raise ValidationError(f"Stratum {name!r} already exists.")
        cur.execute("INSERT INTO strata VALUES (?, ?, FALSE, ?, ?)", [name, description.strip(), utcnow(), actor])

    store.write(run)


_INSERT_REVISION = (
    "INSERT INTO query_revisions (query_id, text, stratum, answerable, source, created_date,"
    " held_out, notes, retired, generator_model, generator_prompt_sha, actor, created_at, tier, change_reason)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The longest reason kept with a revision (a sentence or two, not a document).
MAX_CHANGE_REASON_CHARS = 500


def _revision_row(r: QueryRecord, actor: str, retired: bool = False, reason: str | None = None) -> list:
    return [r.query_id, r.text, r.stratum, r.answerable, r.source, r.created_date, r.held_out,
            r.notes, retired, r.generator_model, r.generator_prompt_sha, actor, utcnow(), r.tier, reason]


def import_queries(store: Store, records: Sequence[QueryRecord], *, actor: str, update: bool = False,
                   unhold_reason: str | None = None) -> dict:
    """Append the records as revisions, all or nothing. Ids already in the store are an error
    unless ``update``; identical records are skipped (no empty revisions). Records that would
    take a question out of the held-out set are an error unless ``unhold_reason`` is given
    (the caller checks who may give it)."""
    return store.write(lambda cur: import_queries_tx(cur, records, actor=actor, update=update,
                                                     unhold_reason=unhold_reason))


def import_queries_tx(
    cur: Cursor, records: Sequence[QueryRecord], *, actor: str, update: bool = False,
    unhold_reason: str | None = None,
) -> dict:
    """:func:`import_queries` inside a caller's transaction. The result's ``unheld``, present
    when any, lists the ids whose held-out flag this import cleared (each revision carries
    ``unhold_reason`` as its ``change_reason``).

    Why un-holding is refused by default (issue 37, H3): a pipeline re-importing its questions
    from a source without the flag (``held_out`` present but false) cleared it on every
    held-out question and answered "1 updated"; nobody decided it. The refusal names every
    such question so the person can see what the file would do."""
    reason = (unhold_reason or "").strip() or None
    if reason is not None and len(reason) > MAX_CHANGE_REASON_CHARS:
        raise ValidationError(f"Query import refused: the un-hold reason has {len(reason)} characters; keep it to "
                              f"{MAX_CHANGE_REASON_CHARS} (nothing was imported).")
    current = {
        row[0]: row[1:]
        for row in cur.execute(
            "SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, tier FROM queries"
        ).fetchall()
    }
    fields = ("text", "stratum", "answerable", "source", "created_date", "held_out", "notes", "tier")

    def merged(r: QueryRecord) -> QueryRecord:
        if r.given is None or r.query_id not in current:
            return r
        stored = dict(zip(fields, current[r.query_id]))
        keep = {attr: stored[attr] for key, attr in _OPTIONAL.items() if key not in r.given}
        if r.stratum == "negative":
            keep.pop("answerable", None)
        return replace(r, **keep)

    records = [merged(r) for r in records]
    existing = [r for r in records if r.query_id in current]
    changed = [
        r for r in existing
        if tuple(current[r.query_id]) != tuple(getattr(r, f) for f in fields)
    ]
    if changed and not update:
        raise ValidationError(
            f"Query import refused: {len(changed)} id(s) already exist with different content; "
            f"nothing was imported. Re-run with --update to record new revisions.",
            [f"id {r.query_id!r} exists" for r in changed[:50]],
        )
    held = fields.index("held_out")
    unheld = sorted(r.query_id for r in changed if current[r.query_id][held] and not r.held_out)
    if unheld and reason is None:
        raise ValidationError(
            f"Query import refused: it would take {len(unheld)} question(s) out of the held-out set "
            f"({', '.join(unheld)}); nothing was imported. Un-holding is a lead's decision: keep held_out true "
            "in the file, or re-run as a lead with --unhold REASON (API: the unhold_reason field).",
            [f"id {qid!r}: held_out true -> false" for qid in unheld],
        )
    new = [r for r in records if r.query_id not in current]
    rows = [_revision_row(r, actor, reason=reason if r.query_id in unheld else None) for r in new + changed]
    if rows:
        cur.executemany(_INSERT_REVISION, rows)
    out: dict = {"added": len(new), "updated": len(changed), "unchanged": len(existing) - len(changed)}
    return {**out, "unheld": unheld} if unheld else out  # said only when it happened (a lead's decision)


def save_query(store: Store, record: QueryRecord, *, actor: str, must_exist: bool | None = None,
               reason: str | None = None) -> None:
    """Add (``must_exist=False``), edit (``True``) or upsert (``None``) one query as a revision;
    ``reason`` is recorded with it (why a question left the held-out set)."""
    strata = known_strata(store)
    problems: list[str] = []
    validate_record(
        {**asdict(record), "id": record.query_id, "date": record.created_date.isoformat()},
        f"query {record.query_id!r}", strata, problems, record.created_date,
    )
    if problems:
        raise ValidationError("Query not saved:", problems)

    def run(cur: Cursor) -> None:
        exists = cur.execute("SELECT 1 FROM queries WHERE query_id = ?", [record.query_id]).fetchone()
        if must_exist is True and not exists:
            raise NotFoundError(f"No query with id {record.query_id!r}.")
        if must_exist is False and exists:
            raise ValidationError(f"Query id {record.query_id!r} is already used; pick another id or edit it.")
        rec = record
        if exists and record.tier is None:  # an edit that does not say a tier keeps the stored one
            rec = replace(record, tier=cur.execute("SELECT tier FROM queries WHERE query_id = ?",
                                                   [record.query_id]).fetchone()[0])
        cur.execute(_INSERT_REVISION, _revision_row(rec, actor, reason=reason))

    store.write(run)


def retire_query(store: Store, query_id: str, *, actor: str) -> None:
    """Remove a query from the live set by appending a retired revision (undo = save it again)."""
    rec = get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    store.write(lambda cur: cur.execute(_INSERT_REVISION, _revision_row(rec, actor, retired=True)))


def get_query(store: Store, query_id: str) -> QueryRecord | None:
    row = store.read_one(
        "SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, "
        "generator_model, generator_prompt_sha, tier FROM queries WHERE query_id = ?",
        [query_id],
    )
    if not row:
        return None
    return record_of_row(row)


def get_queries(store: Store, query_ids: Sequence[str]) -> dict[str, QueryRecord]:
    """:func:`get_query` of several questions in one read (ids not in the live set left out)."""
    ids = sorted(set(query_ids))
    if not ids:
        return {}
    rows = store.read(
        "SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, "
        "generator_model, generator_prompt_sha, tier FROM queries WHERE query_id IN (SELECT unnest(?))", [ids])
    return {r[0]: record_of_row(r) for r in rows}


def list_queries(store: Store):
    return store.df(
        "SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes, "
        "last_edited_by, last_edited_at FROM queries ORDER BY query_id"
    )


def held_out_texts(store: Store) -> list[tuple[str, str]]:
    """(query_id, text) for every wording ever given to a question that is or ever was held
    out, retired ones included: none of them may reach a hosted model (METHODOLOGY §3.8). Ever,
    not now: a held-out question once sent cannot be un-sent, so clearing the flag (issue 37,
    H3) does not make its text sendable."""
    return store.read(
        "SELECT DISTINCT query_id, text FROM query_revisions "
        "WHERE query_id IN (SELECT query_id FROM query_revisions WHERE held_out) ORDER BY 1, 2")


def query_history(store: Store, query_id: str):
    return store.df(
        "SELECT event_id AS revision, text, stratum, answerable, source, created_date, held_out, "
        "notes, retired, actor, created_at, change_reason FROM query_revisions WHERE query_id = ? ORDER BY event_id",
        [query_id],
    )


def no_answer_marks(store: Store, actor: str) -> list[str]:
    """Ids of the live questions whose latest revision is ``actor``'s "no answer in corpus"
    mark (not answerable, negative stratum, not retired) made on a revision that was
    answerable: the marks ``actor`` may still undo. One query, where reading each candidate
    question's history cost a query per question (issue 19: everything an admin imported
    as negative is a candidate, ~1.4 s per Evidence render at 2,000 questions)."""
    rows = store.read(
        "WITH r AS (SELECT query_id, actor, answerable, retired, stratum, "
        "row_number() OVER (PARTITION BY query_id ORDER BY event_id DESC) AS rn FROM query_revisions "
        "WHERE query_id IN (SELECT query_id FROM queries WHERE NOT answerable AND last_edited_by = ?)) "
        "SELECT l.query_id FROM r l JOIN r p ON p.query_id = l.query_id AND p.rn = 2 "
        "WHERE l.rn = 1 AND l.actor = ? AND NOT l.answerable AND NOT l.retired AND p.answerable "
        "AND l.stratum = 'negative' ORDER BY l.query_id",
        [actor, actor])
    return [r[0] for r in rows]


def strata_counts(store: Store) -> dict[str, int]:
    rows = store.read("SELECT stratum, count(*) FROM queries GROUP BY stratum ORDER BY stratum")
    return {s: int(n) for s, n in rows}


def id_is_valid(query_id: str) -> bool:
    return bool(_ID_RE.match(query_id))


def id_ever_used(store: Store, query_id: str) -> bool:
    """True if any revision (a retired query included) ever used this id."""
    return store.read_one("SELECT 1 FROM query_revisions WHERE query_id = ? LIMIT 1", [query_id]) is not None
