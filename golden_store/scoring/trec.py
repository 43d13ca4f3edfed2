"""Vectorized evaluation of whole runs, trec_eval semantics, and fast TREC file reading.

* Ranking: score descending, then document id descending (trec_eval's tie break). A
  document listed twice for a query counts once (its first line).
* Queries: every query in the qrels is evaluated; one missing from the run scores 0 on
  every measure and counts in the mean (trec_eval ``-c``). Run queries without judgments
  are ignored (nothing to score them against). A query whose judgments contain no
  relevant document scores 0 on every measure (as trec_eval's per-query values do).
* The mean is the arithmetic mean over the evaluated queries; per-query values are kept.

Everything is numpy over the whole run: no Python loop per line or per query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from golden_store.errors import ValidationError
from golden_store.scoring.measures import Measure, parse_measure
from golden_store.textin import shown

QrelsLike = "pd.DataFrame | Mapping[str, Mapping[str, int]] | str | Path"
RunLike = "pd.DataFrame | Mapping[str, Mapping[str, float]] | str | Path"


# ---- reading ----------------------------------------------------------------------------------


def _read_table(path: Path, names: list[str], what: str, example: str) -> pd.DataFrame:
    """Whitespace-separated columns, read by pandas' C parser (no Python loop per line).
    One spare column catches lines with too many fields."""
    cols = [*names, "_extra"]
    try:
        df = pd.read_csv(path, sep=r"\s+", header=None, names=cols, dtype=str, engine="c",
                         skip_blank_lines=True, na_filter=False, index_col=False)
    except FileNotFoundError:
        raise ValidationError(f"{path}: no such file.") from None
    except pd.errors.ParserError as exc:
        raise ValidationError(f"{path}: not a {what} file ({str(exc).strip()}); expected lines like {example!r}.") from None
    except pd.errors.EmptyDataError:
        raise ValidationError(f"{path}: the file is empty.") from None
    except UnicodeDecodeError:
        # the importers' one text rule names the line and column (only read on this error path)
        from golden_store.textin import read_text

        read_text(path)
        raise
    if df.empty:
        raise ValidationError(f"{path}: the file is empty.")
    wrong = ((df["_extra"] != "") | (df[names[-1]] == "")).to_numpy()
    if wrong.any():
        line = _line_number(path, int(np.flatnonzero(wrong)[0]))
        raise ValidationError(f"{path} line {line}: not a {what} line: expected {len(names)} fields like {example!r}.")
    return df.drop(columns="_extra")


def _line_number(path: Path, row: int) -> int:
    """1-based line of the ``row``-th non-blank line (only computed on the error path)."""
    n = -1
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                n += 1
                if n == row:
                    return lineno
    return row + 1


def _numeric(df: pd.DataFrame, col: str, path: Path, kind: str, integer: bool) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce")
    bad = ~np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan))  # NaN, inf and non-numbers
    if integer:
        filled = values.fillna(0).to_numpy(dtype=np.float64)
        bad |= ~np.isclose(filled, np.round(filled))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValidationError(
            f"{path} line {_line_number(path, row)}: {col} {shown(df[col].iloc[row])} is not {kind}"
            + (" (only finite numbers)." if kind == "a number" else ".")
        )
    return values.to_numpy(dtype=np.int64 if integer else np.float64)


def read_qrels(path: str | Path) -> pd.DataFrame:
    """TREC qrels ``qid 0 docid grade`` -> DataFrame(query_id, doc_id, grade)."""
    p = Path(path)
    df = _read_table(p, ["query_id", "iter", "doc_id", "grade"], "qrels", "q1 0 doc7 2")
    grade = _numeric(df, "grade", p, "an integer grade", integer=True)
    return pd.DataFrame({"query_id": df["query_id"].to_numpy(), "doc_id": df["doc_id"].to_numpy(), "grade": grade})


def read_run(path: str | Path) -> pd.DataFrame:
    """TREC run ``qid Q0 docid rank score tag`` -> DataFrame(query_id, doc_id, score)."""
    p = Path(path)
    df = _read_table(p, ["query_id", "q0", "doc_id", "rank", "score", "tag"], "run", "q1 Q0 doc7 1 12.5 bm25")
    score = _numeric(df, "score", p, "a number", integer=False)
    return pd.DataFrame({"query_id": df["query_id"].to_numpy(), "doc_id": df["doc_id"].to_numpy(), "score": score})


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
    measures: list[str]
    per_query: pd.DataFrame            # index: query_id (sorted), one column per measure
    mean: dict[str, float]
    n_queries: int
    definitions: dict[str, str] = field(default_factory=dict)
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)       # bootstrap interval of each mean
    strata: dict[str, dict[str, float]] = field(default_factory=dict)        # stratum -> measure -> mean
    strata_n: dict[str, int] = field(default_factory=dict)

    def as_dict(self, per_query: bool = False) -> dict:
        out = {"measures": self.measures, "mean": self.mean, "n_queries": self.n_queries,
               "definitions": self.definitions}
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


def _refuse_judged_duplicates(keys: np.ndarray, describe, source) -> None:
    """A run must not list a judged document twice for one query (trec_eval refuses such
    runs). Repeated unjudged documents are not checked: each line occupies a rank."""
    if keys.size < 2:
        return
    srt = np.sort(keys)
    dup = srt[1:][srt[1:] == srt[:-1]]
    if dup.size:
        q, d = describe(int(dup[0]))
        where = f"{source}: " if isinstance(source, (str, Path)) else ""
        raise ValidationError(f"{where}query {q} lists document {d} more than once ({dup.size} repeated judged "
                              f"line(s)); a run ranks each document once per query.")


def _group_sum(values: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(groups, weights=values, minlength=n)[:n]


def evaluate_trec(qrels, run, measures: Iterable[str | Measure]) -> EvalResult:
    """Score ``run`` against ``qrels`` (DataFrames, {qid: {doc: value}} dicts, or TREC file paths)."""
    ms = [m if isinstance(m, Measure) else parse_measure(m) for m in measures]
    if not ms:
        raise ValidationError("Give at least one measure (e.g. -m nDCG@10).")
    q = _qrels_frame(qrels)
    if isinstance(run, (str, Path)):
        fast = _evaluate_run_file(q, Path(run), ms)
        if fast is not None:
            return fast
    r = _run_frame(run)
    # one id space for queries (those in the qrels) and documents (both files)
    qids = np.unique(q["query_id"].to_numpy().astype(str))
    nq = qids.size
    q_qcode = np.searchsorted(qids, q["query_id"].to_numpy().astype(str))
    r_q = r["query_id"].to_numpy().astype(str)
    r_qcode = np.searchsorted(qids, r_q)
    in_qrels = (r_qcode < nq) & (qids[np.minimum(r_qcode, max(nq - 1, 0))] == r_q) if nq else np.zeros(len(r), bool)
    r = r[in_qrels]
    r_qcode = r_qcode[in_qrels]
    docs_all = np.concatenate([q["doc_id"].to_numpy().astype(str), r["doc_id"].to_numpy().astype(str)])
    doc_vocab, doc_codes = np.unique(docs_all, return_inverse=True)
    q_dcode = doc_codes[: len(q)]
    r_dcode = doc_codes[len(q):]
    nd = max(1, doc_vocab.size)

    # judgments: last line wins for a repeated (query, doc)
    q_key = q_qcode.astype(np.int64) * nd + q_dcode
    q_grade = q["grade"].to_numpy().astype(np.int64)
    uniq_key, last = np.unique(q_key[::-1], return_index=True)
    j_key = uniq_key
    j_grade = q_grade[::-1][last]
    j_q = (j_key // nd).astype(np.int64)

    # the run in trec_eval order within each query
    score = r["score"].to_numpy(dtype=np.float64)
    order = np.lexsort((-r_dcode, -score, r_qcode))
    r_key, r_qcode = r_key_of(r_qcode, r_dcode, nd)[order], r_qcode[order]
    starts = np.searchsorted(r_qcode, np.arange(nq))
    rank = np.arange(r_qcode.size) - starts[r_qcode] + 1  # 1-based

    pos = np.searchsorted(j_key, r_key)
    found = (pos < j_key.size) & (j_key[np.minimum(pos, max(j_key.size - 1, 0))] == r_key) if j_key.size else \
        np.zeros(r_key.size, bool)
    _refuse_judged_duplicates(r_key[found], lambda key: (qids[key // nd], doc_vocab[key % nd]), run)
    grade = np.where(found, j_grade[np.minimum(pos, max(j_key.size - 1, 0))] if j_key.size else 0, -1)
    judged = found
    n_retrieved = np.bincount(r_qcode, minlength=nq)[:nq]

    results: dict[str, np.ndarray] = {}
    definitions: dict[str, str] = {}
    for m in ms:
        name = str(m)
        definitions[name] = m.definition()
        results[name] = _measure(m, nq, r_qcode, rank, grade, judged, j_q, j_grade, starts, n_retrieved)
    per_query = pd.DataFrame(results, index=pd.Index(qids, name="query_id"))
    mean = {k: float(v.mean()) if nq else 0.0 for k, v in results.items()}
    definitions["_queries"] = ("every query in the qrels; a query missing from the run scores 0 and counts "
                               "(trec_eval -c); run queries without judgments are ignored")
    definitions["_ties"] = "score descending, then document id descending (trec_eval)"
    return EvalResult([str(m) for m in ms], per_query, mean, int(nq), definitions)


def _read_run_arrow(path: Path):
    """Columns query_id (dictionary), doc_id, score of a single-space-separated run, read by
    Arrow's multithreaded C++ parser; None when the file needs the careful reader (other
    separators, bad lines), which then reports the exact line."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        return pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=["query_id", "q0", "doc_id", "rank", "score", "tag"]),
            parse_options=pcsv.ParseOptions(delimiter=" "),
            convert_options=pcsv.ConvertOptions(
                include_columns=["query_id", "doc_id", "score"],
                column_types={"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string(),
                              "score": pa.float64()}),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _evaluate_run_file(q: pd.DataFrame, path: Path, ms: list[Measure]) -> EvalResult | None:
    """The same evaluation as the DataFrame path, for a run file, touching only what
    matters: ranks come from the file order when it is already grouped by query with
    scores descending (TREC runs are), and only judged rows are ranked precisely (an
    unjudged row contributes nothing but its position)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not path.exists():
        raise ValidationError(f"{path}: no such file.")
    table = _read_run_arrow(path)
    if table is None or table.num_rows == 0:
        return None
    if table["score"].null_count or not pc.all(pc.is_finite(table["score"])).as_py():
        return None  # NaN or inf: the careful reader refuses the line
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
    _refuse_judged_duplicates(c_key[hit], lambda key: (qids[key // nd], judged_docs[key % nd]), path)
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
            names = doc.take(pa.array(idx if order is None else order[idx])).to_pylist()
            off = 0
            for j in range(rids.size):
                a, ln = int(firsts[j]), int(lens[j])
                seg = names[off:off + ln]
                off += ln
                by_desc = sorted(range(ln), key=seg.__getitem__, reverse=True)
                pos_in_run = np.empty(ln, np.int64)
                pos_in_run[by_desc] = np.arange(ln)
                base = a - starts_ri[ri[a]] + 1  # rank of the run's first position
                for row in tied[lo[j]:hi[j]]:
                    rk[np.searchsorted(rows, row)] = base + pos_in_run[row - a]

    qc = rq[rows]
    o = np.lexsort((rk, qc))
    qc, rk, grade = qc[o], rk[o], grade[o]
    starts = np.searchsorted(qc, np.arange(nq))
    n_retrieved = np.zeros(nq, np.int64)
    counts = np.bincount(ri, minlength=run_qids.size)
    ok = to_q >= 0
    n_retrieved[to_q[ok]] = counts[ok]
    judged = np.ones(qc.size, bool)
    results: dict[str, np.ndarray] = {}
    definitions: dict[str, str] = {}
    for m in ms:
        definitions[str(m)] = m.definition()
        results[str(m)] = _measure(m, nq, qc, rk, grade, judged, j_q, j_grade_all, starts, n_retrieved)
    per_query = pd.DataFrame(results, index=pd.Index(qids, name="query_id"))
    mean = {k: float(v.mean()) if nq else 0.0 for k, v in results.items()}
    definitions["_queries"] = ("every query in the qrels; a query missing from the run scores 0 and counts "
                               "(trec_eval -c); run queries without judgments are ignored")
    definitions["_ties"] = "score descending, then document id descending (trec_eval)"
    return EvalResult([str(m) for m in ms], per_query, mean, int(nq), definitions)


def _measure(m: Measure, nq: int, qc: np.ndarray, rank: np.ndarray, grade: np.ndarray, judged: np.ndarray,
             j_q: np.ndarray, j_grade: np.ndarray, starts: np.ndarray, n_retrieved: np.ndarray) -> np.ndarray:
    """One measure for every query. The rows (``qc``, ``rank``, ``grade``, ``judged``) are
    sorted by query then rank and may be only the judged rows of a run (unjudged rows add
    nothing to any measure); ``n_retrieved`` is each query's full result count."""
    k = m.k
    within = rank <= k if k is not None else np.ones(rank.size, bool)
    rel = grade >= m.rel
    n_rel = np.bincount(j_q, weights=(j_grade >= m.rel).astype(float), minlength=nq)[:nq]
    safe_rel = np.where(n_rel > 0, n_rel, 1.0)
    if m.name == "P":
        return _group_sum((rel & within).astype(float), qc, nq) / k
    if m.name == "R":
        return np.where(n_rel > 0, _group_sum((rel & within).astype(float), qc, nq) / safe_rel, 0.0)
    if m.name == "Success":
        return (_group_sum((rel & within).astype(float), qc, nq) > 0).astype(float)
    if m.name == "Judged":
        # ir_measures' definition: judged share of what was returned in the top k
        shown = np.minimum(n_retrieved, k).astype(float)
        return np.where(shown > 0, _group_sum((judged & within).astype(float), qc, nq) / np.where(shown > 0, shown, 1), 0.0)
    if m.name == "RR":
        hit = rel & within
        first = np.full(nq, np.inf)
        np.minimum.at(first, qc[hit], rank[hit])
        return np.where(np.isfinite(first), 1.0 / first, 0.0)
    if m.name == "AP":
        hit = (rel & within).astype(np.int64)
        cum = np.cumsum(hit)
        before = np.concatenate([[0], cum])[starts][qc]  # hits in earlier queries
        prec = (cum - before) / rank
        return np.where(n_rel > 0, _group_sum(prec * hit, qc, nq) / safe_rel, 0.0)
    if m.name == "nDCG":
        g = np.where(grade > 0, grade, 0).astype(float)
        gain = (np.exp2(g) - 1.0) if m.gain == "exp" else g
        dcg = _group_sum(np.where(within, gain / np.log2(rank + 1.0), 0.0), qc, nq)
        # ideal: the query's positive grades, best first
        pos = j_grade > 0
        iq, ig = j_q[pos], j_grade[pos].astype(float)
        o = np.lexsort((-ig, iq))
        iq, ig = iq[o], ig[o]
        istart = np.searchsorted(iq, np.arange(nq))
        irank = np.arange(iq.size) - istart[iq] + 1
        igain = (np.exp2(ig) - 1.0) if m.gain == "exp" else ig
        keep = irank <= k if k is not None else np.ones(irank.size, bool)
        idcg = _group_sum(np.where(keep, igain / np.log2(irank + 1.0), 0.0), iq, nq)
        return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)
    if m.name == "Bpref":
        n_judged = np.bincount(j_q, minlength=nq)[:nq].astype(float)
        n_non = n_judged - n_rel
        nonrel = (judged & ~rel).astype(np.int64)
        cum = np.cumsum(nonrel)
        before_q = np.concatenate([[0], cum])[starts][qc]
        above = cum - nonrel - before_q  # judged non-relevant ranked above this row
        denom = np.minimum(n_rel, n_non)[qc]
        term = np.where(denom > 0, 1.0 - np.minimum(above, n_rel[qc]) / np.where(denom > 0, denom, 1.0), 1.0)
        return np.where(n_rel > 0, _group_sum(np.where(rel, term, 0.0), qc, nq) / safe_rel, 0.0)
    raise AssertionError(m.name)  # pragma: no cover


def qrels_from_mapping(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    return _qrels_frame(qrels)
