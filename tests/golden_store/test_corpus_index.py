"""The persisted corpus index (golden_store.corpus.index): the resolver over it answers as
the in-memory one does, it follows every import and replacement, a failed or interrupted
import leaves it usable, and it is rebuilt when missing."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from golden_store.corpus import sources
from golden_store.live import documents
from golden_store.corpus import index as corpus_index
from golden_store.core.canonical import canonical_text
from golden_store.core.errors import ValidationError
from golden_store.corpus.resolver import CorpusIndex, IndexedResolver, SpanResolver
from golden_store.corpus.search import search, search_indexed
from golden_store.db.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_spans as bs  # noqa: E402  (the benchmark's corpus and quote generator)


@pytest.fixture(scope="module")
def generated():
    rng = random.Random(3)
    ws = bs.WordStream(bs.make_vocab(rng, 4000), 3)
    raw = bs.generate_corpus(rng, ws, 0.4)
    return rng, raw


def _quotes(rng: random.Random, raw: dict[str, str], n: int) -> list[tuple[str, str]]:
    """(quote, the document it was taken from): 3-30 words, a third verbatim, the rest perturbed."""
    ids = sorted(raw)
    out = []
    for i in range(n):
        d = rng.choice(ids)
        words = raw[d].split()
        k = rng.randint(3, 30)
        s = rng.randrange(0, max(1, len(words) - k))
        q = " ".join(words[s:s + k])
        kind = bs.PERTURBATIONS[i % len(bs.PERTURBATIONS)] if i % 3 else "verbatim"
        out.append((q if kind == "verbatim" else bs._perturb(rng, q, kind)[0], d))
    return out


def test_the_persisted_resolver_answers_as_the_in_memory_one(generated, tmp_path):
    """Where the in-memory resolver finds a quote exactly, the persisted one gives the very
    same answer; overall it places at least as many quotes in their own document."""
    rng, raw = generated
    memory = SpanResolver(CorpusIndex.from_raw(raw))
    ix = corpus_index.build(tmp_path / "ix", ((d, canonical_text(t), t) for d, t in raw.items()), 0)
    persisted = IndexedResolver(ix)
    right = {"memory": 0, "persisted": 0}
    n_exact = 0
    for q, doc in _quotes(rng, raw, 300):
        a, b = memory.resolve(q), persisted.resolve(q)
        if a.status in ("exact", "ambiguous") and all(c.score == 100 for c in a.candidates):
            n_exact += 1
            assert a.as_dict() == b.as_dict(), q
        right["memory"] += a.located and a.best.doc_id == doc
        right["persisted"] += b.located and b.best.doc_id == doc
    assert n_exact > 100
    assert right["persisted"] >= right["memory"] > 250


def test_an_overlay_without_raw_text_is_refused_where_the_resolver_is_made(tmp_path):
    """The overlay's documents (new or changed in the transaction) are not in the index, so
    only the caller's raw_of maps their spans to raw offsets. Without one the resolver is
    refused when made; before, it was made and crashed (None called) on the first quote that
    landed in an overlay document."""
    raw = {"a": "The first document talks about annual leave and carry over rules."}
    ix = corpus_index.build(tmp_path / "ix", ((d, canonical_text(t), t) for d, t in raw.items()), 0)
    new = "A new document on parental leave, added in this very transaction."
    with pytest.raises(ValueError, match="overlay needs raw_of"):
        IndexedResolver(ix, overlay={"b": canonical_text(new)})
    quote = "parental leave, added in this very transaction"
    found = IndexedResolver(ix, {"b": new}.__getitem__, overlay={"b": canonical_text(new)}).resolve(quote)
    assert found.status == "exact" and found.best.doc_id == "b"
    assert new[found.best.start:found.best.end] == quote


def _store(tmp_path: Path) -> Store:
    """This test's store (GOLDEN_DB: a DuckDB file in ``tmp_path``, or a PostgreSQL database
    with its search index under GOLDEN_DATA_DIR, in ``tmp_path``)."""
    return Store.open(os.environ["GOLDEN_DB"])


def _import(store: Store, docs: dict[str, str], replace: bool = False):
    return documents.import_documents(store, sources.load_sources([(f"{d}.txt", t.encode()) for d, t in docs.items()]),
                                   actor="eng", replace=replace)


def test_the_index_follows_imports_and_replacements(tmp_path):
    with _store(tmp_path) as store:
        _import(store, {"a": "The zeppelin hangar opens at nine.", "b": "Badges are collected at reception."})
        ix = documents.search_index(store)
        assert ix.n_docs == 2 and "a" in ix
        assert [h.doc_id for h in search_indexed(ix, "zeppelin hangar")] == ["a"]
        _import(store, {"a": "The airship hangar opens at ten."}, replace=True)
        ix = documents.search_index(store)
        assert search_indexed(ix, "zeppelin") == []
        assert [h.doc_id for h in search_indexed(ix, "airship")] == ["a"]
        assert ix.texts(["a"]) == {"a": "The airship hangar opens at ten."}
        assert json.loads((corpus_index.index_dir_for(store.path, store.url) / corpus_index.META).read_text())[
            "last_corpus_event"] == documents.last_corpus_event(store._con.cursor())


def test_a_refused_import_leaves_store_and_index_as_they_were(tmp_path, monkeypatch):
    """Batches before the bad line were written to the store's transaction and fed to the
    index writer: both are rolled back."""
    monkeypatch.setattr(sources, "_BATCH_DOCS", 7)
    with _store(tmp_path) as store:
        _import(store, {"a": "The zeppelin hangar opens at nine."})
        before = documents.search_index(store).last_event
        bad = tmp_path / "docs.jsonl"
        lines = [json.dumps({"doc_id": f"d{i}", "text": f"document number {i} about airships"}) for i in range(50)]
        lines[37] = '{"doc_id": "broken", "text": '
        bad.write_text("\n".join(lines) + "\n")
        with pytest.raises(ValidationError) as err:
            documents.import_paths(store, [bad], actor="eng")
        assert any(f"{bad} line 38" in p for p in err.value.problems)
        assert store.read_one("SELECT count(*) FROM documents")[0] == 1
        ix = documents.search_index(store)
        assert ix.last_event == before and ix.n_docs == 1 and search_indexed(ix, "airships") == []


def test_an_import_committed_without_its_index_update_is_repaired_on_open(tmp_path):
    """A crash between the store's commit and the index update: the next open applies the
    documents changed since the index's last corpus event."""
    with _store(tmp_path) as store:
        _import(store, {"a": "The zeppelin hangar opens at nine."})
        documents.search_index(store)
        docs = sources.load_sources([("b.txt", b"Parking permits are renewed in January.")])
        store.write(lambda cur: documents.import_documents_tx(cur, docs, actor="eng"))  # no index update
        corpus_index.forget(corpus_index.index_dir_for(store.path, store.url))
        ix = documents.search_index(store)
        assert ix.n_docs == 2 and [h.doc_id for h in search_indexed(ix, "parking permits")] == ["b"]


