"""Document-level grades as ONE relevant unit of a passage run (issue 36, item 3).

A passage run is scored on chunk qrels: a chunk is relevant when it hits a labeled span
(:mod:`golden_store.versions.chunk_labels`). A grade on a whole document (a pooled
document-run result, a TREC/BEIR judgment import) used to go through the hit rule as a span
covering the document, so every chunk of the document became a relevant unit: recall's
denominator and nDCG's ideal ranking grew with the number of chunks, and a small chunker lost
recall for cutting finely (the demo's dense run: q001 R@10 0.2857 with its answer at rank 1).

Here such a grade is one unit per (query, document):

* it is credited to the run's best-ranked chunk of the document for that query, in the
  scorer's own order (score descending, then id descending, as
  :mod:`golden_store.scoring.trec` ranks: :func:`ranking_order`), whatever the hit rule (a
  chunk never covers a whole document, so ``contains_span`` would otherwise never credit it);
* the document's other chunks in that query's ranking are judged non-relevant (grade 0):
  the document was judged as a whole, and its relevance is counted once;
* when the run has no chunk of the document for the query, the unit is still in the qrels,
  under a virtual id (:func:`virtual_prefix` + doc id, never equal to a real passage id), so
  recall counts it as missed;
* a document-level grade subsumed by finer labels of the query in the same document adds no
  unit; the document's chunks that hit none of those labels are judged 0 (see
  :func:`golden_store.versions.chunk_labels.split_document_grades` for when a grade is
  subsumed).

Pure: plain dicts and a DataFrame in, a qrels dict out (no database, no version object).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

DOC_UNIT_PREFIX = "doc:"


def ranking_order(query_ids: np.ndarray, ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The positions of the run lines in the order trec ranks them: grouped by query, score
    descending, then id descending (trec_eval's tie break). The same ``np.lexsort`` on the
    same keys as ``golden_store.scoring.trec._rank_frame``, so the chunk credited with a
    document's unit is the one the scorer ranks first, ties included."""
    _, qcode = np.unique(query_ids.astype(str), return_inverse=True)
    _, icode = np.unique(ids.astype(str), return_inverse=True)
    return np.lexsort((-icode.reshape(-1), -scores.astype(np.float64), qcode.reshape(-1)))


def virtual_prefix(ids: Iterable[str]) -> str:
    """A prefix no id in ``ids`` starts with: ``"doc:"``, or ``"doc:doc:"`` and so on when a
    run's passage ids already start with it. A virtual unit's id is the prefix plus the doc
    id, so it can equal no real passage id, and two documents never share one."""
    ids = [str(i) for i in ids]
    prefix = DOC_UNIT_PREFIX
    while any(i.startswith(prefix) for i in ids):
        prefix = DOC_UNIT_PREFIX + prefix
    return prefix


def unit_qrels(span_qrels: Mapping[str, Mapping[str, int]], documents: Mapping[tuple[str, str], int],
               subsumed: Mapping[tuple[str, str], int], run: pd.DataFrame,
               query_ids: Iterable[str]) -> dict[str, dict[str, int]]:
    """The qrels a passage run is scored on, for the questions ``query_ids``.

    ``span_qrels``: {query: {chunk id: grade}} from the span-level labels through the hit
    rule; ``documents``: {(query, doc): grade} of the document-level grades that stand as a
    unit; ``subsumed``: the ones finer labels subsume; ``run``: one line per retrieved chunk,
    columns ``query_id``, ``passage_id``, ``doc_id`` (the chunk's document) and ``score``.
    A question gets its span-level chunk grades, then per document-level grade one unit (see
    the module's notes); a question with neither gets an empty dict."""
    out = {q: dict(span_qrels.get(q, {})) for q in query_ids}
    graded = {k: g for k, g in {**subsumed, **documents}.items() if k[0] in out}
    if not graded:
        return out
    rq = run["query_id"].to_numpy().astype(str)
    rdoc = run["doc_id"].to_numpy().astype(str)
    on_graded = pd.MultiIndex.from_arrays([rq, rdoc]).isin(list(graded))
    lines = run[on_graded]
    order = ranking_order(lines["query_id"].to_numpy(), lines["passage_id"].to_numpy(), lines["score"].to_numpy())
    credited: set[tuple[str, str]] = set()
    for q, pid, doc in zip(lines["query_id"].to_numpy()[order].astype(str),
                           lines["passage_id"].to_numpy()[order].astype(str),
                           lines["doc_id"].to_numpy()[order].astype(str)):
        key, qrels = (q, doc), out[q]
        if key in documents and key not in credited:  # the document's best-ranked chunk: the unit
            credited.add(key)
            qrels[pid] = max(qrels.get(pid, documents[key]), documents[key])
        else:  # a later chunk, or a chunk of a document whose grade finer labels subsume
            qrels.setdefault(pid, 0)
    missing = [k for k in documents if k[0] in out and k not in credited]
    if missing:
        prefix = virtual_prefix([*run["passage_id"].astype(str),
                                 *(c for docs in span_qrels.values() for c in docs)])
        for q, doc in missing:
            out[q][prefix + doc] = documents[(q, doc)]
    return out
