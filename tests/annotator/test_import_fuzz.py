"""Fuzz of every importer behind the `golden` CLI (issue 18, "Must show"): whatever the
file holds, the command either succeeds or exits 1 with one clear message that names the
file; never a traceback; a refused import leaves the store exactly as it was.

Run in-process through ``annotator.cli.main`` (an uncaught exception fails the test, which
is what a traceback is). Inputs: files built from a valid line per importer, mutated
(values of every JSON type, NaN/Infinity, huge ids, garbage lines), re-encoded (UTF-8 with
and without BOM, UTF-16, Latin-1) and sprinkled with random bytes."""

from __future__ import annotations

import itertools
import os
import re
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.annotator.test_import_rules import golden, project, snapshot  # noqa: F401 (project: a fixture)

pytestmark = pytest.mark.filterwarnings("ignore")

EXAMPLES = int(os.environ.get("GOLDEN_FUZZ_EXAMPLES", "60"))
_counter = itertools.count()

scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["q1", "q2", "d1", "d2", "lexical", "thirty days", "", " ", "|"]),
    st.just("Z" * 300_000),
)
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)

TEMPLATES = {
    "corpus": lambda n: {"doc_id": f"fz{n}", "text": "Gift cards never expire.", "title": "Gifts"},
    "queries": lambda n: {"id": f"fq{n}", "text": "Do gift cards expire?", "stratum": "lexical",
                          "answerable": True, "date": "2024-05-01"},
    "runs": lambda n: {"query_id": "q1", "doc_id": "d1", "text": "The refund window is thirty days", "score": 2.5,
                       "rank": 1},
    "answers": lambda n: {"query_id": "q1", "answer": "Thirty days."},
    "transcripts": lambda n: {"evaluation_id": f"r{n}", "query_id": "q1", "trial": 0, "passed": False,
                              "metrics": {"recall": 0.5}, "failure_type": "retrieval_miss",
                              "transcript": {"question": "How long?", "retrieved": [{"doc_id": "d1", "text": "x"}],
                                             "answer": "Thirty days.", "judge": {"verdict": "fail"}}},
}


def args_for(kind: str, path: str, n: int) -> list[str]:
    return {
        "corpus": ["corpus", "import", path],
        "queries": ["queries", "import", path],
        "runs": ["runs", "import", path, "--system", f"s{n}", "--format", "jsonl"],
        "runs-trec": ["runs", "import", path, "--system", f"t{n}"],
        "answers": ["answers", "import", path, "--system", f"a{n}"],
        "transcripts": ["transcripts", "import", path],
    }[kind]


@st.composite
def jsonl_line(draw, kind: str, n: str) -> str:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.text(max_size=30))  # garbage
    obj = TEMPLATES[kind](n)
    if choice >= 3:  # mutate some fields
        for key in draw(st.lists(st.sampled_from([*obj, "extra"]), max_size=3)):
            if draw(st.booleans()):
                obj[key] = draw(value)
            else:
                obj.pop(key, None)
    if choice == 1 and kind == "transcripts":
        obj["transcript"] = draw(value)
    return json.dumps(obj, allow_nan=True, ensure_ascii=draw(st.booleans()))


@st.composite
def trec_line(draw) -> str:
    fields = ["q1", "Q0", "d1", "1", "2.5", "bm25"]
    for i in draw(st.lists(st.integers(0, 5), max_size=3)):
        fields[i] = draw(st.one_of(st.text(max_size=8), st.sampled_from(["inf", "nan", "-Infinity", "1e400", "q2",
                                                                          "d2", "Z" * 200_000, "1e-400"])))
    if draw(st.integers(0, 5)) == 0:
        fields = fields[: draw(st.integers(0, 7))]
    return " ".join(fields)


@st.composite
def csv_text(draw) -> str:
    header = draw(st.sampled_from(["id,text,stratum", "id,text,stratum,answerable,held_out,date", "id,text",
                                   '"id","text","stratum"']))
    rows = []
    for _ in range(draw(st.integers(0, 4))):
        cells = [f"cq@N@{len(rows)}", "Is it free?", "lexical", "true", "false", "2024-01-01"]
        for i in draw(st.lists(st.integers(0, 5), max_size=2)):
            cells[i] = draw(st.one_of(st.text(max_size=10), st.sampled_from(['"', 'a,"b', "x" * 140_000, "\n",
                                                                            "negative", "nan", "maybe"])))
        rows.append(",".join(cells))
    return "\n".join([header, *rows])


@st.composite
def file_bytes(draw, kind: str) -> tuple[str, str, bytes, float]:
    """(text with @N@ where the example's number goes, encoding, junk bytes, where they go):
    the number is filled in when the example runs, so generation never depends on it."""
    n = "@N@"
    if kind == "queries-csv":
        text = draw(csv_text())
    elif kind == "runs-trec":
        text = "\n".join(draw(st.lists(trec_line(), max_size=5)))
    else:
        text = "\n".join(draw(st.lists(jsonl_line(kind, n), max_size=5)))
    if draw(st.booleans()):
        text += "\n"
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    junk = draw(st.binary(min_size=1, max_size=4)) if draw(st.integers(0, 5)) == 0 else b""  # random bytes
    return text, encoding, junk, draw(st.floats(0, 1))


def materialize(case: tuple[str, str, bytes, float], n: int) -> bytes:
    text, encoding, junk, where = case
    k = itertools.count()
    data = re.sub("@N@", lambda _m: f"{n}x{next(k)}", text).encode(encoding, errors="replace")
    at = int(where * len(data))
    return data[:at] + junk + data[at:]


def check_one(project, kind: str, data: bytes, n: int) -> None:
    suffix = {"queries-csv": ".csv", "runs-trec": ".txt"}.get(kind, ".jsonl")
    path = project / f"in-{n}{suffix}"
    path.write_bytes(data)
    before = snapshot()
    rc, _, err = golden(*args_for("queries" if kind == "queries-csv" else kind, str(path), n))
    assert "Traceback" not in err
    if rc == 0:
        return
    assert rc == 2, err
    assert err.startswith("golden: "), err
    assert path.name in err, f"the message does not name the file:\n{err[:2000]}"
    assert len(err) < 20_000, f"a {len(err)}-character message"
    assert snapshot() == before, "a refused import changed the store"


KINDS = ["corpus", "queries", "queries-csv", "runs", "runs-trec", "answers", "transcripts"]


@pytest.mark.parametrize("kind", KINDS)
def test_importer_fuzz(project, kind):
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(file_bytes(kind))
    def run(case):
        n = next(_counter)  # fresh ids and system names for every example
        check_one(project, kind, materialize(case, n), n)

    run()
