"""A worker process of a corpus import: reads pieces of source files (a JSONL chunk of whole
lines, or a few small files) from stdin, parses, checks, canonicalizes and hashes their
documents (``golden_store.corpus.sources.prepare_piece``) and writes the results to stdout,
one frame per piece, in the order the pieces came.

Why a process of its own and not ``multiprocessing``: the parent may be the CLI, the app
(Streamlit) or a test runner, and ``multiprocessing``'s spawn start method imports the
parent's main script in every worker (the app's, with Streamlit); fork would copy a process
whose DuckDB and tantivy threads hold locks. This module imports only the text code
(``golden_store.core``: canonicalization, JSON lines, digests), nothing of the store.

A frame is an 8-byte little-endian length and a pickle. A pickle here only ever travels
between this process and the import that started it, over its own pipes.
"""

from __future__ import annotations

import pickle
import struct
import sys
import traceback
from typing import IO, Any

_LEN = struct.Struct("<Q")


def write_frame(out: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)))
    out.write(data)
    out.flush()


def read_frame(inp: IO[bytes]) -> Any:
    """The next frame's object; EOFError when the other side closed the pipe."""
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("pipe closed")
    n = _LEN.unpack(head)[0]
    data = inp.read(n)
    if len(data) < n:
        raise EOFError("pipe closed mid-frame")
    return pickle.loads(data)


def main() -> int:
    from golden_store.corpus.sources import prepare_piece

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            piece = read_frame(inp)
        except EOFError:
            return 0
        if piece is None:
            return 0
        try:
            result: Any = ("ok", prepare_piece(piece))
        except Exception:  # a bug, said in the parent with this traceback
            result = ("error", traceback.format_exc())
        write_frame(out, result)


if __name__ == "__main__":
    raise SystemExit(main())
