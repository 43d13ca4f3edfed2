"""Bringing a BEIR dataset in whole (issue 38 item 2): ``golden import-beir DIR``.

BEIR's layout is how most IR datasets travel (and what ``golden export --format beir``
writes): ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``, optionally ``metadata``), ``qrels/{split}.tsv`` (header ``query-id corpus-id
score``). The studio's export adds ``qrels-unanswerable/{split}.tsv`` (the unanswerable
questions' rows, kept apart from the scored qrels) and a scoring note beside each qrels file;
both are read back when present, so an export comes in as it went out.

Why one command for the folder rather than three per-file commands (those read the BEIR
shapes too: ``corpus import`` takes ``_id``, ``queries import`` takes ``_id`` and
``metadata``): the three files depend on each other (the qrels name the corpus's and the
queries' ids), so only a reader of the whole folder can check them together before anything
is written. Everything that can be wrong with the input is found first: every problem names
its file, line and field, and the store is left exactly as it was. Then three writes, each
all or nothing: the corpus (the studio's one corpus import: canonicalized, streamed in
bounded memory, the search index fed as it goes), the queries, the qrels as imported
judgments. The import is idempotent, so a write interrupted between two of them (a crash, a
full disk) is finished by running the same command again; the same dataset again changes
nothing and says so.

Documents. ``text`` is the document's text, canonicalized as every document is (its raw
text kept, so spans are offsets into exactly the text the dataset gave); ``title`` is its
title. The title is not glued onto the text: a span's offsets must mean the same in the
dataset and in the studio, and a version exported and imported again keeps its spans.

Qrels. Imported judgments are grade events by the dataset (``import:NAME SPLIT``, shown as
"imported (NAME SPLIT)"), listed by ``golden judgments list`` and withdrawn by ``golden
judgments retract ID``, as any judgments import. The studio grades 0-3 and counts grade >= 2
as relevant; most BEIR datasets grade 0/1 (1 = relevant) or 0-2. Reading their 1 as the
studio's 1 ("related, does not answer") would make every relevant document irrelevant to
every binary measure without a word, so a qrels file whose grades stop below 3 and that
carries no studio scoring note is refused until ``--map`` says what its grades mean.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store.core import judgment_formats as jf
from golden_store.core import textin
from golden_store.core.errors import OptionRequiredError, ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.core.textin import shown
from golden_store.corpus.sources import Progress
from golden_store.db.store import Store, utcnow

DEFAULT_SPLIT = "test"
# The stratum of questions whose file names none (most BEIR datasets): created on first use.
DEFAULT_STRATUM = "imported"
DEFAULT_STRATUM_DESCRIPTION = "Imported from a dataset that does not say which stratum a question belongs to."
_MAX_LISTED = 20


@dataclass(frozen=True)
class BeirLayout:
    """The files of a BEIR folder for one split."""

    root: Path
    split: str
    corpus: Path
    queries: Path
    qrels: Path
    unanswerable: Path | None  # the studio export's qrels-unanswerable/{split}.tsv, when present

    @property
    def dataset(self) -> str:
        return self.root.resolve().name or "dataset"


def _splits(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.tsv")) if folder.is_dir() else []


def layout(directory: str | Path, split: str = DEFAULT_SPLIT) -> BeirLayout:
    """The folder's files, or one sentence saying which is missing (and, for a split, which
    splits the folder has)."""
    root = Path(directory)
    if not root.is_dir():
        raise ValidationError(f"BEIR import refused: {root} is not a folder; give the folder holding corpus.jsonl, "
                              "queries.jsonl and qrels/.")
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (root / name).is_file():
            raise ValidationError(f"BEIR import refused: {root} has no {name}; a BEIR folder holds corpus.jsonl, "
                                  "queries.jsonl and qrels/{split}.tsv.")
    qrels = root / "qrels" / f"{split}.tsv"
    if not qrels.is_file():
        found = _splits(root / "qrels")
        if not found:
            raise ValidationError(f"BEIR import refused: {root} has no qrels/ folder of .tsv files (qrels/{split}.tsv).")
        raise ValidationError(f"BEIR import refused: {root}/qrels has no split {shown(split)}; its splits are "
                              f"{', '.join(found)}: pass --split {found[0]}.")
    apart = root / "qrels-unanswerable" / f"{split}.tsv"
    return BeirLayout(root, split, root / "corpus.jsonl", root / "queries.jsonl", qrels,
                      apart if apart.is_file() else None)


def _refuse(problems: list[str], what: str) -> ValidationError:
    """One sentence when there is one problem; else a count and the list."""
    if len(problems) == 1:
        return ValidationError(f"BEIR import refused: {problems[0]}; nothing was imported.")
    return ValidationError(f"BEIR import refused: {len(problems)} problem(s) in {what}; nothing was imported.",
                           problems[:50])


# ---- reading (no writes) ----------------------------------------------------------------------


def read_queries(path: Path, strata: set[str], stratum: str, today: date,
                 stored: dict[str, str] | None = None) -> list[Any]:
    """queries.jsonl as query records: ``_id`` and ``text``; ``metadata`` (stratum, answerable,
    held_out, as the studio's export writes them) read as fields; a question naming no stratum
    keeps the one it has in the store (``stored``: id -> stratum), else goes to ``stratum``."""
    stored = stored or {}
    from golden_store.live import queries

    name = str(path)
    text = textin.decode(name, textin.read_file(path))
    problems: list[str] = []
    records = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_objects(name, text, problems):
        where = f"{name} line {lineno}"
        raw_id = obj.get("_id", obj.get("id", obj.get("query_id")))
        if raw_id is None:
            problems.append(f"{where}: field '_id' is missing")
            continue
        flat = queries.with_metadata(obj)
        if flat.get("stratum") is None:
            flat = {**flat, "stratum": stored.get(str(raw_id).strip(), stratum)}
        if not queries._json_types_ok(flat, where, problems):
            continue
        rec = queries.validate_record(flat, where, strata, problems, today)
        if rec is None:
            continue
        if rec.query_id in seen:
            problems.append(f"{where}: field '_id' {shown(rec.query_id)} is used again (first at line "
                            f"{seen[rec.query_id]})")
            continue
        seen[rec.query_id] = lineno
        records.append(rec)
    if not records and not problems:
        problems.append(f"{name}: the file holds no queries")
    if problems:
        raise _refuse(problems, name)
    return records


def corpus_ids(path: Path) -> set[str]:
    """Every document id of corpus.jsonl, each line checked as the corpus import checks it
    (``_id``, ``text``, ``title``), without canonicalizing: the qrels are checked against these
    ids before anything is written."""
    from golden_store.corpus import sources

    problems: list[str] = []
    ids: set[str] = set()
    for doc in sources._iter_jsonl(path, problems, lambda _n: None):
        if doc.doc_id in ids and len(problems) < _MAX_LISTED:
            problems.append(f"{_line_of(doc.source_path)}: field '_id' {shown(doc.doc_id)} is used again")
        ids.add(doc.doc_id)
    if problems:
        raise _refuse(problems, str(path))
    return ids


def _line_of(source_path: str) -> str:
    """``FILE:LINE`` (how a document remembers where it came from) as ``FILE line LINE``."""
    name, _, line = source_path.rpartition(":")
    return f"{name} line {line}" if line.isdigit() else source_path


def read_qrels(path: Path, grade_map: dict[str, int]) -> tuple[jf.ParsedJudgments, bytes]:
    """One qrels file parsed (BEIR TSV), and its bytes (for its digest). A file whose grades
    stop below 3 and that no studio scoring note vouches for is refused unless ``grade_map``
    says what its grades mean (see the module's docstring)."""
    from golden_store.versions.qrels import read_sidecar

    data = textin.read_file(path)
    try:
        parsed = jf.parse_beir(str(path), textin.decode(str(path), data), grade_map)
    except OptionRequiredError:
        raise
    except ValidationError as exc:  # the judgments reader's words, as this import's one sentence
        if exc.problems:
            raise _refuse(exc.problems, str(path)) from None
        raise _refuse([exc.summary.replace(" (or pass --format trec for a TREC qrels file)", "").rstrip(".")],
                      str(path)) from None
    top = max(parsed.grades, default=0)
    if not grade_map and 0 < top < 3 and read_sidecar(path) is None:
        example = "1=3" if top == 1 else "1=2,2=3"
        raise OptionRequiredError(
            f"BEIR import refused: {path} grades {'0/1' if top == 1 else '0-2'}, but the studio grades 0-3 and counts "
            f"grade >= 2 as relevant, so its {top} would not mean what the dataset means; nothing was imported.",
            option="--map",
            advice=f"Say what its grades mean with --map (e.g. --map '{example}': relevant = "
                   f"{'fully answers' if top == 1 else 'partially / fully answers'}; --map '{top}={top}' keeps them "
                   "as they are).")
    return parsed, data


def check_qrels(parsed: jf.ParsedJudgments, query_ids: set[str], doc_ids: set[str], *, skip_unknown: bool) -> None:
    """Every qrels row names a known query and document (in the dataset or already in the
    store), and no (query, document) is graded twice with different grades: found before
    anything is written, each named by its line. Unknown ids may be left out
    (``skip_unknown``); a contradiction may not."""
    from golden_store.live.judgment_imports import SKIP_ADVICE

    unknown: list[str] = []
    problems: list[str] = []
    first: dict[tuple[str, str], int] = {}
    for i in range(len(parsed)):
        qid, did, grade = str(parsed.query_ids[i]), str(parsed.doc_ids[i]), parsed.grades[i]
        if qid not in query_ids or did not in doc_ids:
            if len(unknown) < _MAX_LISTED:
                field_, value, home = (("query-id", qid, "queries.jsonl") if qid not in query_ids
                                       else ("corpus-id", did, "corpus.jsonl"))
                unknown.append(f"{parsed.where(i)}: field '{field_}' {shown(value)} is not in {home} (nor in the store)")
            continue
        at = first.setdefault((qid, did), i)
        if at != i and parsed.grades[at] != grade and len(problems) < _MAX_LISTED:
            problems.append(f"{parsed.where(i)}: grades query {shown(qid)}, document {shown(did)} {grade}, but "
                            f"line {parsed.refs[at]} gave {parsed.grades[at]}; keep one of the two")
    if problems:
        raise _refuse(problems, parsed.name)
    if unknown and not skip_unknown:
        reason = (f"BEIR import refused: {unknown[0]}; nothing was imported." if len(unknown) == 1 else
                  f"BEIR import refused: {parsed.name} names queries or documents the dataset does not hold; nothing "
                  "was imported.")
        raise OptionRequiredError(reason, option="--skip-unknown", advice=SKIP_ADVICE,
                                  problems=unknown if len(unknown) > 1 else None)


# ---- the report ------------------------------------------------------------------------------


@dataclass
class BeirImport:
    """What an import did, for a person (``summary``) and a script (``as_dict``)."""

    dataset: str
    split: str
    docs_added: int = 0
    docs_replaced: int = 0
    docs_unchanged: int = 0
    corpus_digest: str = ""
    queries: dict[str, Any] = field(default_factory=dict)
    stratum_created: str | None = None
    judgments: list[dict[str, Any]] = field(default_factory=list)  # one per qrels file

    @property
    def changed(self) -> bool:
        return bool(self.docs_added or self.docs_replaced or self.queries.get("added")
                    or self.queries.get("updated") or any(j["imported"] for j in self.judgments))

    def summary(self) -> str:
        q = self.queries
        parts = [f"documents {self.docs_added} added, {self.docs_replaced} replaced, {self.docs_unchanged} unchanged",
                 f"queries {q.get('added', 0)} added, {q.get('updated', 0)} updated, {q.get('unchanged', 0)} "
                 "unchanged"]
        for j in self.judgments:
            parts.append(f"{j['file']}: {j['n_judgments']} judgment(s) imported as import {j['import_id']} "
                         f"(shown as {jf.shown_actor(j['source'])})" if j["imported"] else
                         f"{j['file']}: imported already (import {j['import_id']}), unchanged")
        head = (f"BEIR {self.dataset} ({self.split}): " if self.changed
                else f"BEIR {self.dataset} ({self.split}): nothing changed, the dataset is in the store already: ")
        text = head + "; ".join(parts) + "."
        if self.stratum_created:
            text += f" Questions without a stratum went to the new stratum {self.stratum_created!r}."
        skipped = sum(j.get("skipped", 0) for j in self.judgments)
        if skipped:
            text += f" Left out {skipped} qrels row(s) naming unknown ids (--skip-unknown)."
        negative = sum(j.get("negative", 0) for j in self.judgments)
        if negative:
            text += f" Left out {negative} negative grade(s) (--map=-1=0 grades them)."
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "split": self.split, "changed": self.changed,
                "documents": {"added": self.docs_added, "replaced": self.docs_replaced,
                              "unchanged": self.docs_unchanged, "corpus_digest": self.corpus_digest},
                "queries": self.queries, "stratum_created": self.stratum_created, "judgments": self.judgments}


# ---- the import ------------------------------------------------------------------------------


def actor_for(dataset: str, split: str, source: str | None) -> str:
    """The judgments' actor: ``assessor:SOURCE`` when named, else ``import:DATASET SPLIT``."""
    return jf.source_actor(f"{dataset} {split}", source)


def import_beir(store: Store, user: User, directory: str | Path, *, split: str = DEFAULT_SPLIT,
                stratum: str | None = None, grade_map: str | None = None, source: str | None = None,
                name: str | None = None, update: bool = False, replace: bool = False, skip_unknown: bool = False,
                again: bool = False, progress: Progress | None = None, today: date | None = None) -> BeirImport:
    """Import the BEIR folder ``directory`` (see the module's docstring). ``stratum``: for
    questions naming none (default ``imported``, created if missing); ``grade_map``: what the
    qrels grades mean (``"1=3"``); ``name``: the dataset's name (default the folder's);
    ``update`` / ``replace``: allow new revisions of existing questions / changed documents;
    ``again``: import qrels imported before once more."""
    require(user, Permission.IMPORT_CORPUS)
    require(user, Permission.EDIT_QUERIES)
    require(user, Permission.IMPORT_JUDGMENTS)
    from annotator.evidence import query_editing
    from annotator.integration import corpus_import
    from golden_store.live import judgment_imports, queries

    lay = layout(directory, split)
    dataset = (name or lay.dataset).strip() or "dataset"
    mapping = jf.parse_map(grade_map)
    actor = actor_for(dataset, split, source)  # a bad --source is refused before anything is read
    strata = queries.known_strata(store)
    chosen = (stratum or DEFAULT_STRATUM).strip()
    if stratum is not None and chosen not in strata:
        raise ValidationError(f"BEIR import refused: unknown stratum {shown(chosen)}; known: "
                              f"{', '.join(sorted(strata))} (golden strata add NAME adds one).")
    stored_strata = queries.stored_strata(store)
    records = read_queries(lay.queries, strata | {chosen}, chosen, today or utcnow().date(), stored_strata)
    qrels_files = [lay.qrels] + ([lay.unanswerable] if lay.unanswerable else [])
    parsed = [read_qrels(p, mapping) for p in qrels_files]
    stored_queries, stored_docs = judgment_imports.known_ids(store)
    known_q = stored_queries | {r.query_id for r in records}
    known_d = stored_docs | corpus_ids(lay.corpus)
    for p, _ in parsed:
        check_qrels(p, known_q, known_d, skip_unknown=skip_unknown)
    _check_queries_fit(store, records, update=update)
    new_stratum = chosen not in strata and any(r.stratum == chosen for r in records)
    if new_stratum and not user.can(Permission.MANAGE_STRATA):  # said before anything is written
        raise ValidationError(f"BEIR import refused: {lay.queries.name} names no stratum for its questions and the "
                              f"stratum {chosen!r} does not exist, and adding one is a lead's act: pass --stratum NAME "
                              f"(one of {', '.join(sorted(strata))}) or ask a lead to add {chosen!r}; nothing was "
                              "imported.")

    report = BeirImport(dataset, split)
    corpus = corpus_import.import_paths(store, user, [lay.corpus], replace=replace, progress=progress)
    report.docs_added, report.docs_replaced = len(corpus.added), len(corpus.replaced)
    report.docs_unchanged, report.corpus_digest = len(corpus.unchanged), corpus.corpus_digest
    if new_stratum:
        query_editing.add_stratum(store, user, chosen, DEFAULT_STRATUM_DESCRIPTION)
        report.stratum_created = chosen
    report.queries = queries.import_queries(store, records, actor=user.username, update=update)
    for (p, data), path in zip(parsed, qrels_files):
        report.judgments.append(_import_qrels(store, user, p, data, path, lay, dataset, actor,
                                              skip_unknown=skip_unknown, again=again))
    return report


def _check_queries_fit(store: Store, records: list[Any], *, update: bool) -> None:
    """Questions already in the store with other content are refused (before anything is
    written) unless ``update``, as ``golden queries import`` refuses them: the text and
    stratum, and the flags the file gives; a file that would take a question out of the
    held-out set is refused either way (a lead's decision, made with a reason)."""
    from golden_store.live import queries

    current = queries.get_queries(store, [r.query_id for r in records])
    unheld = sorted(r.query_id for r in records if r.query_id in current and current[r.query_id].held_out
                    and (r.given is None or "held_out" in r.given) and not r.held_out)
    if unheld:  # queries import would refuse it after the corpus was written: said first
        raise ValidationError(f"BEIR import refused: it would take {len(unheld)} question(s) out of the held-out set "
                              f"({', '.join(unheld[:5])}); un-holding is a lead's decision (golden queries import "
                              "--unhold REASON); nothing was imported.")
    if update:
        return
    changed = []
    for r in records:
        q = current.get(r.query_id)
        if q is None:
            continue
        flags = [f for f in ("answerable", "held_out") if r.given is None or f in r.given]
        if (q.text, q.stratum) != (r.text, r.stratum) or any(getattr(q, f) != getattr(r, f) for f in flags):
            changed.append(r.query_id)
    if changed:
        raise OptionRequiredError(
            f"BEIR import refused: {len(changed)} question(s) of queries.jsonl are in the store with other content "
            f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}); nothing was imported.",
            option="--update", advice="Pass --update to record them as new revisions.")


def _import_qrels(store: Store, user: User, parsed: jf.ParsedJudgments, data: bytes, path: Path, lay: BeirLayout,
                  dataset: str, actor: str, *, skip_unknown: bool, again: bool) -> dict[str, Any]:
    """One qrels file as a judgments import, or "imported already" when a file with its
    digest was (the idempotent re-import)."""
    from golden_store.live import judgment_imports

    shown_name = f"{dataset}/{path.relative_to(lay.root).as_posix()}"
    digest = hashlib.sha256(data).hexdigest()
    prior = judgment_imports.prior_import(store, digest)
    if prior is not None and not again:
        return {"file": shown_name, "imported": False, "import_id": prior, "source": actor, "n_judgments": 0}
    placed = judgment_imports.place(store, parsed, skip_unknown=skip_unknown)
    import_id = judgment_imports.store_import(store, placed, actor=actor, source=actor, file_name=shown_name,
                                              file_sha256=digest, imported_by=user.username, again=again)
    return {"file": shown_name, "imported": True, "import_id": import_id, "source": actor,
            "n_judgments": len(placed.rows), "negative": parsed.negative, "skipped": placed.skipped,
            "duplicates": placed.duplicates}
