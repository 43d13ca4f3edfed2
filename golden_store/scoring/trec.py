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

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from golden_store.core.errors import ValidationError
from golden_store.core.textin import shown
from golden_store.scoring.measures import Measure, parse_measures

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is read or made
    import pandas as pd

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


def _read_pool():
    """Arrow's jemalloc pool where this pyarrow has it (the default pool otherwise): reading
    a 10 M-line run with the default mimalloc pool spent 0.3-0.7 s more in the kernel
    (fresh pages) in BENCHMARKS.md."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return None


def _arrow_read(source, names: list[str], value: str, value_type):
    """A pyarrow Table (query_id dictionary, doc_id, ``value``) or None when the parser
    refuses the input (wrong field count, a value that is not a number, bad UTF-8)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        return pcsv.read_csv(
            source, memory_pool=_read_pool(),
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
    import pyarrow as pa

    col = table["query_id"]
    for chunk in col.chunks:
        ids = chunk.dictionary.to_pylist()
        if any(i.startswith("#") or not i or any(c.isspace() for c in i) for i in ids):
            return False
    v = table[value]
    if v.null_count:
        return False
    if pa.types.is_floating(v.type):  # chunk by chunk over Arrow's buffers (no copy of the column)
        return all(np.isfinite(_np_view(c, np.float64)).all() for c in v.chunks)
    return True


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

    from golden_store.core.textin import read_text

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
    import pandas as pd

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
    import pandas as pd

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


# Arrow <-> numpy by buffers: pyarrow's own to_numpy() and pa.array() import pandas (0.2 s
# of start-up that `golden score` does not need otherwise).


def _to_np(arr, dtype) -> np.ndarray:
    """A numpy copy of a null-free Arrow array or chunked array of a fixed-width type."""
    dtype = np.dtype(dtype)
    out = np.empty(len(arr), dtype)
    pos = 0
    for chunk in getattr(arr, "chunks", [arr]):
        k = len(chunk)
        if k:
            out[pos:pos + k] = np.frombuffer(chunk.buffers()[1], dtype, count=k, offset=chunk.offset * dtype.itemsize)
        pos += k
    return out


def _np_view(arr, dtype) -> np.ndarray:
    """A numpy view of a null-free Arrow array of a fixed-width type (no copy)."""
    dtype = np.dtype(dtype)
    if len(arr) == 0:
        return np.zeros(0, dtype)
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _from_np(a: np.ndarray):
    """An Arrow array over a 1-D numpy array of a fixed-width type (int32/int64/uint64)."""
    import pyarrow as pa

    a = np.ascontiguousarray(a)
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), a.size, [None, pa.py_buffer(a)])


def _take(col, rows: np.ndarray):
    """``col.take(rows)`` for a chunked array, taken chunk by chunk: Arrow's own take on a
    chunked array first joins the chunks into one (a copy of the whole column)."""
    import pyarrow as pa

    chunks = col.chunks
    if len(chunks) == 1:
        return chunks[0].take(_from_np(rows.astype(np.int64, copy=False)))
    bounds = np.cumsum([0] + [len(c) for c in chunks])
    of = np.searchsorted(bounds, rows, "right") - 1
    order = np.argsort(of, kind="stable")
    edges = np.searchsorted(of[order], np.arange(len(chunks) + 1))
    parts = [chunks[c].take(_from_np((rows[order[edges[c]:edges[c + 1]]] - bounds[c]).astype(np.int64)))
             for c in np.flatnonzero(np.diff(edges))]
    if not parts:
        return chunks[0].slice(0, 0)
    taken = pa.concat_arrays(parts)  # chunk by chunk; put back in the order asked
    back = np.empty(order.size, np.int64)
    back[order] = np.arange(order.size)
    return taken.take(_from_np(back))


def _arrow_strings(values):
    """An Arrow string array of Python strings."""
    import pyarrow as pa

    enc = [v.encode("utf-8", "surrogatepass") for v in values]
    offs = np.zeros(len(enc) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, enc), np.int64, len(enc)), out=offs[1:])
    return pa.Array.from_buffers(pa.large_string(), len(enc), [None, pa.py_buffer(offs), pa.py_buffer(b"".join(enc))])


def _is_frame(x) -> bool:
    """A pandas DataFrame (without importing pandas: if it is not loaded, ``x`` is none)."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(x, pd.DataFrame)


def _qrels_frame(qrels) -> pd.DataFrame:
    import pandas as pd

    if isinstance(qrels, (str, Path)):
        return read_qrels(qrels)
    if isinstance(qrels, pd.DataFrame):
        return qrels[["query_id", "doc_id", "grade"]]
    rows = [(q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "grade"])


def _run_frame(run) -> pd.DataFrame:
    import pandas as pd

    if isinstance(run, (str, Path)):
        return read_run(run)
    if isinstance(run, pd.DataFrame):
        return run[["query_id", "doc_id", "score"]]
    rows = [(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def _str_array(values) -> np.ndarray:
    """Values as a numpy string array (ids that are not strings by their ``str``)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U":
        return values
    return np.asarray(values, dtype=object).astype(str)


