"""The one place where the SQL differences between DuckDB and PostgreSQL live.

Why a translator rather than two sets of SQL: the studio's SQL (migrations, views, every
query in ``golden_store``) is written once, in DuckDB's dialect, and shipped migrations are
never edited. A PostgreSQL store runs the same text through :func:`to_postgres`, which parses
it with sqlglot's DuckDB grammar, rewrites what PostgreSQL lacks on the syntax tree, and
prints it in PostgreSQL's dialect. What it rewrites:

- ``?`` and ``$name`` parameters -> ``%s`` / ``%(name)s`` (psycopg's), and every literal
  ``%`` doubled so psycopg does not read it as a parameter;
- types: ``VARCHAR`` -> ``TEXT``, ``DOUBLE`` -> ``DOUBLE PRECISION``, ``x::T[]`` casts;
- DuckDB's float division (``/`` on integers) -> a cast first (sqlglot does this);
- ``SEMI JOIN`` / ``ANTI JOIN`` (``USING`` or ``ON``) -> ``EXISTS`` / ``NOT EXISTS``;
- ``GROUP BY ALL`` -> ``GROUP BY`` the positions of the non-aggregate select items (also
  in a subquery that a SEMI/ANTI join moves into ``EXISTS``);
- a select item's alias inside an ``ORDER BY`` expression (``ORDER BY quotes > 0``) -> the
  item's expression (PostgreSQL reads output names only as whole ORDER BY items);
- a subquery in ``FROM`` without an alias gets one (PostgreSQL 15 requires it);
- ``arg_min(a, b)`` / ``arg_max(a, b)`` -> the first of ``array_agg(a ORDER BY b [DESC])``;
- ``any_value(x)`` -> ``min(x)`` (PostgreSQL 15 has no ``any_value``; any value will do);
- ``hash(...)`` -> ``hashtextextended`` of the arguments joined by U+001F: another value
  than DuckDB's, so orders that hash (the judging queue's shuffle) differ between engines
  but are stable on each;
- ``unnest(?)`` of a Python list -> ``unnest(CAST(%s AS TEXT[]))``: psycopg sends a list of
  str as an array of unknown type, which PostgreSQL cannot pick an ``unnest`` for (every
  list the studio unnests is of ids, which are text);
- ``? IS NULL`` (a bare parameter tested for NULL: the optional filters ``? IS NULL OR
  col = ?``) -> ``CAST(%s AS TEXT) IS NULL``: PostgreSQL cannot type a parameter whose only
  use is ``IS NULL`` and refuses the statement; any value casts to text, NULL stays NULL;
- DuckDB-only session settings (``SET memory_limit``, ``force_compression``) -> no-ops.

``error(msg)`` (migration 12's guards) and ``list``/``string_agg`` need no rewrite:
:data:`POSTGRES_PRELUDE` defines ``error`` on the database, sqlglot maps the others.

Translations are cached by statement text (the SQL strings are constants), so a query pays
the parse once per process.
"""

from __future__ import annotations

import re
from functools import lru_cache

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sqlglot is imported where a statement is translated: a DuckDB store never loads it
    from sqlglot import exp

# Run on a PostgreSQL store before the migrations: functions DuckDB has built in.
POSTGRES_PRELUDE: tuple[str, ...] = (
    """CREATE OR REPLACE FUNCTION error(msg TEXT) RETURNS TEXT LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION '%', msg; END $$""",
)

# The last value the global event sequence handed out (0 before the first), per engine.
EVENT_SEQ_LAST_VALUE: dict[str, str] = {
    "duckdb": "SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'event_seq'",
    "postgresql": "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM event_seq",
}
# The last values the write and event sequences handed out (0 before the first), per engine.
SEQUENCES_LAST_VALUES: dict[str, str] = {
    "duckdb": "SELECT (SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'write_seq'), "
              "(SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'event_seq')",
    "postgresql": "SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM write_seq), "
                  "(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM event_seq)",
}

_NOOP_SETTINGS = re.compile(r"^\s*(SET|RESET)\s+(memory_limit|force_compression|threads|preserve_insertion_order)\b",
                            re.IGNORECASE)
# sqlglot's DuckDB grammar cannot parse a cast right on a placeholder (`?::VARCHAR[]`).
_PLACEHOLDER_CAST = re.compile(r"\?::\s*([A-Za-z_]+(?:\s*\[\])?)")


def is_noop_on_postgres(sql: str) -> bool:
    """A DuckDB tuning statement that means nothing on PostgreSQL (the caller skips it)."""
    return bool(_NOOP_SETTINGS.match(sql))


