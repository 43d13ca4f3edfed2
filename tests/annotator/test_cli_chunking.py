"""Passage runs and chunkers from the command line (issue 25, item 7): `golden score --run
passages.jsonl` and `golden chunking --budget N`, on a corpus small enough to count tokens
by hand (METHODOLOGY §5.1, §5.2, §5.4).

Document ``d`` is "t00 t01 ... t59": 60 tokens, token i at characters [4i, 4i + 3).
Document ``e`` is "u00 ... u19": 20 tokens. Question q1's evidence is t10..t19 (10 tokens),
q2's is t40..t44 (5 tokens); q3 is unanswerable. Chunker "small" cuts 10-token chunks,
chunker "large" 30-token chunks (20 in ``e``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from annotator.cli import main
from golden_store.live.documents import import_documents
from golden_store.corpus.sources import load_sources
from golden_store.live.evidence import EvidenceSpan, append_evidence
from golden_store.freezing import freeze
from golden_store.live.queries import import_queries, known_strata, parse_query_file

D = " ".join(f"t{i:02d}" for i in range(60))
E = " ".join(f"u{i:02d}" for i in range(20))


def tok(i: int) -> int:
    return 4 * i


def chunk(doc: str, first: int, last: int) -> dict:
    """Tokens first..last (inclusive) of ``doc`` as offsets."""
    return {"doc_id": doc, "start": tok(first), "end": tok(last) + 3}


@pytest.fixture
def tiny(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    import_documents(store, load_sources([("d.txt", D.encode()), ("e.txt", E.encode())]), actor="eng")
    strata = known_strata(store)
    answerable = "lexical" if "lexical" in strata else sorted(strata - {"negative"})[0]
    qs = [{"id": "q1", "text": "which tokens are ten to nineteen", "stratum": answerable},
          {"id": "q2", "text": "which tokens are forty to forty-four", "stratum": answerable},
          {"id": "q3", "text": "what is not in the corpus", "stratum": answerable, "answerable": False}]
    data = "\n".join(json.dumps(q) for q in qs).encode()
    import_queries(store, parse_query_file("q.jsonl", data, strata), actor="eng")
    spans = [("q1", 10, 19), ("q2", 40, 44)]
    append_evidence(store, [EvidenceSpan(q, f"e-{q}", D[tok(a):tok(b) + 3], "d", tok(a), tok(b) + 3, tok(a),
                                         tok(b) + 3, "exact", 100.0) for q, a, b in spans], actor="ann")
    freeze(store, "v1", actor="eng")
    return tmp_path


def write(folder: Path, name: str, lines: list[dict]) -> str:
    p = folder / name
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(p)


def small_run(folder: Path) -> str:
    """10-token chunks. q1: its evidence chunk first (given as text, placed by the resolver),
    then 0-9, 20-29, 30-39; q2: e's first chunk, its evidence chunk (40-49), e's second;
    q3 (unanswerable): one chunk."""
    return write(folder, "small.jsonl", [
        {"query_id": "q1", "rank": 1, "doc_id": "d", "text": " ".join(f"t{i}" for i in range(10, 20))},
        {"query_id": "q1", "rank": 2, **chunk("d", 0, 9)},
        {"query_id": "q1", "rank": 3, **chunk("d", 20, 29)},
        {"query_id": "q1", "rank": 4, **chunk("d", 30, 39)},
        {"query_id": "q2", "score": 3.0, **chunk("e", 0, 9)},
        {"query_id": "q2", "score": 2.0, **chunk("d", 40, 49)},
        {"query_id": "q2", "score": 1.0, **chunk("e", 10, 19)},
        {"query_id": "q3", "rank": 1, **chunk("d", 50, 59)},
    ])


def large_run(folder: Path) -> str:
    """30-token chunks (all of ``e``, 20 tokens, is one). q1: 0-29 then 30-59; q2: e, then 30-59."""
    return write(folder, "large.jsonl", [
        {"query_id": "q1", "rank": 1, **chunk("d", 0, 29)},
        {"query_id": "q1", "rank": 2, **chunk("d", 30, 59)},
        {"query_id": "q2", "rank": 1, **chunk("e", 0, 19)},
        {"query_id": "q2", "rank": 2, **chunk("d", 30, 59)},
    ])


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_the_report_card_at_a_fixed_budget_by_hand(tiny, capsys):
    rc, out, err = cli(capsys, "chunking", "--version", "v1", "--budget", "35", small_run(tiny), large_run(tiny),
                       "--json", "--per-query")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["budget_tokens"] == 35 and "DocTokens" in rep["tokenizer"]
    small, large = rep["runs"]["small"], rep["runs"]["large"]
    # Counted by hand (§5.2). small, q1: 10+10+10 = 30 tokens fit, the 4th chunk would make 40 > 35 -> k = 3;
    # E = 10 tokens, all taken: recall 1, precision 10/30, IoU 10/(10 + 30 - 10); Ω: the one chunk holding E,
    # 10/10. q2: e0-9, d40-49, e10-19 = 30 tokens, k = 3; E = 5 tokens: recall 1, precision 5/30, IoU 5/30;
    # Ω: chunk 40-49 holds E: 5/10.
    hand_small = {"q1": dict(recall=1, precision=10 / 30, iou=10 / 30, precision_omega=1.0, k=3, tokens=30),
                  "q2": dict(recall=1, precision=5 / 30, iou=5 / 30, precision_omega=0.5, k=3, tokens=30)}
    # large, q1: 0-29 is 30 tokens, 30-59 would make 60 > 35 -> k = 1; E inside it: recall 1, precision 10/30,
    # IoU 10/30; Ω: chunk 0-29 holds E, 10/30. q2: e (20 tokens) fits, 30-59 would make 50 -> k = 1, E (in
    # 30-59) is missed: recall, precision, IoU 0; Ω: chunk 30-59 holds E, 5/30.
    hand_large = {"q1": dict(recall=1, precision=10 / 30, iou=10 / 30, precision_omega=10 / 30, k=1, tokens=30),
                  "q2": dict(recall=0, precision=0, iou=0, precision_omega=5 / 30, k=1, tokens=20)}
    for card, hand in ((small, hand_small), (large, hand_large)):
        assert card["n_queries"] == 2  # q3 is unanswerable: left out, and said so
        assert card["not_scored"]["unanswerable"] == (["q3"] if card is small else [])
        per_q = {r["query_id"]: r for r in card["per_query"]}
        for q, figures in hand.items():
            for key, value in figures.items():
                assert per_q[q][key] == pytest.approx(value), (q, key)
        for key in ("recall", "precision", "iou", "precision_omega", "k", "tokens"):
            values = [hand[q][key] for q in ("q1", "q2")]
            assert card["figures"][key]["mean"] == pytest.approx(np.mean(values)), key
            assert card["figures"][key]["sd"] == pytest.approx(np.std(values)), key  # per-query SD
    # the budget binds: the chunker with larger chunks gets fewer passages (at k = 2 it would have had both)
    assert small["figures"]["k"]["mean"] == 3 and large["figures"]["k"]["mean"] == 1
    assert small["chunks"] == 8 and large["chunks"] == 3
    assert small["mean_chunk_tokens"] == 10 and large["mean_chunk_tokens"] == pytest.approx((30 + 30 + 20) / 3)
    # the text card names the tokenizer and what it leaves out
    rc, out, err = cli(capsys, "chunking", "--version", "v1", "--budget", "35", small_run(tiny), large_run(tiny))
    assert rc == 0
    assert "0.250 ± 0.083" in out  # small's precision: mean of 1/3 and 1/6, SD 1/12
    assert "DocTokens" in err and "1 unanswerable question(s) of the run left out" in err


def test_score_a_passage_run_with_chunk_labels_from_spans(tiny, capsys):
    run = small_run(tiny)
    rc, out, err = cli(capsys, "score", "--version", "v1", "--run", run, "-m", "RR", "-m", "P@1", "--json",
                       "--per-query")
    assert rc == 0, err
    rep = json.loads(out)
    # q1's evidence chunk is ranked 1st (placed from its text), q2's 2nd; q3 unanswerable is left out
    assert rep["per_query"]["q1"]["RR(rel=2)"] == 1.0 and rep["per_query"]["q2"]["RR(rel=2)"] == 0.5
    assert rep["mean"]["RR(rel=2)"] == pytest.approx(0.75)
    assert "q3" not in rep["per_query"]
    assert rep["definitions"]["hit_rule"] == "any_overlap"
    # the hit rule decides: a passage covering half of q1's span hits under any_overlap, not contains_span
    half = write(tiny, "half.jsonl", [{"query_id": "q1", "score": 1.0, **chunk("d", 15, 24)}])
    rc, out, _ = cli(capsys, "score", "--version", "v1", "--run", half, "-m", "RR", "--json", "--per-query")
    assert json.loads(out)["per_query"]["q1"]["RR(rel=2)"] == 1.0  # (q2, not in this run, scores 0 and counts)
    rc, out, err = cli(capsys, "score", "--version", "v1", "--run", half, "-m", "RR", "--hit-rule", "contains_span")
    assert rc == 0 and "RR(rel=2)\tall\t0.0000" in out and "hit rule contains_span" in err
    # lines for a question the version does not have are left out, and counted
    extra = write(tiny, "extra.jsonl", [{"query_id": "q1", "rank": 1, **chunk("d", 10, 19)},
                                        {"query_id": "q-new", "rank": 1, **chunk("d", 0, 9)}])
    rc, out, err = cli(capsys, "score", "--version", "v1", "--run", extra, "-m", "RR")
    assert rc == 0 and "1 line(s) for 1 query id(s) not in v1 left out: q-new" in err
    # --format says it for a file not named .jsonl
    renamed = tiny / "small.passages"
    renamed.write_text(Path(run).read_text())
    rc, out, _ = cli(capsys, "score", "--version", "v1", "--run", str(renamed), "--format", "jsonl", "-m", "RR",
                     "--json")
    assert rc == 0 and json.loads(out)["mean"]["RR(rel=2)"] == pytest.approx(0.75)


def test_bad_lines_are_refused_naming_file_line_and_field(tiny, capsys):
    bad = write(tiny, "bad.jsonl", [
        {"query_id": "q1", "rank": 1, **chunk("d", 10, 19)},
        {"query_id": "q1", "rank": 2, "doc_id": "d", "start": 40},                    # no end
        {"query_id": "q1", "rank": 3, "doc_id": "d", "text": "t07"},                   # ok (exact, unique)
        {"query_id": "q2", "rank": 1, "doc_id": "nope", "start": 0, "end": 4},          # unknown document
        {"query_id": "q2", "rank": "1", **chunk("d", 40, 44)},                          # rank not an integer
        {"query_id": "q2", "rank": 2, "doc_id": "d", "start": 0, "end": 10_000},        # outside the document
    ])
    for args in (["score", "--version", "v1", "--run", bad, "-m", "RR"],
                 ["chunking", "--version", "v1", "--budget", "10", bad]):
        rc, out, err = cli(capsys, *args)
        assert rc == 2 and not out
        assert f"{bad} line 2: 'start' and 'end' must both be given" in err
        assert f"{bad} line 4: unknown doc id 'nope'" in err
        assert f"{bad} line 5: 'rank' must be a positive integer" in err
        assert f"{bad} line 6: the passage [0, 10000) is not inside 'd'" in err
        assert "line 3" not in err
    # text the resolver cannot place, or finds twice: refused with what to do
    e_twice = write(tiny, "amb.jsonl", [
        {"query_id": "q1", "rank": 1, "doc_id": "d", "text": "nothing like this is in the document at all"},
        {"query_id": "q1", "rank": 2, "doc_id": "d", "text": "t10", "start": 0, "end": 3},  # text is not d[0:3]
    ])
    rc, _, err = cli(capsys, "score", "--version", "v1", "--run", e_twice, "-m", "RR")
    assert rc == 2
    assert f"{e_twice} line 1: the passage could not be placed in 'd' (unresolved)" in err
    assert "'start' and 'end' offsets" in err
    assert f"{e_twice} line 2: 'text' is not the document's text at [0, 3)" in err
    # a passage repeated for a question
    dup = write(tiny, "dup.jsonl", [{"query_id": "q1", "rank": 1, **chunk("d", 10, 19)},
                                    {"query_id": "q1", "rank": 2, "doc_id": "d", "text": D[tok(10):tok(19) + 3]}])
    rc, _, err = cli(capsys, "chunking", "--version", "v1", "--budget", "10", dup)
    assert rc == 2 and f"{dup} line 2: 'd' [40, 79) repeats a passage" in err
    # a passage run needs a version
    rc, _, err = cli(capsys, "score", "--qrels", bad, "--run", bad, "-m", "RR")
    assert rc == 2 and "scored against a frozen version" in err


def test_ambiguous_text_is_refused_with_the_places(store, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    twice = "The badge office opens at nine. Lunch is at noon. The badge office opens at nine."
    import_documents(store, load_sources([("h.txt", twice.encode())]), actor="eng")
    strata = known_strata(store)
    stratum = "lexical" if "lexical" in strata else sorted(strata - {"negative"})[0]
    import_queries(store, parse_query_file("q.jsonl", json.dumps({"id": "q1", "text": "when does it open",
                                                                  "stratum": stratum}).encode(), strata), actor="eng")
    append_evidence(store, [EvidenceSpan("q1", "e-1", "Lunch is at noon.", "h", 32, 49, 32, 49, "exact", 100.0)],
                    actor="ann")
    freeze(store, "v1", actor="eng")
    run = write(tmp_path, "amb.jsonl", [{"query_id": "q1", "rank": 1, "doc_id": "h",
                                         "text": "The badge office opens at nine."}])
    rc, _, err = cli(capsys, "score", "--version", "v1", "--run", run, "-m", "RR")
    assert rc == 2
    assert f"{run} line 1: the passage could not be placed in 'h' (ambiguous" in err
    assert "give 'start' and 'end' to say which" in err
    # the offsets say which: scored
    run = write(tmp_path, "ok.jsonl", [{"query_id": "q1", "rank": 1, "doc_id": "h", "start": 50, "end": 81,
                                        "text": "The badge office opens at nine."}])
    rc, out, err = cli(capsys, "score", "--version", "v1", "--run", run, "-m", "RR")
    assert rc == 0, err
    assert "RR(rel=2)\tall\t0.0000" in out  # a passage that is not the evidence


def test_runs_import_reads_the_same_lines(tiny, store):
    """`golden runs import` uses the same reader: offsets are taken as given, texts placed, and
    a text that disagrees with its offsets refused with its line."""
    from annotator.evaluation import runs_import
    from annotator.people.identity import User
    from annotator.people.roles import Role
    from golden_store.core.errors import ValidationError

    eng = User("eng", "Eng", frozenset({Role.ENGINEER}))
    rep = runs_import.import_run_file(store, eng, small_run(tiny), "small")
    assert rep.n_results == 8 and rep.fmt == "jsonl"
    rows = store.read("SELECT query_id, rank, doc_id, start, \"end\", match_kind FROM run_results "
                      "WHERE system = 'small' AND query_id = 'q1' ORDER BY rank")
    assert rows[0] == ("q1", 1, "d", tok(10), tok(19) + 3, "exact")   # placed from its text
    assert rows[1] == ("q1", 2, "d", 0, tok(9) + 3, "offsets")        # as given
    bad = write(tiny, "bad-import.jsonl", [{"query_id": "q1", "rank": 1, "doc_id": "d", "text": "t11",
                                            "start": 0, "end": 3}])
    with pytest.raises(ValidationError, match=r"bad-import.jsonl line 1: 'text' is not the document's text"):
        runs_import.import_run_file(store, eng, bad, "bad")