def _dictionary_strings(chunk) -> np.ndarray:
    """A dictionary-encoded Arrow string array as a numpy string array (its few distinct
    values converted once)."""
    if not hasattr(chunk, "indices"):
        return np.array(chunk.to_pylist(), dtype=str)
    values = np.array(chunk.dictionary.to_pylist() or [""], dtype=str)
    return values[_np_view(chunk.indices, f"<i{chunk.indices.type.bit_width // 8}")]


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


@dataclass
class EvalResult:
    """What :func:`evaluate_trec` and :func:`~golden_store.scoring.golden.evaluate` return.

    ``measures``: the measure names (canonical spelling, the keys below); ``per_query``:
    one row per evaluated query (sorted ids), one column per measure; ``mean``: each
    measure's overall value (the mean over queries; a sum or a geometric mean where
    ``aggregates`` says so, as trec_eval's "all" line); ``n_queries``; ``definitions``:
    each measure's definition and source, and the run-wide rules (keys starting with
    ``_``); ``trec_names``: trec_eval's name of each measure it has; ``ci95``, ``strata``
    and ``strata_n``: filled by ``evaluate`` (a frozen version).

    ``per_query`` is made into a DataFrame when first read: printing the means (``golden
    score --json``) or :meth:`per_query_items` needs no pandas."""

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
    # queries of the labels that were not scored, by reason (e.g. "unanswerable"): filled by evaluate
    left_out: dict[str, list[str]] = field(default_factory=dict)
    judged: Any = None   # scoring.health.JudgedHealth of the run: filled by evaluate and golden score

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
        if self.left_out:
            out["left_out"] = {why: {"n": len(q), "query_ids": q} for why, q in self.left_out.items()}
        if self.judged is not None:
            out["judged"] = self.judged.as_dict()
        if per_query:
            out["per_query"] = dict(self.per_query_items())
        return out

    def per_query_items(self) -> Iterable[tuple[str, dict[str, float]]]:
        """(query id, {measure: value}) for every evaluated query, in ``per_query``'s order."""
        pq = self.__dict__["_per_query"]
        if isinstance(pq, _PerQueryColumns):
            yield from pq.items()
            return
        for q, row in pq.to_dict(orient="index").items():
            yield q, {m: float(v) for m, v in row.items()}


class _PerQueryColumns:
    """Per-query values as numpy columns, until someone reads ``EvalResult.per_query``."""

    __slots__ = ("qids", "values")

    def __init__(self, qids: np.ndarray, values: dict[str, np.ndarray]) -> None:
        self.qids, self.values = qids, values

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.values, index=pd.Index(self.qids, name="query_id"))

    def items(self) -> Iterable[tuple[str, dict[str, float]]]:
        cols = {m: v.tolist() for m, v in self.values.items()}
        for i, q in enumerate(self.qids.tolist()):
            yield q, {m: float(c[i]) for m, c in cols.items()}


def _get_per_query(self: EvalResult) -> pd.DataFrame:
    pq = self.__dict__["_per_query"]
    if isinstance(pq, _PerQueryColumns):
        pq = self.__dict__["_per_query"] = pq.frame()
    return pq


def _set_per_query(self: EvalResult, value) -> None:
    self.__dict__["_per_query"] = value


EvalResult.per_query = property(_get_per_query, _set_per_query,  # type: ignore[assignment]
                                doc="one row per evaluated query (index query_id, sorted), one column per measure")


