"""Reading judgments people already have: TREC qrels, BEIR qrels TSV and Label Studio JSON
exports (issue 28); Label Studio JSON-MIN, Prodigy and Argilla exports are read by
:mod:`golden_store.core.judgment_tools` (issue 38). Pure: text in, rows out, no store; placing the rows on the store's queries
and corpus is :mod:`golden_store.live.judgment_imports`.

Why a module of its own: each format has its own way to be wrong (a qrels line with three
fields, a BEIR file without its header, a Label Studio task with two annotations that
disagree), and every such problem must name the file and the line (or the task) and say
what to do, before anything is written. The parsers collect every problem they find and
raise one :class:`ValidationError`.

Grades. The studio's scale is 0-3 (irrelevant, related, partially answers, fully answers).
Integer grades 0-3 in a qrels file mean themselves. A value above 3 is refused unless a
``--map`` says what it means (``4=3``); a negative value (TREC's -1 "not judged", -2 "junk")
is left out and counted, unless the map names it (``-2=0``). Label Studio choices and
ratings go through the same map; without one, a choice named 0-3 or named like the studio's
grades, and a 1-4 star rating (1 star = 0), have a default meaning; any other value is
refused naming the task.

Actors. An imported judgment is a grade event whose actor says where it came from:
``import:FILE`` by default, ``assessor:NAME`` when the import names its assessor. A person's
username never holds ``:`` (annotator.identity) and the CLI's own actor is ``cli:WHO``, so
these can never be taken for a person's account.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from golden_store.core.errors import ValidationError
from golden_store.core import textin
from golden_store.core.textin import shown

FORMATS = ("trec", "beir", "labelstudio", "labelstudio-min", "prodigy", "argilla", "golden")
# Formats whose rows carry a passage (placed on the corpus by the quote resolver), not a doc id.
PASSAGE_FORMATS = ("labelstudio", "labelstudio-min", "prodigy", "argilla")
IMPORT_PREFIX = "import:"
ASSESSOR_PREFIX = "assessor:"
ACTOR_PREFIXES = (IMPORT_PREFIX, ASSESSOR_PREFIX)
# SQL predicate over a column named ``actor``: the grade came from an import.
IMPORTED_ACTOR_SQL = "(actor LIKE 'import:%' OR actor LIKE 'assessor:%')"
MAX_PROBLEMS = 50
_SOURCE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+ -]{0,99}$")

# The studio's grade names, as a Label Studio choice may spell them (case-insensitive).
_DEFAULT_CHOICES = {"0": 0, "1": 1, "2": 2, "3": 3, "irrelevant": 0, "not relevant": 0,
                    "related, does not answer": 1, "related": 1, "partially answers": 2, "fully answers": 3}
# A 1-4 star rating: one star is irrelevant, four fully answers.
_DEFAULT_RATINGS = {"1": 0, "2": 1, "3": 2, "4": 3}


def is_imported_actor(actor: str) -> bool:
    """Whether a grade's actor is an import (a source), not a person."""
    return actor.startswith(ACTOR_PREFIXES)


def shown_actor(actor: str) -> str:
    """How a grade's author reads where grades are listed: an import as ``imported (FILE)``
    or ``imported (assessor NAME)``, a person as their username."""
    if actor.startswith(IMPORT_PREFIX):
        return f"imported ({actor[len(IMPORT_PREFIX):]})"
    if actor.startswith(ASSESSOR_PREFIX):
        return f"imported (assessor {actor[len(ASSESSOR_PREFIX):]})"
    return actor


def source_actor(file_name: str, source: str | None) -> str:
    """The actor of an import's grades: ``assessor:SOURCE`` when named, else ``import:FILE``."""
    if source is not None:
        source = source.strip()
        if not _SOURCE_RE.match(source):
            raise ValidationError(f"--source {shown(source)} must be 1-100 letters, digits, spaces or '_.@+-' "
                                  "(an assessor's or a team's name).")
        return ASSESSOR_PREFIX + source
    # the file's name, with what a source name may not hold (a comma would split the list of
    # graders a final grade is decided by) made '_'
    name = re.sub(r"[^A-Za-z0-9_.@+ -]", "_", file_name.strip()[:100]) or "file"
    return IMPORT_PREFIX + name


