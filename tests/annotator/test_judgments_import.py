"""Judgments people already have (issue 28): imported as grades by their source, landing on
the items a TREC run pools, counted by the pool so people are asked to judge only the rest,
carried by a freeze, refused whole (file and line named, store unchanged) when wrong."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from annotator.labeling import adjudication as adjudication_flow
from annotator.evaluation import runs_import
from annotator.integration import judgments_import
from annotator.labeling import judging
from annotator.people import identity
from annotator.versions import versioning
from annotator.people.roles import PermissionDenied
from golden_store.core.errors import OptionRequiredError, ValidationError
from golden_store.db.store import Store
from golden_store.live import grade_state, judgment_imports, queries, rounds
from golden_store.versions import verify
from golden_store.live.documents import import_paths

PW = "0123456789ab"
DOCS = {
    "FT-1": "Refunds are accepted within 30 days of delivery. Keep the receipt.",
    "FT-2": "Shipping is free on orders over 50 euros. Express costs extra.",
    "FT-3": "Gift cards never expire and can be used online or in shops.",
    "FT-4": "Our stores open at nine and close at six on weekdays.",
}
QUERIES = {"301": "How long is the refund window?", "302": "Is shipping free?"}
GRADE_TABLES = ("grade_events", "grade_state", "judging_state", "grade_item_state", "judgment_imports")


def _fill(store: Store, tmp: Path, docs: dict[str, str] = DOCS, qs: dict[str, str] = QUERIES) -> None:
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in docs.items()), encoding="utf-8")
    import_paths(store, [corpus], actor="eng")
    qfile = tmp / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": q, "text": t, "stratum": "lexical"}) + "\n" for q, t in qs.items()),
                     encoding="utf-8")
    if "lexical" not in queries.known_strata(store):
        queries.add_stratum(store, "lexical", "words in common", actor="eng")
    queries.import_queries(store, queries.parse_query_file("q.jsonl", qfile.read_bytes(), queries.known_strata(store)),
                           actor="eng")


def _people(store: Store) -> tuple[identity.User, identity.User, identity.User]:
    admin = identity.create_user(store, None, "admin", ["admin"], password=PW)
    lead = identity.create_user(store, admin, "lead1", ["lead"], password=PW)
    ann = identity.create_user(store, admin, "ann1", ["annotator"], password=PW)
    return admin, lead, ann


def _run_and_pool(store: Store, tmp: Path, user: identity.User) -> None:
    """A TREC run over every (query, document), pooled to depth 4: the items qrels must land on."""
    run = tmp / "run.trec"
    run.write_text("".join(f"{q} Q0 {d} {r + 1} {10 - r} sysA\n" for q in QUERIES for r, d in enumerate(DOCS)))
    runs_import.import_run_file(store, user, run, "sysA", "trec")
    runs_import.build_pool(store, user, 4)


def _grade_rows(store: Store) -> dict[str, list]:
    return {t: sorted(map(repr, store.read(f"SELECT * FROM {t}"))) for t in GRADE_TABLES}


def _queue(store: Store, ann: identity.User) -> set[tuple]:
    return {(i.query_id, i.doc_id, i.start, i.end) for i in judging.next_items(store, ann, 100)}


def test_qrels_land_on_the_run_s_items_and_leave_the_judge_queue(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, ann = _people(store)
    _run_and_pool(store, tmp_path, identity.cli_user())
    before = _queue(store, ann)
    assert len(before) == 8
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("301 0 FT-1 3\n301 0 FT-2 0\n302 0 FT-2 2\n302 0 FT-4 -1\n")
    rep = judgments_import.import_judgments(store, lead, qrels)
    assert (rep.n_judgments, rep.negative, rep.source, rep.fmt) == (3, 1, "import:qrels.trec", "trec")
    # the very items the run pooled for those docnos (whole documents): gone from the queue
    judged = {("301", "FT-1", 0, len(DOCS["FT-1"])), ("301", "FT-2", 0, len(DOCS["FT-2"])),
              ("302", "FT-2", 0, len(DOCS["FT-2"]))}
    assert judged <= before and _queue(store, ann) == before - judged
    assert judging.progress(store, ann) == (0, 5)
    rows = store.read("SELECT actor, note, round_id, rubric_version, op FROM grade_events ORDER BY event_id")
    assert rows == [("import:qrels.trec", f"import {rep.import_id}", None, None, "grade")] * 3
    assert judgments_import.pool_judged_counts(store, lead) == {
        "pool_items": 8, "by_people": 0, "by_import": 3, "import_only": 3, "unjudged": 5}
    # graded@10 counts them: 3 of each query's results... 2 of 4 for 301, 1 of 4 for 302
    assert runs_import.pool_status(store, lead)["runs"]["sysA"]["graded_at_10"] == pytest.approx((2 / 4 + 1 / 4) / 2)
    listed = judgments_import.list_imports(store, lead)
    assert listed[["import_id", "source", "format", "n_judgments", "standing"]].to_dict("records") == [
        {"import_id": rep.import_id, "source": "import:qrels.trec", "format": "trec", "n_judgments": 3, "standing": 3}]


def test_a_round_may_still_give_an_imported_item_to_a_person(store, tmp_path):
    """A lead who wants the old assessors checked assigns a sample in a round: the item is queued
    for that annotator, and for nobody else."""
    _fill(store, tmp_path)
    _, lead, ann = _people(store)
    _run_and_pool(store, tmp_path, identity.cli_user())
    (tmp_path / "q.trec").write_text("301 0 FT-1 3\n")
    judgments_import.import_judgments(store, lead, tmp_path / "q.trec")
    item = ("301", "FT-1", 0, len(DOCS["FT-1"]))
    assert item not in _queue(store, ann)
    assert item not in {tuple(r.values())[:4] for r in rounds.free_items(store)}  # no new round draws it
    rounds.create_round(store, "split", {"ann1": [item]}, actor="lead1")
    assert item in _queue(store, ann)


def test_every_refusal_names_the_place_and_leaves_the_store_as_it_was(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, _ = _people(store)
    f = tmp_path / "qrels.txt"
    cases = [
        ("301 0 FT-1 3\n301 0 FT-2\n", ValidationError, f"{f} line 2: expected 4 fields"),
        ("301 0 FT-1 3\n301 0 FT-1 1\n", ValidationError,
         f"{f} line 2: judges query '301', document 'FT-1' again with grade 1, but line 1 gave 3"),
        ("301 0 FT-1 3\n999 0 FT-1 1\n301 0 NOPE 1\n", OptionRequiredError, f"{f} line 2: unknown query id '999'"),
        ("301 0 FT-1 5\n", ValidationError, f"{f} line 1: the grade 5 is above"),
    ]
    for text, kind, says in cases:
        f.write_text(text)
        before = _grade_rows(store)
        with pytest.raises(kind) as exc:
            judgments_import.import_judgments(store, lead, f)
        assert says in str(exc.value), str(exc.value)
        assert "nothing was imported" in str(exc.value)
        assert _grade_rows(store) == before
    f.write_text("301 0 FT-1 3\n999 0 FT-1 1\n301 0 NOPE 1\n301 0 FT-1 3\n")
    rep = judgments_import.import_judgments(store, lead, f, skip_unknown=True)
    assert (rep.n_judgments, rep.skipped, rep.duplicates, rep.skipped_queries, rep.skipped_docs) == (
        1, 2, 1, ("999",), ("NOPE",))
    before = _grade_rows(store)
    with pytest.raises(OptionRequiredError, match="was imported already") as exc:
        judgments_import.import_judgments(store, lead, f, skip_unknown=True)
    assert exc.value.option == "--again" and _grade_rows(store) == before
    again = judgments_import.import_judgments(store, lead, f, skip_unknown=True, again=True)
    assert again.import_id != rep.import_id


def test_unknown_ids_are_listed_together(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, _ = _people(store)
    f = tmp_path / "qrels.txt"
    f.write_text("301 0 FT-1 3\n999 0 FT-1 1\n301 0 NOPE 1\n")
    with pytest.raises(OptionRequiredError) as exc:
        judgments_import.import_judgments(store, lead, f)
    assert exc.value.problems == [f"{f} line 2: unknown query id '999' (not in the store's queries)",
                                  f"{f} line 3: unknown doc id 'NOPE' (not in the corpus)"]


def test_only_leads_engineers_and_admins_import_and_retract(store, tmp_path):
    _fill(store, tmp_path)
    admin, lead, ann = _people(store)
    eng = identity.create_user(store, admin, "eng1", ["engineer"], password=PW)
    f = tmp_path / "q.trec"
    f.write_text("301 0 FT-1 3\n")
    before = _grade_rows(store)
    with pytest.raises(PermissionDenied):
        judgments_import.import_judgments(store, ann, f)
    assert _grade_rows(store) == before
    rep = judgments_import.import_judgments(store, eng, f, source="NIST")
    assert rep.source == "assessor:NIST"
    with pytest.raises(PermissionDenied):
        judgments_import.retract_import(store, ann, rep.import_id)
    assert judgments_import.retract_import(store, admin, rep.import_id) == 1


def test_retract_puts_the_items_back_in_the_queue(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, ann = _people(store)
    _run_and_pool(store, tmp_path, identity.cli_user())
    before = _queue(store, ann)
    f = tmp_path / "q.trec"
    f.write_text("301 0 FT-1 3\n302 0 FT-3 1\n")
    rep = judgments_import.import_judgments(store, lead, f)
    assert len(_queue(store, ann)) == len(before) - 2
    assert judgments_import.retract_import(store, lead, rep.import_id) == 2
    assert _queue(store, ann) == before
    assert store.read("SELECT count(*) FROM grade_item_state WHERE n_graded > 0") == [(0,)]
    assert judgments_import.list_imports(store, lead)["standing"].tolist() == [0]
    with pytest.raises(ValidationError, match="none of its grades stands"):
        judgments_import.retract_import(store, lead, rep.import_id)
    with pytest.raises(Exception, match="No judgments import 'ji99'"):
        judgments_import.retract_import(store, lead, "ji99")


def test_the_batch_writer_keeps_the_state_append_tx_keeps(any_store, tmp_path):
    """Imports write their events in one batch (grade_state.append_bulk_tx): the state must be
    what append_tx leaves event by event, and what the log implies (rebuild_tx), on both
    engines, for grades over items people graded too, and for a retraction."""
    store = any_store
    docs = {f"D{i}": f"document number {i} about topic {i % 7}" for i in range(10)}
    qs = {f"Q{i}": f"question {i}?" for i in range(6)}
    _fill(store, tmp_path, docs, qs)
    when = pd.Timestamp("2026-01-01").to_pydatetime()
    store.write(lambda cur: grade_state.append_tx(cur, query_id="Q1", doc_id="D1", start=0, end=len(docs["D1"]),
                                                  op="grade", grade=1, actor="ann1", created_at=when,
                                                  doc_sha256=None, rubric_version=None))
    from golden_store.core.judgment_formats import parse_trec

    text = "".join(f"Q{q} 0 D{d} {(q + d) % 4}\n" for q in range(6) for d in range(10))
    placed = judgment_imports.place(store, parse_trec("big.trec", text))
    import_id = judgment_imports.store_import(store, placed, actor="import:big.trec", source="import:big.trec",
                                              file_name="big.trec", file_sha256="a" * 64, imported_by="lead1")

    def one_by_one(cur) -> None:  # the same judgments by another source, through append_tx
        for q, d, s, e, g in placed.rows.itertuples(index=False):
            grade_state.append_tx(cur, query_id=q, doc_id=d, start=int(s), end=int(e), op="grade", grade=int(g),
                                  actor="import:ref", created_at=when, doc_sha256=None, rubric_version=None)

    store.write(one_by_one)
    cols = "query_id, doc_id, start, \"end\", op, grade, round_id"
    rows = {a: store.read(f"SELECT {cols} FROM grade_state WHERE actor = ? ORDER BY 1, 2, 3, 4", [a])
            for a in ("import:big.trec", "import:ref")}
    assert rows["import:big.trec"] == rows["import:ref"] and len(rows["import:ref"]) == 60

    def state() -> dict:
        return {t: sorted(map(repr, store.read(f"SELECT * FROM {t}"))) for t in grade_state.STATE_TABLES}

    kept = state()
    store.write(grade_state.rebuild_tx)
    assert state() == kept  # what the writers kept is what the log implies
    assert store.read("SELECT n_graded, actors FROM grade_item_state WHERE query_id = 'Q1' AND doc_id = 'D1'") == [
        (3, "ann1,import:big.trec,import:ref")]
    assert judgment_imports.retract(store, import_id) == 60
    kept = state()
    store.write(grade_state.rebuild_tx)
    assert state() == kept
    assert store.read("SELECT n_graded, actors FROM grade_item_state WHERE query_id = 'Q1' AND doc_id = 'D1'") == [
        (2, "ann1,import:ref")]


LS_DATA = [
    ("301", "How long is the refund window?", "Refunds are accepted within 30 days of delivery.", "Highly relevant"),
    (None, "Is shipping free?", "Shipping is free on orders over 50 euros.", "Relevant"),
    ("302", "Is shipping free?", "Gift cards never expire", "Not relevant"),
]


def _ls_export(rows) -> list[dict]:
    """Label Studio's JSON export of a relevance project (Text query + Text passage + Choices)."""
    out = []
    for n, (qid, query, passage, choice) in enumerate(rows, start=1):
        data = {"query": query, "passage": passage, **({"query_id": qid} if qid else {})}
        out.append({"id": 40 + n, "data": data, "meta": {}, "project": 7, "predictions": [],
                    "created_at": "2026-11-01T09:00:00.000000Z", "updated_at": "2026-11-01T09:05:00.000000Z",
                    "annotations": [{"id": 900 + n, "completed_by": {"id": 2, "email": "ann@example.org"},
                                     "was_cancelled": False, "ground_truth": False, "lead_time": 12.0,
                                     "result": [{"id": f"x{n}", "type": "choices", "from_name": "relevance",
                                                 "to_name": "passage", "origin": "manual",
                                                 "value": {"choices": [choice]}}]}]})
    return out