@lru_cache(maxsize=4096)
def to_postgres(sql: str) -> str:
    """``sql`` (DuckDB's dialect, ``?``/``$name`` parameters) as PostgreSQL with psycopg's
    placeholders. Raises ``ValueError`` naming the statement when it cannot be translated,
    so an unsupported construct fails loudly instead of running as something else."""
    import sqlglot

    src = _PLACEHOLDER_CAST.sub(r"CAST(? AS \1)", sql)
    try:
        trees = sqlglot.parse(src, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ValueError(f"cannot translate to PostgreSQL: {exc}\n{sql}") from None
    out = []
    for tree in trees:
        if tree is None:
            continue
        tree = _rewrite(tree)
        out.append(tree.sql(dialect="postgres"))
    return ";\n".join(out)


def _rewrite(tree: exp.Expr) -> exp.Expr:
    from sqlglot import exp

    counter = [0]

    def fresh(prefix: str) -> str:
        counter[0] += 1
        return f"_{prefix}{counter[0]}"

    for lit in tree.find_all(exp.Literal):
        if lit.is_string and "%" in lit.this:
            lit.set("this", lit.this.replace("%", "%%"))
    for mod in list(tree.find_all(exp.Mod)):
        # an Anonymous call: exp.func("MOD", ...) parses back into exp.Mod and prints as "%",
        # which psycopg would read as a placeholder
        mod.replace(exp.Anonymous(this="MOD", expressions=[mod.this.copy(), mod.expression.copy()]))
    for sub in list(tree.find_all(exp.Subquery)):
        if isinstance(sub.parent, (exp.From, exp.Join)) and not sub.alias:
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(fresh("sq"))))
    for fn in list(tree.find_all(exp.ArgMin, exp.ArgMax)):
        order = exp.Ordered(this=fn.expression.copy(), desc=isinstance(fn, exp.ArgMax))
        agg = exp.ArrayAgg(this=exp.Order(this=fn.this.copy(), expressions=[order]))
        fn.replace(exp.Bracket(this=exp.Paren(this=agg), expressions=[exp.Literal.number(0)]))  # sqlglot indexes from 0 internally
    for fn in list(tree.find_all(exp.AnyValue)):
        target = fn.parent if isinstance(fn.parent, exp.IgnoreNulls) else fn
        target.replace(exp.Min(this=fn.this.copy()))
    for call in list(tree.find_all(exp.Anonymous)):
        if call.name.lower() == "hash":
            call.replace(_hash(call.expressions))
    for fn in list(tree.find_all(exp.Hash)) if hasattr(exp, "Hash") else []:
        fn.replace(_hash([fn.this, *fn.expressions]))
    for un in list(tree.find_all(exp.Explode, exp.Unnest)):
        args = [un.this] if isinstance(un, exp.Explode) else un.expressions
        for arg in args:
            if isinstance(arg, exp.Placeholder):
                arg.replace(exp.cast(arg.copy(), "TEXT[]"))
    for test in list(tree.find_all(exp.Is)):
        if isinstance(test.this, exp.Placeholder):
            test.this.replace(exp.cast(test.this.copy(), "TEXT"))
    # innermost first, and every SELECT's own rewrites before any join: a SEMI/ANTI join moves
    # a copy of its right side into EXISTS, so a SELECT inside it (GROUP BY ALL, an ORDER BY
    # alias, a nested SEMI JOIN) must be rewritten before the copy is taken
    selects = sorted(tree.find_all(exp.Select), key=lambda s: -s.depth)
    for select in selects:
        _group_by_all(select)
        _order_by_aliases(select)
    for select in selects:
        _semi_anti_joins(select, fresh)
    return tree


def _hash(args: list[exp.Expr]) -> exp.Expr:
    from sqlglot import exp

    parts = [exp.cast(a.copy(), "TEXT") for a in args]
    joined = parts[0] if len(parts) == 1 else exp.func("CONCAT_WS", exp.func("CHR", exp.Literal.number(31)), *parts)
    return exp.func("HASHTEXTEXTENDED", joined, exp.Literal.number(0))


def _group_by_all(select: exp.Select) -> None:
    from sqlglot import exp

    group = select.args.get("group")
    if not group or not group.args.get("all"):
        return
    positions = [
        exp.Literal.number(i)
        for i, item in enumerate(select.expressions, start=1)
        if not any(isinstance(n, exp.AggFunc) and not n.find_ancestor(exp.Window) for n in item.walk())
    ]
    if positions:
        select.set("group", exp.Group(expressions=positions))
    else:
        select.set("group", None)


def _order_by_aliases(select: exp.Select) -> None:
    """``ORDER BY quotes > 0`` where ``quotes`` names a select item: DuckDB reads the alias
    inside an expression, PostgreSQL only as a whole ORDER BY item, so the expression gets
    the item's own expression in the alias's place."""
    from sqlglot import exp

    order = select.args.get("order")
    if not order:
        return
    aliases = {item.alias: item.this for item in select.expressions if isinstance(item, exp.Alias)}
    if not aliases:
        return
    for ordered in order.expressions:
        if isinstance(ordered.this, exp.Column):
            continue  # a bare alias is fine on PostgreSQL
        for col in list(ordered.this.find_all(exp.Column)):
            if not col.table and col.name in aliases:
                col.replace(exp.Paren(this=aliases[col.name].copy()))


def _source_name(node: exp.Expression) -> str:
    """The name a FROM/JOIN source is referred to by (its alias, else the table name)."""
    return node.alias_or_name


def _semi_anti_joins(select: exp.Select, fresh) -> None:
    from sqlglot import exp

    joins = select.args.get("joins") or []
    kept: list[exp.Join] = []
    conditions: list[exp.Expression] = []
    for join in joins:
        kind = (join.args.get("kind") or "").upper()
        if kind not in ("SEMI", "ANTI"):
            kept.append(join)
            continue
        right = join.this.copy()
        if not right.alias:
            name = fresh("sj")
            if isinstance(right, exp.Table):
                right = exp.alias_(right, name, table=True)
            else:
                right.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
        rname = right.alias_or_name
        on = join.args.get("on")
        if join.args.get("using"):
            left = select.args["from_"].this if "from_" in select.args else select.args["from"].this
            lname = _source_name(left)
            eqs = [
                exp.EQ(this=exp.column(col.this, table=rname, quoted=col.quoted),
                       expression=exp.column(col.this, table=lname, quoted=col.quoted))
                for col in join.args["using"]
            ]
            on = exp.and_(*eqs)
        sub = exp.select("1").from_(right)
        if on is not None:
            sub = sub.where(on.copy())
        cond: exp.Expression = exp.Exists(this=sub)
        if kind == "ANTI":
            cond = exp.Not(this=cond)
        conditions.append(cond)
    if not conditions:
        return
    select.set("joins", kept or None)
    for cond in conditions:
        select.where(cond, copy=False)