def parse_map(text: str | None) -> dict[str, int]:
    """``"Highly relevant=3, Relevant=2, 4=3"`` as {value: grade}; keys are compared without
    case. A grade outside 0-3 or an entry without ``=`` is refused."""
    out: dict[str, int] = {}
    if not text or not text.strip():
        return out
    for part in text.split(","):
        if not part.strip():
            continue
        key, eq, value = part.rpartition("=")
        if not eq or not key.strip():
            raise ValidationError(f"--map entry {shown(part.strip())} is not VALUE=GRADE (e.g. 'Relevant=2').")
        try:
            grade = int(value.strip())
        except ValueError:
            grade = -1
        if grade not in (0, 1, 2, 3):
            raise ValidationError(f"--map entry {shown(part.strip())}: the grade must be 0, 1, 2 or 3.")
        out[key.strip().lower()] = grade
    return out


@dataclass
class ParsedJudgments:
    """A file's judgments, column by column (a million-line qrels file stays a few lists).

    ``refs``: each row's line number (qrels) or task id (Label Studio), for messages;
    ``query_ids`` / ``doc_ids``: None where the format leaves them to be found (a Label
    Studio task without ids); ``query_texts`` / ``passages``: Label Studio only."""

    name: str
    fmt: str
    refs: list[Any] = field(default_factory=list)
    query_ids: list[str | None] = field(default_factory=list)
    doc_ids: list[str | None] = field(default_factory=list)
    grades: list[int] = field(default_factory=list)
    query_texts: list[str | None] = field(default_factory=list)
    passages: list[str | None] = field(default_factory=list)
    negative: int = 0    # lines with a negative grade left out (TREC: not judged / junk)
    unlabeled: int = 0   # Label Studio tasks without a (non-cancelled) annotation
    unit: str = ""       # what a ref counts: line, task or record ("": told from the format)
    starts: list[int] = field(default_factory=list)  # the studio's own JSONL: each row's span (else whole documents)
    ends: list[int] = field(default_factory=list)

    def where(self, i: int) -> str:
        """Row ``i``'s place in the file, for a message."""
        return self.at(self.refs[i])

    def at(self, ref: Any) -> str:
        """The place in the file of a row whose ref is ``ref``: ``FILE line N`` or ``FILE task ID``."""
        unit = self.unit or ("task" if self.fmt in ("labelstudio", "labelstudio-min") else "line")
        return f"{self.name} {unit} {ref}"

    def __len__(self) -> int:
        return len(self.grades)


BEIR_HEADER = ("query-id", "corpus-id", "score")


def is_beir_header(line: str) -> bool:
    """Whether ``line`` is a BEIR qrels header (``query-id<TAB>corpus-id<TAB>score``; ``_``
    for ``-`` and any letter case read too). One test for every reader of BEIR qrels: the
    judgments import here and ``golden score --qrels`` (:mod:`golden_store.scoring.trec_files`)."""
    return tuple(p.strip().lower().replace("_", "-") for p in line.strip("\r\n").split("\t")) == BEIR_HEADER


# The export writes a small JSON file beside each qrels file saying how to score it
# (golden_store.versions.qrels); its format tag, so an import given it by mistake can say so.
QRELS_SIDECAR_FORMAT = "golden-studio/qrels-scoring@1"


