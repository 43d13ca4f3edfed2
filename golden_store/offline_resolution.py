"""Offline quote resolution and span survival, for engineers (no store needed). "Offline"
rather than "batch": in this project a batch is an Anthropic Message Batch (annotator/llm.py).

``resolve_file``: quotes JSONL in, one resolution per line out (``golden resolve``).
``span_survival``: METHODOLOGY §4.5 - what fraction of a frozen version's evidence spans
can still be found in another parser's output of the same documents (``golden survival``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from golden_store.core import textin
from golden_store.core.canonical import canonical_text
from golden_store.core.errors import ValidationError
from golden_store.core.jsonl import iter_objects
from golden_store.core.progress import Phase, Progress, in_phase
from golden_store.corpus import index as corpus_index
from golden_store.corpus.resolver import DEFAULT_THRESHOLD, CorpusIndex, IndexedResolver, SpanResolver
from golden_store.db.store import Store

# The steps of `golden resolve` told to ``progress``: the corpus indexed (a folder) or its
# store's index brought up to date, then each quote resolved.
INDEXING_FOLDER = Phase("indexing the corpus folder", "documents")
UPDATING_INDEX = Phase("bringing the store's search index up to date", "documents")
RESOLVING = Phase("resolving quotes", "quotes")


def read_text_folder(folder: Path, suffixes: tuple[str, ...] = (".txt", ".md")) -> dict[str, str]:
    """doc_id (file stem) -> text exactly as on disk (offsets index this text)."""
    problems: list[str] = []
    docs: dict[str, str] = {}
    seen: dict[str, Path] = {}
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in suffixes):
        try:
            text = f.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{f}: not valid UTF-8 (byte offset {exc.start}); re-save it as UTF-8")
            continue
        if f.stem in seen:
            problems.append(f"duplicate doc id {f.stem!r}: {seen[f.stem]} and {f}")
            continue
        seen[f.stem] = f
        docs[f.stem] = text
    if not docs and not problems:
        problems.append(f"{folder}: no {'/'.join(suffixes)} files")
    if problems:
        raise ValidationError(f"Cannot read the corpus folder {folder}:", problems)
    return docs


@contextmanager
def resolver_for(corpus: Path, threshold: float = DEFAULT_THRESHOLD,
                 progress: Progress | None = None) -> Iterator[IndexedResolver]:
    """A resolver over a folder of .txt/.md files (doc id = file stem), indexed into a
    temporary persisted index for the run, or over a studio store file's own index;
    ``progress`` is told the indexing (:data:`INDEXING_FOLDER`, :data:`UPDATING_INDEX`)."""
    with _source(corpus, threshold, progress) as (resolver, _):
        yield resolver


@contextmanager
def _source(corpus: Path, threshold: float,
            progress: Progress | None) -> Iterator[tuple[IndexedResolver, dict[str, str] | None]]:
    """(resolver, canonical text of every document when the corpus is a folder, else None)."""
    if corpus.is_dir():
        raw = read_text_folder(corpus)
        kept = _kept_index(corpus, raw, in_phase(progress, INDEXING_FOLDER))
        if kept is not None:
            ix, canonical = kept
            yield IndexedResolver(ix, raw.__getitem__, threshold), canonical
            return
        canonical = {d: canonical_text(t) for d, t in raw.items()}
        with tempfile.TemporaryDirectory(prefix="golden-index-") as tmp:
            ix = corpus_index.build(Path(tmp) / "index", ((d, canonical[d], t) for d, t in raw.items()), 0,
                                    total=len(raw), progress=in_phase(progress, INDEXING_FOLDER))
            yield IndexedResolver(ix, raw.__getitem__, threshold), canonical
        return
    if not corpus.exists():
        raise ValidationError(f"--corpus {corpus}: no such folder or store file.")
    from golden_store.live import documents

    with Store.open(corpus, create=False) as store:
        yield IndexedResolver(documents.search_index(store, in_phase(progress, UPDATING_INDEX)),
                              threshold=threshold), None


# ---- the index of a folder, kept beside it ----------------------------------------------------
#
# ``golden resolve --corpus FOLDER`` indexes the folder; the index and the documents'
# canonical texts are kept in ``FOLDER.golden-index/<key>/`` so the next run over the same
# files opens them instead of doing it again. The key is a digest of every file's id and
# bytes and of the code that canonicalizes and indexes them: a changed, added or removed
# file, or another version of that code, is another key (the folder is indexed again and
# the old key's folder removed). Where nothing can be written beside the folder, the index
# is made in a temporary folder for the run, as before.

KEPT_SUFFIX = ".golden-index"
_CANON_TEXT, _CANON_IDS = "canonical.txt", "canonical.json"


def kept_index_home(folder: Path) -> Path:
    """Where the index of ``folder`` is kept: ``FOLDER.golden-index`` beside it."""
    folder = folder.resolve()
    return folder.with_name(folder.name + KEPT_SUFFIX)


def folder_key(raw: dict[str, str]) -> str:
    """Digest of a folder's documents (ids and exact bytes) and of the code whose output the
    kept index holds (canonicalization and the index's words and format)."""
    from golden_store.core import canonical as canonical_module

    h = hashlib.sha256()
    for module in (canonical_module, corpus_index):
        h.update(hashlib.sha256(Path(module.__file__ or "").read_bytes()).digest())
    h.update(str(corpus_index.FORMAT).encode())
    for d in sorted(raw):
        b = raw[d].encode("utf-8")
        h.update(f"{len(d)}:{d}:{len(b)}:".encode())
        h.update(b)
    return h.hexdigest()[:32]


def _load_kept(path: Path, raw: dict[str, str]) -> tuple[corpus_index.CorpusSearchIndex, dict[str, str]] | None:
    try:
        meta = json.loads((path / _CANON_IDS).read_text("utf-8"))
        text = (path / _CANON_TEXT).read_text("utf-8")
    except (OSError, ValueError):
        return None
    ids, lengths = meta.get("doc_ids"), meta.get("lengths")
    if not isinstance(ids, list) or not isinstance(lengths, list) or sorted(ids) != sorted(raw) \
            or len(ids) != len(lengths) or sum(lengths) != len(text):
        return None
    ix = corpus_index.open_built(path)
    if ix is None:
        return None
    canonical, at = {}, 0
    for d, n in zip(ids, lengths):
        canonical[d] = text[at:at + n]
        at += n
    return ix, canonical


def _kept_index(folder: Path, raw: dict[str, str],
                progress: Progress | None) -> tuple[corpus_index.CorpusSearchIndex, dict[str, str]] | None:
    """The folder's kept index and canonical texts (made and kept if missing); None when
    nothing can be written beside the folder."""
    home = kept_index_home(folder)
    key = folder_key(raw)
    found = _load_kept(home / key, raw)
    if found is not None:
        if progress:
            progress(len(raw), len(raw))
        return found
    try:
        home.mkdir(exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix="building-", dir=home))
    except OSError:
        return None
    try:
        ids = sorted(raw)
        canonical = {d: canonical_text(raw[d]) for d in ids}
        ix = corpus_index.build(building, ((d, canonical[d], raw[d]) for d in ids), 0,
                                total=len(raw), progress=progress)
        (building / _CANON_TEXT).write_text("".join(canonical[d] for d in ids), "utf-8")
        (building / _CANON_IDS).write_text(json.dumps({"doc_ids": ids, "lengths": [len(canonical[d]) for d in ids]}),
                                           "utf-8")
        del ix
        if (home / key).exists():
            if _load_kept(home / key, raw) is not None:  # another run kept it meanwhile: theirs is used
                shutil.rmtree(building, ignore_errors=True)
                return _load_kept(home / key, raw)
            shutil.rmtree(home / key, ignore_errors=True)  # unreadable: replaced
        try:
            os.rename(building, home / key)
        except OSError:  # another run kept the same key first: use theirs
            shutil.rmtree(building, ignore_errors=True)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
        return None
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    for old in home.iterdir():  # other keys: the folder as it was, or older code's
        if old.name != key and not old.name.startswith("building-"):
            shutil.rmtree(old, ignore_errors=True)
    return _load_kept(home / key, raw)


