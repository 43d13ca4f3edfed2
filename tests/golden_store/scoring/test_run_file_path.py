"""The run-file path of ``evaluate_trec`` (Arrow reading, 64-bit line keys, ranks from the
file order) against the general path (the same data as dicts), on data made to stress it:
document ids of every length (up to hundreds of bytes, multi-byte UTF-8), ids that are
prefixes of each other, heavy score ties, files larger than one Arrow block, shuffled lines,
a query's lines split in two blocks, queries without judgments; repeated documents refused
wherever they are, and ids whose hashes meet (a collision) not taken for repeats."""

from __future__ import annotations

import random
import subprocess
import sys

import pandas as pd
import pytest

from golden_store.core.errors import ValidationError
from golden_store.scoring.trec import evaluate_trec

MEASURES = ["nDCG@10", "nDCG", "AP", "RR", "P@5", "R@100", "Bpref", "Judged@10", "Rprec", "NumRet", "infAP",
            "ERR@10", "RBP(p=0.8)"]


def _doc_id(rng: random.Random, i: int, ascii_only: bool) -> str:
    """Ids of 1 to ~300 bytes; some multi-byte (unless ``ascii_only``); some prefixes of others."""
    kind = i % 7
    if kind == 0:
        return f"d{i}"
    if kind == 1:
        return f"doc-{i:08d}"                                   # exactly 12 bytes: one and a half words
    if kind == 2:
        return f"d{i}" + "x" * rng.randint(1, 40)              # 2-6 words
    if kind == 3 and ascii_only:
        return f"e{i}u" + "-" * rng.randint(0, 12)
    if kind == 3:
        return f"é{i}ü" + "😀" * rng.randint(0, 3)            # multi-byte UTF-8
    if kind == 4:
        return "p" * 8 + str(i)                                # shares its first word with all of its kind
    if kind == 5:
        return f"{i}" + "z" * rng.choice([0, 7, 8, 9, 15, 16, 17])
    return f"long-{i}-" + "y" * rng.randint(200, 300)          # many words


def generated(seed: int, n_queries: int = 120, depth: int = 400, ascii_only: bool = False):
    rng = random.Random(seed)
    pool = [_doc_id(rng, i, ascii_only) for i in range(3000)]
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q:03d}"
        docs = rng.sample(pool, depth)
        if q % 11 != 5:  # some run queries have no judgments
            judged = rng.sample(docs[: depth // 2], rng.randint(1, 30)) + rng.sample(pool, 5)
            qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 2, 3]) for d in judged}
            qrels[qid][judged[0]] = max(qrels[qid][judged[0]], 0)
        if q % 17 == 3:
            continue  # judged, missing from the run
        run[qid] = {d: float(rng.randint(0, 25)) / 4 for d in docs}  # many ties
    qrels["only-judged"] = {pool[0]: 1}
    return qrels, run


def _write(tmp_path, qrels, lines, name):
    (tmp_path / "q.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in qrels.items() for d, g in ds.items()),
                                    encoding="utf-8")
    path = tmp_path / name
    path.write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, d, s in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=[(11, False), (12, True)], ids=["utf8", "ascii"])
def data(request):
    seed, ascii_only = request.param  # ASCII-only ids take numpy's own hashing of the judged ids
    return generated(seed, ascii_only=ascii_only)


def test_the_file_path_equals_the_general_path_in_any_line_order(data, tmp_path):
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    general = evaluate_trec(qrels, run, MEASURES)
    rng = random.Random(5)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    ordered = sorted(rows, key=lambda r: (r[0], -r[2]))
    half = len(ordered) // 2  # a query's lines in two blocks: not grouped, so the file is sorted first
    split = ordered[half:] + ordered[:half]
    for name, lines in (("ordered", ordered), ("file-order", rows), ("shuffled", shuffled), ("split", split)):
        path = _write(tmp_path, qrels, lines, f"{name}.txt")
        assert path.stat().st_size > 2 << 20  # several Arrow blocks (1 MiB each)
        fast = evaluate_trec(tmp_path / "q.txt", path, MEASURES)
        assert fast.n_queries == general.n_queries == len(qrels)
        assert list(fast.per_query.index) == list(general.per_query.index)
        assert fast.measures == general.measures
        for m in fast.measures:
            diff = (fast.per_query[m] - general.per_query[m]).abs().max()
            assert diff < 1e-12, (name, m, diff)
        assert fast.mean == general.mean, name


