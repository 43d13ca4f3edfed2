"""The layering rules of DESIGN.md, checked on the source: imports point one way, SQL lives
in golden_store, and only the UI layer imports streamlit."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

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
        assert not ({"annotator", "streamlit", "app_pages", "http_api"} & _imports(f)), f


def test_the_http_api_is_a_thin_front_door():
    """http_api sits beside app_pages (DESIGN.md, Layers): it calls annotator, holds no SQL,
    no database handle and no streamlit, and nothing below it imports it."""
    sql = re.compile(r"\b(SELECT .* FROM|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b")
    for f in _py("http_api"):
        assert not ({"duckdb", "psycopg", "streamlit", "app_pages"} & _imports(f)), f
        assert not sql.search(f.read_text("utf-8")), f
    for f in _py("annotator"):
        assert "http_api" not in _imports(f), f


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
NO_DATABASE = ("duckdb", "psycopg", "golden_store.db", "golden_store.live", "golden_store.freezing")


def _full_imports(path: Path) -> set[str]:
    """Every module a file imports, by full name (``from golden_store.db import store`` counts
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


def _version_format_modules() -> list[str]:
    folder = ROOT / VERSION_FORMAT.replace(".", "/")
    return sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                  for p in folder.rglob("*.py"))


def test_the_version_format_imports_no_database_module():
    for path in sorted((ROOT / VERSION_FORMAT.replace(".", "/")).rglob("*.py")):
        bad = sorted(m for m in _full_imports(path) if _is_or_under(m, NO_DATABASE))
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}; the SQL side of a version belongs in golden_store/freezing.py"


def test_loading_the_version_format_loads_no_database_module():
    """What the source check cannot see: a module the format imports that imports the store.
    Every module of the package is loaded (the package itself loads its modules lazily)."""
    import subprocess
    import sys

    modules = _version_format_modules()
    assert f"{VERSION_FORMAT}.reader" in modules
    code = f"import sys, {', '.join(modules)}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    bad = sorted(m for m in out.split() if _is_or_under(m, NO_DATABASE))
    assert not bad, f"importing {VERSION_FORMAT} loads {bad}"


# ---- the floors inside golden_store (README "Layout") -----------------------------------------
#
# golden_store/ is split into rooms, each a subpackage (or one of the two bridge modules on top),
# and an import may only run down:
#
#   freezing, offline_resolution        the bridges: anything below
#   live                                the live store's tables: db, corpus, scoring, core
#   scoring | versions | corpus | db    siblings on core, none imports another
#   core                                nothing else of golden_store
#
# Every import counts: at the top of a file, inside a function (lazy) and under TYPE_CHECKING,
# since a type-only arrow is still an arrow a reader follows (it was how corpus.py and
# document_staging.py went round in a circle).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "scoring": frozenset({"core"}),
    "versions": frozenset({"core"}),
    "corpus": frozenset({"core"}),
    "db": frozenset({"core"}),
    "live": frozenset({"core", "db", "corpus", "scoring"}),
    "freezing": frozenset({"core", "db", "corpus", "scoring", "versions", "live"}),
    "offline_resolution": frozenset({"core", "db", "corpus", "scoring", "versions", "live"}),
    # the HTTP API's client (issue 28): talks HTTP, opens downloaded versions; no store, no driver
    "client": frozenset({"core", "versions"}),
    # golden_store/__init__.py: the public face (load_version, Store, canonical_text, ...)
    "": frozenset({"core", "db", "corpus", "scoring", "versions", "live", "freezing", "offline_resolution"}),
}
# below live, no database driver at all (db is where the drivers are)
NO_DRIVER_ROOMS = ("core", "scoring", "versions", "corpus", "client")
DRIVERS = ("duckdb", "psycopg", "psycopg_pool")
OUTSIDE = ("annotator", "app_pages", "streamlit")


def _room(module: str) -> str | None:
    """``golden_store.live.runs`` -> ``live``; ``golden_store.freezing`` -> ``freezing``;
    ``golden_store`` itself -> ``""``; anything outside golden_store -> None."""
    parts = module.split(".")
    if parts[0] != "golden_store":
        return None
    return parts[1] if len(parts) > 1 else ""


@functools.lru_cache(maxsize=None)
def _parse(source: str) -> ast.Module:
    """A module's syntax tree, parsed once per text: the synthetic-break tests check the whole
    tree again with one module added, and the trees are only read."""
    return ast.parse(source)


