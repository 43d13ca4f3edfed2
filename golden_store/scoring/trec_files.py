"""Reading TREC qrels and run files, trec_eval's line rules (split out of :mod:`trec`).

Files are read by Arrow's C++ parser; only a line that is still wrong is looked at by
Python, to name it. The scorers' entry is :func:`golden_store.scoring.trec.evaluate_trec`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from golden_store.core.errors import ValidationError
from golden_store.core.textin import shown
from golden_store.scoring.trec_columns import _np_view

if TYPE_CHECKING:  # pandas is imported only where a DataFrame is read or made
    import pandas as pd


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


def _arrow_options(names: list[str], value: str, value_type):
    """Arrow's CSV options for a TREC file read as single-space separated: (read, parse,
    convert, memory pool); only query_id (dictionary), doc_id and ``value`` are kept."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    return (pcsv.ReadOptions(column_names=names),
            pcsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                              ignore_empty_lines=True),
            pcsv.ConvertOptions(
                include_columns=["query_id", "doc_id", value],
                column_types={"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string(),
                              value: value_type},
                strings_can_be_null=False, quoted_strings_can_be_null=False),
            _read_pool())


def _arrow_read(source, names: list[str], value: str, value_type):
    """A pyarrow Table (query_id dictionary, doc_id, ``value``) or None when the parser
    refuses the input (wrong field count, a value that is not a number, bad UTF-8)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    read, parse, convert, pool = _arrow_options(names, value, value_type)
    try:
        return pcsv.read_csv(source, memory_pool=pool, read_options=read, parse_options=parse,
                             convert_options=convert)
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
    return _ids_usable(table["query_id"].chunks) and _values_usable(table[value])


def _batch_usable(batch, value: str) -> bool:
    """:func:`_usable` of one record batch (the streaming reader's)."""
    return _ids_usable([batch.column("query_id")]) and _values_usable(batch.column(value))


def _ids_usable(chunks) -> bool:
    for chunk in chunks:
        ids = chunk.dictionary.to_pylist()
        if any(i.startswith("#") or not i or any(c.isspace() for c in i) for i in ids):
            return False
    return True


def _values_usable(v) -> bool:
    import pyarrow as pa

    if v.null_count:
        return False
    if pa.types.is_floating(v.type):  # chunk by chunk over Arrow's buffers (no copy of the column)
        return all(np.isfinite(_np_view(c, np.float64)).all() for c in getattr(v, "chunks", [v]))
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
    if what == "qrels":
        header = _beir_header_end(path)
        if header is not None:
            return _read_beir(path, header)
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


# BEIR qrels (``qrels/test.tsv``): a header ``query-id<TAB>corpus-id<TAB>score``, then one
# judgment per line, tab-separated. ``golden judgments import`` reads them, and the BEIR export
# writes them, so ``golden score --qrels`` reads them too (told by the header, as the import
# tells them: golden_store.core.judgment_formats.is_beir_header). Grades keep trec_eval's
# meaning (a negative grade: in the pool, not judged); they are not mapped to the studio's 0-3.
_BEIR_EXAMPLE = "q1<TAB>doc7<TAB>2"


def _beir_header_end(path: Path) -> int | None:
    """The byte offset just after a BEIR header when the file's first non-blank line is one
    (None: a TREC qrels file)."""
    from golden_store.core.judgment_formats import is_beir_header

    offset = 0
    with path.open("rb") as fh:
        for raw in fh:
            line = raw.decode("utf-8-sig" if offset == 0 else "utf-8", errors="replace")
            offset += len(raw)
            if line.strip():
                return offset if is_beir_header(line) else None
    return None


def _read_beir(path: Path, start: int):
    """The qrels table of a BEIR TSV (``start``: the byte after its header): Arrow's parser
    when every line is clean, else every line looked at and the first bad one named."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    data = path.read_bytes()[start:]
    table = None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data), memory_pool=_read_pool(),
            read_options=pcsv.ReadOptions(column_names=["query_id", "doc_id", "grade"]),
            parse_options=pcsv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False, escape_char=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string(),
                              "grade": pa.int64()},
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        table = None
    if table is None or not _usable(table, "grade") or any(
            not d or d != d.strip() for d in table["doc_id"].to_pylist()):
        table = _read_beir_careful(path, path.read_bytes()[:start].count(b"\n"))
    if table.num_rows == 0:
        raise ValidationError(f"{path}: the BEIR qrels file holds only its header, no judgments.")
    return table


def _read_beir_careful(path: Path, header_lines: int):
    """Line by line: the first bad line of a BEIR qrels file named (``header_lines``: the
    lines up to and including the header, skipped)."""
    import pyarrow as pa

    from golden_store.core.textin import read_text

    text = read_text(path)  # a bad byte is named with its line and column here
    qs: list[str] = []
    ds: list[str] = []
    gs: list[int] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if lineno <= header_lines or not line.strip():
            continue
        f = [x.strip() for x in line.rstrip("\r").split("\t")]
        if len(f) != 3 or not f[0] or not f[1]:
            raise ValidationError(f"{path} line {lineno}: not a BEIR qrels line: expected 3 tab-separated fields "
                                  f"like {_BEIR_EXAMPLE!r} (query-id, corpus-id, score), got {shown(line.strip())}.")
        try:
            g = float(f[2])
        except ValueError:
            g = float("nan")
        if not np.isfinite(g) or g != round(g):
            raise ValidationError(f"{path} line {lineno}: score {shown(f[2])} is not an integer grade.")
        qs.append(f[0])
        ds.append(f[1])
        gs.append(int(g))
    return pa.table({"query_id": pa.array(qs, pa.string()).dictionary_encode(), "doc_id": pa.array(ds, pa.string()),
                     "grade": pa.array(gs, pa.int64())})


def _read_careful(path: Path, kind: tuple, value: str):
    """Line by line (only when the fast readers refused the file): the first bad line is
    named; integer-valued grades written as decimals (``2.0``) are accepted."""
    table, problems, _lines = _scan_lines(path, kind, value)
    if problems:
        raise ValidationError(problems[0])
    return table


def _scan_lines(path: Path, kind: tuple, value: str, label: str | None = None):
    """Every line looked at: (table of the good lines, one problem per bad line naming the
    file and the line, each good row's 1-based line number). ``label``: what messages call
    the file (default its path)."""
    import pyarrow as pa

    from golden_store.core.textin import read_text

    what, names, example = kind
    name = label or str(path)
    text = read_text(path)  # encoding problems are named with line and column here
    qs: list[str] = []
    ds: list[str] = []
    vs: list[str] = []
    at: list[int] = []
    problems: list[tuple[int, str]] = []
    vi = names.index(value)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not _is_data_line(line):
            continue
        f = line.split()
        if len(f) < len(names) or (what == "qrels" and len(f) > len(names)):
            problems.append((lineno, f"{name} line {lineno}: not a {what} line: expected {len(names)} fields like "
                                     f"{example!r}, got {len(f)}."))
            continue
        qs.append(f[0])
        ds.append(f[2])
        vs.append(f[vi])
        at.append(lineno)
    import pandas as pd

    raw = pd.Series(vs, dtype=object)
    num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(num)
    if what == "qrels":
        bad |= ~np.isclose(np.where(bad, 0.0, num), np.round(np.where(bad, 0.0, num)))
    kind_text = "an integer grade." if what == "qrels" else "a number (only finite numbers)."
    problems += [(at[row], f"{name} line {at[row]}: {value} {shown(vs[row])} is not {kind_text}")
                 for row in np.flatnonzero(bad)]
    keep = ~bad
    pick = lambda xs: [x for x, k in zip(xs, keep) if k]  # noqa: E731
    values = pa.array(num[keep].astype(np.int64) if what == "qrels" else num[keep])
    table = pa.table({"query_id": pa.array(pick(qs), pa.string()).dictionary_encode(),
                      "doc_id": pa.array(pick(ds), pa.string()), value: values})
    return table, [p for _, p in sorted(problems)], np.asarray(at, dtype=np.int64)[keep]


def line_number(path: Path, row: int) -> int:
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
    """TREC qrels ``qid iter docid grade`` (or BEIR's TSV with its ``query-id corpus-id
    score`` header) -> DataFrame(query_id, doc_id, grade). A grade below 0 means "in the
    pool, not judged" (trec_eval)."""
    return _frame(_read_table(Path(path), _QRELS), "grade")


def read_run(path: str | Path) -> pd.DataFrame:
    """TREC run ``qid Q0 docid rank score tag [ignored...]`` -> DataFrame(query_id, doc_id,
    score). The rank column is ignored (trec_eval ranks by score)."""
    return _frame(_read_table(Path(path), _RUN), "score")


@dataclass
class RunLines:
    """A run file read whole for an import (:func:`read_run_lines`): the good lines as a
    frame (query_id, doc_id, score), every bad line named, and where each good row is."""
    frame: pd.DataFrame
    bad_lines: list[str]
    lines: np.ndarray | None  # each row's 1-based line; None: every line was good (see line_of)
    path: Path

    def line_of(self, rows: Sequence[int]) -> dict[int, int]:
        """{row: its 1-based line in the file} for a few rows (only on error paths: one
        pass over the file when the fast reader read it)."""
        if self.lines is not None:
            return {r: int(self.lines[r]) for r in rows}
        want = set(rows)
        out: dict[int, int] = {}
        n = -1
        with self.path.open("r", encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, start=1):
                if _is_data_line(line):
                    n += 1
                    if n in want:
                        out[n] = lineno
                        if len(out) == len(want):
                            break
        return out


def read_run_lines(path: str | Path, label: str | None = None) -> RunLines:
    """A TREC run for an import, which reports every problem of an upload at once (issue 29,
    M9): the fast reader when the file is clean, else every line looked at and each bad one
    named (``label``: what messages call the file). Refused only when no line can be read
    at all (an empty file, bad text); a file with bad lines comes back with them listed."""
    p = Path(path)
    name = label or str(p)
    try:
        table = _read_table(p, _RUN)
        return RunLines(_frame(table, "score"), [], None, p)
    except ValidationError as exc:
        if not p.is_file() or exc.summary.endswith(("the file is empty.", "is a folder, not a file.")):
            raise ValidationError(exc.summary.replace(str(p), name), exc.problems) from None
    value = "score"
    table, problems, lines = _scan_lines(p, _RUN, value, name)
    if table.num_rows == 0 and not problems:
        raise ValidationError(f"{name}: the file has no run lines.")
    return RunLines(_frame(table, value), problems, lines, p)


def qrels_frame(qrels) -> pd.DataFrame:
    import pandas as pd

    if isinstance(qrels, (str, Path)):
        return read_qrels(qrels)
    if isinstance(qrels, pd.DataFrame):
        return qrels[["query_id", "doc_id", "grade"]]
    rows = [(q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "grade"])


def run_frame(run) -> pd.DataFrame:
    import pandas as pd

    if isinstance(run, (str, Path)):
        return read_run(run)
    if isinstance(run, pd.DataFrame):
        return run[["query_id", "doc_id", "score"]]
    rows = [(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
