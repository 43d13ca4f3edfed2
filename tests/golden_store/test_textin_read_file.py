"""One text-input rule (issue 26, item 5): every importer opens its file through
``textin.read_file``, so a missing file, a folder and an unreadable file read the same
everywhere, naming the file by its label (an upload's own name) when given."""

from __future__ import annotations

import pytest

from golden_store.core import textin
from golden_store.core.errors import ValidationError


def test_read_file_names_the_problem(tmp_path):
    with pytest.raises(ValidationError, match=r"missing\.jsonl: no such file\."):
        textin.read_file(tmp_path / "missing.jsonl")
    with pytest.raises(ValidationError, match=r": is a folder, not a file\."):
        textin.read_file(tmp_path)
    with pytest.raises(ValidationError, match=r"^upload\.jsonl: no such file\.$"):
        textin.read_file(tmp_path / "tmp123", "upload.jsonl")


def test_read_text_decodes_by_the_rule_and_names_the_label(tmp_path):
    f = tmp_path / "a.txt"
    f.write_bytes(b"\xef\xbb\xbfhello\n")
    assert textin.read_file(f) == b"\xef\xbb\xbfhello\n"
    assert textin.read_text(f) == "hello\n"
    f.write_bytes(b"ok\n\xff\n")
    with pytest.raises(ValidationError, match=r"^given\.txt line 2: not valid UTF-8"):
        textin.read_text(f, "given.txt")


def test_no_importer_reads_bytes_its_own_way():
    """The repeated FileNotFoundError/IsADirectoryError block lives in textin alone."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = [str(p.relative_to(root)) for d in ("golden_store", "annotator")
             for p in (root / d).rglob("*.py") if "except IsADirectoryError" in p.read_text(encoding="utf-8")]
    assert found == ["golden_store/core/textin.py"]