def _imported(module: str, source: str) -> list[tuple[int, str]]:
    """(line, full module name) of every import in ``source``, the text of ``module``:
    ``from golden_store import live`` gives ``golden_store.live``; relative imports resolved."""
    return list(_imported_once(module, source))


@functools.lru_cache(maxsize=None)
def _imported_once(module: str, source: str) -> tuple[tuple[int, str], ...]:
    is_package = module.endswith(".__init__")
    here = module.removesuffix(".__init__").split(".")
    out: list[tuple[int, str]] = []
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out += [(node.lineno, mod)]
            if mod == "golden_store":  # `from golden_store import live`: the name is the room
                out += [(node.lineno, f"{mod}.{a.name}") for a in node.names if not a.name.startswith("__")]
    return tuple(out)


def layer_violations(sources: dict[str, str]) -> list[str]:
    """Every import in ``sources`` (module name -> text, e.g. ``golden_store.live.runs``, a
    package as ``golden_store.live.__init__``) that breaks the floors above, as
    ``module:line imports target (room may import ...)``."""
    bad: list[str] = []
    for module, text in sorted(sources.items()):
        room = _room(module.removesuffix(".__init__") if module != "golden_store.__init__" else "golden_store")
        if room is None:
            continue
        if room not in MAY_IMPORT:
            bad.append(f"{module}: room {room!r} is not in MAY_IMPORT (give it a floor)")
            continue
        for line, target in _imported(module, text):
            top = target.split(".")[0]
            if top in OUTSIDE:
                bad.append(f"{module}:{line} imports {target} (golden_store never imports {top})")
                continue
            if room in NO_DRIVER_ROOMS and top in DRIVERS:
                bad.append(f"{module}:{line} imports {target} ({room} never touches a database)")
                continue
            to = _room(target)
            if to is None or to == "" or to == room:
                continue
            if to not in MAY_IMPORT[room]:
                allowed = ", ".join(sorted(MAY_IMPORT[room])) or "nothing else of golden_store"
                bad.append(f"{module}:{line} imports {target} ({room} may import {allowed})")
    return bad


def golden_store_sources() -> dict[str, str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): p.read_text("utf-8")
            for p in _py("golden_store")}


def test_golden_store_imports_run_down_the_floors():
    sources = golden_store_sources()
    rooms = {_room(m.removesuffix(".__init__")) for m in sources if m != "golden_store.__init__"}
    assert rooms == set(MAY_IMPORT) - {""}, f"rooms on disk {sorted(rooms)} vs MAY_IMPORT {sorted(MAY_IMPORT)}"
    bad = layer_violations(sources)
    assert not bad, "imports that run up or across golden_store's floors:\n" + "\n".join(bad)


def test_the_floor_check_sees_the_real_arrows():
    """Not vacuous: the checker finds the arrows the tree is known to have."""
    edges = {(m, t) for m, text in golden_store_sources().items() for _, t in _imported(m, text)}
    assert ("golden_store.live.runs", "golden_store.scoring.trec") in edges
    assert ("golden_store.live.documents", "golden_store.corpus.sources") in edges
    assert ("golden_store.freezing", "golden_store.versions.signing") in {
        (m, t if t != "golden_store.versions" else t) for m, t in edges} | {
        (m, f"{t}.signing") for m, t in edges if t == "golden_store.versions"}


FORBIDDEN_EXAMPLES = [
    # (module, text, what the report must name)
    ("golden_store.core.errors", "from golden_store.db.store import Store\n", "golden_store.db.store (core may import nothing"),
    ("golden_store.versions.reader", "from golden_store import live\n", "golden_store.live (versions may import core)"),
    ("golden_store.corpus.sources", "def f():\n    from golden_store.live import documents\n", ":2 imports golden_store.live (corpus may import core)"),
    ("golden_store.db.schema", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from golden_store.live.queries import X\n",
     ":3 imports golden_store.live.queries"),
    ("golden_store.scoring.trec", "import golden_store.versions.reader\n", "golden_store.versions.reader (scoring may import core)"),
    ("golden_store.live.runs", "from golden_store.versions import load_version\n", "golden_store.versions (live may import"),
    ("golden_store.live.runs", "from golden_store import freezing\n", "golden_store.freezing (live may import"),
    ("golden_store.live.runs", "from .. import freezing\n", "golden_store.freezing (live may import"),
    ("golden_store.corpus.__init__", "from ..db import store\n", "golden_store.db (corpus may import core)"),
    ("golden_store.corpus.index", "import duckdb\n", "imports duckdb (corpus never touches a database)"),
    ("golden_store.freezing", "from golden_store import offline_resolution\n", "golden_store.offline_resolution (freezing"),
    ("golden_store.freezing", "import streamlit as st\n", "imports streamlit (golden_store never imports streamlit)"),
    ("golden_store.live.users", "from annotator import identity\n", "imports annotator (golden_store never imports annotator)"),
    ("golden_store.newroom.thing", "", "room 'newroom' is not in MAY_IMPORT"),
]


