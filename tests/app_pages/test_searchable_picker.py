"""The searchable picker of Evidence, Nuggets, Queries and Corpus at team scale (issue 19): beyond
PICK_LIMIT options only the first matches of a search go to the browser; the value is the
id and the one picked stays picked while the search changes."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app_pages._shared import PICK_LIMIT

SCRIPT = """
import streamlit as st
from app_pages._shared import searchable_picker
n = {n}
options = {{f"q{{i:05d}}": f"q{{i:05d}} · factoid · question number {{i}} about topic {{i % 7}}" for i in range(n)}}
qid = searchable_picker("Question", options, key="pick")
st.write(f"picked={{qid}}")
"""


def _app(n: int) -> AppTest:
    at = AppTest.from_string(SCRIPT.format(n=n))
    at.run()
    assert not at.exception
    return at


def _picked(at: AppTest) -> str:
    return [m.value for m in at.markdown if m.value.startswith("picked=")][0].removeprefix("picked=")


def test_few_questions_are_one_plain_selectbox():
    at = _app(30)
    assert len(at.text_input) == 0
    assert len(at.selectbox(key="pick").options) == 30


def test_many_questions_send_only_the_first_matches_and_search_narrows_them():
    at = _app(5000)
    box = at.selectbox(key="pick")
    assert len(box.options) == PICK_LIMIT and _picked(at) == "q00000"
    at.text_input(key="pick_find").input("number 4321 ").run()
    assert at.selectbox(key="pick").options == [
        "q00000 · factoid · question number 0 about topic 0", "q04321 · factoid · question number 4321 about topic 2"]
    # the question on screen stays picked (listed first) until the person picks another
    assert _picked(at) == "q00000"
    at.selectbox(key="pick").select("q04321").run()
    assert _picked(at) == "q04321"
    # a new search that no longer matches it keeps it picked and listed
    at.text_input(key="pick_find").input("TOPIC 5").run()
    opts = at.selectbox(key="pick").options
    assert _picked(at) == "q04321" and opts[0].startswith("q04321")
    assert len(opts) == PICK_LIMIT + 1 and all("topic 5" in o for o in opts[1:])
    # no match at all: the picked one stays, with a word why the list is short
    at.text_input(key="pick_find").input("no such words").run()
    assert _picked(at) == "q04321" and len(at.selectbox(key="pick").options) == 1
    assert any("No question matches" in c.value for c in at.caption)


def test_the_corpus_page_picks_a_document_among_many_by_search(tmp_path):
    """Corpus: more than PICK_LIMIT documents -> a document search; the one found is shown."""
    from annotator.integration import corpus_import
    from annotator.process import context
    from annotator.people.identity import LOCAL_USER
    from tests.app_pages.test_app_roles import APP

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(f'{{"doc_id": "d{i:04d}", "text": "document number {i} text"}}\n'
                            for i in range(PICK_LIMIT + 50)))
    corpus_import.import_paths(context.get_store(), LOCAL_USER, [docs])
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/corpus.py").run()
    assert not at.exception
    assert len(at.selectbox(key="corpus_doc").options) == PICK_LIMIT
    at.text_input(key="corpus_doc_find").input("d0233").run()
    at.selectbox(key="corpus_doc").select("d0233").run()
    assert not at.exception and any("document number 233 text" in t.value for t in at.text)
