"""Issue 17 item 2: every upload on every page has a clean error path. For each uploader, an
empty file, a file of the wrong type (binary content under an accepted name), one over the
page's limit (GOLDEN_MAX_UPLOAD_MB lowers every limit, so the test stays small) and one in the
wrong encoding each give an error that names the uploaded file (never a temporary copy's
path), no traceback, and leave the store unchanged."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from annotator import demo
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain, prepared_store, table_snapshot

PASSWORD = "0123456789"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
BIG = b"x" * (1024 * 1024 + 1)  # over a 1 MB limit


@dataclass(frozen=True)
class Uploader:
    page: str
    user: str
    key: str
    ext: str
    button: str | None  # None: the upload itself is read (Judge calibration)
    fields: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.key


UPLOADERS = [
    Uploader("app_pages/pool.py", "engineer", "run_file", "trec", "run_import", (("run_system", "bm25"),)),
    Uploader("app_pages/pool.py", "engineer", "pool_ans_file", "jsonl", "pool_ans_go", (("pool_ans_system", "rag"),)),
    Uploader("app_pages/nuggets.py", "admin", "nug_ans_file", "jsonl", "nug_ans_go", (("nug_ans_system", "rag"),)),
    Uploader("app_pages/queries.py", "engineer", "q_import_file", "csv", "q_import"),
    Uploader("app_pages/queries.py", "engineer", "q_import_file", "jsonl", "q_import"),
    Uploader("app_pages/transcripts.py", "engineer", "tr_file", "jsonl", "tr_import"),
    Uploader("app_pages/calibration.py", "lead", "cal_file", "csv", None),
    Uploader("app_pages/calibration.py", "lead", "cal_file", "jsonl", None),
]
CASES = {
    "empty": (b"", "{name} is empty (0 bytes)"),
    "wrong type": (PNG, "{name} line 1"),
    "huge": (BIG, "{name} is 1.0 MB, over this page's 1 MB limit"),
    "utf-16": ("id,text\n".encode("utf-16"), "{name}: not valid UTF-8: the file is UTF-16"),
    "latin-1": ("caf\xe9 au lait\n".encode("latin-1"), "{name} line 1: not valid UTF-8"),
}


@pytest.fixture
def team(request, golden_db, monkeypatch):
    """An admin, an engineer and a lead, and the demo loaded by the admin (once, copied); the
    store the app opens."""
    monkeypatch.setenv("GOLDEN_MAX_UPLOAD_MB", "1")
    prepared_store(request, "upload-errors-team", _team)
    return context.get_store()


def _team(store, _folder) -> None:
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("engineer", "lead"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)


def _messages(at) -> str:
    return "\n".join(plain(e.value) for e in at.error) + "\n" + "\n".join(c.value for c in at.code)


@pytest.mark.parametrize("up", UPLOADERS, ids=lambda u: f"{u.key}.{u.ext}")
def test_every_upload_error_is_clean_and_changes_nothing(team, up):
    at = app_as(up.user)
    at.switch_page(up.page).run()
    if up.page.endswith("nuggets.py"):
        at.radio(key="nug_mode").set_value("Assign to answers").run()
    assert not at.exception
    for key, value in up.fields:
        at.text_input(key=key).input(value)
    before = table_snapshot(team)
    for case, (data, expected) in CASES.items():
        name = f"upload-{case.replace(' ', '-')}.{up.ext}"
        at.file_uploader(key=up.key).upload(name, data, "application/octet-stream").run()
        if up.button:
            at.button(key=up.button).click().run()
        assert not at.exception, (case, at.exception)
        shown = _messages(at)
        if case == "wrong type" and expected.format(name=name) not in shown:
            expected = "{name}: "  # a binary file may be refused before a line is read: the file is named
        assert expected.format(name=name) in shown, (case, shown)
        assert "/tmp" not in shown and "Traceback" not in shown, (case, shown)
        # a refused import leaves no progress bar above its error
        assert not [e for e in at.get("progress")], (case, "progress bar left on the page")
    assert table_snapshot(team) == before


def test_the_corpus_upload_names_the_file(team):
    """The corpus uploader (documents): empty, binary and mis-encoded files are refused by name."""
    at = app_as("engineer")
    at.switch_page("app_pages/corpus.py").run()
    before = table_snapshot(team)
    for name, data in (("empty.txt", b""), ("binary.txt", PNG), ("latin.txt", "caf\xe9\n".encode("latin-1")),
                       ("utf16.md", "hello\n".encode("utf-16"))):
        at.file_uploader(key="corpus_files").upload(name, data, "text/plain").run()
        at.button(key="corpus_import").click().run()
        assert not at.exception, (name, at.exception)
        assert name in _messages(at), (name, _messages(at))
    assert table_snapshot(team) == before
