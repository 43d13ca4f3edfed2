"""Corpus import: formats, digests, and all-or-nothing failures."""

from __future__ import annotations

import json

import pytest

from golden_store.core import digests
from golden_store.corpus import sources
from golden_store.live import documents
from golden_store.core.canonical import canonical_text
from golden_store.corpus.sources import html_to_text, load_paths
from golden_store.live.documents import import_documents
from golden_store.core.errors import ValidationError
from tests.conftest import table_snapshot


def _write(path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


def test_imports_all_formats_keeping_raw_and_canonical(store, tmp_path):
    d = tmp_path / "docs"
    _write(d / "a.txt", "Claims are reim-\nbursed within 30\u00a0days.\n")
    _write(d / "b.md", "# Leave policy\n\nYou get \u201c25\u201d days.\n")
    _write(d / "sub" / "c.html", "<html><head><title>VPN</title><style>p{}</style></head>"
           "<body><h1>VPN</h1><p>Error &amp; fix: restart.</p><script>alert(1)</script></body></html>")
    _write(d / "more.jsonl", json.dumps({"doc_id": "j1", "text": "First json doc.", "title": "J"}) + "\n"
           + json.dumps({"doc_id": "j2", "text": "Second."}) + "\n")
    docs = load_paths([d])
    rep = import_documents(store, docs, actor="t")
    assert sorted(rep.added) == ["a", "b", "c", "j1", "j2"]
    a = documents.get_document(store, "a")
    assert a["raw_text"] == "Claims are reim-\nbursed within 30\u00a0days.\n"
    assert a["canonical_text"] == "Claims are reimbursed within 30 days."
    b = documents.get_document(store, "b")
    assert b["title"] == "Leave policy" and '"25"' in b["canonical_text"]
    c = documents.get_document(store, "c")
    assert c["title"] == "VPN" and "Error & fix: restart." in c["raw_text"]
    assert "alert" not in c["raw_text"] and "p{}" not in c["raw_text"]
    assert documents.get_document(store, "j1")["title"] == "J"
    assert rep.corpus_digest == documents.store_corpus_digest(store)


def test_corpus_digest_depends_on_canonical_text_only():
    d1 = digests.corpus_digest([("a", digests.sha256_text(canonical_text("x  y"))), ("b", "h")])
    d2 = digests.corpus_digest([("b", "h"), ("a", digests.sha256_text(canonical_text("x\n\ny")))])
    d3 = digests.corpus_digest([("a", digests.sha256_text(canonical_text("x z"))), ("b", "h")])
    assert d1 == d2 != d3
    assert d1.startswith("sha256:")


def test_broken_encoding_in_third_file_leaves_store_unchanged(store, tmp_path):
    """Must show: a broken corpus (bad encoding in the 3rd file) and the store is unchanged."""
    ok = tmp_path / "ok"
    _write(ok / "first.txt", "Already here.")
    import_documents(store, load_paths([ok]), actor="t")
    before = table_snapshot(store)
    d = tmp_path / "docs"
    _write(d / "01.txt", "one")
    _write(d / "02.txt", "two")
    _write(d / "03.txt", b"caf\xe9 latin-1 bytes")
    _write(d / "04.txt", "four")
    with pytest.raises(ValidationError) as err:
        import_documents(store, load_paths([d]), actor="t")
    msg = str(err.value)
    assert "03.txt" in msg and "not valid UTF-8" in msg and "0xe9" in msg and "nothing was imported" in msg
    assert table_snapshot(store) == before


def test_failure_inside_the_transaction_rolls_back(store, tmp_path):
    """Even an error after rows were written (a conflicting doc id) leaves nothing behind."""
    _write(tmp_path / "v1" / "zz.txt", "old text")
    import_documents(store, load_paths([tmp_path / "v1"]), actor="t")
    before = table_snapshot(store)
    _write(tmp_path / "v2" / "aa.txt", "new doc, inserted first")
    _write(tmp_path / "v2" / "zz.txt", "changed text")
    with pytest.raises(ValidationError, match="already exist with different text"):
        import_documents(store, load_paths([tmp_path / "v2"]), actor="t")
    assert table_snapshot(store) == before
    rep = import_documents(store, load_paths([tmp_path / "v2"]), actor="t", replace=True)
    assert rep.added == ["aa"] and rep.replaced == ["zz"]
    assert documents.get_document(store, "zz")["raw_text"] == "changed text"
    events = store.read("SELECT doc_id, action, old_canonical_sha256 IS NOT NULL FROM corpus_events ORDER BY event_id")
    assert events[-1] == ("zz", "replace", True)


def test_reimporting_identical_documents_is_a_no_op(store, tmp_path):
    _write(tmp_path / "d" / "a.txt", "same")
    import_documents(store, load_paths([tmp_path / "d"]), actor="t")
    rep = import_documents(store, load_paths([tmp_path / "d"]), actor="t")
    assert rep.unchanged == ["a"] and not rep.added
    assert store.read_one("SELECT count(*) FROM corpus_events")[0] == 1


def test_duplicate_ids_empty_docs_and_bad_jsonl_are_all_reported(tmp_path):
    d = tmp_path / "d"
    _write(d / "x" / "policy.txt", "one")
    _write(d / "y" / "policy.md", "two")
    _write(d / "blank.txt", " \n\u200b\t")
    _write(d / "docs.jsonl", '{"doc_id": "k", "text": "ok"}\nnot json\n{"doc_id": "", "text": "t"}\n{"doc_id": "m"}\n')
    with pytest.raises(ValidationError) as err:
        load_paths([d])
    problems = err.value.problems
    assert any("duplicate doc id 'policy'" in p and "policy.txt" in p and "policy.md" in p for p in problems)
    assert any("blank.txt" in p and "empty" in p for p in problems)
    assert any("docs.jsonl line 2" in p and "not valid JSON" in p for p in problems)
    assert any("docs.jsonl line 3" in p and "doc_id" in p for p in problems)
    assert any("docs.jsonl line 4" in p and "'text'" in p for p in problems)


def test_missing_and_unsupported_paths(tmp_path):
    _write(tmp_path / "a.pdf", "%PDF")
    with pytest.raises(ValidationError) as err:
        load_paths([tmp_path / "nope", tmp_path / "a.pdf"])
    assert any("no such file" in p for p in err.value.problems)
    assert any("unsupported file type '.pdf'" in p for p in err.value.problems)


def test_html_to_text_keeps_blocks_and_decodes_entities():
    text, title = html_to_text("<title>T</title><ul><li>a &lt; b</li><li>c</li></ul><table><tr><td>x</td><td>y</td></tr></table>")
    assert title == "T"
    assert "a < b" in text and "c" in text and "x" in text and "y" in text
    assert text.splitlines()[0] == "a < b"


def test_doc_ids_with_whitespace_are_refused(tmp_path):
    _write(tmp_path / "d" / "my policy.txt", "text")
    with pytest.raises(ValidationError) as err:
        load_paths([tmp_path / "d"])
    assert any("my policy.txt" in p and "whitespace" in p for p in err.value.problems)


def test_html_without_closing_head_keeps_its_body():
    text, title = html_to_text("<html><head><title>T</title><body><p>Hello there</p>")
    assert title == "T" and text.strip() == "Hello there"


def _settings(store) -> tuple:
    """DuckDB's settings the import changes for its duration (a PostgreSQL store has none)."""
    if store.engine != "duckdb":
        return ()
    return store.read_one("SELECT current_setting('memory_limit'), current_setting('force_compression')")


def test_streamed_import_in_many_batches_is_staged_in_order_and_leaves_nothing_behind(store, tmp_path, monkeypatch):
    """A streamed import stages its documents in a temporary file and inserts them with one
    statement at the end (document_staging): every document arrives with its text, the
    corpus events follow the files' order across batches, replacements replace, the
    temporary file is removed and DuckDB's settings are what they were."""
    monkeypatch.setattr(sources, "_BATCH_DOCS", 3)  # 10 documents: 4 batches
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spool))
    before = _settings(store)
    lines = [json.dumps({"doc_id": f"d{i:02}", "text": f"Document number {i} says {i * 7}."}) for i in range(10)]
    _write(tmp_path / "c.jsonl", "\n".join(lines) + "\n")
    rep = documents.import_paths(store, [tmp_path / "c.jsonl"], actor="t")
    assert rep.added == [f"d{i:02}" for i in range(10)]
    assert documents.get_document(store, "d07")["raw_text"] == "Document number 7 says 49."
    assert [r[0] for r in store.read("SELECT doc_id FROM corpus_events ORDER BY event_id")] == rep.added
    assert _settings(store) == before and list(spool.iterdir()) == []

    lines[4] = json.dumps({"doc_id": "d04", "text": "Document four, rewritten."})
    _write(tmp_path / "c.jsonl", "\n".join(lines) + "\n")
    rep = documents.import_paths(store, [tmp_path / "c.jsonl"], actor="t", replace=True)
    assert rep.replaced == ["d04"] and len(rep.unchanged) == 9
    assert documents.get_document(store, "d04")["canonical_text"] == "Document four, rewritten."
    assert store.read_one("SELECT count(*) FROM documents")[0] == 10
    assert store.read("SELECT action FROM corpus_events WHERE doc_id = 'd04' ORDER BY event_id") == [("add",), ("replace",)]
    assert _settings(store) == before and list(spool.iterdir()) == []


def test_streamed_import_refused_late_leaves_store_settings_and_spool_as_they_were(store, tmp_path, monkeypatch):
    """A problem in the last batch (after earlier batches were staged): nothing imported,
    the staged file removed, DuckDB's memory limit and compression back as they were."""
    monkeypatch.setattr(sources, "_BATCH_DOCS", 2)
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spool))
    _write(tmp_path / "v1" / "keep.txt", "Kept as it is.")
    documents.import_paths(store, [tmp_path / "v1"], actor="t")
    before, settings = table_snapshot(store), _settings(store)
    lines = [json.dumps({"doc_id": f"n{i}", "text": f"New {i}."}) for i in range(7)] + ['{"doc_id": "broken", ']
    _write(tmp_path / "c.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(ValidationError, match="c.jsonl line 8"):
        documents.import_paths(store, [tmp_path / "c.jsonl"], actor="t")
    assert table_snapshot(store) == before
    assert _settings(store) == settings and list(spool.iterdir()) == []