def test_options_on_the_file_path(data, tmp_path):
    qrels, run = data
    rows = sorted(((q, d, s) for q, docs in run.items() for d, s in docs.items()), key=lambda r: (r[0], -r[2]))
    path = _write(tmp_path, qrels, rows, "r.txt")
    for opts in ({"max_docs": 50}, {"judged_only": True}, {"max_docs": 7, "judged_only": True}, {"rel": 2}):
        fast = evaluate_trec(tmp_path / "q.txt", path, MEASURES, **opts)
        general = evaluate_trec(qrels, run, MEASURES, **opts)
        assert fast.mean == general.mean, opts


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_repeated_document_is_refused_wherever_it_is(data, tmp_path, where):
    qrels, run = data
    rows = sorted(((q, d, s) for q, docs in run.items() for d, s in docs.items()), key=lambda r: (r[0], -r[2]))
    judged = [i for i, r in enumerate(rows) if r[0] in qrels]
    i = {"first": judged[1], "middle": judged[len(judged) // 2], "last": judged[-1]}[where]
    q, d, s = rows[i]
    twin = next(j for j in range(i - 1, -1, -1) if rows[j][0] == q)  # an earlier line of the same query
    rows = rows[:i] + [(q, rows[twin][1], s)] + rows[i + 1:]
    path = _write(tmp_path, qrels, rows, "dup.txt")
    with pytest.raises(ValidationError) as err:
        evaluate_trec(tmp_path / "q.txt", path, ["AP"])
    assert f"query {q} lists document {rows[twin][1]} more than once (1 repeated document(s))" in str(err.value)
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    with pytest.raises(ValidationError, match=f"query {q} lists document .* more than once"):  # the general path
        evaluate_trec(qrels, frame, ["AP"])


def test_the_first_repeat_in_the_file_is_named_and_all_are_counted(tmp_path):
    (tmp_path / "q.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 a 1 9 t\nq1 Q0 b 2 8 t\nq2 Q0 c 1 9 t\nq2 Q0 c 2 8 t\n"
                                    "q1 Q0 a 3 7 t\nq1 Q0 a 4 6 t\nq9 Q0 z 1 9 t\nq9 Q0 z 2 8 t\n")
    with pytest.raises(ValidationError, match=r"query q2 lists document c more than once \(3 repeated"):
        evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", ["AP"])


def test_ids_whose_hashes_meet_are_different_documents(tmp_path):
    """``a`` and ``a`` + NUL hash alike (the hash reads bytes up to the string's end, and a
    NUL byte adds nothing): they are compared as strings, so not refused as a repeat, and
    each keeps its own rank."""
    (tmp_path / "q.txt").write_text("q1 0 b 1\n")
    (tmp_path / "r.txt").write_bytes(b"q1 Q0 a 1 3 t\nq1 Q0 a\x00 2 2 t\nq1 Q0 b 3 1 t\n")
    res = evaluate_trec(tmp_path / "q.txt", tmp_path / "r.txt", ["NumRet", "RR"])
    assert res.mean == {"NumRet": 3.0, "RR": 1 / 3}


def test_golden_score_json_loads_neither_pandas_nor_the_store(data, tmp_path):
    """``golden score --qrels --run --json`` runs on numpy and Arrow only (start-up time)."""
    qrels, run = data
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    path = _write(tmp_path, qrels, rows[:2000], "r.txt")
    code = ("import sys; from annotator.cli import main; rc = main(sys.argv[1:]); "
            "print([m for m in ('pandas', 'duckdb', 'golden_store.db.store', 'annotator.process.context') if m in sys.modules], "
            "file=sys.stderr); sys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, "score", "--qrels", str(tmp_path / "q.txt"), "--run", str(path),
                          "-m", "AP", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "[]"
    assert '"AP"' in out.stdout
