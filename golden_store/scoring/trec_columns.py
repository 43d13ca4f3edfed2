"""Arrow <-> numpy plumbing for the scorers: columns by buffers, id strings, hashes of ids
(split out of :mod:`trec`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass

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

