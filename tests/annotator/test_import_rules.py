"""Issue 18 items 5 and 6: one rule for every importer (golden_store.core.textin), each case run
through the `golden` CLI in-process: refused with one clear message naming the file and the
line, never a traceback, the store unchanged."""

from __future__ import annotations

import contextlib
import io
import json
import time

import pytest

from annotator import cli
from annotator.process import context
from annotator.people.identity import cli_user
from golden_store.core import textin
from golden_store.core.errors import ValidationError
from tests.conftest import prepared_store, table_snapshot

DOC1 = "The refund window is thirty days from purchase. Contact support to start a return.\n"
DOC2 = "Shipping is free on orders over fifty dollars. Express shipping costs extra.\n"


def golden(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(args))
    return rc, out.getvalue(), err.getvalue()


def snapshot() -> dict:
    try:
        return table_snapshot(context.get_store(create=False))
    finally:
        context.close_all()


def _small_project(_store, folder):
    """Two documents and two queries imported through the CLI (on GOLDEN_DB) from ``folder``."""
    docs = folder / "docs"
    docs.mkdir()
    (docs / "d1.txt").write_text(DOC1)
    (docs / "d2.txt").write_text(DOC2)
    assert golden("corpus", "import", str(docs))[0] == 0
    (folder / "q.csv").write_text("id,text,stratum\nq1,How long is the refund window?,paraphrase\n"
                                  "q2,Is shipping free?,lexical\n")
    assert golden("queries", "import", str(folder / "q.csv"))[0] == 0


@pytest.fixture
def project(request, golden_db, tmp_path):
    """A small store: two documents, two queries (imported once, copied; the CLI opens it)."""
    prepared_store(request, "import-rules-project", _small_project)[0].close()
    return tmp_path


def refused(path, *args: str, line: int | None = None, says: str = "") -> str:
    """Run an import that must be refused cleanly; return its message."""
    before = snapshot()
    rc, _, err = golden(*args)
    assert rc == 2, err
    assert err.startswith("golden: ") and "Traceback" not in err
    assert str(path) in err, err
    if line is not None:
        assert f"line {line}" in err, err
    assert says in err, err
    assert snapshot() == before
    return err


IMPORTS = {
    "corpus": (lambda f: ("corpus", "import", str(f)), ".jsonl"),
    "queries": (lambda f: ("queries", "import", str(f)), ".jsonl"),
    "runs": (lambda f: ("runs", "import", str(f), "--system", "s1", "--format", "jsonl"), ".jsonl"),
    "answers": (lambda f: ("answers", "import", str(f), "--system", "s1"), ".jsonl"),
    "transcripts": (lambda f: ("transcripts", "import", str(f)), ".jsonl"),
}
GOOD = {
    "corpus": {"doc_id": "d9", "text": "Gift cards never expire."},
    "queries": {"id": "q9", "text": "Do gift cards expire?", "stratum": "lexical"},
    "runs": {"query_id": "q1", "doc_id": "d1", "text": "The refund window is thirty days", "score": 2.5},
    "answers": {"query_id": "q1", "answer": "Thirty days."},
    "transcripts": {"evaluation_id": "r1", "query_id": "q1", "trial": 0, "passed": False, "metrics": {"recall": 0.5},
                    "transcript": {"question": "How long?", "retrieved": [{"doc_id": "d1", "text": "thirty days"}],
                                   "answer": "Thirty days.", "judge": {"verdict": "fail"}}},
}


# ---- the rule itself -----------------------------------------------------------------------------


def test_decode_names_line_and_column_and_refuses_utf16_and_nul():
    with pytest.raises(ValidationError, match=r"f\.txt line 3: not valid UTF-8 \(byte 0xe9 at column 4\)"):
        textin.decode("f.txt", b"one\ntwo\ncaf\xe9\n")
    with pytest.raises(ValidationError, match="UTF-16"):
        textin.decode("f.txt", "q1 Q0 d1 1 2 x\n".encode("utf-16"))
    with pytest.raises(ValidationError, match="line 2: a NUL byte"):
        textin.decode("f.txt", b"ok\na\x00b")
    assert textin.decode("f.txt", b"\xef\xbb\xbfhello") == "hello"


def test_loads_refuses_non_finite_and_out_of_range_numbers():
    for bad in ('{"s": NaN}', '{"s": Infinity}', '{"s": -Infinity}', '{"s": 1e400}', '{"s": ' + "9" * 30 + "}",
                '{"s": ' + "1" * 5000 + "}"):
        with pytest.raises(textin.NumberError):
            textin.loads(bad)
    assert textin.loads('{"s": 1.5, "n": -3}') == {"s": 1.5, "n": -3}


def test_shown_caps_echoed_values():
    assert textin.shown("x" * 10_000) == repr("x" * 80) + "…"
    assert textin.shown("abc") == "'abc'"
    assert len(textin.shown(list(range(100_000)))) < 100