def read_quotes(path: Path, index: IndexedResolver) -> list[tuple[str, str, str | None]]:
    """(quote_id, quote, doc_id hint) per line; every bad line is reported, nothing is resolved."""
    text = textin.read_text(path)  # the importers' one text rule
    problems: list[str] = []
    out: list[tuple[str, str, str | None]] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_objects(str(path), text, problems):
        where = f"{path} line {lineno}"
        qid, quote, doc = obj.get("quote_id"), obj.get("quote"), obj.get("doc_id")
        if not isinstance(qid, (str, int)) or str(qid) == "":
            problems.append(f"{where}: field 'quote_id' is missing")
            continue
        qid = str(qid)
        if qid in seen:
            problems.append(f"{where}: quote_id {qid!r} already used on line {seen[qid]}")
            continue
        seen[qid] = lineno
        if not isinstance(quote, str) or not canonical_text(quote):
            problems.append(f"{where}: field 'quote' is missing or empty")
            continue
        if doc is not None and (not isinstance(doc, str) or doc not in index):
            problems.append(f"{where}: doc_id {doc!r} is not in the corpus")
            continue
        out.append((qid, quote, doc))
    if problems:
        raise ValidationError(f"Resolution refused: {len(problems)} bad line(s) in {path}; nothing was written.",
                              problems)
    return out