_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _hash_strings(arr, out: np.ndarray) -> None:
    """A 64-bit hash of every string of the Arrow string array ``arr`` into ``out``: equal
    strings, equal hashes, and the hash depends on the string alone. numpy over Arrow's own
    buffers, no Python loop per string: a string's bytes are read as little-endian 8-byte
    words straight from the data buffer (the last one masked to the string's end), each word
    xor-ed in and multiplied by an odd constant, so the high bits depend on every byte. A
    string of up to 8 bytes takes one pass (and, but for trailing NUL bytes, no two such
    strings share a hash); longer ones take one more pass per word over those rows only.
    Callers compare strings whose hashes meet, so a collision costs time, not correctness."""
    import pyarrow as pa

    n = len(arr)
    if n == 0:
        return
    width = 8 if pa.types.is_large_string(arr.type) else 4
    offs = np.frombuffer(arr.buffers()[1], f"<i{width}", count=n + 1, offset=arr.offset * width)
    lens = np.diff(offs)
    first, last = int(offs[0]), int(offs[-1])
    # this array's bytes, copied with 8 bytes of padding so that no read runs off the end
    buf = np.zeros(last - first + 8, np.uint8)
    if last > first:
        buf[: last - first] = np.frombuffer(arr.buffers()[2], np.uint8, count=last - first, offset=first)
    words = np.ndarray((buf.size - 7,), "<u8", buffer=buf, strides=(1,))  # the 8 bytes from each position
    start = offs[:-1] - first
    out[:] = words[start]
    out &= _BYTE_MASKS[np.minimum(lens, 8)]
    out *= np.uint64(_MIX[1])
    longest = int(lens.max())
    if longest > 8:
        rows = np.flatnonzero(lens > 8)
        for j in range(1, -(-longest // 8)):
            rows = rows[lens[rows] > 8 * j]
            w = words[start[rows] + 8 * j] & _BYTE_MASKS[np.minimum(lens[rows] - 8 * j, 8)]
            out[rows] = (out[rows] ^ w) * np.uint64(_MIX[(j + 1) % 4])


def _string_hashes(values: np.ndarray) -> np.ndarray:
    """:func:`_hash_strings` of a numpy string array: straight from numpy's fixed-width
    code points when they are all ASCII (each string's UTF-8 bytes, zero-padded), through
    Arrow otherwise."""
    points = np.ascontiguousarray(values).view(np.uint32).reshape(values.size, -1)
    if values.size and points.size and int(points.max()) < 128:
        width = -(-points.shape[1] // 8) * 8
        padded = np.zeros((values.size, width), np.uint8)
        padded[:, :points.shape[1]] = points
        words = padded.view("<u8")
        lens = np.char.str_len(values)
        out = words[:, 0] * np.uint64(_MIX[1])
        for j in range(1, words.shape[1]):
            more = lens > 8 * j
            out[more] = (out[more] ^ words[more, j]) * np.uint64(_MIX[(j + 1) % 4])
        return out
    arr = _arrow_strings(values.tolist())
    out = np.empty(len(arr), np.uint64)
    _hash_strings(arr, out)
    return out


def _query_mix(q: np.ndarray) -> np.ndarray:
    return np.multiply(q, np.uint64(_MIX[3]), dtype=np.uint64, casting="unsafe")


def r_key_of(qcode: np.ndarray, dcode: np.ndarray, nd: int) -> np.ndarray:
    return qcode.astype(np.int64) * nd + dcode


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
    q = _Qrels.of(qrels)
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
    per_query = _PerQueryColumns(qids, results)
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


def _run_columns(table, qids: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray, object, np.ndarray, int]:
    """What the run file path keeps of the Arrow table, made record batch by record batch
    (each step on a batch that is still in cache; two threads were slower on the 2-core
    benchmark machine than one, see BENCHMARKS.md):

    * ``rq``: int32 code of every line's query: the judged queries are 0..len(qids)-1 (their
      place in ``qids``), the others follow by first appearance; ``names``: each code's id;
    * ``score``: float64;
    * ``docs``: the document ids (a chunked Arrow array);
    * ``key``: every line's 64-bit key, sorted: (hash of the document id ^ a mix of the
      query) in the high bits, the line number in the low ``row_bits``."""
    import pyarrow as pa

    batches = [b for b in table.to_batches() if b.num_rows]
    n = table.num_rows
    row_bits = max(1, (n - 1).bit_length())
    high = ~np.uint64((1 << row_bits) - 1)
    index = {q: i for i, q in enumerate(qids.tolist())}
    names = list(index)
    luts = []
    indices = []
    for b in batches:  # query ids: a few per batch, looked up in Python
        col = b.column("query_id")
        indices.append(col.indices if col.indices.type == pa.int32() else col.indices.cast(pa.int32()))
        d = col.dictionary.to_pylist()
        lut = np.empty(len(d), np.int32)
        for i, name in enumerate(d):
            code = index.get(name)
            if code is None:
                code = index[name] = len(names)
                names.append(name)
            lut[i] = code
        luts.append(lut)
    bounds = np.cumsum([0] + [b.num_rows for b in batches]).tolist()
    rq = np.empty(n, np.int32)
    score = np.empty(n, np.float64)
    key = np.empty(n, np.uint64)

    for i, b in enumerate(batches):
        lo, hi = bounds[i], bounds[i + 1]
        np.take(luts[i], _np_view(indices[i], np.int32), out=rq[lo:hi])
        score[lo:hi] = _np_view(b.column("score"), np.float64)
        k = key[lo:hi]
        _hash_strings(b.column("doc_id"), k)
        k ^= _query_mix(rq[lo:hi])
        k &= high
        k |= np.arange(lo, hi, dtype=np.uint64)
    key.sort()
    docs = pa.chunked_array([b.column("doc_id") for b in batches], table.schema.field("doc_id").type)
    return rq, names, score, docs, key, row_bits


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
    table = _read_table(path, _RUN).select(["query_id", "doc_id", "score"])
    n = table.num_rows
    rq, names, score, docs, key, row_bits = _run_columns(table, qids)
    del table  # what is kept: the document ids (Arrow), rq, score and the keys
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
    return _qrels_frame(qrels)
