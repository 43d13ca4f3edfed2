"""Deriving document-level qrels from span evidence and passage judgments (pure functions).

Labels are stored as spans and (query, passage) grades; qrels are derived, never authored.
The rule, recorded in every manifest as ``qrels_rule``:

* a document that holds an evidence span for a query gets grade ``EVIDENCE_GRADE`` (3,
  "fully answers": an expert quoted it as the answer, or as one hop of it);
* a document with judged passages gets the maximum grade of those passages, 0 included,
  so judged-irrelevant documents are known to be judged (bpref, judged@k need that);
* the document's qrel is the maximum of the two.
"""

from __future__ import annotations

from collections.abc import Iterable

EVIDENCE_GRADE = 3
QRELS_RULE = (
    "doc grade = max(3 if the doc holds an evidence span for the query, "
    "max grade of the query's judged passages in the doc); judged 0s are kept"
)


def derive_qrels(
    evidence: Iterable[tuple[str, str]],
    judgments: Iterable[tuple[str, str, int]],
) -> dict[str, dict[str, int]]:
    """``evidence``: (query_id, doc_id) pairs; ``judgments``: (query_id, doc_id, grade).
    Returns {query_id: {doc_id: grade}}."""
    out: dict[str, dict[str, int]] = {}
    for qid, doc in evidence:
        docs = out.setdefault(qid, {})
        docs[doc] = max(docs.get(doc, EVIDENCE_GRADE), EVIDENCE_GRADE)
    for qid, doc, grade in judgments:
        docs = out.setdefault(qid, {})
        docs[doc] = max(docs.get(doc, int(grade)), int(grade))
    return out


def qrels_lines(qrels: dict[str, dict[str, int]]) -> list[str]:
    """TREC qrels lines ``qid 0 docid grade``, sorted by query then document."""
    return [
        f"{qid} 0 {doc} {grade}"
        for qid in sorted(qrels)
        for doc, grade in sorted(qrels[qid].items())
    ]
