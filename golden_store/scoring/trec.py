"""Vectorized evaluation of whole runs, trec_eval semantics, and fast TREC file reading.

* Ranking: score descending, then document id descending (trec_eval's tie break). A run
  that lists a document twice for one query is refused, judged or not (trec_eval refuses
  it too: "duplicate docs").
* Judgments: a grade below 0 means "in the pool, not judged" (trec_eval): such a document
  is neither relevant nor judged non-relevant (Bpref skips it, Judged does not count it).
* Queries: every query in the qrels is evaluated; one missing from the run is scored as
  trec_eval ``-c`` scores it (0 on every measure but its relevant count) and counts in the
  mean. Run queries without judgments are ignored (nothing to score them against). A query
  whose judgments contain no relevant document scores 0 (as trec_eval's per-query values).
* Options: trec_eval's ``-l`` (``rel``), ``-M`` (``max_docs``), ``-J`` (``judged_only``)
  and ``-N`` (``num_docs``).
* The overall value is the mean over the evaluated queries (a sum for the counts, a
  geometric mean for gm_map and gm_bpref, as trec_eval's "all" line); per-query values are
  kept. The measures and their formulas: :mod:`golden_store.scoring.measures` and
  :mod:`golden_store.scoring.formulas`.

Everything is numpy over the whole run: no Python loop per line or per query. A run file
is read and ranked without pandas (see "the run file path" below).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from golden_store.core.errors import ValidationError
from golden_store.scoring.measures import Measure, parse_measures
from golden_store.scoring.trec_columns import (
    _dictionary_strings, _from_np, _hash_strings, _is_frame, _np_view, _query_mix, _str_array, _string_hashes,
    _take, _to_np, r_key_of)
from golden_store.scoring.trec_files import (
    _QRELS, _RUN, RunLines, _read_table, line_number, qrels_frame, read_qrels, read_run, read_run_lines, run_frame)
from golden_store.scoring.trec_result import EvalResult, _PerQueryColumns

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is read or made
    import pandas as pd

__all__ = ["EvalResult", "RunLines", "evaluate_trec", "line_number", "qrels_from_mapping", "r_key_of", "read_qrels",
           "read_run", "read_run_lines", "run_frame"]

QrelsLike = "pd.DataFrame | Mapping[str, Mapping[str, int]] | str | Path"
RunLike = "pd.DataFrame | Mapping[str, Mapping[str, float]] | str | Path"


class _Qrels:
    """Qrels as three arrays: query ids and document ids (numpy strings), grades (int64).
    A qrels file becomes these straight from Arrow, without pandas."""

    __slots__ = ("qid", "doc", "grade")

    def __init__(self, qid, doc, grade) -> None:
        self.qid = _str_array(qid)
        self.doc = _str_array(doc)
        self.grade = np.asarray(grade).astype(np.int64)

    @classmethod
    def of(cls, qrels) -> _Qrels:
        if isinstance(qrels, (str, Path)):
            table = _read_table(Path(qrels), _QRELS)
            qid = [_dictionary_strings(c) for c in table["query_id"].chunks]
            return cls(np.concatenate(qid) if qid else [], np.array(table["doc_id"].to_pylist(), dtype=str),
                       _to_np(table["grade"], np.int64))
        if _is_frame(qrels):
            return cls(qrels["query_id"].to_numpy(), qrels["doc_id"].to_numpy(), qrels["grade"].to_numpy())
        rows = [(q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items()]
        return cls([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    def judgments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query ids, sorted; then per judged (query, document) pair, sorted by query and
        document: its query code, document id, grade). A repeated pair keeps its last line."""
        qids = np.unique(self.qid)
        docs, dcode = np.unique(self.doc, return_inverse=True)
        nd = max(1, docs.size)
        key = np.searchsorted(qids, self.qid).astype(np.int64) * nd + dcode.reshape(-1)
        uniq, last = np.unique(key[::-1], return_index=True)
        return qids, uniq // nd, docs[uniq % nd], self.grade[::-1][last]




