"""Frozen versions: freeze, manifest, load, verify (tamper detection), export, diff."""

from __future__ import annotations

import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from golden_store.live import grade_state
from golden_store import versions
from golden_store.versions import format as version_format
from golden_store.corpus.sources import load_sources
from golden_store.live.documents import import_documents
from golden_store.core.errors import ValidationError, VerificationError, VersionExistsError
from golden_store.versions.export import export_version
from golden_store.freezing import freeze
from golden_store.versions.qrels import derive_qrels, qrels_lines
from golden_store.db.store import utcnow
from golden_store.versions import load_version, verify


def _grade(store, qid, doc, start, end, grade, actor, op="grade"):
    # grade_state.append_tx: the event and the current grading state it implies (migration 13)
    store.write(lambda cur: grade_state.append_tx(cur, query_id=qid, doc_id=doc, start=start, end=end, op=op,
                                                  grade=grade, actor=actor, created_at=utcnow(), doc_sha256=None,
                                                  rubric_version=1))


def test_freeze_writes_manifest_and_parquet(demo_store, tmp_path):
    res = freeze(demo_store, "demo.v1", actor="eng", note="first")
    assert res.path == tmp_path / "versions" / "demo.v1"
    m = json.loads((res.path / "manifest.json").read_text())
    assert m["dataset_version"] == "demo.v1" and m["note"] == "first" and m["frozen_by"] == "eng"
    assert m["n_queries"] == 40 and m["n_documents"] == 20 and m["n_spans"] == 39
    assert sum(m["strata"].values()) == 40 and m["strata"]["negative"] == 6
    assert m["label_type"] == "evidence_spans" and m["hit_rule"] == "any_overlap"
    assert m["annotators"] == ["demo-expert"]
    assert m["rubric"]["version"] == 1 and len(m["rubric"]["sha256"]) == 64
    assert m["generator"] == {"kind": "human", "model": None, "prompt_sha": None}
    # facts the store does not have yet are null, never invented
    assert m["kappa_binary"] is None and m["kappa_linear"] is None and m["pool_graded_at_10"] is None
    assert m["corpus_commit"] is None
    assert m["corpus_digest"].startswith("sha256:") and m["content_digest"] == versions.manifest_digest(m)
    from golden_store.db.schema import SCHEMA_VERSION

    assert m["store_schema_version"] == SCHEMA_VERSION
    assert set(m["files"]) == {"documents.parquet", "queries.parquet", "spans.parquet",
                               "judgments.parquet", "nuggets.parquet", "qrels.parquet", "judge_labels.parquet",
                               "reference_answers.parquet", "answer_criteria.parquet"}
    # who labeled what (issue 27): no grades and no judge labels in the demo, said as zeros and empty lists
    assert m["label_counts"] == {"human": 0, "adjudicated": 0, "agreed": 0, "judge": 0, "judge_total": 0,
                                 "standing_sample": 0}
    assert m["judge_labels"] == {"calibration_ids": [], "models": [], "rubric_shas": [], "jobs": []}
    assert m["files"]["judge_labels.parquet"]["rows"] == 0
    assert m["reference_answers"] == {"approved": 0, "unapproved_left_out": 0, "criteria": 0}
    assert m["files"]["queries.parquet"]["rows"] == 40
    assert not [p for p in res.path.parent.iterdir() if p.name.startswith(".tmp")]


def test_freeze_refuses_existing_name_and_bad_names(demo_store):
    freeze(demo_store, "v1", actor="eng")
    before = (demo_store.path.parent / "versions" / "v1" / "manifest.json").read_bytes()
    with pytest.raises(VersionExistsError, match="never changes"):
        freeze(demo_store, "v1", actor="eng")
    assert (demo_store.path.parent / "versions" / "v1" / "manifest.json").read_bytes() == before
    for bad in ("../x", "a/b", "", ".hidden", "x y"):
        with pytest.raises(ValidationError):
            freeze(demo_store, bad, actor="eng")


