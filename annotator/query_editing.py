"""Adding, editing, retiring and importing queries; every change is a new revision."""

from __future__ import annotations

from pathlib import Path

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store.live import queries
from golden_store.live.queries import QueryRecord
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store


def import_file(store: Store, user: User, name: str, data: bytes, *, update: bool = False,
                unhold_reason: str | None = None) -> dict:
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
    records = queries.parse_query_file(name, data, queries.known_strata(store))
    return queries.import_queries(store, records, actor=user.username, update=update, unhold_reason=unhold_reason)


def import_path(store: Store, user: User, path: str | Path, *, update: bool = False,
                unhold_reason: str | None = None) -> dict:
    from golden_store.core import textin
    from golden_store.core.errors import ValidationError

    p = Path(path)
    try:
        data = textin.read_file(p)
    except ValidationError as exc:
        raise ValidationError(f"Query import refused: {exc}") from None
    return import_file(store, user, str(p), data, update=update, unhold_reason=unhold_reason)


def add_query(store: Store, user: User, record: QueryRecord) -> None:
    require(user, Permission.EDIT_QUERIES)
    queries.save_query(store, record, actor=user.username, must_exist=False)


def edit_query(store: Store, user: User, record: QueryRecord) -> None:
    require(user, Permission.EDIT_QUERIES)
    queries.save_query(store, record, actor=user.username, must_exist=True)


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
