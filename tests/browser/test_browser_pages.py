"""Every workflow page in a real browser, on a store with data behind each of them: the page
renders its charts and tables with no Python exception box and no JavaScript error. AppTest
runs the scripts but not the front end (Vega charts, data editor, file uploader); this does.

The store is prepared in-process before the server starts (DuckDB: one process per file):
the demo, a pool graded by two annotators in a calibration round, an approved nugget list
with an assigned answer, a saved judge calibration and imported transcripts. The app runs in
single-user local mode, so the browser is an admin and sees every page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_browser import Server, _browser_page, _nav, _serve, store_location

PAGES = ["Agreement", "Adjudication", "Nuggets", "Judge calibration", "Transcripts", "Home", "Judge", "Evidence"]


def _prepare(tmp_path: Path) -> Path:
    from annotator import demo
    from annotator.evaluation import runs_import, transcripts
    from annotator.evidence import nuggets
    from annotator.judge import calibration
    from annotator.labeling import rounds
    from annotator.people.identity import LOCAL_USER
    from golden_store.live import judging
    from golden_store.db.store import Store

    db = store_location()
    with Store.open(db) as s:
        demo.load_demo(s, LOCAL_USER)
        qids = [r[0] for r in s.read("SELECT query_id FROM queries WHERE NOT held_out ORDER BY 1 LIMIT 12")]
        docs = [r[0] for r in s.read("SELECT doc_id FROM documents ORDER BY 1 LIMIT 3")]
        run = tmp_path / "r.txt"
        run.write_text("".join(f"{q} Q0 {d} {i + 1} {3 - i} x\n" for q in qids for i, d in enumerate(docs)))
        runs_import.import_run(s, LOCAL_USER, run, "sys")
        runs_import.build_pool(s, LOCAL_USER, 3)
        rounds.start_calibration(s, LOCAL_USER, ["ann", "bob"], n=20, seed=1)
        rng = np.random.default_rng(0)
        for q, d, st, en in s.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments "
                                   "WHERE annotator = 'ann'"):
            g = int(rng.integers(0, 4))
            judging.record(s, "ann", q, d, st, en, op="grade", grade=g, note="<b>ann</b> note")
            judging.record(s, "bob", q, d, st, en, op="grade", grade=g if rng.random() < 0.7 else int(rng.integers(0, 4)))
        for text in ("Device certificate expired", "Renew it in Company Portal"):
            nuggets.edit_one(s, LOCAL_USER, "q001", None, text=text, importance="vital")
        nuggets.approve(s, LOCAL_USER, "q001")
        answers = tmp_path / "a.jsonl"
        answers.write_text(json.dumps({"query_id": "q001", "answer": "<script>alert(1)</script> renew it"}) + "\n")
        nuggets.import_answers(s, LOCAL_USER, str(answers), "rag")
        n = 120
        bad = rng.random(n) < 0.3
        df = pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "human_label": np.where(bad, "fail", "pass"),
                           "judge_label": np.where(rng.random(n) < 0.9, np.where(bad, "fail", "pass"), "pass"),
                           "judge_p": np.clip(np.where(bad, 0.7, 0.3) + rng.normal(0, 0.2, n), 0, 1).round(3),
                           "length": rng.integers(50, 900, n)})
        (tmp_path / "cal.csv").write_text(df.to_csv(index=False))
        cal_df = calibration.load_upload("cal.csv", df.to_csv(index=False).encode())
        a = calibration.analyze(cal_df)
        calibration.save(s, LOCAL_USER, cal_df, a, judge_model="judge-x", rubric="r", question_sha=None,
                         source="upload:cal.csv", seed=0, fit_share=0.5, max_missed_bad=0.02, max_false_fail=0.02,
                         acknowledge_failed_checks=True)  # saved as a lead would: a 120-item band may miss its targets
        tr = tmp_path / "t.jsonl"
        tr.write_text("".join(json.dumps({
            "evaluation_id": "run-1", "query_id": q, "trial": 0, "passed": False, "metrics": {"recall@10": 0.0},
            "transcript": {"question": f"question {q}", "retrieved": [{"doc_id": docs[0], "text": "<img src=x>"}],
                           "answer": "**not bold**", "judge": {"verdict": "fail", "justification": "[link](x)"}}})
            + "\n" for q in qids[:4]))
        transcripts.import_file(s, LOCAL_USER, tr)
    return db


@pytest.fixture
def data_server(tmp_path: Path) -> Iterator[Server]:
    _prepare(tmp_path)
    with _serve(tmp_path) as srv:
        yield srv


@pytest.fixture
def data_page(data_server: Server) -> Iterator[Page]:
    with _browser_page(data_server, None) as pg:
        yield pg


def test_every_workflow_page_renders_without_errors(data_server: Server, data_page: Page) -> None:
    page = data_page
    page.goto(data_server.url)
    expect(page.get_by_text("Single-user local mode")).to_be_visible()
    for title in PAGES:
        _nav(page, title)
        main = page.get_by_test_id("stMain")
        expect(main.get_by_role("heading", level=1).first).to_be_visible()
        expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
        assert page.get_by_test_id("stException").count() == 0, (title, page.get_by_test_id("stException")
                                                                  .first.inner_text())
        if title == "Agreement":
            expect(main.get_by_test_id("stMetric").first).to_be_visible()
            expect(main.locator("canvas, svg.marks").first).to_be_visible()  # the heat map (Vega)
        if title == "Transcripts":
            page.get_by_role("button", name="Draw failures to review").click()
            expect(main.get_by_text("reviewed in your samples")).to_be_visible()
            expect(main.locator(".gs-root")).to_have_attribute("data-uid", re.compile(r".+"))  # a transcript painted
            expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
            assert main.locator("img[src='x']").count() == 0 and main.locator("strong", has_text="not bold").count() == 0
            # the surface paints the hostile text as text (its shadow root included)
            expect(main.locator(".gs-root")).to_contain_text("<img src=x>")
            expect(main.locator(".gs-root")).to_contain_text("**not bold**")
        if title == "Judge calibration":
            page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
                str(data_server.tmp / "cal.csv"))
            expect(main.get_by_text("Cohen's κ")).to_be_visible()
            expect(main.get_by_text("Band fitted on the fit split")).to_be_visible()
            expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
            assert page.get_by_test_id("stException").count() == 0
        if title == "Nuggets":
            page.get_by_text("Assign to answers").click()
            expect(main.get_by_text("nuggets assigned")).to_be_visible()
            assert main.locator("script", has_text="alert(1)").count() == 0
    assert not page.errors, f"JavaScript errors: {page.errors}"  # type: ignore[attr-defined]