def test_failed_freeze_leaves_nothing(store):
    with pytest.raises(ValidationError, match="no queries"):
        freeze(store, "empty", actor="eng")
    vdir = store.path.parent / "versions"
    assert not vdir.exists() or list(vdir.iterdir()) == []


def test_versions_dir_env_override(demo_store, tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDEN_VERSIONS", str(tmp_path / "elsewhere"))
    res = freeze(demo_store, "v1", actor="eng")
    assert res.path == tmp_path / "elsewhere" / "v1"
    assert load_version("v1").manifest["n_queries"] == 40


def test_load_version_is_read_only_and_complete(demo_store):
    freeze(demo_store, "v1", actor="eng")
    v = load_version("v1")
    q = v.queries
    q.loc[:, "text"] = "changed in memory"
    assert (v.queries["text"] != "changed in memory").all()
    with pytest.raises(TypeError):
        v.manifest["n_queries"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError):
        v.name = "other"  # type: ignore[misc]
    assert len(v.query_ids) == 40 and v.strata["q001"] == "lexical"
    qrels = v.qrels()
    spans = v.spans
    assert set(qrels) == set(spans["query_id"])
    assert all(g == 3 for docs in qrels.values() for g in docs.values())
    held = set(v.queries.query("held_out")["query_id"])
    assert held and not (set(v.qrels(include_held_out=False)) & held)
    # spans are real corpus offsets: raw[start:end] is the quoted passage
    docs = v.documents.set_index("doc_id")
    for s in spans.itertuples():
        raw = docs.at[s.doc_id, "raw_text"]
        assert " ".join(raw[s.start:s.end].split()) == " ".join(s.quote.split())


def test_verify_detects_a_tampered_parquet_file_by_name(demo_store):
    """Must show: freeze, tamper with one Parquet file, verify fails naming the file."""
    freeze(demo_store, "v1", actor="eng")
    rep = verify("v1")
    assert rep.ok and rep.checked["spans"] == 39
    path = demo_store.path.parent / "versions" / "v1" / "queries.parquet"
    t = pq.read_table(path).to_pandas()
    t.loc[0, "stratum"] = "paraphrase"
    pq.write_table(pa.Table.from_pandas(t, preserve_index=False), path)
    rep = verify("v1")
    assert not rep.ok
    assert any(p.startswith("queries.parquet: sha256") for p in rep.problems)
    assert not any("spans.parquet" in p for p in rep.problems)
    with pytest.raises(VerificationError, match="queries.parquet"):
        load_version("v1")


def test_verify_detects_manifest_edits_and_missing_or_extra_files(demo_store):
    freeze(demo_store, "v1", actor="eng")
    vdir = demo_store.path.parent / "versions" / "v1"
    m = json.loads((vdir / "manifest.json").read_text())
    m["n_queries"] = 41
    (vdir / "manifest.json").write_text(json.dumps(m))
    assert any("content_digest" in p for p in verify("v1").problems)
    freeze(demo_store, "v2", actor="eng")
    v2 = demo_store.path.parent / "versions" / "v2"
    os.remove(v2 / "spans.parquet")
    (v2 / "extra.txt").write_text("x")
    problems = verify("v2").problems
    assert "spans.parquet: missing" in problems and any(p.startswith("extra.txt") for p in problems)


def test_verify_rechecks_content_against_the_frozen_corpus(demo_store):
    """Re-hashed files can still hide wrong content if someone rewrites the manifest too:
    verify re-derives the canonical corpus, the spans and the qrels."""
    freeze(demo_store, "v1", actor="eng")
    vdir = demo_store.path.parent / "versions" / "v1"
    sp = pq.read_table(vdir / "spans.parquet").to_pandas()
    sp.loc[0, "start"] = sp.loc[0, "start"] + 5
    pq.write_table(pa.Table.from_pandas(sp, preserve_index=False), vdir / "spans.parquet")
    m = json.loads((vdir / "manifest.json").read_text())
    m["files"]["spans.parquet"]["sha256"] = version_format._sha256_file(vdir / "spans.parquet")
    m["content_digest"] = versions.manifest_digest(m)
    (vdir / "manifest.json").write_text(json.dumps(m))
    rep = verify("v1")
    assert any("no longer matches the quote" in p for p in rep.problems)


def test_verify_warns_when_live_corpus_moved_on(demo_store):
    freeze(demo_store, "v1", actor="eng")
    rep = verify("v1", live_corpus_digest="sha256:other")
    assert rep.ok and rep.warnings and "changed since" in rep.warnings[0]


def test_judgments_final_labels_and_qrels(demo_store):
    # two annotators agree on one passage, disagree on another (left out until adjudicated)
    _grade(demo_store, "q001", "vpn-troubleshooting", 0, 50, 1, "ann")
    _grade(demo_store, "q001", "vpn-troubleshooting", 0, 50, 1, "bob")
    _grade(demo_store, "q001", "sick-leave", 0, 40, 2, "ann")
    _grade(demo_store, "q001", "sick-leave", 0, 40, 0, "bob")
    _grade(demo_store, "q002", "pension", 10, 60, 0, "ann")
    v1 = freeze(demo_store, "v1", actor="eng").manifest
    assert v1["label_type"] == "graded_0_3" and v1["n_judgments"] == 2
    assert v1["n_pending_judgments"] == 1 and v1["annotators"] == ("ann", "bob", "demo-expert")
    qrels = load_version("v1").qrels()
    assert qrels["q001"]["vpn-troubleshooting"] == 3  # evidence doc stays 3 (max rule)
    assert "sick-leave" not in qrels["q001"]
    assert qrels["q002"]["pension"] == 0  # judged irrelevant is kept as a 0
    _grade(demo_store, "q001", "sick-leave", 0, 40, 2, "lead", op="adjudicate")
    _grade(demo_store, "q002", "pension", 10, 60, None, "ann", op="retract")
    freeze(demo_store, "v2", actor="eng")
    v2 = load_version("v2")
    assert v2.qrels()["q001"]["sick-leave"] == 2
    assert "pension" not in v2.qrels().get("q002", {})
    assert set(v2.judgments["basis"]) == {"agreed", "adjudicated"}
    d = versions.diff_versions("v1", "v2")
    assert [x["doc_id"] for x in d["judgments"]["added"]] == ["sick-leave"]
    assert [x["doc_id"] for x in d["judgments"]["removed"]] == ["pension"]


def test_corpus_change_moves_quotes_or_lists_them_broken(demo_store):
    """Must show: change one document; the affected quote is re-placed when it still exists
    and listed as broken when it does not, and freeze refuses, naming query and quote."""
    raw = demo_store.read_one("SELECT raw_text FROM documents WHERE doc_id = 'vpn-troubleshooting'")[0]
    quote = demo_store.read_one("SELECT quote FROM current_evidence WHERE query_id = 'q001'")[0]
    moved = "A new first paragraph moves every offset.\n\n" + raw
    rep = import_documents(demo_store, load_sources([("vpn-troubleshooting.md", moved.encode())]),
                           actor="eng", replace=True)
    assert ("q001", "e1") in {(m["query_id"], m["evidence_id"]) for m in rep.drift.moved}
    assert not rep.drift.broken and not rep.drift.confirmed
    s, e = demo_store.read_one("SELECT start, \"end\" FROM current_evidence WHERE query_id = 'q001'")
    assert moved[s:e] == quote
    freeze(demo_store, "after-move", actor="eng")  # nothing broken

    rewritten = moved.replace(quote, "Certificates are renewed by the service desk on request.")
    rep = import_documents(demo_store, load_sources([("vpn-troubleshooting.md", rewritten.encode())]),
                           actor="eng", replace=True)
    assert [(b["query_id"], b["evidence_id"]) for b in rep.drift.broken] == [("q001", "e1")]
    assert "1 BROKEN" in rep.summary()
    with pytest.raises(ValidationError) as err:
        freeze(demo_store, "v1", actor="eng")
    assert len(err.value.problems) == 1
    assert "query q001 evidence e1 ('VPN-ERR-0417 means" in err.value.problems[0]
    assert "earlier text of 'vpn-troubleshooting'" in err.value.problems[0]
    assert not (demo_store.path.parent / "versions" / "v1").exists()


def test_grades_on_a_changed_document_block_freezing(demo_store):
    sha = demo_store.read_one("SELECT canonical_sha256 FROM documents WHERE doc_id = 'pension'")[0]
    demo_store.write(lambda cur: grade_state.append_tx(cur, query_id="q002", doc_id="pension", start=0, end=20,
                                                       op="grade", grade=2, actor="ann", created_at=utcnow(),
                                                       doc_sha256=sha, rubric_version=None))
    freeze(demo_store, "ok", actor="eng")
    raw = demo_store.read_one("SELECT raw_text FROM documents WHERE doc_id = 'pension'")[0]
    import_documents(demo_store, load_sources([("pension.md", ("Moved. " + raw).encode())]), actor="eng", replace=True)
    with pytest.raises(ValidationError) as err:
        freeze(demo_store, "v2", actor="eng")
    assert any("judgment by ann of pension[0:20]" in p and "re-judge" in p for p in err.value.problems)


def test_diff_lists_query_and_span_changes(demo_store):
    from golden_store.live.queries import get_query, retire_query, save_query
    from dataclasses import replace

    freeze(demo_store, "a", actor="eng")
    save_query(demo_store, replace(get_query(demo_store, "q002"), stratum="lexical"), actor="lead")
    retire_query(demo_store, "q003", actor="lead")
    from golden_store.live.queries import QueryRecord
    from datetime import date
    save_query(demo_store, QueryRecord("q100", "New?", "negative", False, "expert", date(2026, 2, 1)), actor="lead")
    freeze(demo_store, "b", actor="eng")
    d = versions.diff_versions("a", "b")
    assert d["queries"]["added"] == ["q100"] and d["queries"]["removed"] == ["q003"]
    assert d["queries"]["changed"] == [{"query_id": "q002", "fields": {"stratum": {"from": "paraphrase", "to": "lexical"}}}]
    assert {x["query_id"] for x in d["spans"]["removed"]} == {"q003"}
    text = versions.format_diff(d)
    assert "+ q100" in text and "- q003" in text and "~ q002 stratum" in text


def test_exports_trec_beir_jsonl(demo_store, tmp_path):
    freeze(demo_store, "v1", actor="eng")
    v = load_version("v1")
    export_version(v, "trec", tmp_path / "trec")
    lines = (tmp_path / "trec" / "qrels.txt").read_text().splitlines()
    assert lines == qrels_lines(v.qrels()) and len(lines) == 39
    assert all(len(line.split()) == 4 and line.split()[1] == "0" for line in lines)
    assert json.loads((tmp_path / "trec" / "manifest.json").read_text())["content_digest"] == v.manifest["content_digest"]

    export_version(v, "beir", tmp_path / "beir")
    corpus = [json.loads(x) for x in (tmp_path / "beir" / "corpus.jsonl").read_text().splitlines()]
    assert len(corpus) == 20 and set(corpus[0]) == {"_id", "title", "text"}
    qs = [json.loads(x) for x in (tmp_path / "beir" / "queries.jsonl").read_text().splitlines()]
    assert len(qs) == 40 and {"_id", "text"} <= set(qs[0])
    tsv = pd.read_csv(tmp_path / "beir" / "qrels" / "test.tsv", sep="\t")
    assert list(tsv.columns) == ["query-id", "corpus-id", "score"] and len(tsv) == 39
    assert {(r[0], r[1]): int(r[2]) for r in tsv.itertuples(index=False)} == {
        (q, d): g for q, docs in v.qrels().items() for d, g in docs.items()}

    export_version(v, "jsonl", tmp_path / "jl")
    rows = [json.loads(x) for x in (tmp_path / "jl" / "golden.jsonl").read_text().splitlines()]
    by_id = {r["query_id"]: r for r in rows}
    assert len(rows) == 40 and by_id["q003"]["stratum"] == "multi_hop" and len(by_id["q003"]["evidence"]) == 2
    neg = [r for r in rows if r["stratum"] == "negative"]
    assert neg and all(not r["evidence"] and not r["answerable"] for r in neg)

    with pytest.raises(ValidationError, match="not an empty folder"):
        export_version(v, "trec", tmp_path / "trec")
    with pytest.raises(ValidationError, match="Unknown export format"):
        export_version(v, "csv", tmp_path / "x")


def test_derive_qrels_rule():
    q = derive_qrels([("q1", "d1"), ("q1", "d1"), ("q2", "d9")], [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q1", "d3", 1)])
    assert q == {"q1": {"d1": 3, "d2": 0, "d3": 2}, "q2": {"d9": 3}}
    assert qrels_lines(q) == ["q1 0 d1 3", "q1 0 d2 0", "q1 0 d3 2", "q2 0 d9 3"]


def test_verify_catches_a_copied_version_and_restamped_facts(demo_store):
    import shutil

    freeze(demo_store, "v1", actor="eng")
    vdir = demo_store.path.parent / "versions"
    shutil.copytree(vdir / "v1", vdir / "v1-copy")
    assert any("a copied or renamed version" in p for p in verify("v1-copy").problems)
    m = json.loads((vdir / "v1" / "manifest.json").read_text())
    m["strata"]["lexical"] = 999
    m["content_digest"] = versions.manifest_digest(m)
    (vdir / "v1" / "manifest.json").write_text(json.dumps(m))
    assert any(p.startswith("manifest strata=") for p in verify("v1").problems)


def test_manifest_is_read_only_all_the_way_down_and_data_digest_is_stable(demo_store):
    a = freeze(demo_store, "a", actor="eng", note="one").manifest
    b = freeze(demo_store, "b", actor="other", note="two").manifest
    with pytest.raises(TypeError):
        a["strata"]["lexical"] = 1  # type: ignore[index]
    assert a["content_digest"] != b["content_digest"]  # name, note, time differ
    assert a["data_digest"] == b["data_digest"]        # the labels and corpus do not
    assert a["raw_corpus_digest"].startswith("sha256:")


def test_documents_are_frozen_in_doc_id_order_range_by_range_with_the_same_bytes(demo_store, monkeypatch):
    """documents.parquet is read in doc_id ranges (a 1 GiB corpus sorted whole took 7 GB):
    documents inserted out of id order come out sorted and complete, and the bytes do not
    depend on how many ranges it took (the data_digest identifies content)."""
    from golden_store import freezing

    extra = [{"doc_id": f"z{n:03}", "text": f"Late document {n}, imported after the demo."} for n in (7, 3, 9, 1)]
    import_documents(demo_store, load_sources([("late.jsonl", "\n".join(json.dumps(d) for d in extra).encode())]),
                     actor="t")
    one = freeze(demo_store, "one-range", actor="eng")
    monkeypatch.setattr(freezing, "_DOCUMENT_CHUNK_CHARS", 500)  # a few documents per range
    many = freeze(demo_store, "many-ranges", actor="eng")
    table = pq.read_table(many.path / "documents.parquet")
    ids = table.column("doc_id").to_pylist()
    live = [r[0] for r in demo_store.read("SELECT doc_id FROM documents")]
    assert ids == sorted(live) and len(ids) == 24
    assert table.num_rows == json.loads((many.path / "manifest.json").read_text())["n_documents"]
    assert (many.path / "documents.parquet").read_bytes() == (one.path / "documents.parquet").read_bytes()
    assert table.equals(pq.read_table(one.path / "documents.parquet"))
