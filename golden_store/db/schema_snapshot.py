"""A readable snapshot of the live store's current schema, generated from a migrated store.

The schema is defined as an append-only list of migrations (``golden_store.db.schema``), so
the current shape of a table or view can otherwise only be learned by replaying them in
one's head (``current_evidence`` is defined in V1 and redefined in V9; ``rounds`` gains a
column in V8). ``golden_store/db/schema_snapshot.sql`` holds the result: every sequence, table
(columns, types, defaults, constraints, as DuckDB itself writes them) and view (its latest
definition, as written in the migration), in an order that runs as a script on an empty
database. ``tests/golden_store/test_schema_snapshot.py`` migrates a fresh store and fails
when the file differs.

Regenerate after adding a migration::

    .venv/bin/python -m golden_store.db.schema_snapshot          # rewrite the file
    .venv/bin/python -m golden_store.db.schema_snapshot --check  # exit 1 and show the diff if stale
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tempfile
import textwrap
from pathlib import Path

from golden_store.db.cursor import Cursor

from golden_store.db.schema import MIGRATIONS, SCHEMA_VERSION
from golden_store.db.store import Store

SNAPSHOT_PATH = Path(__file__).with_name("schema_snapshot.sql")
REGENERATE = ".venv/bin/python -m golden_store.db.schema_snapshot"

_VIEW_DEF = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(\w+)\s+AS\b", re.IGNORECASE)
_TABLE_DEF = re.compile(r"^\s*(CREATE\s+TABLE(?:\s+IF\s+NOT\s+EXISTS)?|ALTER\s+TABLE)\s+(\w+)", re.IGNORECASE)


def _split_top_level(body: str) -> list[str]:
    """Split a column list at the commas outside parentheses and quotes."""
    parts: list[str] = []
    depth, start, quote = 0, 0, ""
    for i, ch in enumerate(body):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return [p for p in parts if p]


_CONSTRAINT = re.compile(r"^(PRIMARY KEY|UNIQUE|CHECK|FOREIGN KEY|CONSTRAINT)\b", re.IGNORECASE)
_COLUMN_NAME = re.compile(r'^("(?:[^"]|"")*"|\S+)\s+(.*)$', re.DOTALL)


def _format_table(sql: str) -> str:
    """DuckDB's one-line ``CREATE TABLE t(a INT, b ...);`` as one column per line, names aligned."""
    head, _, rest = sql.strip().rstrip(";").partition("(")
    body = rest[: rest.rindex(")")]
    items = _split_top_level(body)
    columns = [i for i in items if not _CONSTRAINT.match(i)]
    constraints = [i for i in items if _CONSTRAINT.match(i)]
    split = [_COLUMN_NAME.match(c) for c in columns]
    width = max((len(m.group(1)) for m in split if m), default=0)
    lines = [f"{m.group(1).ljust(width)} {m.group(2)}" if m else c for m, c in zip(split, columns)]
    lines += constraints
    return head.strip() + " (\n" + ",\n".join("    " + line for line in lines) + "\n);"


def _view_sources() -> dict[str, str]:
    """Each view's latest definition as the migrations write it (their layout, not DuckDB's),
    under a comment naming the migration that wrote it (and the first, when it was redefined)."""
    out: dict[str, str] = {}
    first_in: dict[str, int] = {}
    for mig in MIGRATIONS:
        for stmt in mig.statements:
            m = _VIEW_DEF.match(stmt)
            if not m:
                continue
            name = m.group(1)
            first_in.setdefault(name, mig.version)
            _, _, rest = stmt.strip().partition("\n")
            since = f"V{mig.version}" + (f", first defined in V{first_in[name]}" if first_in[name] != mig.version else "")
            out[name] = f"-- {name}: {since}\nCREATE VIEW {name} AS" + ("\n" + textwrap.dedent(rest) if rest else "")
    return out


def _table_history() -> dict[str, str]:
    """{table: "V3, altered in V8"}: the migrations that created and changed each table."""
    created: dict[str, int] = {}
    altered: dict[str, list[int]] = {}
    for mig in MIGRATIONS:
        for stmt in mig.statements:
            m = _TABLE_DEF.match(stmt)
            if not m:
                continue
            if m.group(1).upper().startswith("CREATE"):
                created.setdefault(m.group(2), mig.version)
            elif mig.version not in altered.setdefault(m.group(2), []):
                altered[m.group(2)].append(mig.version)
    return {
        name: f"V{v}" + (", altered in " + ", ".join(f"V{a}" for a in altered[name]) if altered.get(name) else "")
        for name, v in created.items()
    }


