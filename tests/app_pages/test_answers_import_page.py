"""Issue 17 item 6: system answers are imported on the Nuggets page (and on Runs & pool),
not only with the CLI; errors name the uploaded file and say what to tick; the assignment
surface says when a new answer starts (the previous one is done)."""

from __future__ import annotations

import json

from annotator import demo
from annotator.evidence import nuggets
from annotator.people import identity
from annotator.process import context
from tests.app_pages.surface import cards, label_for, send
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain, table_snapshot

PASSWORD = "0123456789"


def _setup():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("annotator", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    ann = identity.get_user(store, "annotator")
    for qid, texts in (("q001", ("Certificate expired", "Renew in Company Portal")), ("q002", ("Three days",))):
        for text in texts:
            nuggets.edit_one(store, ann, qid, None, text=text, importance="vital")
        nuggets.approve(store, ann, qid)
    return store


def _answers(*pairs) -> bytes:
    return "".join(json.dumps({"query_id": q, "answer": a}) + "\n" for q, a in pairs).encode()


def _assign_section(user: str):
    at = app_as(user)
    at.switch_page("app_pages/nuggets.py").run()
    at.radio(key="nug_mode").set_value("Assign to answers").run()
    assert not at.exception
    return at


def _errors(at) -> str:
    return "\n".join(plain(e.value) for e in at.error) + "\n".join(c.value for c in at.code)


def test_answers_import_on_the_nuggets_page():
    store = _setup()
    at = _assign_section("admin")
    assert any(i.value.startswith("No system answer yet.") for i in at.info)
    before = table_snapshot(store)
    at.text_input(key="nug_ans_system").input("rag-a")
    for name, data, expected in [
        ("empty.jsonl", b"", "empty.jsonl is empty (0 bytes)"),
        ("bad.jsonl", _answers(("q001", "Renew it"), ("q999", "x")), "bad.jsonl line 2: unknown query_id 'q999'"),
        ("latin1.jsonl", '{"query_id": "q001", "answer": "caf\xe9"}\n'.encode("latin-1"),
         "latin1.jsonl line 1: not valid UTF-8"),
        ("notjson.jsonl", b"query_id,answer\nq001,x\n", "notjson.jsonl line 1: not valid JSON"),
    ]:
        at.file_uploader(key="nug_ans_file").upload(name, data, "application/json").run()
        at.button(key="nug_ans_go").click().run()
        assert not at.exception, (name, at.exception)
        errors = _errors(at)
        assert expected in errors, (name, errors)
        assert "/tmp" not in errors
    assert table_snapshot(store) == before

    at.file_uploader(key="nug_ans_file").upload("rag-a.jsonl", _answers(("q001", "Your certificate expired."),
                                                                        ("q002", "Three days.")), "application/json").run()
    at.button(key="nug_ans_go").click().run()
    assert not at.exception
    assert any("Imported 2 answer(s) of rag-a" in plain(m.value) for m in at.success)
    assert len(nuggets.answers(store, identity.get_user(store, "admin"))) == 2
    at.button(key="nug_ans_go").click().run()
    errors = _errors(at)
    assert "already imported" in errors and "Tick “Replace this system's answers”" in errors
    assert "--replace" not in errors
    at.checkbox(key="nug_ans_replace").check().run()
    at.button(key="nug_ans_go").click().run()
    assert any("Imported 2 answer(s) of rag-a" in plain(m.value) for m in at.success)


def test_annotators_see_no_import_and_are_told_who_imports():
    _setup()
    at = _assign_section("annotator")
    assert not at.file_uploader
    assert any("Runs & pool page" in i.value for i in at.info)


def test_engineers_import_answers_on_the_runs_page(tmp_path):
    store = _setup()
    at = app_as("engineer")
    at.switch_page("app_pages/pool.py").run()
    at.file_uploader(key="pool_ans_file").upload("sys.jsonl", _answers(("q001", "Renew")), "application/json").run()
    at.text_input(key="pool_ans_system").input("rag-b")
    at.button(key="pool_ans_go").click().run()
    assert not at.exception
    assert store.read("SELECT system, query_id FROM answers") == [("rag-b", "q001")]


def test_the_surface_says_when_a_new_answer_starts():
    store = _setup()
    admin = identity.get_user(store, "admin")
    path = context.get_store().path.parent / "a.jsonl"
    path.write_bytes(_answers(("q001", "Your certificate expired."), ("q002", "Three days.")))
    nuggets.import_answers(store, admin, str(path), "rag-a")
    at = _assign_section("annotator")
    items = cards(at, "assignment_surface")
    assert [c["title"] for c in items] == ["Certificate expired", "Renew in Company Portal", "Three days"]
    first_ref = items[0]["item"]["answer"]
    assert items[0]["notice"] == f"Answer {first_ref}: 2 nugget(s) to assign · 2 answer(s) left"
    assert "notice" not in items[1]
    second_ref = items[2]["item"]["answer"]
    assert items[2]["notice"] == (f"Answer {second_ref}: 1 nugget(s) to assign · 1 answer(s) left "
                                  "(the previous answer is done)")
    assert "rag-a" not in json.dumps(items)
    send(at, "assignment_surface", [label_for(items[0], "annotator", "assign", "support")])
    left = cards(at, "assignment_surface")
    assert [c["title"] for c in left] == ["Renew in Company Portal", "Three days"]
    assert left[0]["notice"].endswith("1 nugget(s) to assign · 2 answer(s) left")