def resolve_file(corpus: Path, quotes: Path, out: Path, *, threshold: float = DEFAULT_THRESHOLD,
                 progress: Progress | None = None) -> dict[str, int]:
    """Resolve every quote; write one JSON line per quote (input order); return counts per status.
    The answers are :meth:`IndexedResolver.resolve`'s, quote by quote; the work is done for
    the batch (:meth:`IndexedResolver.resolve_batch`)."""
    with _source(corpus, threshold, progress) as (resolver, canonical):
        items = read_quotes(quotes, resolver)
        tell = (lambda i, n: progress(i, n, RESOLVING)) if progress else None
        found = resolver.resolve_batch([(q, d) for _, q, d in items], corpus=canonical, progress=tell)
    counts = {"exact": 0, "fuzzy": 0, "ambiguous": 0, "unresolved": 0}
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for (qid, _, _), res in zip(items, found):
            counts[res.status] += 1
            fh.write(json.dumps({"quote_id": qid, **res.as_dict()}, ensure_ascii=False) + "\n")
    tmp.replace(out)
    return counts


def span_survival(version, parsed: dict[str, str], *, threshold: float = DEFAULT_THRESHOLD) -> dict:
    """Fractions of the version's evidence spans found exactly / exactly-or-fuzzily / not at
    all in ``parsed`` (doc_id -> text from another parser), overall and per stratum."""
    per_doc: dict[str, SpanResolver] = {}  # every span names its document: index just those

    def resolver_of(doc_id: str) -> SpanResolver:
        if doc_id not in per_doc:
            per_doc[doc_id] = SpanResolver(CorpusIndex.from_raw({doc_id: parsed[doc_id]}), threshold)
        return per_doc[doc_id]
    strata = version.strata
    tally: dict[str, dict[str, int]] = {}
    missing_docs: set[str] = set()
    for s in version.spans.itertuples(index=False):
        row = tally.setdefault(strata.get(s.query_id, "?"), {"exact": 0, "fuzzy": 0, "lost": 0, "total": 0})
        row["total"] += 1
        if s.doc_id not in parsed:
            missing_docs.add(s.doc_id)
            row["lost"] += 1
            continue
        res = resolver_of(s.doc_id).resolve(s.quote, doc_id=s.doc_id)
        if res.status == "exact" or (res.status == "ambiguous" and res.candidates[0].score >= 100):
            row["exact"] += 1
        elif res.located or res.status == "ambiguous":
            row["fuzzy"] += 1
        else:
            row["lost"] += 1

    def fractions(r: dict[str, int]) -> dict:
        t = r["total"] or 1
        return {"spans": r["total"], "exact": r["exact"] / t, "exact_or_fuzzy": (r["exact"] + r["fuzzy"]) / t,
                "lost": r["lost"] / t}

    total = {k: sum(r[k] for r in tally.values()) for k in ("exact", "fuzzy", "lost", "total")}
    return {"version": version.name, "threshold": threshold, "overall": fractions(total),
            "strata": {k: fractions(v) for k, v in sorted(tally.items())},
            "documents_missing_from_parse": sorted(missing_docs)}
