"""The layering rules of DESIGN.md, checked on the source: imports point one way, SQL lives
in golden_store, and only the UI layer imports streamlit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    mods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module.split(".")[0])
    return mods


def _py(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_golden_store_imports_neither_annotator_nor_streamlit():
    for f in _py("golden_store"):
        assert not ({"annotator", "streamlit", "app_pages"} & _imports(f)), f


def test_scoring_never_touches_the_database():
    for f in _py("golden_store/scoring") if (ROOT / "golden_store/scoring").exists() else []:
        assert "duckdb" not in _imports(f), f


def test_only_the_ui_layer_imports_streamlit():
    for f in _py("annotator"):
        assert "streamlit" not in _imports(f), f


def test_pages_hold_no_sql_and_no_database_handle():
    sql = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    for f in [ROOT / "app.py", *_py("app_pages")]:
        text = f.read_text("utf-8")
        assert "duckdb" not in _imports(f), f
        assert not sql.search(text), f


def test_sql_lives_in_golden_store():
    sql = re.compile(r"\b(SELECT .* FROM|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    for f in _py("annotator"):
        assert not sql.search(f.read_text("utf-8")), f


def test_no_raw_html_in_the_ui():
    for f in [ROOT / "app.py", *_py("app_pages")]:
        assert "unsafe_allow_html" not in f.read_text("utf-8"), f


# The frozen-version contract has two sides: golden_store.freezing writes a version from the
# live store (SQL, one transaction); golden_store.versions is the on-disk format and reads it
# (load, verify, diff). Scorers and `golden score` use only the second, so it never imports
# the database, directly or through another module.
VERSION_FORMAT = "golden_store.versions"
NO_DATABASE = ("duckdb", "golden_store.db.store", "golden_store.freezing")


def _full_imports(path: Path) -> set[str]:
    """Every module a file imports, by full name (``from golden_store import store`` counts
    as ``golden_store.db.store``), wherever in the file the import sits."""
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
            mods |= {f"{node.module}.{a.name}" for a in node.names}
    return mods


def _is_or_under(mod: str, names: tuple[str, ...]) -> bool:
    return any(mod == n or mod.startswith(n + ".") for n in names)


def test_the_version_format_imports_no_database_module():
    path = ROOT / (VERSION_FORMAT.replace(".", "/") + ".py")
    bad = sorted(m for m in _full_imports(path) if _is_or_under(m, NO_DATABASE))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; the SQL side of a version belongs in golden_store/freezing.py"


def test_loading_the_version_format_loads_no_database_module():
    """What the source check cannot see: a module the format imports that imports the store."""
    import subprocess
    import sys

    code = f"import sys, {VERSION_FORMAT}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    bad = sorted(m for m in out.split() if _is_or_under(m, NO_DATABASE))
    assert not bad, f"importing {VERSION_FORMAT} loads {bad}"
