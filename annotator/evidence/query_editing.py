"""Adding, editing, retiring and importing queries; every change is a new revision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.live import queries
from golden_store.live.queries import QueryRecord
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.core.progress import BYTES, Phase, Progress, step
from golden_store.db.store import Store

# The steps of a query import told to ``progress`` (a BEIR queries file can hold 100k+).
READING_QUERIES = Phase("reading and checking the queries file", BYTES)
WRITING_QUERIES = Phase("writing queries to the store", "queries")


def import_file(store: Store, user: User, name: str, data: bytes, *, update: bool = False,
                unhold_reason: str | None = None, default_stratum: str | None = None,
                meta: dict[str, dict[str, str]] | None = None, progress: Progress | None = None) -> dict:
    """Import a query file. An import that would clear a question's held-out flag is refused,
    naming each such question, unless ``unhold_reason`` is given by a lead or admin
    (UNHOLD_QUERIES): a pipeline re-importing from a source without the flag must not open a
    test question to the hosted model unnoticed (issue 37, H3). The permission is checked
    whenever a reason is given, so an engineer's token learns at once that the option is not
    theirs."""
    require(user, Permission.EDIT_QUERIES)
    if unhold_reason is not None:
        require(user, Permission.UNHOLD_QUERIES)
        if not unhold_reason.strip():
            raise ValidationError("Query import refused: the un-hold reason is empty; say why these questions leave "
                                  "the held-out set (nothing was imported).")
    with step(progress, len(data), READING_QUERIES):
        records = queries.parse_query_file(name, data, queries.known_strata(store), default_stratum=default_stratum,
                                           meta=meta)
    with step(progress, len(records), WRITING_QUERIES):
        return queries.import_queries(store, records, actor=user.username, update=update,
                                      unhold_reason=unhold_reason)


def import_path(store: Store, user: User, path: str | Path, *, update: bool = False,
                unhold_reason: str | None = None, default_stratum: str | None = None,
                progress: Progress | None = None) -> dict:
    """:func:`import_file` of a file on disk (``progress``: told each step, see there). A TREC topics file ``X.tsv`` with ``X.meta.tsv``
    beside it (what ``golden export --format trec`` writes) takes each question's stratum and
    flags from there, so the export reads back as it went out."""
    from golden_store.core import textin
    from golden_store.core.errors import ValidationError

    p = Path(path)
    try:
        data = textin.read_file(p)
        side = p.with_name(p.stem + ".meta.tsv")
        meta = (queries.read_meta_tsv(str(side), textin.read_file(side))
                if p.suffix.lower() == ".tsv" and side.is_file() else None)
    except ValidationError as exc:
        raise ValidationError(f"Query import refused: {exc}") from None
    return import_file(store, user, str(p), data, update=update, unhold_reason=unhold_reason,
                       default_stratum=default_stratum, meta=meta, progress=progress)


def _refuse_answerable_negative(record: QueryRecord) -> None:
    """The negative stratum *means* "the corpus does not answer it" (METHODOLOGY; freezing and
    scoring read it so), so an answerable question there is a contradiction. Refused with how
    to do it, rather than done by guessing: which stratum the question belongs in is a
    person's call (moving it silently to some other stratum would change a label nobody
    chose), and storing it unanswerable while the form said "Saved" dropped the person's
    answer without a word (issue 37 item 8)."""
    if record.stratum == "negative" and record.answerable:
        raise ValidationError(
            f"{record.query_id} is in the negative stratum, which means the corpus does not answer it, so it "
            "cannot be answerable there: to mark it answerable, choose the stratum it belongs in, in this same edit; "
            "to keep it negative, untick Answerable (nothing was saved).")


def add_query(store: Store, user: User, record: QueryRecord) -> None:
    require(user, Permission.EDIT_QUERIES)
    _refuse_answerable_negative(record)
    queries.save_query(store, record, actor=user.username, must_exist=False)


def edit_query(store: Store, user: User, record: QueryRecord, *, unhold_reason: str | None = None) -> bool:
    """Record ``record`` as a new revision; False (and nothing written) when it equals the
    stored question, so "Saved a new revision" is said only of one that was saved. A form
    that does not know the question's generator provenance (model, prompt sha) keeps the
    stored one: an edit of the wording does not make a synthetic question hand-written.

    Unticking "held out" is a lead's decision with a reason, as on import (issue 37, item 3):
    without ``unhold_reason`` it is refused with the way to do it, and only UNHOLD_QUERIES
    (leads, admins) may give one; the reason is recorded with the revision."""
    require(user, Permission.EDIT_QUERIES)
    _refuse_answerable_negative(record)
    stored = queries.get_query(store, record.query_id)
    reason = None
    if stored is not None and stored.held_out and not record.held_out:
        if not (unhold_reason or "").strip():
            raise ValidationError(f"{record.query_id} is held out: taking it out of the held-out set is a lead's "
                                  f"decision with a reason. Write why in 'Reason to take it out of the held-out "
                                  f"set' and save again; nothing was saved.")
        require(user, Permission.UNHOLD_QUERIES)
        reason = unhold_reason.strip()  # type: ignore[union-attr]
    if stored is not None:
        if record.generator_model is None and record.generator_prompt_sha is None:
            record = replace(record, generator_model=stored.generator_model,
                             generator_prompt_sha=stored.generator_prompt_sha)
        if record.tier is None:
            record = replace(record, tier=stored.tier)
        if record == stored and (record.generator_model, record.generator_prompt_sha) == (
                stored.generator_model, stored.generator_prompt_sha):
            return False
    queries.save_query(store, record, actor=user.username, must_exist=True, reason=reason)
    return True


def change_reason(reason: str | None, refused: str) -> str:
    """``reason`` stripped, or a ValidationError that starts with ``refused`` when it is empty
    or longer than a revision keeps (a sentence or two)."""
    text = (reason or "").strip()
    if not text:
        raise ValidationError(f"{refused}: write the reason; it is recorded with the change, beside who made it "
                              "and when (nothing was saved).")
    if len(text) > queries.MAX_CHANGE_REASON_CHARS:
        raise ValidationError(f"{refused}: the reason has {len(text)} characters; keep it to "
                              f"{queries.MAX_CHANGE_REASON_CHARS} (nothing was saved).")
    return text


def mark_answerable(store: Store, user: User, query_id: str, reason: str | None, *,
                    stratum: str | None = None) -> QueryRecord:
    """Mark a question answerable from the corpus, with the reason recorded on the new
    revision (``change_reason``): the Freeze conflicts page's fix when people's grades or
    quotes show that the corpus answers a question marked unanswerable (issue 37 item 9).
    A question of the negative stratum also needs the stratum it belongs in (``stratum``):
    answerable there is a contradiction (:func:`_refuse_answerable_negative`). Refused, with
    nothing saved, without EDIT_QUERIES, without a reason, or when it is answerable already.
    Returns the new revision."""
    require(user, Permission.EDIT_QUERIES)
    text = change_reason(reason, f"{query_id} was not marked answerable")
    rec = queries.get_query(store, query_id)
    if rec is None:
        raise NotFoundError(f"No query with id {query_id!r}.")
    if rec.answerable:
        raise ValidationError(f"{query_id} is already answerable from the corpus; nothing was saved.")
    new = replace(rec, answerable=True, stratum=(stratum or rec.stratum))
    if new.stratum == "negative":
        raise ValidationError(
            f"{query_id} is in the negative stratum, which means the corpus does not answer it: choose the stratum "
            "it belongs in to mark it answerable (nothing was saved).")
    _refuse_answerable_negative(new)
    queries.save_query(store, new, actor=user.username, must_exist=True, reason=text)
    return new


def retire_query(store: Store, user: User, query_id: str) -> None:
    require(user, Permission.EDIT_QUERIES)
    queries.retire_query(store, query_id, actor=user.username)


def add_stratum(store: Store, user: User, name: str, description: str) -> None:
    require(user, Permission.MANAGE_STRATA)
    queries.add_stratum(store, name, description, actor=user.username)


def queries_table(store: Store, user: User):
    require(user, Permission.VIEW_STORE)
    return queries.list_queries(store)


def history(store: Store, user: User, query_id: str):
    require(user, Permission.VIEW_STORE)
    return queries.query_history(store, query_id)
