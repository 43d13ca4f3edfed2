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

Everything is numpy over the whole run: no Python loop per line or per query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from golden_store.errors import ValidationError
from golden_store.scoring.measures import Measure, parse_measures
from golden_store.textin import shown

QrelsLike = "pd.DataFrame | Mapping[str, Mapping[str, int]] | str | Path"
RunLike = "pd.DataFrame | Mapping[str, Mapping[str, float]] | str | Path"


# ---- reading ----------------------------------------------------------------------------------
#
# trec_eval's line rules: fields are separated by any run of whitespace; a line whose first
# non-blank character is ``#`` is a comment; blank lines are skipped; a run line may carry
# text after its run tag (ignored); a qrels line has exactly four fields. A ``#`` inside a
# field (``doc#3``) is part of the field. Files are read by Arrow's C++ parser: straight
# from the file when it is single-space separated (TREC runs usually are), otherwise after
# whole-buffer byte operations that bring it to that form; only when a line is still wrong
# does Python look at lines, to name the first bad one.

_QRELS = ("qrels", ["query_id", "iter", "doc_id", "grade"], "q1 0 doc7 2")
_RUN = ("run", ["query_id", "q0", "doc_id", "rank", "score", "tag"], "q1 Q0 doc7 1 12.5 bm25")
_WHITESPACE = bytes.maketrans(b"\t\r\v\f", b"    ")
_MULTI_SPACE = re.compile(rb" {2,}")
_EDGE_SPACE = re.compile(rb"(?m)^ +| +$")
_COMMENT_LINE = re.compile(rb"(?m)^#[^\n]*(?:\n|$)")
_RUN_TAIL = re.compile(rb"(?m)^((?:[^ \n]+ ){5}[^ \n]+) [^\n]*$")