def test_a_missing_or_foreign_index_is_rebuilt(tmp_path):
    with _store(tmp_path) as store:
        _import(store, {"a": "The zeppelin hangar opens at nine.", "b": "Badges are collected at reception."})
        path = corpus_index.index_dir_for(store.path, store.url)
        documents.search_index(store)
        corpus_index.forget(path)
        (path / corpus_index.META).write_text('{"format": 0}')
        assert documents.search_index(store).n_docs == 2


def test_a_large_jsonl_file_streams_in_chunks_with_right_line_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "_CHUNK_BYTES", 300)  # many chunks for a small file
    monkeypatch.setattr(sources, "_BATCH_DOCS", 7)
    path = tmp_path / "big.jsonl"
    lines = [json.dumps({"doc_id": f"d{i:03d}", "text": f"Document {i}: the hangar opens at {i % 12} o'clock."})
             for i in range(120)]
    path.write_text("\n".join(lines) + "\n")
    with _store(tmp_path) as store:
        rep = documents.import_paths(store, [path], actor="eng")
        assert len(rep.added) == 120
        assert store.read_one("SELECT count(*) FROM corpus_events")[0] == 120
        ix = documents.search_index(store)
        assert ix.n_docs == 120
        got = dict(store.read("SELECT doc_id, source_path FROM documents"))
        assert got["d099"] == f"{path}:100"
        lines[87] = json.dumps({"doc_id": "d005", "text": "a duplicate id"})
        lines[101] = json.dumps({"doc_id": "x", "text": 5})
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(ValidationError) as err:
            documents.import_paths(store, [path], actor="eng", replace=True)
        problems = "\n".join(err.value.problems)
        assert f"{path}:6 and {path}:88" in problems and f"{path} line 102: field 'text'" in problems
        assert store.read_one("SELECT count(*) FROM corpus_events")[0] == 120


def test_indexed_search_ranks_as_the_in_memory_search(generated, tmp_path):
    rng, raw = generated
    canon = {d: canonical_text(t) for d, t in raw.items()}
    memory = CorpusIndex(canon, raw.__getitem__)
    ix = corpus_index.build(tmp_path / "ix", ((d, c, raw[d]) for d, c in canon.items()), 0)
    vocab = sorted({w.lower() for t in list(canon.values())[:20] for w in t.split() if w.isalpha() and len(w) > 4})
    same_top = 0
    for _ in range(40):
        q = " ".join(rng.sample(vocab, 2))
        a = [h.doc_id for h in search(memory, q, limit=5)]
        b = [h.doc_id for h in search_indexed(ix, q, limit=5)]
        assert set(a) == set(b) or len(a) == 5, q  # the same documents match (BM25 > 0) ...
        same_top += a[:1] == b[:1]
    # ... and rank alike (tantivy keeps document lengths to one byte: close scores may swap)
    assert same_top >= 30