def detect_format(name: str, text: str) -> str:
    """``beir`` (tab-separated, or a ``query-id`` header) or ``trec`` (four fields), told from
    the first line that is not blank or a comment; a JSON or JSON Lines file by the tool that
    wrote its records (:func:`golden_store.core.judgment_tools.detect`: Label Studio JSON or
    JSON-MIN, Prodigy, Argilla, or a refusal naming what it saw)."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith(("[", "{")):
            if QRELS_SIDECAR_FORMAT in text[:4096]:
                raise ValidationError(f"{name}: this is the scoring note an export writes beside its qrels (how to "
                                      "score them), not judgments; import the qrels file itself (qrels.txt, "
                                      "qrels/test.tsv).")
            from golden_store.core import judgment_tools

            return judgment_tools.detect(name, text)
        parts = s.split()
        if len(parts) == 6 and parts[1].upper() == "Q0":  # a run given by mistake (often tab-separated too)
            raise ValidationError(f"{name} line {lineno}: this looks like a TREC run ('qid Q0 docno rank score tag', 6 "
                                  f"fields), not judgments: import it with golden runs import; judgments are qrels "
                                  f"lines 'qid 0 docno grade'.")
        if "\t" in s or s.lower().startswith("query-id") or s.lower().startswith("query_id"):
            return "beir"
        if len(s.split()) == 4:
            return "trec"
        raise ValidationError(f"{name} line {lineno}: cannot tell the judgments' format: expected a TREC qrels line "
                              f"'qid 0 docno grade', a BEIR TSV line 'query-id<TAB>corpus-id<TAB>score' or a JSON "
                              f"export of Label Studio, Prodigy or Argilla, got {shown(s)}; pass --format.")
    raise ValidationError(f"{name}: the file holds no judgments (it is empty or only comments).")


class _Problems:
    """Problems of one file, at most :data:`MAX_PROBLEMS` kept (the count goes on)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.count = 0

    def add(self, text: str) -> None:
        self.count += 1
        if len(self.items) < MAX_PROBLEMS:
            self.items.append(text)

    def raise_if_any(self, name: str, what: str) -> None:
        if self.count:
            more = f" (the first {len(self.items)} listed)" if self.count > len(self.items) else ""
            raise ValidationError(f"{name}: {self.count} bad {what}{more}; fix them and import again - nothing was "
                                  "imported.", self.items)


def _grade(raw: str, mapping: dict[str, int]) -> int | None | str:
    """The 0-3 grade of an integer judgment value; None: negative, left out; a str: why refused."""
    key = raw.strip().lower()
    if key in mapping:
        return mapping[key]
    try:
        value = int(key)
    except ValueError:
        return f"the grade {shown(raw)} is not an integer"
    if key.lstrip("+-") != str(abs(value)):  # '02', '+1': not what a qrels writer writes, and not one key
        return f"the grade {shown(raw)} is not an integer"
    if value < 0:
        return None
    if value > 3:
        return (f"the grade {value} is above the studio's 0-3 scale; say what it means with --map "
                f"(e.g. --map '{value}=3')")
    return value


def _add_qrels_line(out: ParsedJudgments, problems: _Problems, lineno: int, query_id: str, doc_id: str,
                    raw_grade: str, mapping: dict[str, int]) -> None:
    """One qrels line's judgment (TREC or BEIR: the same grade rules): a grade that is refused
    is a problem naming the line, a negative one is counted and left out."""
    g = _grade(raw_grade, mapping)
    if isinstance(g, str):
        problems.add(f"{out.name} line {lineno}: {g}")
        return
    if g is None:
        out.negative += 1
        return
    out.refs.append(lineno)
    out.query_ids.append(query_id)
    out.doc_ids.append(doc_id)
    out.grades.append(g)