def test_label_studio_passages_are_placed_exactly_or_refused_by_task(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, _ = _people(store)
    f = tmp_path / "project-7-export.json"
    f.write_text(json.dumps(_ls_export(LS_DATA)))
    before = _grade_rows(store)
    with pytest.raises(ValidationError, match="project-7-export.json task 41: the choice 'Highly relevant' has no grade"):
        judgments_import.import_judgments(store, lead, f)
    grade_map = "Highly relevant=3, Relevant=2, Not relevant=0"
    rep = judgments_import.import_judgments(store, lead, f, grade_map=grade_map, source="LS team")
    assert (rep.fmt, rep.n_judgments, rep.source) == ("labelstudio", 3, "assessor:LS team")
    got = store.read("SELECT query_id, doc_id, start, \"end\", grade FROM grade_state ORDER BY 1, 2")
    spans = []
    for qid, doc, passage in (("301", "FT-1", LS_DATA[0][2]), ("302", "FT-2", LS_DATA[1][2]),
                              ("302", "FT-3", LS_DATA[2][2])):
        start = DOCS[doc].index(passage)
        spans.append((qid, doc, start, start + len(passage)))
    assert got == [(*spans[0], 3), (*spans[1], 2), (*spans[2], 0)]
    # a passage edited in Label Studio does not match the corpus exactly: refused, naming the task
    bad = _ls_export([("301", "How long?", "Refunds are accepted within thirty days of delivery.", "Relevant")])
    f2 = tmp_path / "edited.json"
    f2.write_text(json.dumps(bad))
    before = _grade_rows(store)
    with pytest.raises(ValidationError) as exc:
        judgments_import.import_judgments(store, lead, f2, grade_map=grade_map)
    assert "edited.json task 41: the passage does not match the corpus exactly" in str(exc.value)
    assert _grade_rows(store) == before
    # a task naming its document: placed there; an unknown document id is named with its task
    hinted = _ls_export([("302", "Is shipping free?", "Express costs extra.", "Relevant"),
                         ("302", "Is shipping free?", "Express costs extra.", "Relevant")])
    hinted[0]["data"]["doc_id"], hinted[1]["data"]["doc_id"] = "FT-2", "FT-9"
    f3 = tmp_path / "hinted.json"
    f3.write_text(json.dumps(hinted))
    with pytest.raises(OptionRequiredError) as exc:
        judgments_import.import_judgments(store, lead, f3, grade_map=grade_map)
    assert exc.value.problems == [f"{f3} task 42: unknown doc id 'FT-9' (not in the corpus)"]
    assert _grade_rows(store) == before
    rep = judgments_import.import_judgments(store, lead, f3, grade_map=grade_map, skip_unknown=True)
    assert (rep.n_judgments, rep.skipped, rep.skipped_docs) == (1, 1, ("FT-9",))
    start = DOCS["FT-2"].index("Express costs extra.")
    assert store.read("SELECT grade FROM grade_state WHERE doc_id = 'FT-2' AND start = ?", [start]) == [(2,)]


def test_imported_grades_read_as_imported_on_adjudication_cards(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, _ = _people(store)
    _run_and_pool(store, tmp_path, identity.cli_user())
    f = tmp_path / "qrels.trec"
    f.write_text("301 0 FT-1 3\n")
    judgments_import.import_judgments(store, lead, f)
    from golden_store.live import judging as judging_store

    judging_store.record(store, "ann1", "301", "FT-1", 0, len(DOCS["FT-1"]), op="grade", grade=0)
    cards = adjudication_flow.cards(store, lead)
    assert len(cards) == 1
    text = cards[0]["blocks"][1]["segments"][0][0]
    assert "imported (qrels.trec): 3 (fully answers)" in text and "ann1: 0 (irrelevant)" in text


def test_a_freeze_carries_imported_grades(store, tmp_path):
    _fill(store, tmp_path)
    _, lead, _ = _people(store)
    f = tmp_path / "qrels.trec"
    f.write_text("301 0 FT-1 3\n302 0 FT-2 2\n302 0 FT-4 0\n")
    judgments_import.import_judgments(store, lead, f)
    folder = Path(versioning.freeze(store, identity.cli_user(), "v1").path)
    judg = pd.read_parquet(folder / "judgments.parquet")
    assert sorted(zip(judg["query_id"], judg["doc_id"], judg["grade"], judg["decided_by"])) == [
        ("301", "FT-1", 3, "import:qrels.trec"), ("302", "FT-2", 2, "import:qrels.trec"),
        ("302", "FT-4", 0, "import:qrels.trec")]
    from golden_store.versions import QRELS_FILE

    qrels = pd.read_parquet(folder / QRELS_FILE)
    assert sorted(zip(qrels["query_id"], qrels["doc_id"], qrels["grade"])) == [
        ("301", "FT-1", 3), ("302", "FT-2", 2), ("302", "FT-4", 0)]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["label_counts"]["human"], manifest["label_counts"]["imported"]) == (3, 3)
    assert verify(folder.name, folder.parent).ok  # the counts re-derived from the files agree
    # a person agreeing on one passage: still a final grade, no longer one only an import gave
    from golden_store.live import judging as judging_store

    judging_store.record(store, "ann1", "301", "FT-1", 0, len(DOCS["FT-1"]), op="grade", grade=3)
    folder = Path(versioning.freeze(store, identity.cli_user(), "v2").path)
    counts = json.loads((folder / "manifest.json").read_text())["label_counts"]
    assert (counts["human"], counts["imported"]) == (3, 2) and verify(folder.name, folder.parent).ok


def test_import_and_retract_on_both_engines(any_store, tmp_path):
    _fill(any_store, tmp_path)
    _, lead, ann = _people(any_store)
    f = tmp_path / "qrels.tsv"
    f.write_text("query-id\tcorpus-id\tscore\n301\tFT-1\t2\n302\tFT-2\t1\n")
    rep = judgments_import.import_judgments(any_store, lead, f)
    assert rep.fmt == "beir" and rep.n_judgments == 2
    assert any_store.read("SELECT count(*) FROM grade_item_state WHERE n_graded > 0")[0][0] == 2
    before = _grade_rows(any_store)
    f.write_text("query-id\tcorpus-id\tscore\n301\tFT-3\t2\n301\tFT-3\t1\n")
    with pytest.raises(ValidationError, match="qrels.tsv line 3: judges query '301'.*but line 2 gave 2"):
        judgments_import.import_judgments(any_store, lead, f)
    assert _grade_rows(any_store) == before
    assert judgments_import.retract_import(any_store, lead, rep.import_id) == 2
    assert any_store.read("SELECT count(*) FROM grade_item_state WHERE n_graded > 0")[0][0] == 0


CONFORMANCE = Path(os.environ.get("GOLDEN_CONFORMANCE", "/work/shared/conformance")) / "trec_eval"


@pytest.mark.skipif(not (CONFORMANCE / "qrels.rel_level").exists(),
                    reason=f"trec_eval's test qrels are not at {CONFORMANCE} (set GOLDEN_CONFORMANCE to the folder)")
def test_trec_eval_s_own_qrels_import_whole(store, tmp_path):
    """trec_eval's qrels.rel_level (grades -1 to 4): with --map '4=3' every non-negative line
    becomes one judgment; the -1 lines are left out and counted."""
    path = CONFORMANCE / "qrels.rel_level"
    lines = [ln.split() for ln in path.read_text().splitlines() if ln.strip()]
    docs = {d: f"text of {d}" for _, _, d, _ in lines}
    _fill(store, tmp_path, docs, {q: f"topic {q}" for q, _, _, _ in lines})
    _, lead, _ = _people(store)
    rep = judgments_import.import_judgments(store, lead, path, grade_map="4=3")
    non_negative = sum(1 for *_, g in lines if int(g) >= 0)
    assert rep.n_judgments == non_negative and rep.negative == len(lines) - non_negative
    assert store.read("SELECT count(*) FROM grade_events WHERE actor = 'import:qrels.rel_level'")[0][0] == non_negative
    fours = {(q, d) for q, _, d, g in lines if g == "4"}
    got = dict(((q, d), g) for q, d, g in store.read("SELECT query_id, doc_id, grade FROM grade_state"))
    assert fours and all(got[k] == 3 for k in fours)


def test_the_cli_imports_lists_and_retracts(tmp_path):
    """`golden judgments` as a team runs it (in process, on GOLDEN_DB): a refusal is one message
    on stderr naming file and line, the store unchanged."""
    import contextlib
    import io

    from annotator import cli
    from annotator.process import context
    from tests.conftest import table_snapshot

    def golden(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(list(args))
        context.close_all()
        return rc, out.getvalue(), err.getvalue()

    def snapshot() -> dict:
        try:
            return table_snapshot(context.get_store(create=False))
        finally:
            context.close_all()

    docs = tmp_path / "docs"
    docs.mkdir()
    for d, t in DOCS.items():
        (docs / f"{d}.txt").write_text(t)
    assert golden("corpus", "import", str(docs))[0] == 0
    (tmp_path / "q.csv").write_text("id,text,stratum\n301,How long is the refund window?,paraphrase\n"
                                    "302,Is shipping free?,lexical\n")
    assert golden("queries", "import", str(tmp_path / "q.csv"))[0] == 0
    bad = tmp_path / "bad.qrels"
    bad.write_text("301 0 FT-1 3\n302 0 FT-2 9\n")
    before = snapshot()
    rc, _, err = golden("judgments", "import", str(bad))
    assert rc == 2 and err.startswith("golden: ") and f"{bad} line 2: the grade 9 is above" in err, err
    assert snapshot() == before
    good = tmp_path / "nist.qrels"
    good.write_text("301 0 FT-1 3\n302 0 FT-2 1\n302 0 FT-3 -1\n")
    rc, out, err = golden("judgments", "import", str(good), "--assessor", "NIST")
    assert rc == 0, err
    assert "Imported 2 judgment(s) from trec as assessor:NIST" in out and "Left out 1 negative grade(s)" in out
    rc, out, _ = golden("judgments", "list", "--json")
    listed = json.loads(out)
    assert [(r["import_id"], r["source"], r["n_judgments"], r["standing"]) for r in listed] == [
        ("ji1", "assessor:NIST", 2, 2)]
    run = tmp_path / "run.trec"
    run.write_text("301 Q0 FT-1 1 2.0 x\n301 Q0 FT-3 2 1.0 x\n302 Q0 FT-2 1 1.0 x\n")
    assert golden("runs", "import", str(run), "--system", "bm25")[0] == 0
    assert golden("pool", "build", "--depth", "2")[0] == 0
    rc, out, _ = golden("judgments", "list")
    assert "Pool: 3 items; graded by people 0, by imports 2 (2 by imports only, not queued for people); unjudged 1." in out
    rc, out, err = golden("judgments", "retract", "ji1")
    assert rc == 0 and "Retracted 2 grade(s) of import ji1" in out, err
    rc, out, err = golden("judgments", "import", str(good), "--assessor", "NIST", "--again", "--map=-1=0")
    assert rc == 0 and "Imported 3 judgment(s)" in out, err


def test_a_batch_the_database_refuses_raises_its_own_error_and_writes_nothing(any_store, tmp_path):
    """A statement failing inside the batch writer aborts the transaction; its own error must
    reach the caller (not a cleanup's "transaction is aborted"), and nothing is written."""
    _fill(any_store, tmp_path)
    before = _grade_rows(any_store)
    rows = pd.DataFrame({"query_id": ["301", "302"], "doc_id": ["FT-1", "FT-2"], "start": [0, 0], "end": [5, 5],
                         "grade": [2, 7], "doc_sha256": [None, None]})  # 7: the log's CHECK refuses it
    with pytest.raises(Exception) as exc:
        any_store.write(lambda cur: grade_state.append_bulk_tx(
            cur, rows, op="grade", actor="import:x", created_at=pd.Timestamp("2026-01-01").to_pydatetime()))
    assert "abort" not in str(exc.value).lower() and ("check" in str(exc.value).lower()
                                                      or "constraint" in str(exc.value).lower()), str(exc.value)
    assert _grade_rows(any_store) == before
    # the connection is usable afterwards: the same batch with a valid grade goes in
    rows.loc[1, "grade"] = 3
    assert any_store.write(lambda cur: grade_state.append_bulk_tx(
        cur, rows, op="grade", actor="import:x", created_at=pd.Timestamp("2026-01-01").to_pydatetime())) == 2
