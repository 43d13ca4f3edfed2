"""The Runs & pool page in the real app (AppTest), issue 17 item 5: an import refused for
unknown query ids names the uploaded file and says what to tick; ticking "Skip results for
unknown query ids" imports the rest and reports the counts; an existing name says to tick
"Replace"; the format is told from the file; a lead retires a run and restores it."""

from __future__ import annotations

import json

import pytest

from annotator import demo
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain, table_snapshot

PASSWORD = "0123456789"
RUN = b"q001 Q0 pension 1 2.0 x\nq999 Q0 pension 1 2.0 x\nq001 Q0 sick-leave 2 1.0 x\n"
QUOTE = "Full day EUR 58, half day EUR 29, hotel cap EUR 165 per night"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("engineer", "lead"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def _pool_page(user: str):
    at = app_as(user)
    at.switch_page("app_pages/pool.py").run()
    assert not at.exception
    return at


def _errors(at) -> str:
    return "\n".join(plain(e.value) for e in at.error) + "\n".join(c.value for c in at.code)


def test_skip_unknown_replace_and_format_from_the_page():
    store = _accounts()
    at = _pool_page("engineer")
    at.file_uploader(key="run_file").upload("my-run.trec", RUN, "text/plain").run()
    at.text_input(key="run_system").input("bm25")
    before = table_snapshot(store)
    at.button(key="run_import").click().run()
    assert not at.exception
    errors = _errors(at)
    assert "my-run.trec line 2: unknown query id 'q999'" in errors
    assert "Tick “Skip results for unknown query ids”" in errors
    assert "--skip-unknown" not in errors and "/tmp" not in errors and "upload" not in errors.replace("my-run", "")
    assert table_snapshot(store) == before

    at.checkbox(key="run_skip").check().run()
    at.button(key="run_import").click().run()
    assert not at.exception
    assert any("Imported 2 results as run bm25 (trec). Skipped 1 line(s) for 1 unknown query id(s): q999."
               in plain(m.value) for m in at.success)
    assert store.read_one("SELECT count(*) FROM run_results WHERE system = 'bm25'")[0] == 2

    at.button(key="run_import").click().run()
    errors = _errors(at)
    assert "A run named 'bm25' exists" in errors and "Tick “Replace a run of the same name”" in errors
    assert "--replace" not in errors

    passages = json.dumps({"query_id": "q004", "doc_id": "expenses-per-diem", "text": QUOTE, "score": 1}) + "\n"
    at.file_uploader(key="run_file").upload("passages.txt", passages.encode(), "text/plain").run()
    at.text_input(key="run_system").input("dense")
    at.button(key="run_import").click().run()
    assert not at.exception, at.exception
    assert any("Imported 1 results as run dense (jsonl)." in plain(m.value) for m in at.success)


def test_upload_errors_are_clean():
    store = _accounts()
    at = _pool_page("engineer")
    before = table_snapshot(store)
    at.text_input(key="run_system").input("x")
    cases = [("empty.trec", b"", "empty.trec is empty (0 bytes)"),
             ("utf16.trec", "q001 Q0 pension 1 1 x\n".encode("utf-16"), "utf16.trec: not valid UTF-8: the file is UTF-16"),
             ("latin1.trec", "q001 Q0 pension 1 1 caf\xe9\n".encode("latin-1"), "latin1.trec line 1: not valid UTF-8"),
             ("picture.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "picture.txt line 1: not valid UTF-8"),
             ("table.txt", b"query,doc,score\n", "table.txt line 1: cannot tell the run's format")]
    for name, data, expected in cases:
        at.file_uploader(key="run_file").upload(name, data, "text/plain").run()
        at.button(key="run_import").click().run()
        assert not at.exception, (name, at.exception)
        assert expected in _errors(at), (name, _errors(at))
    assert table_snapshot(store) == before


def test_a_lead_retires_and_restores_a_run():
    store = _accounts()
    from annotator.evaluation import runs_import
    from annotator.people.identity import get_user

    eng = get_user(store, "engineer")
    path = context.get_store().path.parent / "r.trec"
    path.write_bytes(b"q001 Q0 pension 1 2.0 x\n")
    runs_import.import_run(store, eng, path, "bm25")
    runs_import.import_run(store, eng, path, "dense")
    at = _pool_page("lead")
    assert not at.file_uploader  # leads do not import runs
    at.selectbox(key="run_retire_pick").set_value("dense").run()
    at.button(key="run_retire").click().run()
    assert any("Say why" in e.value for e in at.error)
    at.text_input(key="run_retire_why").input("index built from the wrong corpus")
    at.button(key="run_retire").click().run()
    assert not at.exception
    assert any("Retired run dense" in plain(m.value) for m in at.success)
    table = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert dict(zip(table["system"], table["status"])) == {"bm25": "active", "dense": "retired"}
    coverage = next(d.value for d in at.dataframe if "graded@10" in d.value.columns)
    assert list(coverage["run"]) == ["bm25"]
    at.button(key="run_restore").click().run()
    assert any("Restored run dense" in plain(m.value) for m in at.success)
    assert store.read("SELECT op, actor FROM run_events ORDER BY event_id") == [("retire", "lead"),
                                                                                 ("restore", "lead")]


def test_pool_items_are_paged_and_filtered_on_the_page(tmp_path):
    """Issue 19: the pool items table shows one page (50 rows) read in SQL; the page number
    moves through the pool and starts over when a filter changes."""
    from golden_store.live.pool import pool_items_page
    from tests.golden_store import pool_gen

    store = _accounts()
    pool_gen.fill(store, tmp_path, seed=6, n_queries=12, qprefix="pq")  # 167 items: 3+ pages of 50
    n_items = store.read_one("SELECT count(*) FROM pool_items")[0]
    assert n_items > 100
    at = _pool_page("lead")

    def items():
        return next(d.value for d in at.dataframe if "runs" in d.value.columns and "graders" in d.value.columns)

    first = items()
    assert len(first) == 50 and f"{n_items} item(s) match" in at.number_input(key="pool_items_page").label
    at.number_input(key="pool_items_page").set_value(2).run()
    assert not at.exception
    second = items()
    assert len(second) == 50 and second.iloc[0]["query_id"] >= first.iloc[-1]["query_id"]
    assert second[["query_id", "doc_id", "start"]].values.tolist() == \
        pool_items_page(store, limit=50, offset=50)[1][["query_id", "doc_id", "start"]].values.tolist()
    at.selectbox(key="pool_status_pick").set_value("unjudged").run()
    assert not at.exception
    unjudged = pool_items_page(store, status="unjudged", limit=50)
    assert at.session_state["pool_items_page"] == 1
    assert items()[["query_id", "doc_id", "start"]].values.tolist() == \
        unjudged[1][["query_id", "doc_id", "start"]].values.tolist()
    at.text_input(key="pool_q_prefix").input("zz").run()
    assert not at.exception
    assert "No pool item matches these filters." in [c.value for c in at.caption]


def test_coverage_ap_and_bpref_leave_unanswerable_questions_out():
    """Issue 36 item 5: the Coverage table's AP and Bpref are pytrec_eval's (level 2) on the
    final human grades of the answerable questions, and the page says q005, the demo's
    unanswerable question with a final grade, was left out (it was averaged in as a 0:
    bm25 0.917 / 0.917)."""
    from tests.golden_store.test_pool_status_sql import pytrec_pool_reference

    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    demo.load_demo(store, admin, workflows=True, pool_job=False)  # the people's grades as loaded, before the judge
    at = _pool_page("lead")
    table = next(d.value for d in at.dataframe if "AP (grade>=2)" in d.value.columns).set_index("run")
    assert list(table.index) == ["bm25", "dense", "hybrid"]
    for system in table.index:
        ap, bpref, over = pytrec_pool_reference(store, system)
        assert table.loc[system, "AP (grade>=2)"] == pytest.approx(ap, abs=1e-12), system
        assert table.loc[system, "Bpref (grade>=2)"] == pytest.approx(bpref, abs=1e-12), system
    assert table.loc["bm25", "AP (grade>=2)"] == pytest.approx(1.0)
    # the page escapes the sentence (it holds query ids); word joiners keep ">=" from becoming a glyph
    note = next(plain(c.value).replace("\u2060", "") for c in at.caption if "AP and Bpref" in plain(c.value))
    assert "final human grade >= 2" in note and f"mean over {len(over)} answerable question(s)" in note
    assert "1 unanswerable question(s) left out" in note and "q005" in note