def parse_trec(name: str, text: str, mapping: dict[str, int] | None = None) -> ParsedJudgments:
    """TREC qrels: ``qid iteration docno grade`` per line, whitespace-separated (trec_eval's
    form); blank lines and lines starting with ``#`` are left out; CRLF line ends are read."""
    mapping = mapping or {}
    out = ParsedJudgments(name, "trec")
    problems = _Problems()
    for lineno, line in enumerate(text.split("\n"), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if len(parts) != 4:
            problems.add(f"{name} line {lineno}: expected 4 fields 'qid 0 docno grade', got {len(parts)}: {shown(s)}")
            continue
        _add_qrels_line(out, problems, lineno, parts[0], parts[2], parts[3], mapping)
    problems.raise_if_any(name, "line(s)")
    if not out.grades and not out.negative:
        raise ValidationError(f"{name}: the file holds no judgments (it is empty or only comments).")
    return out


def parse_beir(name: str, text: str, mapping: dict[str, int] | None = None) -> ParsedJudgments:
    """BEIR qrels: a header line (``query-id<TAB>corpus-id<TAB>score``), then one judgment per
    line, tab-separated; blank lines left out; CRLF line ends are read."""
    mapping = mapping or {}
    out = ParsedJudgments(name, "beir")
    problems = _Problems()
    header_seen = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        s = line.strip("\r\n")
        if not s.strip():
            continue
        parts = [p.strip() for p in s.split("\t")]
        if not header_seen:
            header_seen = True
            if not is_beir_header(s):
                raise ValidationError(f"{name} line {lineno}: a BEIR qrels file starts with the header "
                                      f"'query-id<TAB>corpus-id<TAB>score', got {shown(s)}; add the header (or pass "
                                      "--format trec for a TREC qrels file).")
            continue
        if len(parts) != 3 or not parts[0] or not parts[1]:
            problems.add(f"{name} line {lineno}: expected 3 tab-separated fields 'query-id corpus-id score', got "
                         f"{len(parts)}: {shown(s)}")
            continue
        _add_qrels_line(out, problems, lineno, parts[0], parts[1], parts[2], mapping)
    problems.raise_if_any(name, "line(s)")
    if not header_seen:
        raise ValidationError(f"{name}: the file holds no judgments (it is empty).")
    if not out.grades and not out.negative:
        raise ValidationError(f"{name}: the file holds only its header, no judgments.")
    return out


@dataclass(frozen=True)
class LabelStudioFields:
    """Where a Label Studio task keeps what a judgment needs (its ``data`` keys) and which
    control holds the grade (``from_name``; None: the task's one choices/rating result)."""

    query: str = "query"
    passage: str = "passage"
    query_id: str = "query_id"
    doc_id: str = "doc_id"
    from_name: str | None = None


def _ls_value(result: dict) -> tuple[str, str] | str:
    """(kind, value as a map key) of one choices/rating result, or why it cannot be read."""
    value = result.get("value")
    if not isinstance(value, dict):
        return "its result has no 'value' object"
    if result.get("type") == "rating":
        r = value.get("rating")
        if isinstance(r, bool) or not isinstance(r, (int, float)) or r != int(r):
            return f"its rating {shown(r)} is not a whole number"
        return "rating", str(int(r))
    choices = value.get("choices")
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], str):
        return f"its choice {shown(choices)} is not exactly one label"
    return "choices", choices[0]


def grade_of(kind: str, value: str, mapping: dict[str, int]) -> int | None:
    """A label's grade by ``--map``, else the defaults (a 1-4 star rating; a label named 0-3 or
    like the studio's grades)."""
    key = value.strip().lower()
    if key in mapping:
        return mapping[key]
    return (_DEFAULT_RATINGS if kind == "rating" else _DEFAULT_CHOICES).get(key)


def field_of(obj: dict, key: str, *also: dict) -> Any:
    """``key`` of the record, else of one of its nested objects (``meta``, ``fields``, ...)."""
    if key in obj:
        return obj[key]
    for more in also:
        if isinstance(more, dict) and key in more:
            return more[key]
    return None


def add_row(out: ParsedJudgments, problems: _Problems, where: str, ref: Any, grade: int, data: dict,
         f: LabelStudioFields, *nested: dict, passage_default: str | None = None, key_prefix: str = "") -> None:
    """One judgment row from a record's query and passage keys (or a problem naming them, as
    ``data.passage`` for a Label Studio task, ``key_prefix`` ``"data."``, else quoted). Every
    reader of a tool's export (Label Studio, its JSON-MIN, Prodigy, Argilla) adds rows here."""
    def k(key: str) -> str:
        return f"{key_prefix}{key}" if key_prefix else repr(key)

    passage = field_of(data, f.passage, *nested)
    if passage is None and passage_default is not None:
        passage = field_of(data, passage_default, *nested)
    qtext, qid, did = field_of(data, f.query, *nested), field_of(data, f.query_id, *nested), field_of(data, f.doc_id, *nested)
    if not isinstance(passage, str) or not passage.strip():
        problems.add(f"{where}: no passage text in {k(f.passage)} (name its key with --passage-field)")
        return
    if qid is None and (not isinstance(qtext, str) or not qtext.strip()):
        problems.add(f"{where}: neither {k(f.query_id)} nor {k(f.query)} names the query (name the keys with "
                     "--query-id-field / --query-field)")
        return
    out.refs.append(ref)
    out.query_ids.append(None if qid is None else str(qid))
    out.doc_ids.append(None if did is None else str(did))
    out.grades.append(grade)
    out.query_texts.append(qtext if isinstance(qtext, str) else None)
    out.passages.append(passage)