@pytest.mark.parametrize(("module", "text", "says"), FORBIDDEN_EXAMPLES)
def test_the_floor_check_reports_a_forbidden_import(module, text, says):
    """A test of the test: a synthetic forbidden import, beside the real tree, is reported."""
    sources = {**golden_store_sources(), module: text}
    bad = layer_violations(sources)
    assert any(says in b for b in bad), bad


def test_the_floor_check_lets_downward_imports_pass():
    fine = {
        "golden_store.live.runs": "from golden_store.db.store import Store\nfrom golden_store.corpus import resolver\n"
                                  "from golden_store.scoring.trec import read_run\nfrom golden_store.core import textin\n",
        "golden_store.freezing": "from golden_store import versions\nfrom golden_store.live import drift\n",
        "golden_store.versions.export": "from golden_store.versions.format import thaw\nfrom . import qrels\n",
        "golden_store.core.jsonl": "from golden_store.core import textin\nimport json\n",
    }
    assert layer_violations(fine) == []


# ---- the rooms of annotator (docs/ARCHITECTURE.md, "The service layer's rooms") -------------
#
# annotator/ is the service layer: every module sits in a room named for what people do, and an
# import may only run to a room on a lower floor:
#
#   cli                      the only room that may import every other
#   demo | integration       demo: everything a demo store shows; integration: outside data in
#   evaluation               runs, recorded evaluations, comparisons, transcripts
#   versions                 freezing, its conflicts, verifying, exporting
#   evidence                 quotes, questions, nuggets (may spend tokens through judge)
#   labeling                 the human loop: queue, grading, rounds, agreement, adjudication
#   events | judge           what the studio announces | everything that spends tokens
#   people | process         who acts and may do what | what one serving process holds
#
# As for golden_store, every import counts (top of file, inside a function, TYPE_CHECKING).
ANNOTATOR_ROOMS: dict[str, frozenset[str]] = {
    "people": frozenset(),
    "process": frozenset(),
    "events": frozenset({"people"}),
    "judge": frozenset({"people", "process"}),
    "labeling": frozenset({"people", "process", "events"}),
    "evidence": frozenset({"people", "process", "events", "judge", "labeling"}),
    "versions": frozenset({"people", "process", "events", "labeling", "evidence"}),
    "evaluation": frozenset({"people", "process", "events", "judge", "labeling", "evidence", "versions"}),
    "integration": frozenset({"people", "process", "events", "judge", "labeling", "evidence", "versions", "evaluation"}),
    "demo": frozenset({"people", "process", "events", "judge", "labeling", "evidence", "versions", "evaluation"}),
    "cli": frozenset({"people", "process", "events", "judge", "labeling", "evidence", "versions", "evaluation",
                      "integration", "demo"}),
}


def _annotator_room(module: str) -> str | None:
    """``annotator.labeling.rounds`` -> ``labeling``; ``annotator`` itself -> ``""``; a module
    sitting loose in annotator/ (``annotator.thing``) -> ``annotator.thing``, which is no room."""
    parts = module.removesuffix(".__init__").split(".")
    if parts[0] != "annotator":
        return None
    return "" if len(parts) == 1 else parts[1]