# ---- evaluation ---------------------------------------------------------------------------------


def _refuse_duplicates(keys: np.ndarray, describe, source) -> None:
    """A run must not list a document twice for one query: trec_eval refuses such runs
    ("duplicate docs"), judged or not, so this does too. ``keys`` are (query, document)
    codes of the run lines of judged queries."""
    import pandas as pd

    if keys.size < 2:
        return
    if pd.unique(keys).size == keys.size:
        return
    srt = np.sort(keys)
    dup = srt[1:][srt[1:] == srt[:-1]]
    q, d = describe(int(dup[0]))
    raise _duplicate_error(source, q, d, np.unique(dup).size)


def _duplicate_error(source, query, doc, n_repeated: int) -> ValidationError:
    where = f"{source}: " if isinstance(source, (str, Path)) else ""
    return ValidationError(f"{where}query {query} lists document {doc} more than once ({n_repeated} repeated "
                           f"document(s)); a run ranks each document once per query (trec_eval refuses it too).")



def evaluate_trec(qrels, run, measures: Iterable[str | Measure], *, rel: int | None = None,
                  max_docs: int | None = None, judged_only: bool = False, num_docs: int = 0,
                  health: bool = False) -> EvalResult:
    """Score ``run`` against ``qrels`` (DataFrames, {qid: {doc: value}} dicts, or TREC file
    paths) on ``measures`` (ir_measures or trec_eval names, see
    :mod:`golden_store.scoring.measures`). trec_eval's options: ``rel`` is ``-l`` (the
    relevance threshold of measures that take one and do not name it), ``max_docs`` is
    ``-M`` (only the first documents of each ranking count), ``judged_only`` is ``-J``
    (unjudged documents are removed before anything is computed), ``num_docs`` is ``-N``
    (collection size, for utility); ``-c`` is always on. ``health``: also fill
    ``judged`` with the run's Judged@10 health figure
    (:func:`~golden_store.scoring.health.judged_health` with ``max_docs``), from the same
    ranking: the run is read and ranked once."""
    from golden_store.scoring import formulas

    ms = parse_measures(measures, rel=rel)
    if not ms:
        raise ValidationError("Give at least one measure (e.g. -m nDCG@10).")
    if max_docs is not None and max_docs < 1:
        raise ValidationError("-M (max documents per query) must be at least 1.")
    q = _Qrels.of(qrels)
    if isinstance(run, (str, Path)):
        ranked = _rank_run_file(q, Path(run))
    else:
        ranked = _rank_frame(q, run_frame(run), run)
    if max_docs is not None:
        ranked = ranked.limited(max_docs)
    judged = None
    if health:  # on the ranking after -M, before -J (unjudged results are what it counts)
        from golden_store.scoring.health import health_of_ranking

        judged = health_of_ranking(ranked)
    if judged_only:
        ranked = ranked.limited(None, judged_only)
    ranked.num_docs = num_docs
    results: dict[str, np.ndarray] = {}
    definitions: dict[str, str] = {}
    aggregates: dict[str, str] = {}
    trec_names: dict[str, str] = {}
    for m in ms:
        name = str(m)
        results[name] = getattr(formulas, m.spec.formula)(ranked, m)
        definitions[name] = m.definition()
        if m.aggregate != "mean":
            aggregates[name] = m.aggregate
        if trec := m.trec_name():
            trec_names[name] = trec
    qids = ranked.qids
    per_query = _PerQueryColumns(qids, results)
    mean = {str(m): formulas.aggregate(results[str(m)], m.aggregate) for m in ms}
    definitions["_queries"] = ("every query in the qrels; a query missing from the run scores 0 and counts "
                               "(trec_eval -c); run queries without judgments are ignored")
    definitions["_ties"] = "score descending, then document id descending (trec_eval)"
    definitions["_pool"] = "a grade below 0 means in the pool but not judged (trec_eval)"
    # the level is said on every result: -m AP means grade >= 1 here unless rel is given
    definitions["_relevance"] = (f"binary measures count grade >= {1 if rel is None else rel} unless the measure "
                                 f"says rel=...; nDCG uses the grades")
    if aggregates:
        definitions["_aggregate"] = ("the overall value is the mean over queries, except: " +
                                     "; ".join(f"{k}: {'sum' if v == 'sum' else 'geometric mean'}"
                                               for k, v in aggregates.items()))
    if max_docs is not None:
        definitions["_max_docs"] = f"only the first {max_docs} documents of each ranking count (trec_eval -M)"
    if judged_only:
        definitions["_judged_only"] = ("unjudged documents removed from every ranking before scoring, the rest "
                                       "ranked among themselves (trec_eval -J)")
    return EvalResult([str(m) for m in ms], per_query, mean, int(qids.size), definitions, aggregates=aggregates,
                      trec_names=trec_names, judged=judged)


