"""Reading back what the studio exports, for the exports that are not a version's (issue 38
item 2): a ``golden results export`` Parquet file back into a store, so recorded evaluations
move between stores (a CI runner's store into the team's) with their provenance; a ``golden
nuggets export`` file of approved nuggets back onto its questions. A version's
own exports read back through the importers of their kinds (``golden import-beir``, ``queries
import``, ``judgments import``; see ``tests/annotator/test_export_round_trip.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.db.store import Store


def import_results(store: Store, user: User, path: str | Path) -> dict[str, list[str]]:
    """Recorded evaluations from a results export (engineers, as recording one:
    ``Permission.IMPORT_RUNS``); all or nothing, never overwriting (see
    :func:`golden_store.live.results.import_results`)."""
    require(user, Permission.IMPORT_RUNS)
    from golden_store.live import results

    return results.import_results(store, Path(path))


def read_nuggets_export(path: str | Path, doc_lengths: Callable[[list[str]], dict[str, int]]) -> list[dict]:
    """The lines of a ``golden nuggets export`` file, checked: each names its question, a
    nugget id, text and importance (the studio's rules for a nugget), and a supporting quote's
    span lies inside a document of this corpus (``doc_lengths``: the named documents' text
    lengths). Every problem names the file and line."""
    from golden_store.core import textin
    from golden_store.core.errors import ValidationError
    from golden_store.core.jsonl import iter_objects
    from golden_store.live import nuggets

    name = str(path)
    problems: list[str] = []
    rows: list[dict] = []
    seen: dict[tuple[str, str], int] = {}
    objects = list(iter_objects(name, textin.read_text(path), problems))
    known_docs = doc_lengths(sorted({str(o["doc_id"]) for _, o in objects if o.get("doc_id") is not None}))
    for lineno, obj in objects:
        where = f"{name} line {lineno}"
        missing = [f for f in ("query_id", "nugget_id", "text", "importance") if not isinstance(obj.get(f), str)]
        if missing:
            problems.append(f"{where}: field {missing[0]!r} is missing or not a string")
            continue
        try:
            nuggets.check(nuggets.NuggetDraft(obj["text"], obj["importance"]), where)
        except ValidationError as exc:
            problems.append(str(exc).rstrip("."))
            continue
        doc, start, end = obj.get("doc_id"), obj.get("start"), obj.get("end")
        if doc is not None:
            ok = isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= known_docs.get(doc, -1)
            if not ok:
                problems.append(f"{where}: the supporting quote's span {doc}[{start}:{end}] is not in this corpus "
                                "(import the corpus the nuggets were written on first)")
                continue
        elif obj.get("quote"):
            problems.append(f"{where}: the supporting quote has no document (an approved nugget's quote always has "
                            "one)")
            continue
        key = (obj["query_id"], obj["nugget_id"])
        if key in seen:
            problems.append(f"{where}: nugget {key[1]} of {key[0]} again (first at line {seen[key]})")
            continue
        seen[key] = lineno
        position = obj.get("position")
        rows.append({**{f: obj.get(f) for f in nuggets.EXPORT_FIELDS}, "position": position if isinstance(
            position, int) else lineno, "model": obj.get("model"), "prompt_sha": obj.get("prompt_sha")})
    if not rows and not problems:
        problems.append(f"{name}: the file holds no nuggets")
    if problems:
        if len(problems) == 1:
            raise ValidationError(f"Nuggets import refused: {problems[0]}; nothing was imported.")
        raise ValidationError(f"Nuggets import refused: {len(problems)} problem(s); nothing was imported.", problems)
    return rows


def import_nuggets(store: Store, user: User, path: str | Path) -> dict[str, list[str]]:
    """Approved nuggets from a ``golden nuggets export`` file (whoever may author and approve
    nuggets: ``Permission.LABEL``, as approving on the Nuggets page); all or nothing, never replacing a list people edited (see
    :func:`golden_store.live.nuggets.import_approved`)."""
    require(user, Permission.LABEL)
    from golden_store.live import documents, nuggets

    rows = read_nuggets_export(path, lambda ids: {d: len(t) for d, t in documents.raw_texts(store, ids).items()})
    return nuggets.import_approved(store, rows, actor=user.username)