def _view_order(views: dict[str, str]) -> list[str]:
    """Views in an order where each comes after the views it reads (alphabetical otherwise)."""
    deps = {
        name: {other for other in views if other != name and re.search(rf"\b{re.escape(other)}\b", body)}
        for name, body in views.items()
    }
    done: list[str] = []
    pending = sorted(views)
    while pending:
        ready = [v for v in pending if deps[v] <= set(done)] or pending[:1]
        done.append(ready[0])
        pending.remove(ready[0])
    return done


def render(cur: Cursor) -> str:
    """The snapshot text of the schema ``cur`` sees (main schema; no data)."""
    sources = _view_sources()
    out = [
        "-- The live store's schema after every migration: a generated snapshot, do not edit.",
        f"-- Regenerate: {REGENERATE}",
        f"-- Schema version {SCHEMA_VERSION}. Migrations (golden_store/db/schema.py):",
        *(f"--   V{m.version}: {m.description}" for m in MIGRATIONS),
        "",
        "-- ---- sequences --------------------------------------------------------------------",
        "",
    ]
    for (sql,) in cur.execute(
            "SELECT sql FROM duckdb_sequences() WHERE schema_name = 'main' AND NOT temporary "
            "ORDER BY sequence_name").fetchall():
        out += [sql.strip(), ""]
    out += ["-- ---- tables -----------------------------------------------------------------------", ""]
    history = _table_history()
    for name, sql in cur.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE schema_name = 'main' AND NOT internal "
            "AND NOT temporary ORDER BY table_name").fetchall():
        out += [f"-- {name}: {history.get(name, 'created by the store itself (golden_store/db/store.py)')}",
                _format_table(sql), ""]
    views = {
        name: sources.get(name) or sql.strip().rstrip(";")
        for name, sql in cur.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
            "AND NOT temporary").fetchall()
    }
    out += ["-- ---- views (latest definitions) -----------------------------------------------------", ""]
    for name in _view_order(views):
        out += [views[name].rstrip() + ";", ""]
    indexes = cur.execute(
        "SELECT sql FROM duckdb_indexes() WHERE schema_name = 'main' AND sql IS NOT NULL "
        "ORDER BY table_name, index_name").fetchall()
    if indexes:
        out += ["-- ---- indexes ----------------------------------------------------------------------", ""]
        out += [f"{sql.strip().rstrip(';')};\n" for (sql,) in indexes]
    return "\n".join(out).rstrip("\n") + "\n"


def fresh_snapshot() -> str:
    """Migrate a new, empty store in a temporary folder and render its schema."""
    with tempfile.TemporaryDirectory(prefix="golden-schema-") as tmp:
        store = Store.open(Path(tmp) / "schema.duckdb")
        try:
            with store.cursor() as cur:
                return render(cur)
        finally:
            store.close()


def diff(expected: str, actual: str) -> str:
    return "".join(difflib.unified_diff(
        expected.splitlines(keepends=True), actual.splitlines(keepends=True),
        fromfile=str(SNAPSHOT_PATH.name) + " (in the repo)", tofile="a freshly migrated store"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m golden_store.db.schema_snapshot", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 when the file is stale")
    ap.add_argument("--out", type=Path, default=SNAPSHOT_PATH, help=f"where to write (default {SNAPSHOT_PATH})")
    args = ap.parse_args(argv)
    text = fresh_snapshot()
    if args.check:
        current = args.out.read_text("utf-8") if args.out.exists() else ""
        if current != text:
            sys.stdout.write(diff(current, text))
            print(f"\n{args.out} is stale; regenerate it with: {REGENERATE}", file=sys.stderr)
            return 1
        print(f"{args.out} matches schema version {SCHEMA_VERSION}")
        return 0
    args.out.write_text(text, "utf-8")
    print(f"wrote {args.out} (schema version {SCHEMA_VERSION})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