def _judgments(q: _Qrels, qids: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, query code, grade) of each judged (query, document), ``docs`` the sorted
    document vocabulary; a repeated pair keeps its last line."""
    nd = max(1, docs.size)
    q_qcode = np.searchsorted(qids, q.qid)
    q_dcode = np.searchsorted(docs, q.doc)
    q_key = q_qcode.astype(np.int64) * nd + q_dcode
    uniq_key, last = np.unique(q_key[::-1], return_index=True)
    j_grade = q.grade[::-1][last]
    return uniq_key, (uniq_key // nd).astype(np.int64), j_grade


def _rank_frame(q: _Qrels, r: pd.DataFrame, source):
    """The pool rows of an in-memory run: every line ranked (trec_eval order), then the
    judged (query, document) pairs kept."""
    from golden_store.scoring.formulas import Ranked

    qids = np.unique(q.qid)
    nq = qids.size
    r_q = r["query_id"].to_numpy().astype(str)
    r_qcode = np.searchsorted(qids, r_q)
    in_qrels = (r_qcode < nq) & (qids[np.minimum(r_qcode, max(nq - 1, 0))] == r_q) if nq else np.zeros(len(r), bool)
    r = r[in_qrels]
    r_qcode = r_qcode[in_qrels]
    docs_all = np.concatenate([q.doc, r["doc_id"].to_numpy().astype(str)])
    doc_vocab, doc_codes = np.unique(docs_all, return_inverse=True)
    r_dcode = doc_codes[q.doc.size:]
    nd = max(1, doc_vocab.size)
    j_key, j_q, j_grade = _judgments(q, qids, doc_vocab)

    score = r["score"].to_numpy(dtype=np.float64)
    order = np.lexsort((-r_dcode, -score, r_qcode))
    r_key, r_qcode = r_key_of(r_qcode, r_dcode, nd)[order], r_qcode[order]
    _refuse_duplicates(r_key, lambda key: (qids[key // nd], doc_vocab[key % nd]), source)
    starts = np.searchsorted(r_qcode, np.arange(nq))
    rank = np.arange(r_qcode.size) - starts[r_qcode] + 1  # 1-based
    pos = np.searchsorted(j_key, r_key)
    found = (pos < j_key.size) & (j_key[np.minimum(pos, max(j_key.size - 1, 0))] == r_key) if j_key.size else \
        np.zeros(r_key.size, bool)
    grade = j_grade[pos[found]] if j_key.size else np.zeros(0, np.int64)
    n_ret = np.bincount(r_qcode, minlength=nq)[:nq]
    return Ranked(qids, r_qcode[found], rank[found], grade, n_ret, n_ret > 0, j_q, j_grade)


# ---- the run file path --------------------------------------------------------------------------
#
# A run file of millions of lines is scored without a Python loop per line and without
# pandas: Arrow reads it (query ids dictionary-encoded, document ids one string buffer, the
# scores), then numpy works on codes. Each line gets a 64-bit key: the hash of its document
# id mixed with its query, the high bits, and its line number, the low bits. One in-place
# sort of the keys finds repeated (query, document) pairs (equal high bits, then compared as
# strings: a hash collision is not an error) and, by binary search, the line of every
# judged pair (again confirmed as strings). Ranks: a TREC run is already grouped by query
# with scores descending, so a line's rank is its position in its query's block; only the
# judged lines that tie with a neighbour are ranked among their tie (document id
# descending, trec_eval). A file in another order is sorted first.


class _RunColumns:
    """What the run file path keeps of a run, made record batch by record batch as Arrow's
    reader hands them over (each step on a batch that is still in cache; the batch's own
    query and score buffers are then let go):

    * ``rq``: int32 code of every line's query: the judged queries are 0..len(qids)-1 (their
      place in ``qids``), the others follow by first appearance; ``names``: each code's id;
    * ``score``: float64;
    * ``docs``: the document ids (a chunked Arrow array);
    * ``key``: every line's 64-bit key, sorted by :meth:`finish`: (hash of the document id ^
      a mix of the query) in the high bits, the line number in the low ``row_bits``.

    ``capacity``: at least the number of lines (the arrays are made that long and cut to the
    lines added; pages never written cost no memory)."""

    def __init__(self, qids: np.ndarray, capacity: int) -> None:
        self.index = {q: i for i, q in enumerate(qids.tolist())}
        self.names = list(self.index)
        self.row_bits = max(1, (max(capacity, 1) - 1).bit_length())
        self.high = ~np.uint64((1 << self.row_bits) - 1)
        self.rq = np.empty(capacity, np.int32)
        self.score = np.empty(capacity, np.float64)
        self.key = np.empty(capacity, np.uint64)
        self.docs: list = []
        self.n = 0

    def add(self, batch) -> bool:
        """Add a batch's lines; False (nothing added) when they would pass the capacity (the
        line numbers would no longer fit in the keys' low bits)."""
        import pyarrow as pa

        lo, hi = self.n, self.n + batch.num_rows
        if hi > self.rq.size:
            return False
        col = batch.column("query_id")  # dictionary-encoded: a few ids per batch, looked up in Python
        lut = np.empty(len(col.dictionary), np.int32)
        for i, name in enumerate(col.dictionary.to_pylist()):
            code = self.index.get(name)
            if code is None:
                code = self.index[name] = len(self.names)
                self.names.append(name)
            lut[i] = code
        indices = col.indices if col.indices.type == pa.int32() else col.indices.cast(pa.int32())
        rq = self.rq[lo:hi]
        np.take(lut, _np_view(indices, np.int32), out=rq)
        self.score[lo:hi] = _np_view(batch.column("score"), np.float64)
        k = self.key[lo:hi]
        _hash_strings(batch.column("doc_id"), k)
        k ^= _query_mix(rq)
        k &= self.high
        k |= np.arange(lo, hi, dtype=np.uint64)
        self.docs.append(batch.column("doc_id"))
        self.n = hi
        return True

    def finish(self) -> tuple[np.ndarray, list[str], np.ndarray, object, np.ndarray, int]:
        import pyarrow as pa

        n = self.n
        key = self.key[:n]
        key.sort()
        docs = pa.chunked_array(self.docs, self.docs[0].type if self.docs else pa.string())
        return self.rq[:n], self.names, self.score[:n], docs, key, self.row_bits