def _is_data_line(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def _arrow_read(source, names: list[str], value: str, value_type):
    """A pyarrow Table (query_id dictionary, doc_id, ``value``) or None when the parser
    refuses the input (wrong field count, a value that is not a number, bad UTF-8)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        return pcsv.read_csv(
            source,
            read_options=pcsv.ReadOptions(column_names=names),
            parse_options=pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                include_columns=["query_id", "doc_id", value],
                column_types={"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string(),
                              value: value_type},
                strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _clean(data: bytes) -> bytes:
    """Whole-buffer byte operations that bring a TREC file to one space between fields, no
    comment lines: tabs and other whitespace become spaces, runs of spaces one space, spaces
    at line ends go, comment lines go."""
    if any(c in data for c in (b"\t", b"\r", b"\v", b"\f")):
        data = data.translate(_WHITESPACE)
    if b"  " in data:
        data = _MULTI_SPACE.sub(b" ", data)
    if data[:1] == b" " or b"\n " in data or b" \n" in data or data[-1:] == b" ":
        data = _EDGE_SPACE.sub(b"", data)
    if data[:1] == b"#" or b"\n#" in data:
        data = _COMMENT_LINE.sub(b"", data)
    return data


def _usable(table, value: str) -> bool:
    """No comment line or stray whitespace slipped through as a query id, every value a
    finite number."""
    import pyarrow.compute as pc

    col = table["query_id"]
    for chunk in col.chunks:
        ids = chunk.dictionary.to_pylist()
        if any(i.startswith("#") or not i or any(c.isspace() for c in i) for i in ids):
            return False
    import pyarrow as pa

    v = table[value]
    if v.null_count:
        return False
    return not (pa.types.is_floating(v.type) and table.num_rows and not pc.all(pc.is_finite(v)).as_py())


def _read_table(path: Path, kind: tuple):
    """The Arrow table of a qrels or run file, or a ValidationError naming the file and the
    first bad line."""
    import pyarrow as pa

    what, names, example = kind
    value, value_type = ("grade", pa.int64()) if what == "qrels" else ("score", pa.float64())
    if not path.exists():
        raise ValidationError(f"{path}: no such file.")
    if path.is_dir():
        raise ValidationError(f"{path}: is a folder, not a file.")
    with path.open("rb") as fh:
        head = fh.read(4)
    if not head:
        raise ValidationError(f"{path}: the file is empty.")
    table = None
    if not head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00")):
        table = _arrow_read(str(path), names, value, value_type)  # the common case: straight from the file
    if table is None or not _usable(table, value):
        data = _clean(path.read_bytes())
        table = _arrow_read(pa.py_buffer(data), names, value, value_type)
        if table is None and what == "run":  # text after the run tag: trec_eval ignores it
            table = _arrow_read(pa.py_buffer(_RUN_TAIL.sub(rb"\1", data)), names, value, value_type)
        del data
        if table is None or not _usable(table, value):
            table = _read_careful(path, kind, value)
    if table.num_rows == 0:
        raise ValidationError(f"{path}: the file has no {what} lines.")
    return table


def _read_careful(path: Path, kind: tuple, value: str):
    """Line by line (only when the fast readers refused the file): the first bad line is
    named; integer-valued grades written as decimals (``2.0``) are accepted."""
    import pyarrow as pa

    from golden_store.textin import read_text

    what, names, example = kind
    text = read_text(path)  # encoding problems are named with line and column here
    qs: list[str] = []
    ds: list[str] = []
    vs: list[str] = []
    vi = names.index(value)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not _is_data_line(line):
            continue
        f = line.split()
        if len(f) < len(names) or (what == "qrels" and len(f) > len(names)):
            raise ValidationError(f"{path} line {lineno}: not a {what} line: expected {len(names)} fields like "
                                  f"{example!r}.")
        qs.append(f[0])
        ds.append(f[2])
        vs.append(f[vi])
    raw = pd.Series(vs, dtype=object)
    num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num)
    if what == "qrels":
        bad |= ~np.isclose(np.where(bad, 0.0, num), np.round(np.where(bad, 0.0, num)))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        kind_text = "an integer grade." if what == "qrels" else "a number (only finite numbers)."
        raise ValidationError(f"{path} line {_line_number(path, row)}: {value} {shown(vs[row])} is not {kind_text}")
    values = pa.array(num.astype(np.int64) if what == "qrels" else num)
    return pa.table({"query_id": pa.array(qs, pa.string()).dictionary_encode(), "doc_id": pa.array(ds, pa.string()),
                     value: values})


def _line_number(path: Path, row: int) -> int:
    """1-based line of the ``row``-th data line (not blank, not a comment); only computed
    on error paths."""
    n = -1
    with Path(path).open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if _is_data_line(line):
                n += 1
                if n == row:
                    return lineno
    return row + 1


def _frame(table, value: str) -> pd.DataFrame:
    q = table["query_id"]
    q = q.cast(q.type.value_type) if hasattr(q.type, "value_type") else q
    return pd.DataFrame({"query_id": q.to_numpy(zero_copy_only=False).astype(object),
                         "doc_id": table["doc_id"].to_numpy(zero_copy_only=False).astype(object),
                         value: table[value].to_numpy()})


def read_qrels(path: str | Path) -> pd.DataFrame:
    """TREC qrels ``qid iter docid grade`` -> DataFrame(query_id, doc_id, grade). A grade
    below 0 means "in the pool, not judged" (trec_eval)."""
    return _frame(_read_table(Path(path), _QRELS), "grade")


def read_run(path: str | Path) -> pd.DataFrame:
    """TREC run ``qid Q0 docid rank score tag [ignored...]`` -> DataFrame(query_id, doc_id,
    score). The rank column is ignored (trec_eval ranks by score)."""
    return _frame(_read_table(Path(path), _RUN), "score")


def _qrels_frame(qrels) -> pd.DataFrame:
    if isinstance(qrels, (str, Path)):
        return read_qrels(qrels)
    if isinstance(qrels, pd.DataFrame):
        return qrels[["query_id", "doc_id", "grade"]]
    rows = [(q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "grade"])


def _run_frame(run) -> pd.DataFrame:
    if isinstance(run, (str, Path)):
        return read_run(run)
    if isinstance(run, pd.DataFrame):
        return run[["query_id", "doc_id", "score"]]
    rows = [(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


# ---- evaluation ---------------------------------------------------------------------------------


@dataclass
class EvalResult:
    """What :func:`evaluate_trec` and :func:`~golden_store.scoring.golden.evaluate` return.

    ``measures``: the measure names (canonical spelling, the keys below); ``per_query``:
    one row per evaluated query (sorted ids), one column per measure; ``mean``: each
    measure's overall value (the mean over queries; a sum or a geometric mean where
    ``aggregates`` says so, as trec_eval's "all" line); ``n_queries``; ``definitions``:
    each measure's definition and source, and the run-wide rules (keys starting with
    ``_``); ``trec_names``: trec_eval's name of each measure it has; ``ci95``, ``strata``
    and ``strata_n``: filled by ``evaluate`` (a frozen version)."""

    measures: list[str]
    per_query: pd.DataFrame            # index: query_id (sorted), one column per measure
    mean: dict[str, float]
    n_queries: int
    definitions: dict[str, str] = field(default_factory=dict)
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)       # bootstrap interval of each mean
    strata: dict[str, dict[str, float]] = field(default_factory=dict)        # stratum -> measure -> mean
    strata_n: dict[str, int] = field(default_factory=dict)
    aggregates: dict[str, str] = field(default_factory=dict)   # measure -> sum | gmean (others: mean)
    trec_names: dict[str, str] = field(default_factory=dict)   # measure -> trec_eval's name, where it has one

    def as_dict(self, per_query: bool = False) -> dict:
        out = {"measures": self.measures, "mean": self.mean, "n_queries": self.n_queries,
               "definitions": self.definitions, "trec_eval": self.trec_names}
        if self.aggregates:
            out["aggregates"] = self.aggregates
        if self.ci95:
            out["ci95"] = {m: list(v) for m, v in self.ci95.items()}
        if self.strata:
            out["strata"] = self.strata
            out["strata_n"] = self.strata_n
        if per_query:
            out["per_query"] = {q: {m: float(v) for m, v in row.items()}
                                for q, row in self.per_query.to_dict(orient="index").items()}
        return out


def r_key_of(qcode: np.ndarray, dcode: np.ndarray, nd: int) -> np.ndarray:
    return qcode.astype(np.int64) * nd + dcode


def _refuse_duplicates(keys: np.ndarray, describe, source) -> None:
    """A run must not list a document twice for one query: trec_eval refuses such runs
    ("duplicate docs"), judged or not, so this does too. ``keys`` are (query, document)
    codes of the run lines of judged queries."""
    if keys.size < 2:
        return
    if pd.unique(keys).size == keys.size:
        return
    srt = np.sort(keys)
    dup = srt[1:][srt[1:] == srt[:-1]]
    q, d = describe(int(dup[0]))
    where = f"{source}: " if isinstance(source, (str, Path)) else ""
    raise ValidationError(f"{where}query {q} lists document {d} more than once ({np.unique(dup).size} repeated "
                          f"document(s)); a run ranks each document once per query (trec_eval refuses it too).")


_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)


def _doc_hashes(doc, rows: int = 1 << 20) -> np.ndarray | None:
    """A 64-bit hash of every document id (equal ids, equal hashes), computed by Arrow and
    numpy without a Python loop per line: each id is padded with spaces (never part of an
    id) to a multiple of 8 bytes and its 8-byte words are mixed. None for ids over 256 bytes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(doc)
    out = np.empty(n, np.uint64)
    if n == 0:
        return out
    longest = pc.max(pc.binary_length(doc)).as_py() or 1
    if longest > 256:
        return None
    width = -(-longest // 8) * 8
    mult = [np.uint64(c) for c in _MIX]
    shift = np.uint64(29)
    for start in range(0, n, rows):
        part = doc.slice(start, rows)
        fixed = pc.utf8_rpad(part, width=width, padding=" ").cast(pa.binary(width))
        words = np.frombuffer(fixed.buffers()[1], dtype=np.uint64).reshape(-1, width // 8)
        words = words[fixed.offset:fixed.offset + len(fixed)]
        h = np.zeros(len(fixed), np.uint64)
        for j in range(width // 8):
            h ^= words[:, j]
            h *= mult[j % 4]
            h ^= h >> shift
        out[start:start + len(fixed)] = h
    return out


def _line_keys(doc, ri: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (query, document) per run line (equal pairs, equal keys)."""
    h = _doc_hashes(doc)
    if h is None:  # very long ids: Arrow's hash table
        import pyarrow.compute as pc

        h = pc.dictionary_encode(doc).indices.to_numpy(zero_copy_only=False).astype(np.uint64)
    h ^= np.multiply(ri, np.uint64(_MIX[3]), dtype=np.uint64, casting="unsafe")  # in place (ri >= 0)
    return h


def _refuse_repeated_docs(doc, ri: np.ndarray, to_q: np.ndarray, run_qids: np.ndarray, path) -> None:
    """The file path's duplicate check over every line of a judged query: the (query,
    document) keys sorted; only lines whose keys repeat are compared as strings (a hash
    collision is not an error)."""
    import pyarrow as pa

    judged_query = to_q[ri] >= 0
    key = _line_keys(doc, ri)
    if not judged_query.all():
        key = key[judged_query]
    key.sort()
    rep = key[1:][key[1:] == key[:-1]]
    del key
    if rep.size == 0:
        return
    keep = np.flatnonzero(judged_query)
    key = _line_keys(doc, ri)[keep]
    rows = keep[np.isin(key, rep)]
    names = doc.take(pa.array(rows)).to_pylist()
    seen: set = set()
    for row, name in zip(rows.tolist(), names):
        pair = (int(ri[row]), name)
        if pair in seen:
            n_rep = len(rows) - len({(int(ri[r]), d) for r, d in zip(rows.tolist(), names)})
            where = f"{path}: " if isinstance(path, (str, Path)) else ""
            raise ValidationError(f"{where}query {run_qids[pair[0]]} lists document {name} more than once ({n_rep} "
                                  "repeated document(s)); a run ranks each document once per query (trec_eval "
                                  "refuses it too).")
        seen.add(pair)


def evaluate_trec(qrels, run, measures: Iterable[str | Measure], *, rel: int | None = None,
                  max_docs: int | None = None, judged_only: bool = False, num_docs: int = 0) -> EvalResult:
    """Score ``run`` against ``qrels`` (DataFrames, {qid: {doc: value}} dicts, or TREC file
    paths) on ``measures`` (ir_measures or trec_eval names, see
    :mod:`golden_store.scoring.measures`). trec_eval's options: ``rel`` is ``-l`` (the
    relevance threshold of measures that take one and do not name it), ``max_docs`` is
    ``-M`` (only the first documents of each ranking count), ``judged_only`` is ``-J``
    (unjudged documents are removed before anything is computed), ``num_docs`` is ``-N``
    (collection size, for utility); ``-c`` is always on."""
    from golden_store.scoring import formulas

    ms = parse_measures(measures, rel=rel)
    if not ms:
        raise ValidationError("Give at least one measure (e.g. -m nDCG@10).")
    if max_docs is not None and max_docs < 1:
        raise ValidationError("-M (max documents per query) must be at least 1.")
    q = _qrels_frame(qrels)
    if isinstance(run, (str, Path)):
        ranked = _rank_run_file(q, Path(run))
    else:
        ranked = _rank_frame(q, _run_frame(run), run)
    if max_docs is not None or judged_only:
        ranked = ranked.limited(max_docs, judged_only)
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
        if m.trec_name():
            trec_names[name] = m.trec_name()
    qids = ranked.qids
    per_query = pd.DataFrame(results, index=pd.Index(qids, name="query_id"))
    mean = {str(m): formulas.aggregate(results[str(m)], m.aggregate) for m in ms}
    definitions["_queries"] = ("every query in the qrels; a query missing from the run scores 0 and counts "
                               "(trec_eval -c); run queries without judgments are ignored")
    definitions["_ties"] = "score descending, then document id descending (trec_eval)"
    definitions["_pool"] = "a grade below 0 means in the pool but not judged (trec_eval)"
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
                      trec_names=trec_names)


def _judgments(q: pd.DataFrame, qids: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, query code, grade) of each judged (query, document), ``docs`` the sorted
    document vocabulary; a repeated pair keeps its last line."""
    nd = max(1, docs.size)
    q_qcode = np.searchsorted(qids, q["query_id"].to_numpy().astype(str))
    q_dcode = np.searchsorted(docs, q["doc_id"].to_numpy().astype(str))
    q_key = q_qcode.astype(np.int64) * nd + q_dcode
    uniq_key, last = np.unique(q_key[::-1], return_index=True)
    j_grade = q["grade"].to_numpy().astype(np.int64)[::-1][last]
    return uniq_key, (uniq_key // nd).astype(np.int64), j_grade


def _rank_frame(q: pd.DataFrame, r: pd.DataFrame, source):
    """The pool rows of an in-memory run: every line ranked (trec_eval order), then the
    judged (query, document) pairs kept."""
    from golden_store.scoring.formulas import Ranked

    qids = np.unique(q["query_id"].to_numpy().astype(str))
    nq = qids.size
    r_q = r["query_id"].to_numpy().astype(str)
    r_qcode = np.searchsorted(qids, r_q)
    in_qrels = (r_qcode < nq) & (qids[np.minimum(r_qcode, max(nq - 1, 0))] == r_q) if nq else np.zeros(len(r), bool)
    r = r[in_qrels]
    r_qcode = r_qcode[in_qrels]
    docs_all = np.concatenate([q["doc_id"].to_numpy().astype(str), r["doc_id"].to_numpy().astype(str)])
    doc_vocab, doc_codes = np.unique(docs_all, return_inverse=True)
    r_dcode = doc_codes[len(q):]
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


def _rank_run_file(q: pd.DataFrame, path: Path):
    """The same pool rows as :func:`_rank_frame`, for a run file, touching only what
    matters: ranks come from the file order when it is already grouped by query with
    scores descending (TREC runs are), and only judged rows are ranked precisely (an
    unjudged row contributes nothing but its position)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from golden_store.scoring.formulas import Ranked

    table = _read_table(path, _RUN)
    qcol = table["query_id"].unify_dictionaries().combine_chunks() if table["query_id"].num_chunks > 1 \
        else table["query_id"].chunk(0)
    if isinstance(qcol, pa.ChunkedArray):
        qcol = qcol.combine_chunks()
    # int32 codes and row numbers throughout: 10 M rows x a dozen arrays is the memory peak
    ri = qcol.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)  # query, by first appearance
    run_qids = np.asarray(qcol.dictionary.to_pylist(), dtype=object)
    doc = table["doc_id"].combine_chunks()
    score = table["score"].to_numpy()
    del table, qcol  # the columns above are the copies we keep

    qids = np.unique(q["query_id"].to_numpy().astype(str))
    nq = qids.size
    qindex = {str(x): i for i, x in enumerate(qids)}
    to_q = np.array([qindex.get(str(x), -1) for x in run_qids], dtype=np.int32)

    _refuse_repeated_docs(doc, ri, to_q, run_qids, path)

    # trec_eval order: query groups, score descending (document id descending on ties, below)
    n = ri.size
    ordered = bool((ri[1:] >= ri[:-1]).all() and ((score[1:] <= score[:-1]) | (ri[1:] != ri[:-1])).all())
    order = None if ordered else np.lexsort((-score, ri))
    if order is not None:
        ri, score = ri[order], score[order]
    starts_ri = np.searchsorted(ri, np.arange(run_qids.size, dtype=np.int32))

    # judged rows: the document is judged somewhere, then the exact (query, document) pair
    judged_docs = np.unique(q["doc_id"].to_numpy().astype(str))
    jd = pc.fill_null(pc.index_in(doc, value_set=pa.array(judged_docs.tolist(), pa.string())), -1)
    jd = jd.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    if order is not None:
        jd = jd[order]
    rq = to_q[ri]
    cand = np.flatnonzero((jd >= 0) & (rq >= 0))
    nd = max(1, judged_docs.size)
    q_qcode = np.searchsorted(qids, q["query_id"].to_numpy().astype(str))
    q_dcode = np.searchsorted(judged_docs, q["doc_id"].to_numpy().astype(str))
    q_key = q_qcode.astype(np.int64) * nd + q_dcode
    uniq_key, last = np.unique(q_key[::-1], return_index=True)
    j_grade_all = q["grade"].to_numpy().astype(np.int64)[::-1][last]
    j_q = (uniq_key // nd).astype(np.int64)
    c_key = rq[cand].astype(np.int64) * nd + jd[cand]
    pos = np.searchsorted(uniq_key, c_key)
    hit = (pos < uniq_key.size) & (uniq_key[np.minimum(pos, max(uniq_key.size - 1, 0))] == c_key)
    rows = cand[hit]
    grade = j_grade_all[pos[hit]]
    del cand, jd
    # rank = position inside the query's list; only judged rows need one
    rk = (rows - starts_ri[ri[rows]] + 1).astype(np.int64)

    # ties: inside a run of equal (query, score), documents go by id descending. Only the
    # judged rows' positions inside their own tie run can change; fix those.
    if rows.size:
        run_start = np.empty(n, bool)
        run_start[0] = True
        run_start[1:] = (ri[1:] != ri[:-1]) | (score[1:] != score[:-1])
        run_id = np.cumsum(run_start, dtype=np.int32) - 1
        run_first = np.flatnonzero(run_start).astype(np.int32)
        del run_start
        run_len = np.diff(run_first, append=np.int32(n))
        tied = rows[run_len[run_id[rows]] > 1]
        if tied.size:
            tied = tied[np.argsort(run_id[tied], kind="stable")]
            rids, lo = np.unique(run_id[tied], return_index=True)
            hi = np.append(lo[1:], tied.size)
            firsts, lens = run_first[rids], run_len[rids]
            idx = np.repeat(firsts - np.cumsum(np.append(0, lens[:-1])), lens) + np.arange(lens.sum())
            names = doc.take(pa.array(idx if order is None else order[idx]))
            run_of = np.repeat(np.arange(rids.size, dtype=np.int64), lens)
            run_off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
            # within each tie run, documents by id descending (Arrow's sort, byte order as strcmp)
            perm = pc.sort_indices(pa.table({"r": run_of, "d": names}),
                                   sort_keys=[("r", "ascending"), ("d", "descending")]).to_numpy()
            pos_in_run = np.empty(perm.size, np.int64)
            pos_in_run[perm] = np.arange(perm.size) - run_off[run_of[perm]]
            j = np.repeat(np.arange(rids.size), hi - lo)  # the tie run of each tied judged row
            base = firsts.astype(np.int64) - starts_ri[ri[firsts]] + 1  # rank of each run's first position
            rk[np.searchsorted(rows, tied)] = base[j] + pos_in_run[run_off[j] + (tied - firsts[j])]

    qc = rq[rows]
    o = np.lexsort((rk, qc))
    qc, rk, grade = qc[o], rk[o], grade[o]
    n_retrieved = np.zeros(nq, np.int64)
    counts = np.bincount(ri, minlength=run_qids.size)
    ok = to_q >= 0
    n_retrieved[to_q[ok]] = counts[ok]
    return Ranked(qids, qc, rk, grade, n_retrieved, n_retrieved > 0, j_q, j_grade_all)


def qrels_from_mapping(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    return _qrels_frame(qrels)
