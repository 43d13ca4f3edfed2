"""Issue 17 item 11 (the rest): the navigation groups pages into sections by what people do,
with nothing folded away; a form comes back empty after a successful submit and keeps what
was typed after an error."""

from __future__ import annotations

import pytest

from annotator import demo
from annotator.people import identity
from annotator.process import context
from annotator.people.identity import User
from annotator.people.roles import Role
from app_pages.entry import page_sections
from tests.app_pages.test_app_roles import PAGES, VISIBLE, app_as

PASSWORD = "0123456789"
TITLES = {"home": "Home", "corpus": "Corpus", "queries": "Queries", "evidence": "Evidence", "judge": "Judge",
          "versions": "Versions", "power": "Power", "results": "Results", "pool": "Runs & pool", "users": "Users",
          "adjudication": "Adjudication", "nuggets": "Nuggets", "calibration": "Judge calibration",
          "transcripts": "Transcripts", "agreement": "Agreement",
          "pool_grading": "Judge the pool", "webhooks": "Webhooks", "freeze_conflicts": "Freeze conflicts",
          "references": "Reference answers", "claims": "Claim review", "answer_grading": "Answer grading"}


@pytest.mark.parametrize("role", sorted(VISIBLE))
def test_sections_group_the_pages_a_role_may_open(role):
    sections = page_sections(User(role, role, frozenset({Role(role)})))
    titles = {section: [title for _, title, _ in pages] for section, pages in sections.items()}
    assert sorted(t for ts in titles.values() for t in ts) == sorted(TITLES[n] for n in VISIBLE[role])
    assert titles[""] == ["Home"] and all(titles.values())  # no empty section
    order = ["", "Label", "Review", "Data", "Engineer", "Admin"]
    assert list(titles) == [s for s in order if s in titles]
    if role == "admin":
        assert titles == {"": ["Home"], "Label": ["Evidence", "Judge", "Reference answers", "Answer grading",
                                                    "Nuggets"],
                          "Review": ["Adjudication", "Freeze conflicts", "Agreement", "Judge calibration",
                                     "Judge the pool", "Transcripts", "Claim review"],
                          "Data": ["Corpus", "Queries"], "Engineer": ["Runs & pool", "Versions", "Power", "Results", "Webhooks"],
                          "Admin": ["Users"]}
    assert set(PAGES) == set(TITLES)


def _admin_store():
    store = context.get_store()
    identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    return store


def test_a_form_keeps_its_values_after_an_error_and_empties_after_success():
    store = _admin_store()
    at = app_as("admin")
    at.switch_page("app_pages/users.py").run()
    name = lambda: next(t for t in at.text_input if t.label.startswith("Username"))  # noqa: E731
    display = lambda: next(t for t in at.text_input if t.label == "Display name")  # noqa: E731
    password = lambda: next(t for t in at.text_input if t.label.startswith("Password"))  # noqa: E731
    name().input("maria")
    display().input("Maria K.")
    password().input("short")
    next(b for b in at.button if b.label == "Add account").click().run()
    assert not at.exception and at.error  # too short a password
    assert (name().value, display().value) == ("maria", "Maria K.")  # kept, to correct
    password().input(PASSWORD)
    next(b for b in at.button if b.label == "Add account").click().run()
    assert not at.exception and not at.error
    assert identity.get_user(store, "maria") is not None
    assert (name().value, display().value, password().value) == ("", "", "")  # empty for the next account


def test_the_query_form_empties_after_adding_a_query():
    store = _admin_store()
    demo.load_demo(store, identity.get_user(store, "admin"))
    at = app_as("admin")
    at.switch_page("app_pages/queries.py").run()
    qid = lambda: next(t for t in at.text_input if t.label == "Id")  # noqa: E731
    text = lambda: next(t for t in at.text_area if t.label == "Question")  # noqa: E731
    qid().input("q001")  # exists: refused
    text().input("How do I renew my certificate?")
    next(b for b in at.button if b.label == "Save").click().run()
    assert at.error and (qid().value, text().value) == ("q001", "How do I renew my certificate?")
    qid().input("q900")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.error and (qid().value, text().value) == ("", "")
