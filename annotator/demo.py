"""The demo project: a fictional company's HR and IT handbook, 40 questions across every
stratum (6 unanswerable), expert evidence quotes and a rubric, loaded in one transaction
so a frozen demo version already has qrels."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store import corpus, queries
from golden_store.errors import ValidationError
from golden_store.evidence import EvidenceSpan, append_evidence_tx
from golden_store.rubric import add_rubric_version_tx
from golden_store.resolver import CorpusIndex, SpanResolver
from golden_store.store import Store, is_empty

DEMO_DIR = Path(__file__).parent / "demo_data"


def store_is_empty(store: Store) -> bool:
    return is_empty(store)


def load_demo(store: Store, user: User, progress: Callable[[int, int], None] | None = None) -> dict:
    """Load the demo into an empty store. Refuses a store that already has a corpus or
    queries: the demo must never mix with a team's real labels."""
    require(user, Permission.LOAD_DEMO)
    if not store_is_empty(store):
        raise ValidationError(
            "The demo loads only into an empty store; this one already has documents or queries. "
            "Use another file: golden --db demo.duckdb demo"
        )
    docs = corpus.load_paths([DEMO_DIR / "corpus"], progress)
    records = queries.parse_query_file(
        "queries.jsonl", (DEMO_DIR / "queries.jsonl").read_bytes(), set(queries.known_strata(store))
    )
    resolver = SpanResolver(CorpusIndex.from_raw({d.doc_id: d.raw_text for d in docs}))
    spans: list[EvidenceSpan] = []
    per_query: dict[str, int] = {}
    for lineno, line in enumerate((DEMO_DIR / "evidence.jsonl").read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        ev = json.loads(line)
        res = resolver.resolve(ev["quote"], doc_id=ev["doc_id"])
        if res.status != "exact":
            raise ValidationError(f"demo evidence.jsonl line {lineno}: quote is {res.status}, expected exact")
        m = res.best
        n = per_query[ev["query_id"]] = per_query.get(ev["query_id"], 0) + 1
        spans.append(EvidenceSpan(ev["query_id"], f"e{n}", ev["quote"], m.doc_id, m.start, m.end,
                                  m.canonical_start, m.canonical_end, "exact", 100.0))
    rubric_text = (DEMO_DIR / "rubric.md").read_text("utf-8")

    def run(cur: duckdb.DuckDBPyConnection) -> dict:
        rep = corpus.import_documents_tx(cur, docs, actor=user.username)
        qrep = queries.import_queries_tx(cur, records, actor=user.username)
        version = add_rubric_version_tx(cur, rubric_text, "Initial rubric with one worked example per grade.",
                                        user.username)
        append_evidence_tx(cur, spans, actor="demo-expert", rubric_version=version)
        return {"documents": len(rep.added), "queries": qrep["added"], "evidence_spans": len(spans),
                "rubric_version": version, "corpus_digest": rep.corpus_digest}

    return store.write(run)