def _run_columns(table, qids: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray, object, np.ndarray, int]:
    """:class:`_RunColumns` of a run already read into an Arrow table."""
    cols = _RunColumns(qids, table.num_rows)
    for b in table.to_batches():
        if b.num_rows:
            cols.add(b)  # the capacity is the table's length: every batch fits
    return cols.finish()


_MIN_RUN_LINE = 12  # bytes of the shortest run line: six one-character fields, five spaces, a newline


def _stream_run_columns(path: Path, qids: np.ndarray):
    """:class:`_RunColumns` of a clean run file (single spaces, six fields, no comment line,
    finite scores: what a retrieval system writes), made while Arrow's reader parses the
    next blocks on its own threads, so hashing a batch overlaps reading the rest. None
    when the file is anything else (or unreadable): the caller then reads it the general
    way, which also names a bad line."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from golden_store.scoring.trec_files import _arrow_options, _batch_usable

    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(4)
        if not head or head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00", b"\xef\xbb\xbf")):
            return None
        read, parse, convert, pool = _arrow_options(_RUN[1], "score", pa.float64())
        cols = _RunColumns(qids, size // _MIN_RUN_LINE + 1)
        with pcsv.open_csv(str(path), read_options=read, parse_options=parse, convert_options=convert,
                           memory_pool=pool) as reader:
            for batch in reader:
                if not batch.num_rows:
                    continue
                if not _batch_usable(batch, "score") or not cols.add(batch):
                    return None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None
    if cols.n == 0:
        return None
    return cols.finish()


def _refuse_repeats(key: np.ndarray, row_bits: int, docs, rq: np.ndarray, nq: int, names: list[str], path) -> None:
    """A judged query that lists a document twice: the run is refused (trec_eval refuses it
    too). Candidates are lines whose keys share the high bits; they are compared exactly."""
    low = np.uint64(1 << row_bits)
    step = 1 << 16  # slices of the sorted keys, with buffers reused (no fresh memory per slice)
    diff = np.empty(step, np.uint64)
    near = np.empty(step, bool)
    cand = []
    for s in range(0, max(key.size - 1, 0), step):
        m = min(step, key.size - 1 - s)
        np.bitwise_xor(key[s + 1:s + 1 + m], key[s:s + m], out=diff[:m])
        np.less(diff[:m], low, out=near[:m])
        if near[:m].any():
            cand.append(np.flatnonzero(near[:m]) + s)
    if not cand:
        return
    p = np.concatenate(cand)
    rows = np.unique(np.concatenate([key[p], key[p + 1]]) & (low - np.uint64(1))).astype(np.int64)
    rows = rows[rq[rows] < nq]  # a query without judgments is not evaluated, so not checked (trec_eval)
    if rows.size < 2:
        return
    seen: set = set()
    repeat = None
    n_repeated = 0
    for pair in zip(rq[rows].tolist(), _take(docs, rows).to_pylist()):  # in file order
        if pair in seen:
            n_repeated += 1
            repeat = repeat or pair  # the first line of the file that repeats an earlier one
        seen.add(pair)
    if repeat:
        raise _duplicate_error(path, names[repeat[0]], repeat[1], n_repeated)


def _find_judged(key: np.ndarray, row_bits: int, docs, rq: np.ndarray, j_q: np.ndarray,
                 j_doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(line, judgment) of every judged (query, document) pair the run lists: binary search
    of each pair's key in the sorted line keys, confirmed by query and document id."""
    if key.size == 0 or j_q.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    low = np.uint64((1 << row_bits) - 1)
    jk = (_string_hashes(j_doc) ^ _query_mix(j_q)) & ~low
    by_key = np.argsort(jk)  # searching sorted needles walks the keys once
    jk = jk[by_key]
    lo = np.searchsorted(key, jk, "left")
    cnt = np.searchsorted(key, jk | low, "right") - lo
    which = by_key[np.repeat(np.arange(jk.size), cnt)]
    first = np.cumsum(cnt) - cnt
    pos = np.repeat(lo - first, cnt) + np.arange(which.size)
    rows = (key[pos] & low).astype(np.int64)
    ok = rq[rows] == j_q[which]
    rows, which = rows[ok], which[ok]
    if rows.size:
        same = np.fromiter(map(str.__eq__, _take(docs, rows).to_pylist(), j_doc[which].tolist()), bool,
                           rows.size)
        rows, which = rows[same], which[same]
    return rows, which