def parse_labelstudio(name: str, text: str, mapping: dict[str, int] | None = None,
                      fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """A Label Studio JSON export (a list of tasks: ``id``, ``data``, ``annotations[].result[]``
    with ``type`` ``choices`` or ``rating``): one judgment per task from its annotations that
    were not cancelled (several must agree). Tasks nobody annotated are counted, not refused."""
    mapping = mapping or {}
    f = fields or LabelStudioFields()
    try:
        tasks = json.loads(text, object_pairs_hook=textin.unique_keys)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # a second JSON value: JSON Lines, valid, but not this export
            raise ValidationError(f"{name}: this is a JSON Lines file (one record per line), not a Label Studio JSON "
                                  "export; leave out --format and its format is told from its records (Prodigy "
                                  "db-out and Argilla records are read).") from None
        raise ValidationError(f"{name} line {exc.lineno}: not valid JSON ({exc.msg}); export the project again as "
                              "JSON.") from None
    except textin.DuplicateKeyError as exc:
        raise ValidationError(f"{name}: {exc}.") from None
    if isinstance(tasks, dict):
        tasks = [tasks]
    from golden_store.core.judgment_tools import kind_of

    other = kind_of(tasks[0]) if isinstance(tasks, list) and tasks else None
    if other not in (None, "labelstudio"):
        raise ValidationError(f"{name}: this is {'Label Studio JSON-MIN' if other == 'labelstudio-min' else other} "
                              f"export, not Label Studio's JSON export; pass --format {other} (or leave --format "
                              "out).")
    if not isinstance(tasks, list):
        raise ValidationError(f"{name}: a Label Studio export is a JSON list of tasks, got {type(tasks).__name__}.")
    out = ParsedJudgments(name, "labelstudio")
    problems = _Problems()
    for n, task in enumerate(tasks, start=1):
        if not isinstance(task, dict):
            problems.add(f"{name} task #{n}: not a JSON object")
            continue
        tid = task.get("id", f"#{n}")
        where = f"{name} task {tid}"
        data = task.get("data")
        if not isinstance(data, dict):
            problems.add(f"{where}: no 'data' object")
            continue
        grades: list[int] = []
        bad = False
        for ann in task.get("annotations") or []:
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            results = [r for r in ann.get("result") or [] if isinstance(r, dict) and r.get("type") in
                       ("choices", "rating") and (f.from_name is None or r.get("from_name") == f.from_name)]
            if not results:
                continue
            if len(results) > 1:
                names = sorted({str(r.get("from_name")) for r in results})
                problems.add(f"{where}: {len(results)} choices/rating results ({', '.join(names)}); pass --from-name "
                             "to say which one holds the grade")
                bad = True
                break
            got = _ls_value(results[0])
            if isinstance(got, str):
                problems.add(f"{where}: {got}")
                bad = True
                break
            kind, value = got
            grade = grade_of(kind, value, mapping)
            if grade is None:
                problems.add(f"{where}: the {'rating' if kind == 'rating' else 'choice'} {shown(value)} has no grade; "
                             f"say what it means with --map (e.g. --map '{value}=2')")
                bad = True
                break
            grades.append(grade)
        if bad:
            continue
        if not grades:
            out.unlabeled += 1
            continue
        if len(set(grades)) > 1:
            problems.add(f"{where}: its {len(grades)} annotations disagree ({', '.join(map(str, grades))}); import "
                         "one annotator's export at a time (--source NAME), or settle the task in Label Studio")
            continue
        add_row(out, problems, where, tid, grades[0], data, f, key_prefix="data.")
    problems.raise_if_any(name, "task(s)")
    if not out.grades:
        raise ValidationError(f"{name}: no task carries a choices or rating annotation ({out.unlabeled} task(s) "
                              "without one); nothing to import.")
    return out


def parse(name: str, text: str, fmt: str | None, mapping: dict[str, int] | None = None,
          fields: LabelStudioFields | None = None) -> ParsedJudgments:
    """The file's judgments in format ``fmt`` (None: told from the content)."""
    if fmt is None:
        fmt = detect_format(name, text)
    if fmt == "trec":
        return parse_trec(name, text, mapping)
    if fmt == "beir":
        return parse_beir(name, text, mapping)
    if fmt == "labelstudio":
        return parse_labelstudio(name, text, mapping, fields)
    if fmt in ("labelstudio-min", "prodigy", "argilla", "golden"):
        from golden_store.core import judgment_tools

        return judgment_tools.PARSERS[fmt](name, text, mapping, fields)
    raise ValidationError(f"Unknown judgments format {shown(fmt)}; use one of {', '.join(FORMATS)}.")