# ---- item 5: tracebacks become one clear message ---------------------------------------------------


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_trec_run_in_latin1_or_utf16_is_refused_cleanly(project, encoding):
    f = project / "run.txt"
    f.write_bytes("q1 Q0 d1 1 2.0 bm25\nq2 Q0 d2 1 1.0 b\u00e9m25\n".encode(encoding))
    err = refused(f, "runs", "import", str(f), "--system", "bm25", line=2 if encoding == "latin-1" else None)
    assert ("UTF-16" in err) if encoding == "utf-16" else ("not valid UTF-8 (byte 0xe9" in err)


def test_csv_field_over_128_kib_is_refused_cleanly(project):
    f = project / "big.csv"
    f.write_text("id,text,stratum\nq7,short,lexical\n" + 'q8,"' + "x" * 200_000 + '",lexical\n')
    err = refused(f, "queries", "import", str(f), line=3, says="field larger than field limit")
    assert len(err) < 1000


def test_empty_and_non_finite_calibration_uploads_are_clear_errors():
    from annotator.judge import calibration

    with pytest.raises(ValidationError, match="the file is empty"):
        calibration.load_upload("cal.csv", b"")
    with pytest.raises(ValidationError, match="the file is empty"):
        calibration.load_upload("cal.csv", b"\n\n")
    head = b"item_id,human_label,judge_label,length,judge_p\n"
    for row, what in ((b"a,pass,pass,1e400,0.2\n", "length"), (b"a,pass,pass,12,inf\n", "judge_p"),
                      (b"a,pass,pass,nan,0.5\n", "length"), (b"a,pass,pass,-3,0.5\n", "length")):
        with pytest.raises(ValidationError) as exc:
            calibration.load_upload("cal.csv", head + row)
        assert "cal.csv line 2" in str(exc.value) and what in str(exc.value)
    with pytest.raises(ValidationError, match=r"cal\.jsonl line 1: the number '1e400' is out of range"):
        calibration.load_upload("cal.jsonl", b'{"item_id": "a", "human_label": "pass", "length": 1e400}\n')
    ok = calibration.load_upload("cal.csv", b"\xef\xbb\xbf" + head + b"a,pass,pass,12,0.2\nb,fail,fail,40,0.9\n")
    assert ok["length"].tolist() == [12, 40]


def test_a_rubric_with_a_lone_surrogate_is_refused_cleanly(store):
    from annotator.judge import calibration
    from golden_store.live.rubric import add_rubric_version

    with pytest.raises(ValidationError, match="lone surrogate"):
        calibration.rubric_sha("Judge \ud800 carefully")
    with pytest.raises(ValidationError, match="lone surrogate"):
        calibration.run_claude_judge(store, cli_user(), None, rubric="bad \udfff rubric")
    before = table_snapshot(store)
    with pytest.raises(ValidationError, match="lone surrogate"):
        add_rubric_version(store, "Grade 0-3 \ud83d", "first", actor="lead")
    assert table_snapshot(store) == before


# ---- item 6: one rule, across every importer -------------------------------------------------------


@pytest.mark.parametrize("kind", list(IMPORTS))
def test_every_importer_accepts_a_bom(project, kind):
    args, suffix = IMPORTS[kind]
    f = project / f"bom{suffix}"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD[kind]).encode() + b"\n")
    rc, _, err = golden(*args(f))
    assert rc == 0, err


@pytest.mark.parametrize("kind", list(IMPORTS))
def test_every_importer_names_the_line_of_a_bad_byte(project, kind):
    args, suffix = IMPORTS[kind]
    f = project / f"enc{suffix}"
    f.write_bytes(json.dumps(GOOD[kind]).encode() + b"\n\n" + b'{"x": "caf\xe9"}\n')
    refused(f, *args(f), line=3, says="not valid UTF-8 (byte 0xe9 at column 11)")


@pytest.mark.parametrize("kind", list(IMPORTS))
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_every_importer_refuses_non_finite_numbers(project, kind, token):
    args, suffix = IMPORTS[kind]
    f = project / f"nan{suffix}"
    good = json.dumps(GOOD[kind])
    field = {"corpus": "title", "queries": "notes", "runs": "score", "answers": "answer",
             "transcripts": "trial"}[kind]
    bad = good[:-1] + f', "{field}": {token}' + "}"
    f.write_text(good + "\n" + bad + "\n")
    refused(f, *args(f), line=2, says=token)


@pytest.mark.parametrize("kind", list(IMPORTS))
def test_every_importer_refuses_a_key_named_twice_in_one_line(project, kind):
    """Probe U5 (found re-running issue 37's probes): `{"query_id": "q002", "query_id": "q003"}`
    was imported as q003, the last value a JSON parser keeps in silence, while a person reading
    the file (or a tool keeping the first) sees q002. Refused, naming the line and the key."""
    args, suffix = IMPORTS[kind]
    f = project / f"dup{suffix}"
    good = json.dumps(GOOD[kind])
    key = next(iter(GOOD[kind]))
    bad = "{" + json.dumps(key) + ': "other", ' + good[1:]
    f.write_text(good + "\n" + bad + "\n")
    refused(f, *args(f), line=2, says=f"the key '{key}' appears twice in one object")