def _first_true(lo: np.ndarray, hi: np.ndarray, pred) -> np.ndarray:
    """Vectorized binary search: for each i, the smallest x in [lo[i], hi[i]] with
    ``pred(x)[i]`` true, where pred is false then true over the range and true at hi[i]
    (hi itself is never tested)."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        act = lo < hi
        if not act.any():
            return lo
        mid = (lo + hi) // 2
        t = pred(mid)
        hi = np.where(act & t, mid, hi)
        lo = np.where(act & ~t, mid + 1, lo)


def _rank_run_file(qa: _Qrels, path: Path):
    """The same pool rows as :func:`_rank_frame`, for a run file (see the comment above)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from golden_store.scoring.formulas import Ranked

    qids, j_q, j_doc, j_grade = qa.judgments()
    nq = qids.size
    got = _stream_run_columns(path, qids)
    if got is None:  # not a clean file: read whole (bad lines named), then the same columns
        table = _read_table(path, _RUN).select(["query_id", "doc_id", "score"])
        got = _run_columns(table, qids)
        del table  # what is kept: the document ids (Arrow), rq, score and the keys
    rq, names, score, docs, key, row_bits = got
    n = int(rq.size)
    _refuse_repeats(key, row_bits, docs, rq, nq, names, path)
    rows, which = _find_judged(key, row_bits, docs, rq, j_q, j_doc)
    del key

    # trec_eval order: grouped by query, score descending (the file's order when it is so)
    change = np.flatnonzero(rq[1:] != rq[:-1]) + 1
    starts = np.concatenate([[0], change]).astype(np.int64)
    order = None
    if np.unique(rq[starts]).size != starts.size or \
            not np.isin(np.flatnonzero(score[1:] > score[:-1]) + 1, change).all():
        order = np.lexsort((-score, rq))
        rq, score = rq[order], score[order]
        starts = np.concatenate([[0], np.flatnonzero(rq[1:] != rq[:-1]) + 1]).astype(np.int64)
        inv = np.empty(n, np.int64)
        inv[order] = np.arange(n)
        pos = inv[rows]
        del inv
    else:
        pos = rows
    ends = np.append(starts[1:], n)

    # rank = place in the query's block; a judged line tied with a neighbour is placed in its
    # tie (the block's lines of equal score) by document id descending
    g = np.searchsorted(starts, pos, "right") - 1
    gs, ge = starts[g], ends[g]
    s = score[pos]
    tie_lo = _first_true(gs, pos, lambda x: score[x] <= s)
    tie_hi = _first_true(pos + 1, ge, lambda x: score[np.minimum(x, n - 1)] < s)
    rk = pos - gs + 1
    tied = np.flatnonzero(tie_hi - tie_lo > 1)
    if tied.size:
        run_lo, first = np.unique(tie_lo[tied], return_index=True)
        run_len = (tie_hi[tied] - tie_lo[tied])[first]
        run_of = np.repeat(np.arange(run_lo.size), run_len)
        run_off = np.cumsum(run_len) - run_len
        at = np.repeat(run_lo - run_off, run_len) + np.arange(run_of.size)  # every line of those ties
        at_rows = at if order is None else order[at]
        # within each tie, documents by id descending (Arrow's sort: byte order, as strcmp)
        ties = pa.Table.from_arrays([_from_np(run_of), _take(docs, at_rows)], names=["r", "d"])
        perm = _to_np(pc.sort_indices(ties, sort_keys=[("r", "ascending"), ("d", "descending")]), np.uint64)
        place = np.empty(perm.size, np.int64)
        place[perm] = np.arange(perm.size) - run_off[run_of[perm]]
        k = np.searchsorted(run_lo, tie_lo[tied])
        rk[tied] = run_lo[k] - gs[tied] + 1 + place[run_off[k] + (pos[tied] - run_lo[k])]

    qc = rq[pos]
    grade = j_grade[which]
    o = np.lexsort((rk, qc))
    qc, rk, grade = qc[o], rk[o], grade[o]
    n_retrieved = np.zeros(nq, np.int64)
    block_q = rq[starts] if n else np.zeros(0, np.int32)
    judged_block = block_q < nq
    n_retrieved[block_q[judged_block]] = (ends - starts)[judged_block]
    return Ranked(qids, qc, rk, grade, n_retrieved, n_retrieved > 0, j_q, j_grade)


def qrels_from_mapping(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    return qrels_frame(qrels)
