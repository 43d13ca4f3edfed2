"""Judgments exported by other labeling tools (issue 38 item 2): Label Studio's JSON-MIN
export, Prodigy's ``db-out`` JSONL and Argilla v2 record exports; and, for a JSON or JSON
Lines file the studio does not read, a message naming what it saw and what to do. Pure:
text in, :class:`~golden_store.core.judgment_formats.ParsedJudgments` out.

The shapes, as the tools write them:

* **Label Studio JSON-MIN** (``label_studio_converter``'s ``convert_to_json_min``): a JSON
  list with one flat object per *annotation*: the task's data keys, ``id`` (the task),
  the control's ``from_name`` as a key (a single choice as its label string, several as
  ``{"choices": [...]}``, a rating as ``[{"rating": N}]``), ``annotator``,
  ``annotation_id``, ``created_at``, ``updated_at``, ``lead_time``. Two annotators of one
  task are two objects with the same ``id``.
* **Prodigy** ``prodigy db-out DATASET``: JSON Lines, one annotated task per line: the
  task's keys (``text``, ``meta``, ...), ``_input_hash``, ``_task_hash``, ``_view_id``,
  ``_session_id``, ``answer`` (``accept`` / ``reject`` / ``ignore``) and, for a choice
  task, ``options`` (``[{"id", "text"}]``) with ``accept`` (the chosen option ids).
* **Argilla v2**: ``dataset.records.to_json(path)`` writes a JSON list of records
  ``{"id", "fields": {...}, "metadata": {...}, "responses": {QUESTION: [{"value",
  "user_id"}]}, "suggestions": {...}, "vectors": {...}, "_server_id"}``;
  ``records.to_list(flatten=True)`` (often saved one per line) puts fields and metadata at
  the top and a question's responses under ``QUESTION.responses``, with
  ``QUESTION.responses.users`` and ``QUESTION.responses.status`` beside them.

Every one of them holds a passage (and its query) rather than a document id, so its rows are
placed on the corpus as Label Studio's are (the passage must match exactly; a ``doc_id`` /
``query_id`` key, named with ``--doc-id-field`` / ``--query-id-field``, narrows the
search). Grades go through the same ``--map`` and defaults as Label Studio's: a label named
0-3 or like the studio's grades means that grade; Prodigy's binary accept/reject means
nothing until ``--map 'accept=3,reject=0'`` says what. Suggestions (a model's) are never
read as judgments.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from golden_store.core import textin
from golden_store.core.errors import ValidationError
from golden_store.core.judgment_formats import (
    LabelStudioFields, ParsedJudgments, _Problems, add_row, grade_of)
from golden_store.core.textin import shown

# Keys Label Studio's JSON-MIN export adds beside the task's data and the controls' values.
_LS_MIN_META = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement"}
_PRODIGY_KEYS = {"_input_hash", "_task_hash", "_view_id", "_session_id"}
WHAT_WE_READ = ("TREC qrels, BEIR qrels TSV, Label Studio JSON or JSON-MIN, Prodigy db-out JSONL, Argilla v2 "
                "records, the studio's own golden.jsonl")


# ---- telling the format ----------------------------------------------------------------------


def load(name: str, text: str) -> tuple[str, list[tuple[int, Any]]]:
    """The file as ``("json", [(n, value)])`` (one JSON document: a list's items, numbered
    from 1) or ``("jsonl", [(line, object)])`` (JSON Lines). A file that is neither is
    refused naming the line."""
    try:
        value = json.loads(text, object_pairs_hook=textin.unique_keys)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise ValidationError(f"{name} line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}); fix "
                                  "the file, or export it again from its tool.") from None
        return "jsonl", list(_lines(name, text))
    except textin.DuplicateKeyError as exc:
        raise ValidationError(f"{name}: {exc}.") from None
    items = value if isinstance(value, list) else [value]
    return "json", list(enumerate(items, start=1))


def _lines(name: str, text: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSON Lines file as a JSON value, or a refusal naming the line."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line, object_pairs_hook=textin.unique_keys)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{name} line {lineno}: not valid JSON ({exc.msg}, column {exc.colno}); every line "
                                  "of a JSON Lines file is one JSON object.") from None
        except textin.DuplicateKeyError as exc:
            raise ValidationError(f"{name} line {lineno}: {exc}.") from None


def kind_of(obj: Any) -> str | None:
    """Which tool wrote a record like ``obj``: ``labelstudio`` (a task with ``data``),
    ``argilla``, ``prodigy``, ``labelstudio-min``, or None."""
    if not isinstance(obj, dict):
        return None
    keys = set(obj)
    if isinstance(obj.get("data"), dict) and ("annotations" in keys or "predictions" in keys):
        return "labelstudio"
    if isinstance(obj.get("responses"), dict) or any(k.endswith(".responses") for k in keys):
        return "argilla"
    if "answer" in keys and (keys & _PRODIGY_KEYS or "accept" in keys):
        return "prodigy"
    if "annotation_id" in keys or ("annotator" in keys and "lead_time" in keys):
        return "labelstudio-min"
    if "query_id" in keys and isinstance(obj.get("judgments"), list):
        return "golden"
    return None


def detect(name: str, text: str) -> str:
    """The format of a file that starts with ``[`` or ``{``, told from its first record; a
    file no reader fits is refused naming what was seen and what to do."""
    shape, records = load(name, text)
    first = next((obj for _, obj in records if obj is not None), None)
    if first is None:
        raise ValidationError(f"{name}: the file holds no records (an empty JSON list); nothing to import.")
    kind = kind_of(first)
    if kind is not None and not (shape == "jsonl" and kind in ("labelstudio", "labelstudio-min")):
        return kind
    keys = ", ".join(sorted(first)[:8]) if isinstance(first, dict) else type(first).__name__
    if shape == "jsonl":
        seen = (f"a Label Studio {'JSON-MIN ' if kind == 'labelstudio-min' else ''}task per line" if kind else
                f"JSON Lines whose first record has keys {keys}")
        raise ValidationError(f"{name}: this is {seen}, which is not a judgments format the studio reads "
                              f"({WHAT_WE_READ}); export it from its tool in one of those, or write TREC qrels "
                              "lines 'qid 0 docno grade'.")
    raise ValidationError(f"{name}: this is JSON whose first record has keys {keys}, which is not a judgments export "
                          f"the studio reads ({WHAT_WE_READ}); export it in one of those, or pass --format.")


# ---- shared: one judgment from a labeled record ----------------------------------------------


def _done(out: ParsedJudgments, problems: _Problems, what: str) -> ParsedJudgments:
    problems.raise_if_any(out.name, what)
    if not out.grades:
        raise ValidationError(f"{out.name}: no record carries a judgment ({out.unlabeled} without one); nothing to "
                              "import.")
    return out


# ---- Label Studio JSON-MIN -------------------------------------------------------------------


def _ls_min_value(value: Any) -> tuple[str, str] | str:
    """(kind, label) of a JSON-MIN control value, or why it cannot be read."""
    if isinstance(value, str):
        return "choices", value
    if isinstance(value, dict) and isinstance(value.get("choices"), list):
        value = value["choices"]
        if len(value) == 1 and isinstance(value[0], str):
            return "choices", value[0]
        return f"its choice {shown(value)} is not exactly one label"
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict) and "rating" in value:
        r = value["rating"]
        if isinstance(r, bool) or not isinstance(r, (int, float)) or r != int(r):
            return f"its rating {shown(r)} is not a whole number"
        return "rating", str(int(r))
    return f"its value {shown(value)} is not a choice or a rating"


def parse_labelstudio_min(name: str, text: str, mapping: dict[str, int] | None = None,
                          fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """Label Studio's JSON-MIN export: one flat object per annotation; the grade is the value
    of the control named ``--from-name`` (default: the one key that is neither the task's
    query/passage/id keys nor the export's own)."""
    mapping, f = mapping or {}, fields or LabelStudioFields()
    _, records = load(name, text)
    out = ParsedJudgments(name, "labelstudio-min")
    problems = _Problems()
    data_keys = {f.query, f.passage, f.query_id, f.doc_id}
    for n, rec in records:
        if not isinstance(rec, dict):
            problems.add(f"{name} record #{n}: not a JSON object")
            continue
        tid = rec.get("id", f"#{n}")
        where = f"{name} task {tid}"
        if f.from_name is not None:
            control = f.from_name if f.from_name in rec else None
        else:
            candidates = [k for k in rec if k not in _LS_MIN_META and k not in data_keys]
            if len(candidates) > 1:
                problems.add(f"{where}: cannot tell which key holds the grade ({', '.join(sorted(candidates))}); "
                             "pass --from-name")
                continue
            control = candidates[0] if candidates else None
        if control is None or rec.get(control) in (None, "", []):
            out.unlabeled += 1
            continue
        got = _ls_min_value(rec[control])
        if isinstance(got, str):
            problems.add(f"{where}: {got}")
            continue
        grade = grade_of(*got, mapping)
        if grade is None:
            problems.add(f"{where}: the {'rating' if got[0] == 'rating' else 'choice'} {shown(got[1])} has no "
                         f"grade; say what it means with --map (e.g. --map '{got[1]}=2')")
            continue
        add_row(out, problems, where, tid, grade, rec, f)
    return _done(out, problems, "task(s)")


# ---- Prodigy db-out ---------------------------------------------------------------------------


def parse_prodigy(name: str, text: str, mapping: dict[str, int] | None = None,
                  fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """Prodigy's ``db-out`` JSONL: a choice task's grade is its one accepted option (by id,
    else by its text); a task without options is binary, its ``answer`` (accept / reject)
    mapped with ``--map``. ``ignore``, and a rejected choice task, are not judgments (counted).
    The passage is ``--passage-field`` (default ``passage``), else Prodigy's ``text``; keys are
    looked up in the task, then in its ``meta``."""
    mapping, f = mapping or {}, fields or LabelStudioFields()
    _, records = load(name, text)
    out = ParsedJudgments(name, "prodigy")
    problems = _Problems()
    for lineno, task in records:
        where = f"{name} line {lineno}"
        if not isinstance(task, dict):
            problems.add(f"{where}: not a JSON object")
            continue
        answer = task.get("answer")
        options = task.get("options")
        if answer not in ("accept", "reject", "ignore"):
            problems.add(f"{where}: field 'answer' is {shown(answer)}, not accept, reject or ignore")
            continue
        if answer == "ignore" or (answer == "reject" and isinstance(options, list)):
            out.unlabeled += 1
            continue
        if isinstance(options, list):
            accepted = task.get("accept")
            if not isinstance(accepted, list) or len(accepted) != 1:
                problems.add(f"{where}: field 'accept' is {shown(accepted)}, not exactly one chosen option")
                continue
            chosen = next((o for o in options if isinstance(o, dict) and o.get("id") == accepted[0]), None)
            label = str(accepted[0])
            grade = grade_of("choices", label, mapping)
            if grade is None and chosen is not None and isinstance(chosen.get("text"), str):
                label = chosen["text"]
                grade = grade_of("choices", label, mapping)
        else:
            label = str(answer)
            grade = mapping.get(label)
        if grade is None:
            example = "accept=3,reject=0" if not isinstance(options, list) else f"{label}=2"
            problems.add(f"{where}: the {'answer' if not isinstance(options, list) else 'option'} {shown(label)} has "
                         f"no grade; say what it means with --map (e.g. --map '{example}')")
            continue
        add_row(out, problems, where, lineno, grade, task, f, task.get("meta") or {}, passage_default="text")
    return _done(out, problems, "line(s)")


# ---- Argilla v2 -------------------------------------------------------------------------------


def _argilla_responses(rec: dict) -> dict[str, list[tuple[Any, str | None]]]:
    """Each question's responses as (value, status) pairs, from either export shape; only
    submitted responses count (a draft or a discarded one is not a judgment)."""
    out: dict[str, list[tuple[Any, str | None]]] = {}
    nested = rec.get("responses")
    if isinstance(nested, dict):
        for q, rs in nested.items():
            for r in rs if isinstance(rs, list) else []:
                if isinstance(r, dict):
                    out.setdefault(q, []).append((r.get("value"), r.get("status")))
    for key, values in rec.items():
        if key.endswith(".responses") and isinstance(values, list):
            q = key[:-len(".responses")]
            status = rec.get(f"{key}.status")
            statuses = status if isinstance(status, list) and len(status) == len(values) else [None] * len(values)
            out.setdefault(q, []).extend(zip(values, statuses))
    return {q: [(v, s) for v, s in rs if s in (None, "submitted") and v is not None] for q, rs in out.items()}


def parse_argilla(name: str, text: str, mapping: dict[str, int] | None = None,
                  fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """Argilla v2 records (``to_json``'s nested list, or ``to_list(flatten=True)`` as JSON or
    JSON Lines): the grade is the submitted response to the question named ``--from-name``
    (default: the record's one answered question); several submitted responses must agree.
    Query and passage keys are looked up in the record, then its ``fields`` and ``metadata``."""
    mapping, f = mapping or {}, fields or LabelStudioFields()
    shape, records = load(name, text)
    out = ParsedJudgments(name, "argilla")
    out.unit = "line" if shape == "jsonl" else "record"
    problems = _Problems()
    for n, rec in records:
        ref = n if shape == "jsonl" else (rec.get("id") if isinstance(rec, dict) and rec.get("id") else f"#{n}")
        where = out.at(ref)
        if not isinstance(rec, dict):
            problems.add(f"{where}: not a JSON object")
            continue
        responses = _argilla_responses(rec)
        answered = {q: rs for q, rs in responses.items() if rs}
        if f.from_name is not None:
            answered = {q: rs for q, rs in answered.items() if q == f.from_name}
        if not answered:
            out.unlabeled += 1
            continue
        if len(answered) > 1:
            problems.add(f"{where}: responses to {len(answered)} questions ({', '.join(sorted(answered))}); pass "
                         "--from-name to say which one holds the grade")
            continue
        [(question, rs)] = answered.items()
        grades: list[int] = []
        for value, _status in rs:
            label = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
            grade = None if label is None else grade_of("choices", label, mapping)
            if grade is None:
                problems.add(f"{where}: the response {shown(value)} to {question!r} has no grade; say what it means "
                             f"with --map (e.g. --map '{value}=2')")
                break
            grades.append(grade)
        else:
            if len(set(grades)) > 1:
                problems.add(f"{where}: its {len(grades)} submitted responses to {question!r} disagree "
                             f"({', '.join(map(str, grades))}); settle them in Argilla, or import one annotator's "
                             "export at a time (--source NAME)")
                continue
            add_row(out, problems, where, ref, grades[0], rec, f, rec.get("fields") or {}, rec.get("metadata") or {})
    return _done(out, problems, "record(s)")


# ---- the studio's own JSONL export -----------------------------------------------------------


def _span_grade(j: Any) -> tuple[str, int, int, int] | str:
    """(doc_id, start, end, grade) of one exported judgment, or why it cannot be read."""
    if not isinstance(j, dict):
        return "a judgment is not a JSON object"
    doc, start, end, grade = j.get("doc_id"), j.get("start"), j.get("end"), j.get("grade")
    if not isinstance(doc, str) or not doc:
        return "a judgment's field 'doc_id' is missing"
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, grade)):
        return f"the judgment of {shown(doc)}: fields 'start', 'end' and 'grade' must be integers"
    assert isinstance(start, int) and isinstance(end, int) and isinstance(grade, int)
    if not 0 <= start < end:
        return f"the judgment of {shown(doc)}: the span [{start}:{end}] is empty or negative"
    if grade not in (0, 1, 2, 3):
        return f"the judgment of {shown(doc)}: grade {grade} is not on the 0-3 scale"
    return doc, start, end, grade


def parse_golden_jsonl(name: str, text: str, mapping: dict[str, int] | None = None,
                       fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """``golden export --format jsonl``'s ``golden.jsonl``: each question's ``judgments``
    (``doc_id``, ``start``, ``end``, ``grade``) as they were frozen, span and all, so the export
    reads back to the same judgments. (Its evidence spans and nuggets are authored content with
    their own history and are not made up again as labels; its ``qrels`` are derived.)"""
    del mapping, fields  # the studio's own grades: 0-3, meaning themselves
    _, records = load(name, text)
    out = ParsedJudgments(name, "golden")
    problems = _Problems()
    for lineno, rec in records:
        where = f"{name} line {lineno}"
        qid = rec.get("query_id") if isinstance(rec, dict) else None
        if not isinstance(qid, str) or not qid:
            problems.add(f"{where}: field 'query_id' is missing")
            continue
        judgments = rec.get("judgments")
        if not isinstance(judgments, list):
            problems.add(f"{where}: field 'judgments' is not a list")
            continue
        if not judgments:
            out.unlabeled += 1
        for j in judgments:
            got = _span_grade(j)
            if isinstance(got, str):
                problems.add(f"{where}: {got}")
                continue
            doc, start, end, grade = got
            out.refs.append(lineno)
            out.query_ids.append(qid)
            out.doc_ids.append(doc)
            out.grades.append(grade)
            out.starts.append(start)
            out.ends.append(end)
    problems.raise_if_any(name, "line(s)")
    if not out.grades:
        raise ValidationError(f"{name}: no question carries a judgment; nothing to import.")
    return out


PARSERS = {"labelstudio-min": parse_labelstudio_min, "prodigy": parse_prodigy, "argilla": parse_argilla,
           "golden": parse_golden_jsonl}