def test_a_label_studio_export_with_a_key_named_twice_is_refused():
    from golden_store.core.judgment_formats import parse_labelstudio

    with pytest.raises(ValidationError, match="ls.json: the key 'id' appears twice in one object"):
        parse_labelstudio("ls.json", '[{"id": 1, "id": 2, "data": {}, "annotations": []}]')


def test_query_jsonl_nan_text_and_infinity_id_are_refused(project):
    f = project / "q.jsonl"
    f.write_text('{"id": "q5", "text": NaN, "stratum": "lexical"}\n{"id": Infinity, "text": "x", "stratum": "lexical"}\n'
                 '{"id": "q6", "text": 42, "stratum": "lexical"}\n')
    err = refused(f, "queries", "import", str(f), line=1)
    assert "line 2" in err and "line 3: field 'text' must be a string" in err


def test_trec_run_scores_inf_and_nan_are_refused(project):
    for token, line in (("inf", 2), ("-Infinity", 2), ("nan", 2)):
        f = project / "run.txt"
        f.write_text(f"q1 Q0 d1 1 2.0 bm25\nq2 Q0 d2 1 {token} bm25\n")
        refused(f, "runs", "import", str(f), "--system", "bm25", line=line, says="only finite numbers")


def test_an_empty_jsonl_run_is_refused(project):
    f = project / "run.jsonl"
    f.write_text("\n\n")
    refused(f, "runs", "import", str(f), "--system", "empty", "--format", "jsonl", says="no results")


def test_a_huge_doc_id_gives_a_short_message(project):
    f = project / "run.jsonl"
    f.write_text(json.dumps({"query_id": "q1", "doc_id": "D" * 5_000_000, "text": "x", "score": 1}) + "\n")
    err = refused(f, "runs", "import", str(f), "--system", "s", "--format", "jsonl", line=1, says="unknown doc id")
    assert len(err) < 1000 and "DDDD'…" in err
    g = project / "docs.jsonl"
    g.write_text(json.dumps({"doc_id": "has space " + "E" * 5_000_000, "text": "x"}) + "\n")
    err = refused(g, "corpus", "import", str(g), says="docs.jsonl:1: doc id")
    assert len(err) < 1000


def test_jsonl_run_checks_every_line_before_placing_any_passage(project, monkeypatch):
    """A bad last line is refused at once: the first pass never places a passage."""
    from golden_store.corpus.resolver import SpanResolver

    def boom(*_a, **_k):
        raise AssertionError("a passage was placed before the whole file was checked")

    monkeypatch.setattr(SpanResolver, "resolve", boom)
    f = project / "big.jsonl"
    line = json.dumps(GOOD["runs"]) + "\n"
    f.write_text(line * 50_000 + '{"query_id": "q1", "doc_id": "d1", "text": "x", "score": NaN}\n')
    t0 = time.perf_counter()
    refused(f, "runs", "import", str(f), "--system", "big", "--format", "jsonl", line=50_001)
    assert time.perf_counter() - t0 < 30


def test_out_of_range_integers_are_refused_not_crashed(project):
    """A transcript trial past the 32-bit column is a clear refusal naming file and line,
    the store unchanged."""
    f = project / "t.jsonl"
    f.write_text(json.dumps({**GOOD["transcripts"], "trial": 2**40}) + "\n")
    refused(f, "transcripts", "import", str(f), line=1, says="0 to 2147483647")
    f.write_text(json.dumps({**GOOD["transcripts"], "trial": 2**70}) + "\n")
    refused(f, "transcripts", "import", str(f), line=1, says="out of range")
    g = project / "r.jsonl"
    g.write_text(json.dumps({**GOOD["runs"], "rank": 2**40}) + "\n")
    assert golden("runs", "import", str(g), "--system", "big-rank", "--format", "jsonl")[0] == 0


def test_transcript_text_fields_given_as_objects_are_refused(project):
    """stratum, failure_type and trace_id were taken as they came: an object was stored as its
    text on DuckDB and crashed the import on PostgreSQL (found by the importer fuzz on the
    PostgreSQL pass). Now one sentence naming file, line and field, store unchanged."""
    f = project / "t.jsonl"
    for key in ("failure_type", "stratum", "trace_id"):
        f.write_text(json.dumps({**GOOD["transcripts"], "query_id": "new-q", "source": "production_log",
                                 key: {"": None}}) + "\n")
        refused(f, "transcripts", "import", str(f), line=1, says=f"field '{key}' must be a string")
