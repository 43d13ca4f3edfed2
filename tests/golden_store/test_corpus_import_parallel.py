"""A large corpus import is read, checked, canonicalized and hashed by worker processes (issue
41, item 4): the store, the search index and every problem a refused import lists are the
same as when this process does it all, and each document's digests are those an independent
canonicalization gives; every phase of the import tells its progress, in order."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from golden_store.core.digests import corpus_digest
from golden_store.core.errors import ValidationError
from golden_store.corpus import sources
from golden_store.db.store import Store
from golden_store.live import documents
from tests.conftest import ENGINE
from tests.golden_store.reference_canonical import canonicalize as reference_canonicalize

# what canonicalization has to do: curly quotes, dashes, ligatures, no-break and zero-width
# spaces, a soft hyphen, full-width letters, a combining accent, line-break hyphenation
_ODD = ["\u201cquoted\u201d", "dash\u2014here", "\ufb01ne", "a\u00a0b", "zero\u200bwidth", "soft\u00adhyphen",
        "\uff26\uff55\uff4c\uff4c", "cafe\u0301", "reim-\n  bursement", "  \t", "\u2019s", "x\u00b2", "user_id"]


def _text(rng: random.Random, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        words.append(rng.choice(_ODD) if rng.random() < 0.08 else "".join(rng.choice("abcdefghij") for _ in range(5)))
        if rng.random() < 0.05:
            words.append("\n\n")
    return " ".join(words)


def _corpus(root: Path, n_md: int = 40, n_jsonl: int = 300, longest: int = 400) -> Path:
    """Markdown, text and HTML files and two JSONL files (read in many chunks), generated."""
    rng = random.Random(7)
    folder = root / "corpus"
    (folder / "sub").mkdir(parents=True)
    for i in range(n_md):
        suffix = (".md", ".txt", ".html")[i % 3]
        body = _text(rng, rng.randint(20, longest))
        if suffix == ".html":
            body = f"<html><title>T {i}</title><body><p>{body}</p><script>x()</script></body></html>"
        elif suffix == ".md":
            body = f"# Heading {i}\n\n{body}"
        (folder / ("sub" if i % 2 else ".") / f"f{i:03d}{suffix}").write_text(body, "utf-8")
    for part in range(2):
        with (folder / f"part{part}.jsonl").open("w", encoding="utf-8") as fh:
            for i in range(n_jsonl):
                doc = {"doc_id": f"j{part}-{i}", "text": _text(rng, rng.randint(5, longest))}
                if i % 10 == 0:
                    doc["title"] = f"Title {i}"
                fh.write(json.dumps(doc, ensure_ascii=i % 2 == 0) + "\n")
    return folder


def _snapshot(store: Store) -> dict:
    ix = documents.search_index(store)
    rows = store.read("SELECT doc_id, title, source_path, source_format, raw_text, canonical_text, raw_sha256, "
                      "canonical_sha256, imported_by FROM documents ORDER BY doc_id")
    ids = [r[0] for r in rows]
    return {"documents": rows,
            "events": store.read("SELECT doc_id, action, old_canonical_sha256, new_canonical_sha256, source_path "
                                 "FROM corpus_events ORDER BY event_id"),
            "index_docs": ix.n_docs, "index_texts": ix.texts(ids), "index_raw": {d: ix.raw(d) for d in ids},
            # which documents a phrase finds (equal scores come in the order of tantivy's segments,
            # which its indexing threads make differently from one import to the next)
            "phrase": sorted(ix.phrase_docs(ix.words("reimbursement"), 1000)[1])}


@pytest.fixture
def many_pieces(monkeypatch):
    """Worker processes for any import, and small pieces: a small corpus goes through every path."""
    monkeypatch.setattr(sources, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(sources, "_CHUNK_BYTES", 4096)
    monkeypatch.setattr(sources, "_BATCH_DOCS", 50)


@pytest.mark.skipif(ENGINE == "postgresql", reason="compares two DuckDB stores made side by side")
def test_workers_store_the_same_documents_events_and_index_as_one_process(tmp_path, many_pieces, monkeypatch):
    folder = _corpus(tmp_path)
    snaps, counts = [], []
    for name, smallest in (("serial", 1 << 60), ("parallel", 0)):
        monkeypatch.setattr(sources, "PARALLEL_MIN_BYTES", smallest)  # worker processes from this size on
        with Store.open(tmp_path / f"{name}.duckdb") as s:
            rep = documents.import_paths(s, [folder], actor="cli")
            snaps.append(_snapshot(s))
            counts.append((len(rep.added), rep.corpus_digest))
    assert counts[0] == counts[1] and counts[0][0] == 40 + 600
    assert snaps[0] == snaps[1]
    assert snaps[0]["index_docs"] == 640 and len(snaps[0]["phrase"]) > 100


def test_parallel_import_digests_match_an_independent_canonicalization(store, tmp_path, many_pieces):
    """On either engine: each stored document's texts and digests are what the per-character
    reference canonicalization and hashlib give for the source, and so is the corpus digest."""
    folder = _corpus(tmp_path, n_md=12, n_jsonl=40, longest=60)  # the reference is slow: short documents
    assert sources.worker_count(1) > 0  # worker processes prepare it
    rep = documents.import_paths(store, [folder], actor="cli")
    expected: dict[str, tuple[str, str]] = {}
    for f in sorted(folder.rglob("*")):
        if f.suffix in (".md", ".txt"):
            expected[f.stem] = (f.read_text("utf-8"), f.suffix[1:])
        elif f.suffix == ".jsonl":
            for line in f.read_text("utf-8").splitlines():
                obj = json.loads(line)
                expected[obj["doc_id"]] = (obj["text"], "jsonl")
    rows = {r[0]: r[1:] for r in store.read(
        "SELECT doc_id, raw_text, canonical_text, raw_sha256, canonical_sha256, source_format FROM documents")}
    hashes = []
    for doc_id, (raw, fmt) in expected.items():
        canon = reference_canonicalize(raw).text
        sha = hashlib.sha256(canon.encode("utf-8")).hexdigest()
        assert rows[doc_id] == (raw, canon, hashlib.sha256(raw.encode("utf-8")).hexdigest(), sha, fmt), doc_id
        hashes.append((doc_id, sha))
    html = [d for d, r in rows.items() if r[4] == "html"]
    assert len(html) == 4 and len(rows) == len(expected) + len(html)
    hashes += [(d, rows[d][3]) for d in html]
    assert rep.corpus_digest == corpus_digest(hashes)


def _broken(root: Path) -> Path:
    """A folder with a problem of every kind, some in the same piece, some across pieces."""
    folder = _corpus(root, n_md=9, n_jsonl=60)
    (folder / "sub" / "f000.md").write_text("same id as ./f000.md", "utf-8")   # a duplicate across files
    (folder / "bad.txt").write_bytes(b"caf\xe9 latin-1")                        # not UTF-8
    (folder / "empty.md").write_text(" \u200b \n", "utf-8")                     # nothing after canonicalization
    (folder / "white space.txt").write_text("an id with a space", "utf-8")      # a bad id
    lines = (folder / "part1.jsonl").read_text("utf-8").splitlines()
    lines[3] = "{not json"
    lines[40] = json.dumps({"doc_id": "j1-5", "text": "a duplicate in the same file"})
    lines[50] = json.dumps({"doc_id": "j0-7", "text": "a duplicate of the other file"})
    lines[55] = json.dumps({"text": "no id"})
    (folder / "part1.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (folder / "none.jsonl").write_text("\n\n", "utf-8")                         # no documents
    return folder


def test_a_refused_parallel_import_lists_the_same_problems_in_the_same_order(tmp_path, many_pieces):
    folder = _broken(tmp_path)
    listed = []
    for workers in (0, 2):
        problems: list[str] = []
        docs = [d for b in sources.prepared_batches([folder], problems, workers=workers) for d in b]
        listed.append((problems, [(d.doc_id, d.canonical_sha256) for d in docs]))
    assert listed[0] == listed[1]
    problems = listed[0][0]
    for needle in ("duplicate doc id 'f000'", "bad.txt line 1: not valid UTF-8", "empty.md: document 'empty' is empty",
                   "white space.txt: doc id", "part1.jsonl line 4", "duplicate doc id 'j1-5'",
                   "duplicate doc id 'j0-7'", "part1.jsonl line 56", "none.jsonl: no documents in the file"):
        assert any(needle in p for p in problems), (needle, problems)
    with pytest.raises(ValidationError) as err:
        sources.load_paths([folder])
    assert err.value.problems == problems


def test_every_phase_of_an_import_tells_its_progress_in_order(store, tmp_path, many_pieces):
    """The events a display is given (``golden corpus import``'s bars): each phase of
    ``documents.PHASES`` begins, moves forward and ends (done == total), in the order they
    run, reading counted in bytes up to the files' size; none comes after the last."""
    folder = _corpus(tmp_path, n_md=12, n_jsonl=80, longest=100)
    events: list[tuple[int, int, str]] = []
    rep = documents.import_paths(store, [folder], actor="cli",
                                 progress=lambda done, total, phase=None: events.append((done, total, str(phase))))
    n = len(rep.added)
    names = [str(p) for p in documents.PHASES]
    seen = list(dict.fromkeys(e[2] for e in events))
    expected = [p for p in names if p != str(documents.SAVING) or store.engine == "duckdb"]
    assert seen == [p for p in expected if p in seen] and set(seen) >= set(expected[1:]), seen  # in order
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    for phase in seen:
        mine = [(d, t) for d, t, p in events if p == phase]
        assert [d for d, _ in mine] == sorted(d for d, _ in mine), phase     # never goes back
        assert mine[-1][0] == mine[-1][1], phase                              # ends
        if phase == str(sources.READING):
            assert mine[-1][1] == size and len(mine) > 5                       # bytes, told piece by piece
        elif phase != str(documents.OPENING_INDEX):
            assert mine[-1][1] == n, phase
    # phases do not interleave: once the next one begins, the earlier one is never told again
    order = [e[2] for e in events]
    assert order == sorted(order, key=seen.index)