def _annotator_imports(module: str, source: str) -> list[tuple[int, str]]:
    """Like :func:`_imported`, with each name a ``from annotator...`` import takes as a full
    name too: ``from annotator.labeling import rounds`` gives ``annotator.labeling`` and
    ``annotator.labeling.rounds`` (the module a reader follows)."""
    out = _imported(module, source)
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "annotator":
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def annotator_violations(sources: dict[str, str]) -> list[str]:
    """Every module of ``sources`` (module name -> text) outside a room, and every import that
    runs to a room its room may not import, as ``module:line imports target (...)``."""
    bad: list[str] = []
    for module, text in sorted(sources.items()):
        room = _annotator_room(module)
        if room is None or room == "":
            continue
        if room not in ANNOTATOR_ROOMS:
            bad.append(f"{module}: {room!r} is not a room of ANNOTATOR_ROOMS (put the module in a room, or give the room a floor)")
            continue
        for line, target in _annotator_imports(module, text):
            to = _annotator_room(target)
            if to is None or to == "" or to == room:
                continue
            if to not in ANNOTATOR_ROOMS[room]:
                allowed = ", ".join(sorted(ANNOTATOR_ROOMS[room])) or "no other room"
                bad.append(f"{module}:{line} imports {target} ({room} may import {allowed})")
    return bad


def annotator_sources() -> dict[str, str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): p.read_text("utf-8") for p in _py("annotator")}


def test_annotator_imports_run_down_its_rooms():
    sources = annotator_sources()
    rooms = {_annotator_room(m) for m in sources} - {""}
    assert rooms == set(ANNOTATOR_ROOMS), f"rooms on disk {sorted(rooms)} vs ANNOTATOR_ROOMS {sorted(ANNOTATOR_ROOMS)}"
    bad = annotator_violations(sources)
    assert not bad, "imports that run up or across annotator's rooms:\n" + "\n".join(bad)


def test_people_imports_no_other_room_and_only_cli_imports_every_room():
    assert ANNOTATOR_ROOMS["people"] == frozenset()
    everything = set(ANNOTATOR_ROOMS) - {"cli"}
    assert [r for r, may in ANNOTATOR_ROOMS.items() if set(may) == everything] == ["cli"]


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (module -> modules it imports), or [] when there is none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def _annotator_module_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    names = {m.removesuffix(".__init__") for m in sources}
    graph: dict[str, set[str]] = {}
    for module, text in sources.items():
        me = module.removesuffix(".__init__")
        graph[me] = {t for _, t in _annotator_imports(module, text) if t in names and t != me
                     and not me.startswith(t + ".")}  # a module's own package face is no arrow
    return graph


def test_no_import_circle_among_annotator_modules():
    circle = _cycle(_annotator_module_graph(annotator_sources()))
    assert not circle, "annotator modules import each other in a circle: " + " -> ".join(circle)


ANNOTATOR_FORBIDDEN = [
    # (module, text, what the report must name)
    ("annotator.people.identity", "from annotator.labeling import labeling\n", "annotator.labeling.labeling (people may import no other room)"),
    ("annotator.labeling.judging", "def f():\n    from annotator.evidence import nuggets\n", ":2 imports annotator.evidence.nuggets (labeling may import"),
    ("annotator.judge.llm", "from annotator import demo\n", "annotator.demo (judge may import"),
    ("annotator.evaluation.power", "from annotator.cli import common\n", "annotator.cli.common (evaluation may import"),
    ("annotator.loose", "", "'loose' is not a room of ANNOTATOR_ROOMS"),
]


@pytest.mark.parametrize(("module", "text", "says"), ANNOTATOR_FORBIDDEN)
def test_the_room_check_reports_a_forbidden_import(module, text, says):
    """A test of the test: a synthetic import that runs up, beside the real tree, is reported."""
    bad = annotator_violations({**annotator_sources(), module: text})
    assert any(says in b for b in bad), bad


def test_the_room_check_sees_the_real_arrows():
    """Not vacuous: the checker finds arrows the tree is known to have, and lets them pass."""
    edges = {(m, t) for m, text in annotator_sources().items() for _, t in _annotator_imports(m, text)}
    assert ("annotator.labeling.judging", "annotator.events.webhooks") in edges
    assert ("annotator.evidence.nuggets", "annotator.judge.llm") in edges


def test_the_circle_check_finds_a_circle():
    sources = {**annotator_sources(),
               "annotator.labeling.agreement": "from annotator.labeling import rounds\n"}
    circle = _cycle(_annotator_module_graph(sources))
    assert set(circle) >= {"annotator.labeling.agreement", "annotator.labeling.rounds"}, circle
